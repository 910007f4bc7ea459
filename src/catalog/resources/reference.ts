// The reference resources returned by their own query endpoints: organizations
// (query form, §2.6), brands (§2.9), corrections (§2.10), news items (§2.11).
// Catalog categories (§2.3) share the product's nested schema.
import { z } from 'zod';
import { Id, Localized, RecordMeta } from '../primitives.js';
import { CorrectionStatus, CorrectionType, OrganizationType } from './enums.js';

/** The live service sends absent contact fields as null or "". */
const contactText = z.string().nullable().optional();

export const Organization = z.looseObject({
  id: Id,
  name: z.string(),
  type: OrganizationType,
  brands: z.array(Id).optional(),
  productFamilies: z.array(Id).optional(),
  meta: RecordMeta.optional(),
  contactInformation: z
    .looseObject({
      address: contactText,
      zipCode: contactText,
      city: contactText,
      region: z.looseObject({ value: z.string(), label: z.string() }).nullable().optional(),
      country: contactText,
      email: contactText,
      url: contactText,
    })
    .optional(),
});
export type Organization = z.infer<typeof Organization>;

export const Brand = z.looseObject({
  id: Id,
  name: z.string(),
  logo: z.string().nullable().optional(),
  meta: RecordMeta.optional(),
});
export type Brand = z.infer<typeof Brand>;

export const Correction = z.looseObject({
  id: Id,
  product: z.string(),
  locale: z.string().optional(),
  type: CorrectionType.optional(),
  text: z.string().optional(),
  status: CorrectionStatus,
  meta: RecordMeta.optional(),
});
export type Correction = z.infer<typeof Correction>;

export const NewsItem = z.looseObject({
  id: Id,
  type: z.string(),
  organization: Id.optional(),
  title: Localized.optional(),
  content: z
    .array(
      z.looseObject({
        shortDescription: Localized.optional(),
        description: Localized.optional(),
        media: z.array(z.looseObject({ url: z.string(), type: z.string() })).optional(),
      }),
    )
    .optional(),
  locales: z.array(z.string()).optional(),
  meta: RecordMeta.optional(),
});
export type NewsItem = z.infer<typeof NewsItem>;
