// Evaluates a query against one collection (products, media, brands, ...):
// compiles the filter tree into a predicate over record indexes, scans, sorts,
// and caches the ordered index list so paging through a large result does not
// rescan per page. Sorting is stable and total: ties are broken by id ascending
// (record index order), so asking again with the same sorting gives the same
// order and a client can resume a cut stream by skipping indexes.

export type Predicate = (i: number) => boolean;
export type Path = (string | number)[];

/** A sort key per record: numbers (timestamps, ranks) or strings (names; undefined sorts last in ASC). */
export type SortKey =
  { kind: 'number'; key: (i: number) => number } | { kind: 'string'; key: (i: number) => string | undefined };

/** A filter value that passed the schema but that this collection cannot accept (422). */
export class FilterValueError extends Error {
  constructor(
    readonly path: Path,
    message: string,
  ) {
    super(message);
  }
}

/** What the engine needs from one kind of record. Record index order is id ascending. */
export interface Collection {
  readonly name: string;
  size(): number;
  /** Changes whenever records change (touch), so cached results are not reused across it. */
  version(): number;
  /** A predicate for leaf filter `name` with its (schema-valid) `value`; may throw FilterValueError. */
  leaf(name: string, value: unknown, path: Path): Predicate;
  /** The key of a sorting other than `id`. */
  sortKey(name: string, param: unknown): SortKey;
  /** The record as JSON text. */
  json(i: number): string;
  /** Records taken out of every result (the sandbox's `hide` admin route); absent or empty: none. */
  hidden?(): ReadonlySet<number>;
}

export interface QuerySpec {
  filter?: unknown;
  /** `{name: 'ASC'|'DESC'}` or `{name: {direction, ...}}`; absent means id ascending. */
  sorting?: Record<string, unknown>;
}

const asObject = (v: unknown) => v as Record<string, unknown>;

export function compileFilter(collection: Collection, filter: unknown, path: Path = ['filter']): Predicate {
  const [key, value] = Object.entries(asObject(filter))[0]!;
  if (key === 'and' || key === 'or') {
    const parts = (value as unknown[]).map((f, i) => compileFilter(collection, f, [...path, key, i]));
    if (parts.length === 1) return parts[0]!;
    return key === 'and' ? (i) => parts.every((p) => p(i)) : (i) => parts.some((p) => p(i));
  }
  if (key === 'not') {
    const inner = compileFilter(collection, value, [...path, key]);
    return (i) => !inner(i);
  }
  return collection.leaf(key, value, [...path, key]);
}

/** Direction and parameter of a sorting: `{createdAt: 'DESC'}` or `{name: {direction: 'ASC', locale: 'en'}}`. */
function sortingParts(sorting: Record<string, unknown>): { name: string; desc: boolean; param: unknown } {
  const [name, param] = Object.entries(sorting)[0]!;
  const direction = typeof param === 'string' ? param : (asObject(param).direction as string);
  return { name, desc: direction === 'DESC', param };
}

/** Sorts matching indexes (given ascending) by key, ties by index ascending. */
export function sortIndexes(matches: Uint32Array, key: SortKey, desc: boolean, universe: number): Uint32Array {
  const n = matches.length;
  if (key.kind === 'number') {
    let max = 0;
    const keys = new Float64Array(n);
    for (let j = 0; j < n; j++) {
      const k = key.key(matches[j]!);
      keys[j] = k;
      if (k > max) max = k;
    }
    // Fast path: pack (key, index) into one float and let the typed array sort natively.
    if (Number.isSafeInteger((max + 1) * universe + universe)) {
      const packed = new Float64Array(n);
      for (let j = 0; j < n; j++) packed[j] = (desc ? max - keys[j]! : keys[j]!) * universe + matches[j]!;
      packed.sort();
      const out = new Uint32Array(n);
      for (let j = 0; j < n; j++) out[j] = packed[j]! % universe;
      return out;
    }
    const order = Array.from({ length: n }, (_, j) => j);
    order.sort((a, b) => (desc ? keys[b]! - keys[a]! : keys[a]! - keys[b]!) || matches[a]! - matches[b]!);
    return Uint32Array.from(order, (j) => matches[j]!);
  }
  const keys: (string | undefined)[] = new Array(n);
  for (let j = 0; j < n; j++) keys[j] = key.key(matches[j]!);
  const order = Array.from({ length: n }, (_, j) => j);
  // Missing values count as the greatest: last in ASC, first in DESC (as SQL's NULLS LAST/FIRST default).
  const cmp = (a: string | undefined, b: string | undefined) =>
    a === b ? 0 : a === undefined ? 1 : b === undefined ? -1 : a < b ? -1 : 1;
  order.sort((a, b) => (desc ? cmp(keys[b], keys[a]) : cmp(keys[a], keys[b])) || matches[a]! - matches[b]!);
  return Uint32Array.from(order, (j) => matches[j]!);
}

/** Runs filter and sorting over a collection: every matching index, in order. */
export function evaluate(collection: Collection, query: QuerySpec): Uint32Array {
  const n = collection.size();
  const filtered = query.filter === undefined ? undefined : compileFilter(collection, query.filter);
  const hidden = collection.hidden?.();
  const predicate = hidden && hidden.size > 0 ? (i: number) => !hidden.has(i) && (!filtered || filtered(i)) : filtered;
  let matches: Uint32Array;
  if (!predicate) {
    matches = new Uint32Array(n);
    for (let i = 0; i < n; i++) matches[i] = i;
  } else {
    const buffer = new Uint32Array(n);
    let count = 0;
    for (let i = 0; i < n; i++) if (predicate(i)) buffer[count++] = i;
    matches = buffer.slice(0, count);
  }
  if (!query.sorting) return matches;
  const { name, desc, param } = sortingParts(query.sorting);
  if (name === 'id') return desc ? matches.reverse() : matches;
  return sortIndexes(matches, collection.sortKey(name, param), desc, n);
}

export interface QueryCacheLimits {
  /** Queries kept (default 256). */
  maxEntries?: number;
  /** Bytes kept: the indexes (4 bytes each) and the keys (the filter's JSON, 2 bytes a character); default 48 MiB. */
  maxBytes?: number;
}

/**
 * LRU of evaluated queries, bounded by entries and by bytes. Its keys count: a shared sandbox
 * asked 80 distinct 1 MB filters that matched nothing kept 85 MB of keys when only the indexes
 * were counted (empty results weigh nothing), and never shrank.
 */
export class QueryCache {
  readonly #entries = new Map<string, { result: Uint32Array; bytes: number }>();
  #bytes = 0;
  #evaluations = 0;
  #recordsFiltered = 0;
  readonly #maxEntries: number;
  readonly #maxBytes: number;

  constructor(limits: QueryCacheLimits = {}) {
    this.#maxEntries = limits.maxEntries ?? 256;
    this.#maxBytes = limits.maxBytes ?? 48 * 1024 * 1024;
  }

  /** What the cache holds now. */
  get size(): { entries: number; bytes: number } {
    return { entries: this.#entries.size, bytes: this.#bytes };
  }

  /**
   * Work done so far: queries evaluated (cache misses) and records a filter was tested on (the
   * collection's size per filtered evaluation); tests measure the CPU budget with it.
   */
  get work(): { evaluations: number; recordsFiltered: number } {
    return { evaluations: this.#evaluations, recordsFiltered: this.#recordsFiltered };
  }

  get(collection: Collection, query: QuerySpec): Uint32Array {
    const key = `${collection.name}|${collection.version()}|${JSON.stringify(query.filter ?? null)}|${JSON.stringify(query.sorting ?? null)}`;
    const hit = this.#entries.get(key);
    if (hit) {
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      return hit.result;
    }
    this.#evaluations++;
    if (query.filter !== undefined) this.#recordsFiltered += collection.size();
    const result = evaluate(collection, query);
    const bytes = key.length * 2 + result.byteLength;
    // One query larger than the whole budget is answered, not kept.
    if (bytes > this.#maxBytes) return result;
    this.#entries.set(key, { result, bytes });
    this.#bytes += bytes;
    for (const [k, v] of this.#entries) {
      if ((this.#bytes <= this.#maxBytes && this.#entries.size <= this.#maxEntries) || k === key) break;
      this.#entries.delete(k);
      this.#bytes -= v.bytes;
    }
    return result;
  }

  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }
}
