// Filters and sortings of the reference and news endpoints (spec §4.4-4.8), and
// of media/stream, whose filters the spec does not show (our decision, mirrored
// by the sandbox: id, product, kind, photoType, createdAt, updatedSince).
import { z } from 'zod';
import { Direction, TimestampFilter, codes, oneOrMore } from '../filters.js';
import { CorrectionStatusFilterValue, NewsType, OrganizationType, PhotoType } from '../resources/enums.js';

export const organizationFilters = {
  id: codes(z.int()),
  type: OrganizationType,
  name: z.string(),
  searchName: z.string(),
  specializations: codes(z.int()),
  vatNr: z.string(),
};
export const organizationSortings = { id: Direction, name: Direction };

export const correctionFilters = {
  product: z.string(),
  status: CorrectionStatusFilterValue,
  organization: z.int(),
  search: z.string(),
  locale: oneOrMore(z.string()),
  type: z.string(),
  createdBy: z.union([z.string(), z.int()]),
  createdAt: TimestampFilter,
};
/** The spec lists only touchedAt, yet states `{id: ASC}` as the default; both are accepted. */
export const correctionSortings = { touchedAt: Direction, id: Direction };

export const updateFilters = {
  id: z.int(),
  organization: codes(z.int()),
  newsType: oneOrMore(NewsType),
  createdAt: TimestampFilter,
  updatedSince: TimestampFilter,
  locale: oneOrMore(z.string()),
  product: codes(z.string()),
  publicCategory: codes(z.int()),
  brand: codes(z.int()),
  targetGroup: oneOrMore(z.string()),
};
export const updateSortings = { id: Direction, createdAt: Direction, sortOrder: Direction };

export const catalogCategoryFilters = {
  id: z.string(),
  parent: z.string(),
  search: z.strictObject({ query: z.string(), locale: z.string() }),
  deleted: z.boolean(),
};
/** The spec shows no sorting for catalog-categories: none is sent. */
export const catalogCategorySortings = {};

export const brandFilters = {
  id: codes(z.int()),
  search: z.string(),
};
export const brandSortings = { id: Direction, name: Direction };

export const mediaFilters = {
  id: codes(z.union([z.int(), z.string()])),
  product: codes(z.string()),
  kind: oneOrMore(z.enum(['photo', 'frontal', 'link'])),
  photoType: oneOrMore(PhotoType),
  createdAt: TimestampFilter,
  updatedSince: TimestampFilter,
};
export const mediaSortings = { id: Direction, createdAt: Direction };
