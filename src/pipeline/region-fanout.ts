// A fan-out over regions (`connection.regions`, issue 40; docs/live-service.md, "Several regions
// in one run"): one source per region, each on its own client (credentials, limiter) and with its
// own state cursor, merged into the one stream the transforms and sinks read, with the region set
// on every record. A region that fails (its key refused, its host down) ends its own lane only:
// the other regions' records still reach the outputs, and the run says which region failed.
import path from 'node:path';
import { Readable } from 'node:stream';
import type { Region } from '../catalog/regions.js';
import type { CatalogClient } from '../client/catalog-client.js';
import type { Fence, RunLock } from '../core/lock.js';
import type { PlannedStage } from '../core/planned-stage.js';
import type { RecordLookup } from '../core/stage.js';
import { AbortedError, CatalogStreamsError } from '../errors.js';
import type { RunEvents } from '../events.js';
import type { WindowedRead } from './incremental-window.js';
import type { PipelineState, StateIdentity, StateStore } from './state.js';

/** One source of a run: the pipeline's only one, or one region of a fan-out. */
export interface SourceLane {
  /** The region of a fan-out; undefined for a pipeline of one connection. */
  readonly region?: Region;
  readonly client: CatalogClient;
  /** Whether the run made the client (and closes it). */
  readonly ownClient: boolean;
  readonly store?: StateStore | undefined;
  lock?: RunLock | undefined;
  identity?: StateIdentity;
  /** The source as sent: the plan's, with this lane's incremental window. */
  source: PlannedStage<'source'>;
  previous?: PipelineState | undefined;
  /** Set when a sink's periodic full read is due: the stored cursor is not used this run. */
  fullReadDue?: WindowedRead['fullReadDue'];
  /** The newest `meta.updatedAt` the lane delivered (its next cursor never passes it). */
  maxUpdatedAt?: number;
  next?: number;
  stored: boolean;
  /** Records the lane delivered. */
  records: number;
  /** Why the lane failed, when it did (its records so far went on; its cursor is not stored). */
  error?: unknown;
}

/** What the summary says of each region of a fan-out. */
export interface RegionOutcome {
  region: Region;
  status: 'succeeded' | 'failed';
  records: number;
  cursor?: { previous?: number; next?: number; stored: boolean; location: string };
  error?: { code: string; message: string };
}

/**
 * The state file of one region: `{region}` in state.path replaced, else `.<region>` put before the
 * extension (`state/products.json` -> `state/products.be.json`). A file per region keeps each
 * cursor with its own identity (host) and lock, so a region can also run alone.
 */
export function regionStatePath(statePath: string, region: Region): string {
  if (statePath.includes('{region}')) return statePath.replaceAll('{region}', region);
  const ext = path.posix.extname(statePath);
  return ext ? `${statePath.slice(0, -ext.length)}.${region}${ext}` : `${statePath}.${region}`;
}

/** The regions whose lane failed. */
export function failedRegions(lanes: readonly SourceLane[]): ReadonlySet<string> {
  return new Set(lanes.filter((l) => l.error !== undefined).map((l) => l.region!));
}

/** A fence over every lane's state lock: the run publishes only while it holds them all. */
export function fenceOfAll(locks: readonly (RunLock | undefined)[]): Fence | undefined {
  const held = locks.filter((l): l is RunLock => l !== undefined);
  if (held.length <= 1) return held[0];
  return {
    async assertHeld() {
      for (const lock of held) await lock.assertHeld();
    },
  };
}

/**
 * The regions' sources merged into one object stream, each record a copy with `region` set (a
 * spread keeps its origin). Backpressure: every lane pauses while the merged buffer is full. A
 * lane's error, unless the run is stopping, marks the lane failed (a `region.failed` warning) and
 * the others go on; the stream fails only when every lane failed.
 */
export class FanOutSource extends Readable {
  readonly #lanes: readonly { lane: SourceLane; stream: Readable }[];
  readonly #events: RunEvents;
  readonly #signal: AbortSignal;
  #open: number;
  #closing = false;

  constructor(lanes: readonly { lane: SourceLane; stream: Readable }[], events: RunEvents, signal: AbortSignal) {
    super({ objectMode: true, highWaterMark: 16 });
    this.#lanes = lanes;
    this.#events = events;
    this.#signal = signal;
    this.#open = lanes.length;
    for (const l of lanes) this.#follow(l.lane, l.stream);
  }

  #follow(lane: SourceLane, stream: Readable): void {
    const region = lane.region!;
    stream.on('data', (record: Record<string, unknown>) => {
      lane.records++;
      if (!this.push({ ...record, region })) for (const l of this.#lanes) l.stream.pause();
    });
    stream.once('end', () => this.#laneDone());
    stream.once('error', (err: Error) => this.#laneFailed(lane, err));
  }

  #laneFailed(lane: SourceLane, err: Error): void {
    if (this.#closing) return;
    if (this.#signal.aborted || err instanceof AbortedError || err.name === 'AbortError') {
      this.destroy(err);
      return;
    }
    lane.error = err;
    const code = err instanceof CatalogStreamsError ? err.code : 'error';
    this.#events.emit('warning', {
      code: 'region.failed',
      message: `region ${lane.region} failed (${code}: ${err.message}); the other regions go on, its cursor stays where it was`,
    });
    if (this.#lanes.every((l) => l.lane.error !== undefined)) this.destroy(err);
    else this.#laneDone();
  }

  #laneDone(): void {
    if (--this.#open === 0 && !this.destroyed) this.push(null);
  }

  override _read(): void {
    for (const l of this.#lanes) if (!l.stream.destroyed && l.lane.error === undefined) l.stream.resume();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#closing = true;
    for (const l of this.#lanes) if (!l.stream.destroyed) l.stream.destroy(error ?? undefined);
    callback(error);
  }
}

/**
 * The record lookup of a fan-out (the table sink's delete check): each region's own lookup, its
 * records tagged with the region. While a region of the run failed, its products cannot be told
 * from deleted ones: every id asked for is reported as existing (`rejected`), so the table keeps
 * their rows and the next full run decides.
 */
export function fanOutLookup(lanes: readonly SourceLane[], lookups: readonly RecordLookup[]): RecordLookup {
  const [first] = lookups;
  if (!first?.available) return first ?? { available: false, reason: 'no region' };
  return {
    available: true,
    endpoint: first.endpoint,
    maxIds: first.maxIds,
    async read(ids, onRecord) {
      if (lanes.some((l) => l.error !== undefined)) return { requests: 0, rejected: [...ids] };
      let requests = 0;
      const rejected: Array<string | number> = [];
      for (const [i, lookup] of lookups.entries()) {
        if (!lookup.available) continue;
        const region = lanes[i]!.region;
        const got = await lookup.read(ids, (record) => onRecord({ ...record, region }));
        requests += got.requests;
        rejected.push(...(got.rejected ?? []));
      }
      return { requests, rejected };
    },
  };
}
