// The product resource (spec §2.1 with §2.2-2.8 nested). Objects are loose: the
// service adds fields and we pass them through; the validate transform's
// `unknownFields` can report them. Fields are optional unless the spec makes them the record's identity,
// because the service leaves out what does not apply (`notApplicableField`).
import { z } from 'zod';
import {
  Id,
  Localized,
  BooleanText,
  LocalizedOrText,
  RecordMeta,
  UnixTimestamp,
  gtinCode,
  hsCode,
  measure,
  nationalCode,
  orAlso,
} from '../primitives.js';
import {
  ArtgCategory,
  CannabisCategory,
  CannabisForm,
  CatalogCategoryType,
  Conservation,
  CultivarType,
  DescriptionTag,
  DescriptionType,
  LeafletType,
  MeasureUnit,
  MinorCannabinoid,
  OrganizationType,
  ProductStatus,
  ScheduleCode,
  TargetGroup,
  YesNoUnknown,
} from './enums.js';
import { FrontalPhoto, MediaRecord, Photo } from './media.js';

/** The spec says `value` is an integer; the live service sends floats (0.37 kg). */
const MeasureWithUnit = z.looseObject({ value: z.number().nonnegative(), unit: MeasureUnit });

/**
 * One temperature of conservationMin/Max per scale: the live service sends
 * `{"celsius": {"value": 15, "unit": "°C"}}`, the sandbox's spec profile `{"celsius": 2}`. Each
 * known scale is a measure in its unit, so its column is a number (`conservationMin_celsius`
 * DOUBLE) whichever shape came; another scale is accepted and kept in `_extra`.
 */
const Temperature = z.union([z.number(), z.looseObject({ value: z.number(), unit: z.string() })]);
const ConservationTemperature = z
  .object({
    celsius: measure('°C').optional(),
    fahrenheit: measure('°F').optional(),
    kelvin: measure('K').optional(),
  })
  .catchall(Temperature);

export const PublicCategory = z.looseObject({
  id: Id,
  name: Localized,
  parent: Id.nullable().optional(),
  /** Position among its siblings (live service). */
  order: z.int().optional(),
  meta: RecordMeta.optional(),
});

/** Belgian BCFI/APB category on a product (live service): string ids with leading zeros. */
const RegionalCategory = z.looseObject({
  id: z.string().regex(/^\d+$/, { message: 'must be a string of digits' }),
  name: Localized.optional(),
  parent: z.string().nullable().optional(),
  order: z.int().optional(),
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
  /** "true"/"false" as text (spec: string); a BOOLEAN column. */
  active: BooleanText.optional(),
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

const NamedRef = z.looseObject({ id: Id, name: LocalizedOrText, meta: RecordMeta.optional() });
const CodedRef = z.looseObject({ id: z.string(), name: Localized });

/** The live service sends absent contact fields as null or "". */
const contactText = z.string().nullable().optional();

export const EmbeddedContactInformation = z.looseObject({
  address: contactText,
  zipCode: contactText,
  region: contactText,
  city: contactText,
  country: contactText,
  email: contactText,
  url: contactText,
});

export const EmbeddedOrganization = z.looseObject({
  id: Id,
  name: LocalizedOrText,
  type: OrganizationType,
  meta: RecordMeta.optional(),
  contactInformation: EmbeddedContactInformation.optional(),
});

export const Description = z.looseObject({
  id: Id,
  locales: z.array(z.string()).optional(),
  targetGroups: z.array(TargetGroup).optional(),
  type: DescriptionType.optional(),
  descriptionTag: DescriptionTag.optional(),
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
    // Codes may be null on any product: a replaced product keeps its record with `ean` emptied and
    // the GTIN fields set to null (live service, 2024 onwards).
    ean: z.array(gtinCode(14)).nullable().optional(),
    /** Deprecated for eanGtin14; the US service sends it zero-padded to 14 digits. */
    gtin: gtinCode(14).nullable().optional(),
    eanGtin8: gtinCode(8).nullable().optional(),
    eanGtin12: gtinCode(12).nullable().optional(),
    // One client receives lists of codes here; each is kept (in `_extra` where a column holds one code).
    eanGtin13: orAlso(gtinCode(13), z.array(gtinCode(13)))
      .nullable()
      .optional(),
    eanGtin14: orAlso(gtinCode(14), z.array(gtinCode(14)))
      .nullable()
      .optional(),
    supplierReference: z.string().nullable().optional(),
    hsCode: hsCode().nullable().optional(),
    // National codes of the regional services (live service and the vendor's field glossaries).
    /** Belgium: CNK, always 7 digits. */
    cnk: nationalCode(7, true).nullable().optional(),
    /** France: CIP13 (starts 3400) and ACL13 (starts 3401), 13 digits. */
    cip13: nationalCode(13, true).nullable().optional(),
    acl13: nationalCode(13, true).nullable().optional(),
    /** France: the 7-digit CIP or ACL code, named cipOrAcl7 by integrations and cip7OrAcl7 by the glossary. */
    cipOrAcl7: nationalCode(7, true).nullable().optional(),
    cip7OrAcl7: nationalCode(7, true).nullable().optional(),
    /** Germany: PZN, 8 digits. */
    pzn: nationalCode(8, true).nullable().optional(),
    /** USA: the UPC-A (12 digits, a GTIN-12), and its forms without the check digit (11) and the number system (10). */
    upc12: gtinCode(12).nullable().optional(),
    upc11: nationalCode(11, true).nullable().optional(),
    upc10: nationalCode(10, true).nullable().optional(),
    /** USA: National Drug Code (`12345-678-90`, dashes included). */
    ndc: z.string().nullable().optional(),
    /** USA: books sold in pharmacies; an ISBN-10 may end with `X`. */
    isbn10: z.string().nullable().optional(),
    isbn13: nationalCode(13, true).nullable().optional(),
    /**
     * USA (live service, sparse; not in the spec): text such as "oral" or "topical". Its layout is not
     * documented, so another shape is accepted too and kept in `_extra`.
     */
    routeOfAdministration: orAlso(z.string(), z.unknown()).nullable().optional(),
    /** Australia: ARTG id and SNOMED CT-AU ids (up to 18 digits), kept as sent. */
    artgId: nationalCode(undefined, false).nullable().optional(),
    snomedMp: nationalCode(18, false).nullable().optional(),
    snomedMpp: nationalCode(18, false).nullable().optional(),
    snomedMpuu: nationalCode(18, false).nullable().optional(),
    snomedTp: nationalCode(18, false).nullable().optional(),
    snomedTpp: nationalCode(18, false).nullable().optional(),
    snomedTpuu: nationalCode(18, false).nullable().optional(),
    snomedCtpp: nationalCode(18, false).nullable().optional(),
    /** Australia: whether GST applies. */
    gstApplicable: z.boolean().optional(),
    /** Belgium: BCFI category (string ids with leading zeros). */
    bcfiCategory: RegionalCategory.nullable().optional(),
    /** Belgium: APB category; its layout is not known, so any value passes through. */
    apbCategory: z.unknown().optional(),
    pbs: z.string().optional(),
    fred: z.string().optional(),
    zCode: z.string().optional(),
    conservationLabel: LocalizedOrText.nullable().optional(),
    conservationMin: ConservationTemperature.nullable().optional(),
    conservationMax: ConservationTemperature.nullable().optional(),
    conservation: Conservation.optional(),
    /** A rate: the spec says float, the live service sends integer percentages (0, 6, 21). */
    vat: z.number().nonnegative().optional(),
    publicPrice: z.int().optional(),
    manufacturerPrice: z.int().optional(),
    pharmacistPrice: z.int().optional(),
    /** Deprecated; grams. The spec says integer, the live service sends decimals (12.5). */
    weight: z.number().nonnegative().optional(),
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
    /** One client receives bare brand ids (`[411, 412]`) instead of brand objects; both are kept. */
    brands: z.array(orAlso(NamedRef, Id)).optional(),
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
    if (p.replacement != null && p.status !== 'replaced') {
      ctx.addIssue({
        code: 'custom',
        path: ['replacement'],
        message: `present although status is "${p.status}" (only replaced products have one)`,
      });
    }
  });
export type Product = z.infer<typeof Product>;
