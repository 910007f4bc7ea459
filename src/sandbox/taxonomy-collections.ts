// Public categories, dietary restrictions and colors as query-engine
// collections, built from the same reference tables the products embed, so
// every id found on a product is in its endpoint. Their filters and sortings
// are not shown by the spec: the sandbox implements what catalog-streams
// accepts there (`id`, sorting by id) and media/query over the media that
// media/stream serves.
import type { Dataset } from './dataset.js';
import { numberSet, stringSet } from './filter-values.js';
import { MediaCollection } from './media-collection.js';
import type { Collection } from './query-engine.js';
import { EntryCollection } from './reference-collections.js';
import { COLORS, DIETARY_RESTRICTIONS, words } from './vocabulary.js';

type Coded = { id: string; name: Record<string, string> };

/** Entries in id order (the engine's record order is id ascending). */
const byCode = (entries: readonly Coded[]): Coded[] =>
  [...entries].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

export function taxonomyCollections(ds: Dataset): Record<string, Collection> {
  const publicCategories = new EntryCollection('public-categories', ds.ref.publicCategories, (e) => e, {
    id: (value) => {
      const set = numberSet(value);
      return (e) => set.has(e.id);
    },
  });
  const coded = (name: string, vocabulary: readonly { id: string; name: Parameters<typeof words>[0] }[]) =>
    new EntryCollection(name, byCode(vocabulary.map((x) => ({ id: x.id, name: words(x.name) }))), (e) => e, {
      id: (value) => {
        const set = stringSet(value);
        return (e) => set.has(e.id);
      },
    });
  return {
    'public-categories.query': publicCategories,
    'dietary-restrictions.query': coded('dietary-restrictions', DIETARY_RESTRICTIONS),
    'colors.query': coded('colors', COLORS),
    'media.query': new MediaCollection(ds),
  };
}
