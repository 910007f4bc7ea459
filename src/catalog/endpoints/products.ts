// products/query (spec §4.2) and products/stream (§4.9, same filters and sortings, no page).
import { z } from 'zod';
import {
  GtinCode,
  NameSorting,
  TimestampFilter,
  codes,
  digitCodes,
  nationalCodes,
  oneOrMore,
  Direction,
} from '../filters.js';
import {
  AllowedSpeciesCode,
  ArtgCategory,
  CannabisCategory,
  CannabisForm,
  Conservation,
  CultivarType,
  MinorCannabinoid,
  Narcotic,
  ProductStatusFilterValue,
  ScheduleCode,
  Terpene,
  YesNoUnknown,
} from '../resources/enums.js';

const range = z
  .strictObject({ min: z.number().optional(), max: z.number().optional() })
  .refine((r) => r.min !== undefined || r.max !== undefined, { message: 'needs `min`, `max` or both' });

export const productFilters = {
  id: codes(z.string().min(1)),
  status: oneOrMore(ProductStatusFilterValue),
  organization: codes(z.int()),
  publicCategory: codes(z.int()),
  catalogCategories: codes(z.string()),
  brand: codes(z.int()),
  productFamily: codes(z.int()),
  search: z.strictObject({ query: z.string(), locale: z.string(), type: z.string().optional() }),
  minimumContent: z.boolean(),
  // The spec shows only `name`; the live service is asked for `name`, `media` and `descriptions`.
  hasContent: z.strictObject({ flag: z.string().min(1), locale: z.string() }),
  ean: digitCodes(GtinCode),
  gtin: digitCodes(z.union([z.string(), z.int()])),
  eanGtin8: digitCodes(GtinCode),
  eanGtin12: digitCodes(GtinCode),
  eanGtin13: digitCodes(GtinCode),
  eanGtin14: digitCodes(GtinCode),
  hsCode: codes(z.union([z.string(), z.int()])),
  artgId: z.string(),
  pbs: codes(z.string()),
  fred: codes(z.string()),
  zCode: codes(z.string()),
  activeIngredient: codes(z.int()),
  conservation: oneOrMore(Conservation),
  allowedSpecies: oneOrMore(AllowedSpeciesCode),
  atcCategory: codes(z.string()),
  gs1Category: codes(z.string()),
  hasCannabisData: z.boolean(),
  cannabisForm: oneOrMore(CannabisForm),
  cannabisCategory: oneOrMore(CannabisCategory),
  cultivarType: oneOrMore(CultivarType),
  thcPercentage: range,
  cbdPercentage: range,
  thcCbdRatio: oneOrMore(z.string().regex(/^\d+(\.\d+)?:\d+(\.\d+)?$/, { message: 'must have the form X:Y' })),
  strain: z.string(),
  terpene: oneOrMore(Terpene),
  minorCannabinoid: oneOrMore(MinorCannabinoid),
  narcotic: Narcotic,
  biocide: YesNoUnknown,
  scheduleCode: ScheduleCode,
  artgCategory: ArtgCategory,
  attributes: codes(z.union([z.int(), z.string()])),
  dietaryRestrictions: codes(z.string()),
  colors: codes(z.string()),
  notApplicableField: oneOrMore(z.string()),
  officialDeletionAt: TimestampFilter,
  createdAt: TimestampFilter,
  updatedSince: TimestampFilter,
  // Filters of the live service that the spec does not list (docs/live-service.md,
  // sources F1-F3): national codes (Belgium, France), linked media, regional fields.
  cnk: nationalCodes(7),
  cip13: nationalCodes(13),
  acl13: nationalCodes(13),
  cipOrAcl7: nationalCodes(7, true),
  // Germany (the vendor's DE docs, issue 40): the PZN, 8 digits.
  pzn: nationalCodes(8),
  media: codes(z.int().nonnegative()),
  ecommerce: oneOrMore(YesNoUnknown),
  apbCategory: oneOrMore(z.string().min(1)),
  prescription: z.boolean(),
  locale: oneOrMore(z.string().min(1)),
};

/** The product filters the spec does not list, only the live service has (the sandbox's `spec` profile refuses them). */
export const LIVE_PRODUCT_FILTERS = [
  'cnk',
  'cip13',
  'acl13',
  'cipOrAcl7',
  'pzn',
  'media',
  'ecommerce',
  'apbCategory',
  'prescription',
  'locale',
] as const;

/**
 * Product fields a code filter matched by prefix is checked against (a public client keeps a
 * product when its cipOrAcl7, cip13, acl13 or one of its ean[] equals the searched code).
 */
export const EXACT_CODE_FIELDS = ['cipOrAcl7', 'cip13', 'acl13', 'ean'] as const;

export const productSortings = {
  id: Direction,
  name: NameSorting,
  pbs: Direction,
  createdAt: Direction,
  touchedAt: Direction,
  statusTouchedAt: Direction,
  status: Direction,
};
