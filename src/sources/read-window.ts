// How a query source reads so that nothing can enter its result while it pages
// (docs: reading a changing catalog; paged-query.ts says why paging needs it).
//
// A record enters a result in two ways: it is created, or a value the filter (or
// the sorting's position) reads changes. So each segment's filter is AND-ed with:
// - `createdAt: {until}`, the second before the run started, where the endpoint
//   filters by createdAt: products created during the run are not part of it (the
//   next incremental run reads them); `createdAt` never changes, so a product
//   updated during the run keeps its place and is delivered (in one version);
// - `updatedSince: {until}` as well when the filter reads anything but `id` and
//   `createdAt`, or the sorting orders by a value that changes: a record updated
//   during the run then leaves the result (the next incremental run reads it)
//   instead of entering it or moving. A filter already bounded that way (the
//   incremental window) needs nothing more.
// A filter that lists at most a page of ids needs none: its one page is one consistent answer.
// Where neither is possible (no createdAt filter, or a filter on a value that
// changes without an updatedSince filter) and the endpoint answers every result
// at once without `page`, the segment is read in that one request: one
// consistent answer. These are the reference tables (organizations, brands,
// categories, colors, dietary restrictions), which are small.
import { endpoints } from '../catalog/index.js';
import type { QueryEndpointName } from '../client/index.js';

/** The last second a run reads: the second before it started (its updatedSince window ends there too). */
export function secondBefore(startedAt: Date): number {
  return Math.floor(startedAt.getTime() / 1000) - 1;
}

/** Filter keys whose values a record never changes. */
const FIXED_FILTER_KEYS = new Set(['id', 'createdAt']);
/** Sort keys a record never changes: offset paging over them only shifts when records leave or enter. */
export const FIXED_SORT_KEYS = new Set(['id', 'createdAt']);

export interface ReadWindow {
  /** The filter to send: the segment's, bounded. */
  filter: unknown;
  /** Read in one request without `page`. */
  whole: boolean;
}

/**
 * The filter a segment of `endpoint` sends, read up to `until`, and whether it is read whole.
 * `pageSize`: a filter listing at most that many ids fits one page, one consistent answer that
 * needs no window (and so reads records updated during the run too: a table's delete check).
 */
export function readWindow(
  endpoint: QueryEndpointName,
  filter: unknown,
  sorting: unknown,
  until: number,
  pageSize = 0,
): ReadWindow {
  const spec = endpoints[endpoint];
  const ids = listedIds(filter);
  if (ids !== undefined && ids <= pageSize) return { filter, whole: false };
  const bounded = updatedUntil(filter, until);
  const changing = readsChangingValues(filter, until) || !sortsByFixedValue(sorting);
  if (changing && !bounded) {
    if ('updatedSince' in spec.filters) return { filter: and(filter, { updatedSince: { until } }), whole: false };
    if (!spec.pageRequired) return { filter, whole: true };
  }
  if (!bounded && 'createdAt' in spec.filters) return { filter: and(filter, { createdAt: { until } }), whole: false };
  if (!bounded && !spec.pageRequired) return { filter, whole: true };
  return { filter, whole: false };
}

/** Whether a record can enter or leave the filter's result by changing (a leaf on anything but id and createdAt). */
function readsChangingValues(filter: unknown, until: number): boolean {
  if (!filter || typeof filter !== 'object') return false;
  const [key, value] = Object.entries(filter as Record<string, unknown>)[0] ?? [];
  if (key === undefined) return false;
  if (key === 'and' || key === 'or') return (value as unknown[]).some((f) => readsChangingValues(f, until));
  if (key === 'not') return readsChangingValues(value, until);
  if (key === 'updatedSince') return !updatedUntil(filter, until);
  return !FIXED_FILTER_KEYS.has(key);
}

/**
 * Whether the filter (or a member of a top-level `and`) ends updatedSince at `until` or before:
 * a record updated during the run then only leaves the result.
 */
function updatedUntil(filter: unknown, until: number): boolean {
  if (!filter || typeof filter !== 'object') return false;
  const f = filter as Record<string, unknown>;
  const since = f.updatedSince as { until?: unknown } | undefined;
  if (since && typeof since === 'object' && typeof since.until === 'number' && since.until <= until) return true;
  return Array.isArray(f.and) && f.and.some((member) => updatedUntil(member, until));
}

/** How many ids an `id` list at the top of the filter (or in a top-level `and`) allows, if it has one. */
export function listedIds(filter: unknown): number | undefined {
  if (!filter || typeof filter !== 'object') return undefined;
  const f = filter as Record<string, unknown>;
  if ('id' in f) return Array.isArray(f.id) ? f.id.length : 1;
  if (!Array.isArray(f.and)) return undefined;
  const counts = f.and.map(listedIds).filter((n): n is number => n !== undefined);
  return counts.length ? Math.min(...counts) : undefined;
}

function sortsByFixedValue(sorting: unknown): boolean {
  if (!sorting || typeof sorting !== 'object') return true;
  const key = Object.keys(sorting as Record<string, unknown>)[0];
  return key === undefined || FIXED_SORT_KEYS.has(key);
}

function and(filter: unknown, bound: Record<string, unknown>): unknown {
  if (filter === undefined) return bound;
  const f = filter as Record<string, unknown>;
  if (Array.isArray(f.and) && Object.keys(f).length === 1) return { and: [...(f.and as unknown[]), bound] };
  return { and: [filter, bound] };
}
