// Filters and sortings of the adversarial API (spec §4.1, §4.2), checked as a strict service
// would: an unknown name or a bad value is a 422 with its violation named, never a guess.
// Supported: filters `id`, `status`, `createdAt`, `updatedSince`, `and`/`or`/`not`; sortings
// `id`, `createdAt`, `touchedAt` (= updatedAt), `status`. Ties are the caller's to order.
import { FILTER_STATUSES, type ProductState, type Prng, shuffle } from './adversarial-catalog.js';

export interface Violation {
  path: string;
  message: string;
}

export type Matcher = (p: ProductState) => boolean;

/** Identifier codes one query may hold (spec §8). */
const MAX_CODES = 1000;

/** A timestamp filter: a unix timestamp means "since"; `{from, until}` is inclusive, either may be left out. */
function timeMatcher(value: unknown, path: string, v: Violation[], read: (p: ProductState) => number): Matcher {
  if (Number.isSafeInteger(value)) return (p) => read(p) >= (value as number);
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const { from, until, ...rest } = value as Record<string, unknown>;
    if (Object.keys(rest).length > 0) v.push({ path, message: `unknown keys ${Object.keys(rest).join(', ')}` });
    if (from !== undefined && !Number.isSafeInteger(from))
      v.push({ path: `${path}.from`, message: 'must be an integer' });
    if (until !== undefined && !Number.isSafeInteger(until))
      v.push({ path: `${path}.until`, message: 'must be an integer' });
    const lo = (from as number | undefined) ?? -Infinity;
    const hi = (until as number | undefined) ?? Infinity;
    return (p) => read(p) >= lo && read(p) <= hi;
  }
  v.push({ path, message: 'must be a unix timestamp or {from, until}' });
  return () => false;
}

function listOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [value];
}

/** A matcher for `filter`, with the violations found; removed products never match. */
export function compileFilter(filter: unknown, path = 'filter', v: Violation[] = []): Matcher {
  const inner = compileLeaf(filter, path, v);
  return path === 'filter' ? (p) => !p.removed && inner(p) : inner;
}

function compileLeaf(filter: unknown, path: string, v: Violation[]): Matcher {
  if (!filter || typeof filter !== 'object' || Array.isArray(filter) || Object.keys(filter).length !== 1) {
    v.push({ path, message: 'must be an object with exactly one filter name' });
    return () => false;
  }
  const [key, value] = Object.entries(filter as Record<string, unknown>)[0]!;
  const at = `${path}.${key}`;
  switch (key) {
    case 'and':
    case 'or': {
      if (!Array.isArray(value) || value.length === 0) {
        v.push({ path: at, message: 'must be a non-empty list of filters' });
        return () => false;
      }
      const parts = value.map((f, i) => compileLeaf(f, `${at}[${i}]`, v));
      return key === 'and' ? (p) => parts.every((m) => m(p)) : (p) => parts.some((m) => m(p));
    }
    case 'not': {
      const m = compileLeaf(value, at, v);
      return (p) => !m(p);
    }
    case 'id': {
      const ids = listOf(value);
      if (ids.length > MAX_CODES) v.push({ path: at, message: `at most ${MAX_CODES} identifier codes` });
      if (ids.some((x) => typeof x !== 'string')) v.push({ path: at, message: 'must be product ids (strings)' });
      const set = new Set(ids);
      return (p) => set.has(p.id);
    }
    case 'status': {
      const xs = listOf(value);
      for (const x of xs)
        if (!FILTER_STATUSES.includes(x as never))
          v.push({ path: at, message: `must be one or more of ${FILTER_STATUSES.join(', ')}` });
      const set = new Set(xs);
      return (p) => set.has(p.status);
    }
    case 'createdAt':
      return timeMatcher(value, at, v, (p) => p.createdAt);
    case 'updatedSince':
      return timeMatcher(value, at, v, (p) => p.updatedAt);
    default:
      v.push({
        path: at,
        message: 'unknown filter (this server knows id, status, createdAt, updatedSince, and, or, not)',
      });
      return () => false;
  }
}

const SORT_KEYS: Record<string, (p: ProductState) => string | number> = {
  id: (p) => p.id,
  createdAt: (p) => p.createdAt,
  touchedAt: (p) => p.updatedAt,
  status: (p) => p.status,
};

export interface Sorter {
  key: string;
  direction: 1 | -1;
}

export function compileSorting(sorting: unknown, v: Violation[]): Sorter {
  if (!sorting || typeof sorting !== 'object' || Array.isArray(sorting) || Object.keys(sorting).length !== 1) {
    v.push({ path: 'sorting', message: 'must be an object with exactly one sorting name' });
    return { key: 'id', direction: 1 };
  }
  const [key, dir] = Object.entries(sorting as Record<string, unknown>)[0]!;
  if (!(key in SORT_KEYS)) v.push({ path: `sorting.${key}`, message: 'unknown sorting' });
  if (dir !== 'ASC' && dir !== 'DESC') v.push({ path: `sorting.${key}`, message: 'must be ASC or DESC' });
  return { key: key in SORT_KEYS ? key : 'id', direction: dir === 'DESC' ? -1 : 1 };
}

/**
 * The matching products in the sorting's order. Ties (every sorting but `id` has them) are
 * shuffled with `tieOrder` first, so a stable sort leaves them in a new order per request.
 */
export function sortProducts(products: ProductState[], s: Sorter, tieOrder: Prng | undefined): ProductState[] {
  const key = SORT_KEYS[s.key]!;
  const xs = tieOrder ? shuffle(products.slice(), tieOrder) : products.slice();
  return xs.sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    return ka < kb ? -s.direction : ka > kb ? s.direction : 0;
  });
}
