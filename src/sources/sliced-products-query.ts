// Counting products.query and media.query matches past the 10000 a query reaches (spec §8; the
// service caps `meta.total` at 10000 too, so a total of 10000 or more means "maybe more"), for
// planning (`--dry-run`, plan.ts). The extract itself needs no windows: it reads page 0 of what
// is left each time (createdat-query.ts).
//
// The query is sliced into `createdAt` windows `{from, until}` (inclusive unix seconds), each
// AND-ed with the user's filter, until every window holds fewer than 10000 matches. Windows are
// disjoint integer ranges that cover the whole span, so every product falls in exactly one.
//
// Probe cost (each probe is a request against the budget): 2 probes of 10 records (createdAt
// ASC, then DESC) find the span; windows are then walked in ascending order, each probed once,
// the next one's width from the density just seen (aiming at 80 % of the cap, growing at most 4x
// per step); a probe that comes back capped halves the window.
//
// A single second holding 10000 or more matches cannot be sliced further: that fails with a
// DataError naming the instant and pointing at the stream endpoint.
import { MAX_REACHABLE_RESULTS, isoSeconds } from '../catalog/index.js';
import type { CatalogRecord, LazyPage } from '../client/index.js';
import { ApiError } from '../client/errors.js';
import { DataError } from '../errors.js';
import type { RunEvents } from '../events.js';
import type { PageFetcher, Segment, SourceBody } from './paged-query.js';

/** Smallest page size: what a probe that only wants a total asks for. */
export const PROBE_PAGE_SIZE = 10;
/** A window is sized to hold about this share of the cap, leaving room for uneven density. */
const TARGET_FILL = 0.8;
/** A window grows at most this factor over the previous one. */
const MAX_GROWTH = 4;

export interface SliceStats {
  /** Probe requests that were not reused as a page 0 (bounds and capped windows). */
  wastedProbes: number;
  windows: number;
}

export interface SliceOptions {
  /** The chunk's body (filter and sorting) without page. */
  body: SourceBody;
  /** Page size of the window probes: the extract's page size (probe = page 0), or 10 when planning. */
  probeSize: number;
  fetchPage: PageFetcher;
  events?: RunEvents;
  endpoint: string;
  /** Prefix for window labels (a code chunk's label). */
  labelPrefix?: string;
  stats?: SliceStats;
  /** Results one query reaches (the client's resultWindow; default 10000). */
  resultWindow?: number;
}

/** Whether a page-0 total says the query may hold more than one query reaches (10000, or a sandbox's smaller window). */
export function isCapped(total: number, resultWindow = MAX_REACHABLE_RESULTS): boolean {
  return total >= resultWindow;
}

/** The createdAt windows of a capped products query, each with its page 0 (the probe). */
export async function* createdAtWindows(o: SliceOptions): AsyncGenerator<Segment & { firstPage: LazyPage }> {
  const stats = o.stats ?? { wastedProbes: 0, windows: 0 };
  const cap = o.resultWindow ?? MAX_REACHABLE_RESULTS;
  const bound = async (direction: 'ASC' | 'DESC'): Promise<number | undefined> => {
    stats.wastedProbes++;
    const page = await refusedSlicing(
      o.endpoint,
      o.fetchPage({ filter: o.body.filter, sorting: { createdAt: direction } }, 0, PROBE_PAGE_SIZE),
    );
    const first = page.length > 0 ? (page.record(0) as CatalogRecord) : undefined;
    page.release();
    if (!first) return undefined;
    const createdAt = (first.meta as { createdAt?: unknown } | undefined)?.createdAt;
    if (!Number.isSafeInteger(createdAt)) {
      throw new DataError(
        `${o.endpoint}: a record has no integer meta.createdAt, so the query cannot be sliced by createdAt; use ${streamOf(o.endpoint)}`,
        { code: 'source.unsliceable' },
      );
    }
    return createdAt as number;
  };
  const lo = await bound('ASC');
  const hi = await bound('DESC');
  if (lo === undefined || hi === undefined) return;
  o.events?.emit('info', {
    code: 'source.slicing',
    message: `${o.endpoint}${o.labelPrefix ? ` (${o.labelPrefix})` : ''}: ${cap} or more matches, more than one query reaches; slicing by createdAt ${isoSeconds(lo)}..${isoSeconds(hi)}`,
    from: lo,
    until: hi,
  });

  let cursor = lo;
  let width = Math.max(1, Math.floor((hi - lo + 1) / 2));
  while (cursor <= hi) {
    const until = Math.min(hi, cursor + width - 1);
    const body = { ...o.body, filter: withCreatedAt(o.body.filter, cursor, until) };
    const probe = await o.fetchPage(body, 0, o.probeSize);
    const span = until - cursor + 1;
    if (isCapped(probe.meta.total, cap)) {
      probe.release();
      stats.wastedProbes++;
      if (span === 1) throw overfullInstant(o.endpoint, cursor, probe.meta.total, cap);
      width = Math.floor(span / 2);
      continue;
    }
    stats.windows++;
    const label = `${o.labelPrefix ? `${o.labelPrefix}, ` : ''}createdAt ${cursor}..${until}`;
    yield { body, label, firstPage: probe, last: until === hi };
    const density = probe.meta.total / span;
    const fit = density === 0 ? Infinity : Math.floor((cap * TARGET_FILL) / density);
    width = Math.max(1, Math.min(fit, span * MAX_GROWTH));
    cursor = until + 1;
  }
}

/** The filter AND a createdAt window; a top-level `and` is extended rather than nested. */
export function withCreatedAt(filter: unknown, from: number, until: number): unknown {
  return andFilter(filter, { createdAt: { from, until } });
}

/** `filter` AND `extra`; a top-level `and` is extended rather than nested. */
export function andFilter(filter: unknown, extra: unknown): unknown {
  if (filter === undefined) return extra;
  const f = filter as Record<string, unknown>;
  const parts =
    Object.keys(f).length === 1 && Array.isArray(f.and) ? [...(f.and as unknown[]), extra] : [filter, extra];
  return { and: parts };
}

/** The stream endpoint with no cap that a capped query's user is pointed at (products.stream, media.stream). */
function streamOf(endpoint: string): string {
  return endpoint.replace(/\.query$/, '.stream');
}

/**
 * A service that refuses the createdAt sorting or filter (400/422: media.query's filters are not
 * documented) cannot be sliced: say so and point at the stream, rather than surface a bare API error.
 */
async function refusedSlicing(endpoint: string, probe: Promise<LazyPage>): Promise<LazyPage> {
  try {
    return await probe;
  } catch (err) {
    if (err instanceof ApiError && (err.status === 400 || err.status === 422)) {
      throw new DataError(
        `${endpoint}: 10000 or more matches, more than one query reaches, and the service refused the createdAt sorting the slicing needs ` +
          `(${err.status}: ${err.message}); use ${streamOf(endpoint)} (no limit) or narrow the filter`,
        { code: 'source.unsliceable', cause: err },
      );
    }
    throw err;
  }
}

function overfullInstant(endpoint: string, instant: number, total: number, cap: number): DataError {
  const what = endpoint.startsWith('media.') ? 'media records' : 'products';
  return new DataError(
    `${endpoint}: ${total >= cap ? `${cap} or more` : total} matching ${what} were created in the same second ` +
      `(createdAt ${instant}, ${isoSeconds(instant)}), more than one query can reach and too many to slice by createdAt; ` +
      `use ${streamOf(endpoint)} (no limit) or narrow the filter${what === 'products' ? ' (e.g. by status, brand or organization)' : ''}`,
    { code: 'source.instant_over_cap' },
  );
}
