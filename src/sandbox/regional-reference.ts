// The reference tables of the vendor's regional docs that the spec does not name (issue 24):
// active ingredients and product families (the records products embed), ATC categories (the
// tree of the codes products carry in `atcCategory[]`) and, in France only, OSP categories
// (string ids with leading zeros; `parent` an integer in one version of the docs and a string
// in another, so both are served). Each profile serves the tables of REGIONAL_TABLES; names
// keep the region's locales. Their filters are not shown: `id` and sorting by id, like the
// taxonomy endpoints.
import type { Dataset } from './dataset.js';
import { numberSet, stringSet } from './filter-values.js';
import { restrictLocales } from './live-products.js';
import { PROFILE_LOCALES, REGIONAL_TABLES } from './profiles.js';
import type { Collection } from './query-engine.js';
import { EntryCollection } from './reference-collections.js';
import { words } from './vocabulary.js';

type Meta = { createdAt: number; updatedAt: number };
type IdRecord<I> = { id: I; name: unknown; parent?: unknown; order?: number; meta?: Meta };

const byStringId = <T extends { id: string }>(entries: T[]): T[] =>
  entries.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

/**
 * ATC levels: anatomical group (1 character), therapeutic (3), pharmacological (4), chemical (5),
 * substance (7); a veterinary ATCvet code has a `Q` in front of the same levels.
 */
const ATC_LEVELS = [1, 3, 4, 5, 7] as const;

/** Every ATC code the catalog's ingredients carry, with each level above it, as a tree. */
export function atcCategories(ds: Dataset, mask: number): IdRecord<string>[] {
  const out = new Map<string, IdRecord<string>>();
  const meta = ds.ref.ingredients[0]?.embedded.meta;
  for (const ingredient of ds.ref.ingredients) {
    const code = ingredient.words.atc;
    let parent: string | null = null;
    const vet = code.startsWith('Q') ? 1 : 0;
    for (const level of ATC_LEVELS) {
      const length = level + vet;
      if (length > code.length) break;
      const id = code.slice(0, length);
      if (!out.has(id)) {
        const name =
          id === code
            ? ingredient.words.name
            : ([`ATC group ${id}`, `ATC-groep ${id}`, `Groupe ATC ${id}`, `ATC-Gruppe ${id}`] as const);
        out.set(id, { id, name: words(name, mask), parent, ...(meta ? { meta } : {}) });
      }
      parent = id;
    }
  }
  return byStringId([...out.values()]);
}

/** Roots `0000003`, `0000006`..., children `1A02B04`...; a child's parent alternates integer and string. */
export function ospCategories(ds: Dataset, mask: number): IdRecord<string>[] {
  const meta = ds.ref.publicCategories[0]?.meta;
  const out: IdRecord<string>[] = [];
  const roots = 8;
  for (let r = 1; r <= roots; r++) {
    const rootId = String(r * 3).padStart(7, '0');
    const label = (fr: string, en: string) => words([en, en, fr, en], mask);
    out.push({
      id: rootId,
      name: label(`Rayon ${r}`, `Section ${r}`),
      parent: null,
      order: r,
      ...(meta ? { meta } : {}),
    });
    for (let c = 1; c <= 3; c++) {
      const id = `${r}A${String(c).padStart(2, '0')}B${String(r + c).padStart(2, '0')}`;
      // One version of the docs gives `parent` as an integer (the root's zeros lost), another as a string.
      const parent = (r + c) % 2 === 0 ? r * 3 : rootId;
      out.push({
        id,
        name: label(`Rayon ${r}.${c}`, `Section ${r}.${c}`),
        parent,
        order: c,
        ...(meta ? { meta } : {}),
      });
    }
  }
  return byStringId(out);
}

/** The regional reference collections the dataset's profile serves, by endpoint name. */
export function regionalCollections(ds: Dataset): Record<string, Collection> {
  const served = REGIONAL_TABLES[ds.profile];
  if (served.length === 0) return {};
  const mask = PROFILE_LOCALES[ds.profile].mask;
  const localized = <T extends { name: unknown }>(e: T): T => ({ ...e, name: restrictLocales(e.name, mask) });
  const numeric = (name: string, entries: IdRecord<number>[]) =>
    new EntryCollection(name, entries, (e) => e, {
      id: (value) => {
        const set = numberSet(value);
        return (e) => set.has(e.id);
      },
    });
  const coded = (name: string, entries: IdRecord<string>[]) =>
    new EntryCollection(name, entries, (e) => e, {
      id: (value) => {
        const set = stringSet(value);
        return (e) => set.has(e.id);
      },
    });
  const all: Record<string, () => Collection> = {
    'active-ingredients.query': () =>
      numeric(
        'active-ingredients',
        ds.ref.ingredients.map((i) => localized(i.embedded)),
      ),
    'product-families.query': () =>
      numeric(
        'product-families',
        ds.ref.families.map((f) => localized(f.embedded)),
      ),
    'atc-categories.query': () => coded('atc-categories', atcCategories(ds, mask)),
    'osp-categories.query': () => coded('osp-categories', ospCategories(ds, mask)),
  };
  return Object.fromEntries(served.map((name) => [name, all[name]!()]));
}
