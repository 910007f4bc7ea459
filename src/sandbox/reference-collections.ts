// The small, ready-built collections as query-engine collections:
// organizations, corrections, news items (updates), catalog categories and
// brands, with their filters and sortings of spec §4.4-4.8. Where the spec is
// silent: `name`/`vatNr` match exactly ignoring case, `searchName`/`search`
// match a case-insensitive substring, the corrections status `handled` means
// `solved` or `closed`, and plain createdAt timestamps mean "created since".
import type { Dataset } from './dataset.js';
import { anyIn, numberSet, stringSet, textTest, timestampTest } from './filter-values.js';
import type { CorrectionEntry, NewsEntry } from './generate-activity.js';
import type { BrandEntry, CatalogCategoryEntry, OrganizationEntry } from './generate-reference.js';
import { type Collection, FilterValueError, type Path, type Predicate, type SortKey } from './query-engine.js';
import { organizationNumberFilter } from './live-filters.js';
import type { SandboxProfile } from './profiles.js';

type EntryFilter<E> = (value: unknown, path: Path) => (entry: E) => boolean;
type EntrySort<E> =
  { kind: 'number'; key: (entry: E) => number } | { kind: 'string'; key: (entry: E) => string | undefined };

/** A collection over an array of entries whose order is id ascending. */
export class EntryCollection<E> implements Collection {
  readonly #cache: (string | undefined)[] = [];

  constructor(
    readonly name: string,
    private readonly entries: readonly E[],
    private readonly record: (entry: E) => unknown,
    private readonly filters: Record<string, EntryFilter<E>>,
    private readonly sortings: Record<string, EntrySort<E>> = {},
  ) {}

  size(): number {
    return this.entries.length;
  }

  version(): number {
    return 0;
  }

  json(i: number): string {
    return (this.#cache[i] ??= JSON.stringify(this.record(this.entries[i]!)));
  }

  leaf(name: string, value: unknown, path: Path): Predicate {
    const make = this.filters[name];
    if (!make) throw new FilterValueError(path, `the sandbox does not implement filter "${name}"`);
    const test = make(value, path);
    return (i) => test(this.entries[i]!);
  }

  sortKey(name: string): SortKey {
    const sort = this.sortings[name];
    if (!sort) throw new FilterValueError(['sorting', name], `the sandbox does not implement sorting "${name}"`);
    const entries = this.entries;
    return sort.kind === 'number'
      ? { kind: 'number', key: (i) => sort.key(entries[i]!) }
      : { kind: 'string', key: (i) => sort.key(entries[i]!) };
  }
}

/** Matches when the entry's value, or any of its values, is in the filter's list. */
const member =
  <E, T extends number | string>(
    toSet: (value: unknown) => Set<T>,
    get: (e: E) => T | readonly T[] | undefined,
  ): EntryFilter<E> =>
  (value) => {
    const set = toSet(value);
    return (e) => {
      const v = get(e);
      return v === undefined ? false : Array.isArray(v) ? anyIn(set, v) : set.has(v as T);
    };
  };
const ids = <E>(get: (e: E) => number | readonly number[] | undefined) => member(numberSet, get);
const oneOf = <E>(get: (e: E) => string | readonly string[] | undefined) => member(stringSet, get);

const equalsIgnoringCase =
  <E>(get: (e: E) => string): EntryFilter<E> =>
  (value) => {
    const want = String(value).toLowerCase();
    return (e) => get(e).toLowerCase() === want;
  };

const contains =
  <E>(get: (e: E) => string | undefined): EntryFilter<E> =>
  (value, path) => {
    const test = textTest(String(value), 'contains', path);
    return (e) => test(get(e));
  };

const since =
  <E>(get: (e: E) => number): EntryFilter<E> =>
  (value) => {
    const test = timestampTest(value, 'since');
    return (e) => test(get(e));
  };

const metaOf = (r: { meta?: { createdAt: number; updatedAt: number } }) => r.meta ?? { createdAt: 0, updatedAt: 0 };

export function organizationsCollection(
  entries: readonly OrganizationEntry[],
  profile: SandboxProfile = 'spec',
): EntryCollection<OrganizationEntry> {
  return new EntryCollection(
    'organizations',
    entries,
    (e) => e.record,
    {
      id: ids((e) => e.record.id),
      type: oneOf((e) => e.record.type),
      name: equalsIgnoringCase((e) => e.record.name),
      searchName: contains((e) => e.record.name),
      specializations: ids((e) => e.specializations),
      vatNr: (value) => {
        const want = String(value).replace(/\s+/g, '').toUpperCase();
        return (e) => e.vatNr === want;
      },
      apbNr: organizationNumberFilter(profile, 'apbNr'),
      rizivNr: organizationNumberFilter(profile, 'rizivNr'),
    },
    {
      name: { kind: 'string', key: (e) => e.record.name.toLowerCase() },
    },
  );
}

const HANDLED = new Set(['solved', 'closed']);

export function correctionsCollection(entries: readonly CorrectionEntry[]): EntryCollection<CorrectionEntry> {
  return new EntryCollection(
    'corrections',
    entries,
    (e) => e.record,
    {
      product: oneOf((e) => e.record.product),
      status: (value) => (e) =>
        value === 'handled'
          ? HANDLED.has(e.record.status) || (e.record.status as string) === 'handled'
          : e.record.status === value,
      organization: ids((e) => e.organization),
      search: contains((e) => e.record.text),
      locale: oneOf((e) => e.record.locale),
      type: oneOf((e) => e.record.type),
      createdBy: ids((e) => e.createdBy),
      createdAt: since((e) => metaOf(e.record).createdAt),
    },
    {
      touchedAt: { kind: 'number', key: (e) => metaOf(e.record).updatedAt },
    },
  );
}

export function updatesCollection(entries: readonly NewsEntry[]): EntryCollection<NewsEntry> {
  return new EntryCollection(
    'updates',
    entries,
    (e) => e.record,
    {
      id: ids((e) => e.record.id),
      organization: ids((e) => e.record.organization),
      newsType: oneOf((e) => e.record.type),
      createdAt: since((e) => metaOf(e.record).createdAt),
      updatedSince: since((e) => metaOf(e.record).updatedAt),
      locale: oneOf((e) => e.record.locales),
      product: oneOf((e) => e.record.products),
      publicCategory: ids((e) => e.record.publicCategories),
      brand: ids((e) => e.record.brands),
      targetGroup: oneOf((e) => e.record.targetGroups),
    },
    {
      createdAt: { kind: 'number', key: (e) => metaOf(e.record).createdAt },
      sortOrder: { kind: 'number', key: (e) => e.sortOrder },
    },
  );
}

export function catalogCategoriesCollection(
  entries: readonly CatalogCategoryEntry[],
): EntryCollection<CatalogCategoryEntry> {
  return new EntryCollection('catalog-categories', entries, (e) => e.record, {
    id: oneOf((e) => e.record.id),
    parent: oneOf((e) => e.record.parent ?? undefined),
    search: (value, path) => {
      const { query, locale } = value as { query: string; locale: string };
      const test = textTest(query, 'contains', path);
      return (e) => test(e.record.name[locale]);
    },
    deleted: (value) => (e) => e.deleted === value,
  });
}

export function brandsCollection(entries: readonly BrandEntry[]): EntryCollection<BrandEntry> {
  return new EntryCollection(
    'brands',
    entries,
    (e) => e.record,
    {
      id: ids((e) => e.record.id),
      search: contains((e) => e.record.name),
    },
    {
      name: { kind: 'string', key: (e) => e.record.name.toLowerCase() },
    },
  );
}

/** The five reference collections of a dataset, by endpoint name. */
export function referenceCollections(ds: Dataset): Record<string, Collection> {
  return {
    'organizations.query': organizationsCollection(ds.ref.organizations, ds.profile),
    'corrections.query': correctionsCollection(ds.corrections),
    'updates.query': updatesCollection(ds.news),
    'catalog-categories.query': catalogCategoriesCollection(ds.ref.catalogCategories),
    'brands.query': brandsCollection(ds.ref.brands),
  };
}
