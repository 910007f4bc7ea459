// Media (photos, frontals, links) as a query-engine collection for
// media/stream. The spec shows no media filters; ours (src/catalog
// mediaFilters) are the live service's (type, published, available,
// organization, targetGroup, linkType, locale, touchedAt: live-filters.ts)
// and id, product, photoType, createdAt and updatedSince, with sortings id,
// createdAt and touchedAt. The spec profile also takes the old `kind`.
import type { Dataset } from './dataset.js';
import { numberSet, stringSet, timestampPredicate } from './filter-values.js';
import { KIND_LINK, PHOTO_TYPES, mediaInfo } from './generate-media.js';
import { liveMediaLeaf } from './live-filters.js';
import { type Collection, FilterValueError, type Path, type Predicate, type SortKey } from './query-engine.js';

export class MediaCollection implements Collection {
  readonly name = 'media';

  constructor(private readonly ds: Dataset) {}

  size(): number {
    return this.ds.mediaCount;
  }

  version(): number {
    return this.ds.version;
  }

  json(m: number): string {
    return this.ds.mediaJson(m);
  }

  leaf(name: string, value: unknown, path: Path): Predicate {
    const ds = this.ds;
    const live = liveMediaLeaf(ds, name, value);
    if (live) return live;
    switch (name) {
      case 'id': {
        const set = numberSet(value);
        return (m) => set.has(m + 1);
      }
      case 'product': {
        const set = new Set([...stringSet(value)].map((id) => ds.productIndex(id)));
        return (m) => ds.mediaProductIndexes(m).some((p) => set.has(p));
      }
      case 'photoType': {
        const set = stringSet(value);
        return (m) => {
          const info = ds.mediaInfo[m]!;
          return mediaInfo.kind(info) !== KIND_LINK && set.has(PHOTO_TYPES[mediaInfo.photoType(info)]!);
        };
      }
      case 'createdAt':
        return timestampPredicate(value, 'since', (m) => ds.mediaCreatedAt[m]!);
      case 'updatedSince':
        return timestampPredicate(value, 'since', (m) => ds.mediaUpdatedAt[m]!);
      default:
        throw new FilterValueError(path, `the sandbox does not implement filter "${name}"`);
    }
  }

  sortKey(name: string): SortKey {
    if (name === 'createdAt') return { kind: 'number', key: (m) => this.ds.mediaCreatedAt[m]! };
    if (name === 'touchedAt') return { kind: 'number', key: (m) => this.ds.mediaUpdatedAt[m]! };
    throw new FilterValueError(['sorting', name], `the sandbox does not implement sorting "${name}"`);
  }
}
