// The records of the taxonomy endpoints the spec only names (§4.9). Shapes are
// taken from where the spec does show them: a public category as §2.2 gives it,
// dietary restrictions and colors as products embed them (§2.1: `id` string
// code, localized `name`). Loose: fields the service adds pass through.
import { z } from 'zod';
import { Id, Localized, LocalizedOrText, RecordMeta, TextOrIntegerId } from '../primitives.js';

/** A public category (§2.2); `parent` is null or absent on a root. */
export const PublicCategoryRecord = z.looseObject({
  id: Id,
  name: Localized,
  parent: Id.nullable().optional(),
  meta: RecordMeta.optional(),
});
export type PublicCategoryRecord = z.infer<typeof PublicCategoryRecord>;

export const DietaryRestriction = z.looseObject({
  id: z.string(),
  name: Localized,
});
export type DietaryRestriction = z.infer<typeof DietaryRestriction>;

export const Color = z.looseObject({
  id: z.string(),
  name: Localized,
});
export type Color = z.infer<typeof Color>;

// The reference tables the vendor's regional docs show beside the spec's (its §1 names active
// ingredients and product families; ATC and, in France, OSP categories are regional). Products
// embed the first two (`activeIngredients[]`, `productFamily[]`: integer id, localized name).

export const ActiveIngredientRecord = z.looseObject({
  id: Id,
  name: LocalizedOrText,
  meta: RecordMeta.optional(),
});
export type ActiveIngredientRecord = z.infer<typeof ActiveIngredientRecord>;

export const ProductFamilyRecord = z.looseObject({
  id: Id,
  name: LocalizedOrText,
  meta: RecordMeta.optional(),
});
export type ProductFamilyRecord = z.infer<typeof ProductFamilyRecord>;

/** An ATC category: its code is the id (`A01AB03`), its parent the code one level up (`A01AB`). */
export const AtcCategoryRecord = z.looseObject({
  id: z.string().min(1),
  name: LocalizedOrText.optional(),
  parent: z.string().nullable().optional(),
  meta: RecordMeta.optional(),
});
export type AtcCategoryRecord = z.infer<typeof AtcCategoryRecord>;

/**
 * A French OSP category: string ids with leading zeros (`"0000018"`), kept exactly as sent.
 * `parent` is an integer in one version of the vendor's docs and a string in another; either is
 * accepted and written as a string.
 */
export const OspCategoryRecord = z.looseObject({
  id: z.string().min(1),
  name: LocalizedOrText.optional(),
  parent: TextOrIntegerId.nullable().optional(),
  order: z.int().optional(),
  meta: RecordMeta.optional(),
});
export type OspCategoryRecord = z.infer<typeof OspCategoryRecord>;
