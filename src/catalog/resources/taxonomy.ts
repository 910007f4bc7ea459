// The records of the taxonomy endpoints the spec only names (§4.9). Shapes are
// taken from where the spec does show them: a public category as §2.2 gives it,
// dietary restrictions and colors as products embed them (§2.1: `id` string
// code, localized `name`). Loose: fields the service adds pass through.
import { z } from 'zod';
import { Id, Localized, RecordMeta } from '../primitives.js';

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
