// The meaning of filter parameters, shared by every collection (ARCHITECTURE.md, API rules where
// the spec is silent): a list of values matches any of them; a timestamp is
// either a plain value ("since" for createdAt/updatedSince, equality for dates
// such as officialDeletionAt) or `{from, until}`, both inclusive and each
// optional; text search is a case-insensitive substring unless asked otherwise.
import { FilterValueError, type Path, type Predicate } from './query-engine.js';

/** A "one or more" parameter as a list. */
export function listOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [value];
}

/** A set of the listed strings. */
export function stringSet(value: unknown): Set<string> {
  return new Set(listOf(value).map(String));
}

/**
 * A set of the listed numeric codes. Digit strings count as their number, so
 * `"0012345678905"` and `12345678905` are the same EAN (the leading zeros are
 * only formatting). Values that are not numbers match nothing.
 */
export function numberSet(value: unknown): Set<number> {
  const out = new Set<number>();
  for (const v of listOf(value)) {
    const n = typeof v === 'number' ? v : /^\d+$/.test(String(v)) ? Number(v) : NaN;
    if (Number.isFinite(n)) out.add(n);
  }
  return out;
}

export type PlainTimestamp = 'since' | 'equal';

/**
 * A test for a timestamp filter parameter (0 = the record has no such time,
 * never matches). A plain value means "at or after" (`since`) or "exactly"
 * (`equal`); `{from, until}` is inclusive at both ends.
 */
export function timestampTest(value: unknown, plain: PlainTimestamp): (t: number) => boolean {
  if (typeof value === 'number') return plain === 'since' ? (t) => t >= value : (t) => t === value && value !== 0;
  const { from, until } = value as { from?: number; until?: number };
  const lo = from ?? 0;
  const hi = until ?? Number.MAX_SAFE_INTEGER;
  return (t) => t !== 0 && t >= lo && t <= hi;
}

/** A predicate over record indexes for a timestamp filter on column `get`. */
export function timestampPredicate(value: unknown, plain: PlainTimestamp, get: (i: number) => number): Predicate {
  const test = timestampTest(value, plain);
  return (i) => test(get(i));
}

/** Inclusive `{min, max}` over a nullable number; null never matches. */
export function rangeTest(value: unknown): (x: number | null | undefined) => boolean {
  const { min, max } = value as { min?: number; max?: number };
  return (x) => x !== null && x !== undefined && (min === undefined || x >= min) && (max === undefined || x <= max);
}

export const SEARCH_TYPES = ['contains', 'startsWith', 'exact'] as const;

/** Case-insensitive text match: `contains` (default), `startsWith` or `exact`. */
export function textTest(query: string, type: string | undefined, path: Path): (text: string | undefined) => boolean {
  const needle = query.toLowerCase();
  switch (type ?? 'contains') {
    case 'contains':
      return (t) => t !== undefined && t.toLowerCase().includes(needle);
    case 'startsWith':
      return (t) => t !== undefined && t.toLowerCase().startsWith(needle);
    case 'exact':
      return (t) => t !== undefined && t.toLowerCase() === needle;
    default:
      throw new FilterValueError(path, `"${type}" is not allowed; allowed: ${SEARCH_TYPES.join(', ')}`);
  }
}

/** True when any of `items` is in `set`. */
export function anyIn<T>(set: Set<T>, items: readonly T[] | undefined): boolean {
  if (!items) return false;
  for (const x of items) if (set.has(x)) return true;
  return false;
}
