// Filters and sortings of the taxonomy endpoints the spec only names (§4.9):
// public-categories, dietary-restrictions and colors. Their filters and
// sortings are not shown, so only what every documented query endpoint has is
// accepted: `id` (a list of the record's ids) and sorting by id; the empty
// filter (none, or `{}`) returns everything. Anything else is refused before a
// request is sent, with a message saying the documentation shows no such filter
// (see `filtersNotShown` in endpoints/index.ts).
import { z } from 'zod';
import { Direction, codes } from '../filters.js';

/** Public category ids are integers (§2.2). */
export const publicCategoryFilters = { id: codes(z.int()) };
export const publicCategorySortings = { id: Direction };

/** Dietary restriction and color ids are string codes (§2.1 `dietaryRestrictions[]`, `colors[]`). */
export const dietaryRestrictionFilters = { id: codes(z.string().min(1)) };
export const dietaryRestrictionSortings = { id: Direction };

export const colorFilters = { id: codes(z.string().min(1)) };
export const colorSortings = { id: Direction };

// The regional reference tables (vendor's regional docs; not in our spec): their filters and
// sortings are not shown either, so the same rule holds.
/** Active ingredient and product family ids are integers (as products embed them). */
export const activeIngredientFilters = { id: codes(z.int()) };
export const activeIngredientSortings = { id: Direction };

export const productFamilyFilters = { id: codes(z.int()) };
export const productFamilySortings = { id: Direction };

/** ATC codes (`A01AB03`) and OSP ids (`"0000018"`) are strings: sent with their letters and zeros. */
export const atcCategoryFilters = { id: codes(z.string().min(1)) };
export const atcCategorySortings = { id: Direction };

export const ospCategoryFilters = { id: codes(z.string().min(1)) };
export const ospCategorySortings = { id: Direction };
