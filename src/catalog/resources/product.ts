// The product resource (spec §2.1 with §2.2-2.8 nested). Objects are loose: the
// service adds fields and we pass them through; the validate transform's
// `unknownFields` can report them. Fields are optional unless the spec makes them the record's identity,
// because the service leaves out what does not apply (`notApplicableField`).
import { z } from 'zod';
import { Id, Localized, RecordMeta, UnixTimestamp, gtinInteger } from '../primitives.js';
import {
  AllowedSpeciesCode,
  ArtgCategory,
  CannabisCategory,
  CannabisForm,
  CatalogCategoryType,
  Conservation,
  CultivarType,
  LeafletType,
  MinorCannabinoid,
  OrganizationType,
  ProductStatus,
  ScheduleCode,
  YesNoUnknown,
} from './enums.js';
import { FrontalPhoto, MediaRecord, Photo } from './media.js';

const MeasureWithUnit = z.looseObject({ value: z.int(), unit: z.string() });

export const PublicCategory = z.looseObject({
  id: Id,
  name: Localized,
  parent: Id.nullable().optional(),
  meta: RecordMeta.optional(),
});

export const CatalogCategory = z.looseObject({
  id: z.string(),
  name: Localized,
  description: Localized.optional(),
  parent: z.string().nullable(),
  order: z.int().optional(),
  type: CatalogCategoryType.optional(),
});
export type CatalogCategory = z.infer<typeof CatalogCategory>;

export const Gs1Category = z.looseObject({
  code: z.string(),
  level: z.int().optional(),
  parent: z.string().nullable().optional(),
  title: z.string().optional(),
  definition: z.string().optional(),
  definitionExcludes: z.string().optional(),
  active: z.string().optional(),
  meta: RecordMeta.optional(),
});

const PercentageEntry = <T extends z.ZodType>(name: T) => z.looseObject({ name, percentage: z.number().nullable() });

export const CannabisData = z.looseObject({
  thcPercentage: z.number().nullable().optional(),
  cbdPercentage: z.number().nullable().optional(),
  thcCbdRatio: z
    .string()
    .regex(/^\d+(\.\d+)?:\d+(\.\d+)?$/, { message: 'must have the form X:Y' })
    .nullable()
    .optional(),
  cannabisForm: CannabisForm.nullable().optional(),
  cannabisCategory: CannabisCategory.nullable().optional(),
  strain: z.string().nullable().optional(),
  cultivarType: CultivarType.nullable().optional(),
  importerLicenseNumber: z.string().nullable().optional(),
  manufacturerLicenseNumber: z.string().nullable().optional(),
  minorCannabinoids: z.array(PercentageEntry(MinorCannabinoid)).optional(),
  terpenes: z.array(PercentageEntry(z.string())).optional(),
});

const NamedRef = z.looseObject({ id: Id, name: Localized, meta: RecordMeta.optional() });
const CodedRef = z.looseObject({ id: z.string(), name: Localized });

export const EmbeddedContactInformation = z.looseObject({
  address: z.string().optional(),
  zipCode: z.string().optional(),
  region: z.string().optional(),
  city: z.string().optional(),
  country: z.string().optional(),
  email: z.string().optional(),
  url: z.string().optional(),
});

export const EmbeddedOrganization = z.looseObject({
  id: Id,
  name: Localized,
  type: OrganizationType,
  meta: RecordMeta.optional(),
  contactInformation: EmbeddedContactInformation.optional(),
});

export const Description = z.looseObject({
  id: Id,
  locales: z.array(z.string()).optional(),
  targetGroups: z.array(z.string()).optional(),
  type: z.string().optional(),
  content: Localized,
  meta: RecordMeta.optional(),
});

export const Leaflet = z.looseObject({
  id: Id,
  locales: z.array(z.string()).optional(),
  type: LeafletType,
  url: Localized,
  meta: RecordMeta.optional(),
});

export const Product = z
  .looseObject({
    id: z.string().min(1),
    status: ProductStatus,
    replacement: z.string().optional(),
    name: Localized.optional(),
    seoName: Localized.optional(),
    requiresLegalText: z.boolean().optional(),
    isANutritionSupplement: z.boolean().nullable().optional(),
    biocide: YesNoUnknown.optional(),
    scheduleCode: ScheduleCode.optional(),
    artgCategory: ArtgCategory.optional(),
    officialDeletionAt: UnixTimestamp.nullable().optional(),
    ean: z.array(gtinInteger(14)).optional(),
    gtin: z.string().optional(),
    eanGtin8: gtinInteger(8).optional(),
    eanGtin12: gtinInteger(12).optional(),
    eanGtin13: gtinInteger(13).optional(),
    eanGtin14: gtinInteger(14).optional(),
    supplierReference: z.string().optional(),
    hsCode: z.int().nonnegative().optional(),
    artgId: z.string().optional(),
    pbs: z.string().optional(),
    fred: z.string().optional(),
    zCode: z.string().optional(),
    conservationLabel: z.unknown().optional(),
    conservationMin: z.looseObject({}).nullable().optional(),
    conservationMax: z.looseObject({}).nullable().optional(),
    conservation: Conservation.optional(),
    vat: z.number().optional(),
    publicPrice: z.int().optional(),
    manufacturerPrice: z.int().optional(),
    pharmacistPrice: z.int().optional(),
    weight: z.int().optional(),
    weightWithUnit: MeasureWithUnit.optional(),
    width: z.int().optional(),
    widthWithUnit: MeasureWithUnit.optional(),
    length: z.int().optional(),
    lengthWithUnit: MeasureWithUnit.optional(),
    depth: z.int().optional(),
    depthWithUnit: MeasureWithUnit.optional(),
    packageContent: z.string().optional(),
    packageQuantity: z.int().optional(),
    packagingUnit: z.string().optional(),
    atc: z.string().optional(),
    atcCategory: z.array(z.string()).optional(),
    notApplicableField: z.array(z.string()).optional(),
    publicCategories: z.array(PublicCategory).optional(),
    catalogCategories: z.array(CatalogCategory).optional(),
    gs1Category: Gs1Category.nullable().optional(),
    hasCannabisData: z.boolean().optional(),
    cannabisData: CannabisData.nullable().optional(),
    brands: z.array(NamedRef).optional(),
    productFamily: z.array(NamedRef).optional(),
    attributes: z.array(z.unknown()).optional(),
    dietaryRestrictions: z.array(CodedRef).optional(),
    colors: z.array(CodedRef).optional(),
    deleted: z.boolean().optional(),
    organizations: z.array(EmbeddedOrganization).optional(),
    activeIngredients: z.array(NamedRef).optional(),
    allowedSpecies: z.array(z.looseObject({ id: Id, name: Localized })).optional(),
    photos: z.array(Photo).optional(),
    frontals: z.array(FrontalPhoto).optional(),
    links: z.array(MediaRecord).optional(),
    descriptions: z.array(Description).optional(),
    leaflets: z.array(Leaflet).optional(),
    meta: RecordMeta,
    embedUrl: z.string().optional(),
    publicPageUrl: z.string().optional(),
  })
  .superRefine((p, ctx) => {
    // Spec §3 rule 1: `replacement` is present only when status is `replaced`.
    if (p.replacement !== undefined && p.status !== 'replaced') {
      ctx.addIssue({ code: 'custom', path: ['replacement'], message: `present although status is "${p.status}" (only replaced products have one)` });
    }
  });
export type Product = z.infer<typeof Product>;

