// The incremental window (ARCHITECTURE.md "Reading a changing catalog"): a pipeline with `state:`
// reads what changed from the stored cursor up to the second before the run started, and stores
// the next cursor once every output is committed. The window is applied to the source's parsed
// options, once, before the source is made.
import { secondBefore } from '../sources/index.js';
import type { PlannedStage } from '../core/planned-stage.js';
import type { PipelinePlan } from './plan.js';
import {
  checkStateIdentity,
  type PipelineState,
  type StateIdentity,
  type StateStore,
  openStateStore,
} from './state.js';

/**
 * Combines the source's filter with `updatedSince` by `and`: `{from: cursor}`, bounded
 * `{from: cursor, until}` when `until` is given (`{until}` alone on a first run). Works on
 * options as written and as parsed alike: the window is unix seconds either way.
 */
export function withUpdatedSince<T extends object>(
  source: T,
  cursor: number | undefined,
  until?: number,
): T & { filter?: unknown } {
  const window: Record<string, number> = {};
  if (cursor !== undefined) window.from = cursor;
  if (until !== undefined) window.until = Math.max(until, cursor ?? 0);
  if (Object.keys(window).length === 0) return source;
  const since = { updatedSince: window };
  const filter = (source as { filter?: unknown }).filter as Record<string, unknown> | undefined;
  if (!filter) return { ...source, filter: since };
  if (Array.isArray(filter.and) && Object.keys(filter).length === 1)
    return { ...source, filter: { and: [...filter.and, since] } };
  return { ...source, filter: { and: [filter, since] } };
}

/**
 * The last second an incremental run asks for (`updatedSince.until`): the second before it
 * started. Bounding the window keeps the result from growing while it is read (a product
 * updated during the run leaves the window instead of entering it, and the source re-reads
 * what shifted); what changed from that second on is the next run's, whose cursor is at most
 * the run's start (nextCursor), so the windows of successive runs leave no gap.
 */
export function windowUntil(startedAt: Date): number {
  // The same second every query source reads up to (read-window.ts), so the two bounds agree.
  return secondBefore(startedAt);
}

/** The next cursor: the run start minus the overlap, or the newest `meta.updatedAt` seen if that is earlier. */
export function nextCursor(startedAt: Date, overlapSeconds: number, maxUpdatedAt: number | undefined): number {
  const fromStart = Math.floor(startedAt.getTime() / 1000) - overlapSeconds;
  return maxUpdatedAt === undefined ? fromStart : Math.min(fromStart, maxUpdatedAt);
}

export function openPipelineState(plan: Pick<PipelinePlan, 'state' | 'baseDir'>): StateStore | undefined {
  const state = plan.state;
  return state ? openStateStore(state.path, { baseDir: plan.baseDir }) : undefined;
}

/** The source as a run sends it: with the window applied to its parsed options and to its options as written. */
export function windowedSource(
  source: PlannedStage<'source'>,
  cursor: number | undefined,
  until: number,
): PlannedStage<'source'> {
  return {
    ...source,
    options: withUpdatedSince(source.options, cursor, until),
    written: withUpdatedSince(source.written, cursor, until),
  };
}

/**
 * How often the plan's sinks need the source read whole (`fullReadEvery` of their definitions, the
 * shortest), in milliseconds; undefined when none does.
 */
export function fullReadEvery(plan: Pick<PipelinePlan, 'sinks'>): number | undefined {
  const every = plan.sinks
    .map((s) => s.definition.fullReadEvery?.(s.options))
    .filter((ms): ms is number => ms !== undefined);
  return every.length > 0 ? Math.min(...every) : undefined;
}

/**
 * Whether a run with this stored state must read its source whole: a sink needs a full read every
 * `everyMs` and the last full run started that long ago (or is not recorded: a state written
 * before full runs were). The whole read is what finds what left the source with no timestamp
 * moving; the incremental runs in between cannot.
 */
export function fullReadDue(previous: PipelineState, everyMs: number | undefined, startedAt: Date): boolean {
  if (everyMs === undefined) return false;
  const last = previous.lastFullRunAt === undefined ? Number.NaN : Date.parse(previous.lastFullRunAt);
  return !Number.isFinite(last) || startedAt.getTime() - last >= everyMs;
}

/** How a run reads: the source as sent, the state read (undefined on a full run) and why a stored cursor was not used. */
export interface WindowedRead {
  source: PlannedStage<'source'>;
  /** The stored state whose cursor the run reads from; undefined for a full run. */
  previous: PipelineState | undefined;
  /** A stored cursor was set aside because a sink's full read was due (`fullReadEvery`): when the last full run started. */
  fullReadDue?: { lastFullRunAt: string | undefined; everyMs: number };
}

/**
 * Reads the state once: the stored cursor (none on a full refresh, nor when a sink's periodic full
 * read is due), checked against the identity of the pipeline, and the source the run starts from.
 * With a state every run, the first and a full refresh too, reads a bounded window. `run` and `run
 * --dry-run` both start here.
 */
export async function sourceWithCursor(
  source: PlannedStage<'source'>,
  store: StateStore | undefined,
  fullRefresh: boolean | undefined,
  identity?: StateIdentity,
  startedAt: Date = new Date(),
  fullReadEveryMs?: number,
): Promise<WindowedRead> {
  const stored = store && !fullRefresh ? await store.read() : undefined;
  if (stored && identity) checkStateIdentity(stored, identity, store!.location);
  const due = stored !== undefined && fullReadDue(stored, fullReadEveryMs, startedAt);
  const previous = due ? undefined : stored;
  return {
    source: store ? windowedSource(source, previous?.cursor, windowUntil(startedAt)) : source,
    previous,
    ...(due ? { fullReadDue: { lastFullRunAt: stored.lastFullRunAt, everyMs: fullReadEveryMs! } } : {}),
  };
}

/** What a pipeline's cursor belongs to: its name, the API host (`sandbox` for --sandbox) and its source as written. */
export function stateIdentity(
  plan: Pick<PipelinePlan, 'name' | 'source'>,
  baseUrl: string,
  sandbox: boolean | undefined,
): StateIdentity {
  const filter = plan.source.written.filter;
  return {
    pipeline: plan.name,
    host: sandbox ? 'sandbox' : new URL(baseUrl).host,
    source: { type: plan.source.type, ...(filter !== undefined ? { filter } : {}) },
  };
}
