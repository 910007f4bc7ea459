// Filters and sortings of the reference and news endpoints (spec §4.4-4.8), and
// of media/query and media/stream, whose filters the spec does not show: the
// live service's, as public clients and the vendor's regional docs use them
// (docs/live-service.md, F1, F3), plus id, product, photoType,
// createdAt and updatedSince (our decision, mirrored by the sandbox).
import { z } from 'zod';
import { Direction, TimestampFilter, codes, digitCodes, oneOrMore } from '../filters.js';
import { CorrectionStatusFilterValue, NewsType, OrganizationType, PhotoType } from '../resources/enums.js';

export const organizationFilters = {
  id: codes(z.int()),
  type: OrganizationType,
  name: z.string(),
  searchName: z.string(),
  specializations: codes(z.int()),
  vatNr: z.string(),
  // Belgium's pharmacy (APB) and INAMI/RIZIV numbers, live service only: integers or strings.
  apbNr: digitCodes(z.union([z.int().nonnegative(), z.string().regex(/^\d+$/, { message: 'must be digits' })])),
  rizivNr: digitCodes(z.union([z.int().nonnegative(), z.string().regex(/^\d+$/, { message: 'must be digits' })])),
};
/** The organization filters only the live service has (the sandbox's `spec` profile refuses them). */
export const LIVE_ORGANIZATION_FILTERS = ['apbNr', 'rizivNr'] as const;
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

export const MEDIA_TYPES = ['photo', 'frontal', 'link'] as const;
export const LINK_TYPES = ['app', 'brochure', 'video', 'website'] as const;

export const mediaFilters = {
  id: codes(z.union([z.int(), z.string()])),
  product: codes(z.string()),
  /** The media type; our spec called it `kind`, which the live service does not know (`mediaFilterAliases`). */
  type: oneOrMore(z.enum(MEDIA_TYPES)),
  photoType: oneOrMore(PhotoType),
  published: z.boolean(),
  available: z.boolean(),
  organization: codes(z.int().nonnegative()),
  targetGroup: oneOrMore(z.string().min(1)),
  linkType: oneOrMore(z.enum(LINK_TYPES)),
  locale: oneOrMore(z.string().min(1)),
  touchedAt: TimestampFilter,
  createdAt: TimestampFilter,
  updatedSince: TimestampFilter,
};
/**
 * Deprecated filter names still accepted in pipeline files and code, sent under the service's
 * name with a warning: `kind` was our spec's guess for the media type filter.
 */
export const mediaFilterAliases: Readonly<Record<string, string>> = { kind: 'type' };
/** The deprecated names as typed filters, so code written with them still compiles (and is marked). */
export type DeprecatedMediaFilters = {
  /** @deprecated The live service's media type filter is `type`; `kind` is sent as `type` with a warning. */
  kind: (typeof mediaFilters)['type'];
};
/** The media filters the spec-profile sandbox refuses (as it refused them before the live service was read). */
export const LIVE_MEDIA_FILTERS = [
  'published',
  'available',
  'organization',
  'targetGroup',
  'linkType',
  'locale',
  'touchedAt',
] as const;
export const mediaSortings = { id: Direction, createdAt: Direction, touchedAt: Direction };
