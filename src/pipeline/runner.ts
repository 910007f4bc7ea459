// Runs a planned pipeline (plan.ts): one CatalogClient (the run's request budget), the source
// with the incremental window applied to its parsed options, the transforms (cheap synchronous
// stages fused into one stream), and the sinks (several behind a tee), joined by stream.pipeline
// under one AbortSignal. Every stream is made from the plan's definitions and parsed options; no
// spec is parsed here. A run walks named phases (RunPhase: preflight, assembling, streaming,
// committing). The state is read once, in preflight; its cursor is written only after every sink
// has committed, so a failed or aborted run leaves the previous one and the next run redoes the
// work (at-least-once). The concerns a run draws on live beside it: connection.ts,
// incremental-window.ts, watchdog.ts, run-summary.ts.
import type { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { EventEmitter } from 'node:events';
import { resourceSchemas } from '../catalog/resources/index.js';
import { isoSeconds } from '../catalog/timestamp.js';
import { CatalogClient } from '../client/catalog-client.js';
import { AbortedError, CatalogStreamsError, StdoutClosedError } from '../errors.js';
import { RUN_EVENT_NAMES, RunEvents, type RunEventName } from '../events.js';
import { RecordTransform } from '../transforms/record-transform.js';
import type { PlannedStage } from '../core/planned-stage.js';
import type { StageRegistry } from '../core/registry.js';
import { newRunId } from '../core/run-id.js';
import type { RunDescription, RunMode, SinkStream, StageContext } from '../core/stage.js';
import type { Region } from '../catalog/regions.js';
import {
  clientOptions,
  type ConnectionOverride,
  type ResolvedConnection,
  resolveConnection,
  regionOf,
  resolveRegionConnections,
} from './connection.js';
import {
  fullReadEvery,
  nextCursor,
  openPipelineState,
  sourceWithCursor,
  stateIdentity,
  type WindowedRead,
  windowUntil,
} from './incremental-window.js';
import type { LoadedPipeline } from './loader.js';
import { planOrThrow, type PipelinePlan } from './plan.js';
import { checkDestinations } from './preflight.js';
import { createRecordLookup } from './record-lookup.js';
import { RunStats } from './run-stats.js';
import { RunFailedError, summarizeRun, type RunSummary } from './run-summary.js';
import {
  FanOutSource,
  fanOutLookup,
  failedRegions,
  fenceOfAll,
  regionStatePath,
  type RegionOutcome,
  type SourceLane,
} from './region-fanout.js';
import { openStateStore, type StateStore } from './state.js';
import { TeeSink } from './tee.js';
import { DEFAULT_STALL_TIMEOUT_MS, StallWatchdog } from './watchdog.js';

export { clientOptions, type ConnectionOverride, resolveConnection, type ResolvedConnection } from './connection.js';
export {
  fullReadEvery,
  nextCursor,
  openPipelineState,
  sourceWithCursor,
  stateIdentity,
  windowUntil,
  withUpdatedSince,
} from './incremental-window.js';
export { RunFailedError, type RunSummary } from './run-summary.js';
export type { RegionOutcome } from './region-fanout.js';
export { DEFAULT_STALL_TIMEOUT_MS } from './watchdog.js';

export interface RunOptions {
  registry: StageRegistry;
  /** Overrides the file's `connection:` and the environment (the `--sandbox` flag uses it). */
  connection?: ConnectionOverride;
  /** A fan-out's (`connection.regions`) overrides, by region (each region's embedded sandbox). */
  regionConnections?: Partial<Record<Region, ConnectionOverride>>;
  fullRefresh?: boolean;
  /** `--allow-deletes`: table sinks publish a full run's deletes above their `deletes.maxRatio`. */
  allowDeletes?: boolean;
  signal?: AbortSignal;
  events?: RunEvents;
  env?: NodeJS.ProcessEnv;
  /** A client shared by several pipelines of one run (one request budget). */
  client?: CatalogClient;
  /** Clock for the run start (tests). */
  now?: () => Date;
  /** Fail the run after this long without progress (default: the file's `stallTimeout`, else 10 minutes). */
  stallTimeoutMs?: number;
  /** The run reads the embedded sandbox (`--sandbox`): its state cursor is never used against another host. */
  sandbox?: boolean;
  /**
   * Called once the run passed every check made before its first request (destinations, state lock and cursor,
   * the sinks' dataset locks), with the source as the run will send it (its incremental window applied).
   * Requests a caller makes beside the run (the progress plan) wait for it, so a run refused there makes none,
   * and they read the window from here instead of reading the state a second time.
   */
  onPreflight?(source: PlannedStage<'source'>): void;
}

/** A loaded pipeline file, or the same built in code without a plan yet (runPipeline plans it). */
export type RunnablePipeline = LoadedPipeline | (Omit<LoadedPipeline, 'plan'> & { plan?: undefined });

export async function runPipeline(loaded: RunnablePipeline, opts: RunOptions): Promise<RunSummary> {
  // A pipeline built in code meets the loader's rules (each stage's options, {run} in incremental outputs).
  const plan =
    loaded.plan ??
    planOrThrow(loaded.config, opts.registry, {
      file: loaded.file,
      baseDir: loaded.baseDir,
      outputDir: loaded.outputDir,
    });
  return new PipelineRun({ ...loaded, plan }, opts).run();
}

/**
 * The phases of a run, in order. `preflight` makes no request that reads records and writes nothing but locks:
 * a run refused there spent no request budget. From `streaming` on, stream.pipeline owns the chain (it destroys
 * every stream on failure). `committing` starts once every sink has committed: a stop request no longer changes
 * the outcome.
 */
export type RunPhase = 'preflight' | 'assembling' | 'streaming' | 'committing' | 'done';

/** One run of a planned pipeline; `run()` walks the phases of RunPhase. */
class PipelineRun {
  readonly #loaded: LoadedPipeline;
  readonly #plan: PipelinePlan;
  readonly #opts: RunOptions;
  // Each pipeline counts its own events; the caller's bus (progress display, several pipelines of one file) hears
  // them too. The sources ask the client to report their requests here, so a client shared by pipelines counts each
  // once.
  readonly #events = new RunEvents();
  readonly #stats = new RunStats(this.#events);
  readonly #unforward: (() => void) | undefined;
  readonly #startedAt: Date;
  readonly #runId: string;
  readonly #controller = new AbortController();
  readonly #onAbort = () => this.#controller.abort(this.#opts.signal?.reason);

  #phase: RunPhase = 'preflight';
  /**
   * The run's sources: one, or one per region of a fan-out (region-fanout.ts), each with its client,
   * state, lock and window. Made in preflight; the first one's client is the stages' `ctx.client`.
   */
  #lanes: SourceLane[] = [];
  /** Each lane's state store by region (undefined: the pipeline's one source), opened with the run. */
  readonly #stores: Map<Region | undefined, StateStore | undefined>;
  #ctx: StageContext | undefined;
  #sinkStream: SinkStream | undefined;
  #transforms: Transform[] = [];
  /** The streams made so far, source to sink; destroyed together when the run fails before streaming. */
  #chain: (Readable | Transform | Writable)[] = [];
  #watchdog: StallWatchdog | undefined;
  #stalled: CatalogStreamsError | undefined;

  constructor(loaded: LoadedPipeline, opts: RunOptions) {
    this.#loaded = loaded;
    this.#plan = loaded.plan;
    this.#opts = opts;
    this.#unforward = opts.events ? forwardEvents(this.#events, opts.events) : undefined;
    this.#startedAt = opts.now?.() ?? new Date();
    this.#runId = newRunId(this.#startedAt);
    this.#stores = openStores(this.#plan);
    if (opts.signal?.aborted) this.#onAbort();
    opts.signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  async run(): Promise<RunSummary> {
    try {
      await this.#preflight();
      this.#phase = 'assembling';
      this.#assemble();
      this.#phase = 'streaming';
      await pipeline(this.#chain as [Readable, ...Transform[], Writable], { signal: this.#controller.signal });
      this.#phase = 'committing';
      await this.#commit();
      this.#phase = 'done';
      return this.#outcome();
    } catch (error) {
      if (error instanceof RunFailedError) throw error;
      await this.#closeChain(error);
      if (this.#phase === 'streaming' && this.#pastCommitPoint()) return await this.#committedBefore(error);
      throw this.#failed(error);
    } finally {
      await this.#release();
    }
  }

  /**
   * Every check made before the first request that reads records: destinations, the state lock and cursor, then
   * the sinks, which take their dataset locks and remove stale temps. A dataset or state another run holds fails
   * this run without spending request budget.
   */
  async #preflight(): Promise<void> {
    const plan = this.#plan;
    this.#lanes = this.#makeLanes();
    await checkDestinations(this.#loaded);
    // One run per state at a time; a run that loses its lock stops.
    for (const lane of this.#lanes)
      lane.lock = await lane.store?.lock({ runId: this.#runId, pipeline: plan.name }, (err) =>
        this.#controller.abort(err),
      );
    for (const lane of this.#lanes) await this.#openWindow(lane);
    const ctx = this.#context();
    // Until the chain streams, the tee (or sink) has no other 'error' listener: a failed preparation reaches the run
    // through prepared().
    const sinks = plan.sinks.map((s) => s.definition.create(s.options, ctx) as SinkStream);
    this.#sinkStream = sinks.length === 1 ? sinks[0]! : new TeeSink(sinks, this.#events);
    this.#sinkStream.on('error', () => {});
    this.#chain = [this.#sinkStream];
    await this.#sinkStream.prepared?.();
    this.#opts.onPreflight?.(this.#source);
  }

  /** The source as sent (the first lane's: a fan-out's regions differ only in their windows). */
  get #source(): PlannedStage<'source'> {
    return this.#lanes[0]?.source ?? this.#plan.source;
  }

  /**
   * The run's sources: the pipeline's one, on the caller's client or its own; or one per region of a
   * fan-out, each on a client of its own (credentials, limiter) with a state file of its own.
   */
  #makeLanes(): SourceLane[] {
    const plan = this.#plan;
    const lane = (connection: ResolvedConnection | undefined, region?: Region): SourceLane => {
      const client =
        region === undefined && this.#opts.client
          ? this.#opts.client
          : new CatalogClient({
              ...clientOptions(connection ?? resolveConnection(this.#loaded, this.#opts.connection, this.#opts.env)),
              events: this.#events,
              signal: this.#controller.signal,
            });
      const store = this.#stores.get(region);
      const own = client !== this.#opts.client;
      return { region, client, ownClient: own, store, source: plan.source, stored: false, records: 0 };
    };
    if (!plan.connection.regions) return [lane(undefined)];
    const regions = resolveRegionConnections(this.#loaded, this.#opts.regionConnections, this.#opts.env);
    const lanes: SourceLane[] = [];
    try {
      for (const r of regions) lanes.push(lane(r.connection, r.region));
    } catch (err) {
      for (const l of lanes) void l.client.close();
      throw err;
    }
    return lanes;
  }

  /** Reads a lane's state (once) and sets its source as sent: the incremental window, the connection's concurrency. */
  async #openWindow(lane: SourceLane): Promise<void> {
    const plan = this.#plan;
    const sandbox = this.#opts.sandbox ?? this.#opts.connection?.sandbox ?? this.#regionOverride(lane)?.sandbox;
    lane.identity = stateIdentity(plan, lane.client.baseUrl, sandbox);
    ({
      source: lane.source,
      previous: lane.previous,
      fullReadDue: lane.fullReadDue,
    } = await sourceWithCursor(
      plan.source,
      lane.store,
      this.#opts.fullRefresh,
      lane.identity,
      this.#startedAt,
      fullReadEvery(plan),
    ));
    if (lane.fullReadDue) this.#announceFullRead(lane, lane.fullReadDue);
    if (lane.previous) {
      const cursor = lane.previous.cursor;
      const until = windowUntil(this.#startedAt);
      this.#events.emit('info', {
        code: 'incremental',
        message: `${lane.region ? `region ${lane.region}: ` : ''}incremental run: updatedSince ${isoSeconds(cursor)} until ${isoSeconds(until)} (unix ${cursor}..${until}) from ${lane.store!.location}`,
      });
    }
    const concurrency =
      this.#opts.connection?.concurrency ?? this.#regionOverride(lane)?.concurrency ?? plan.connection.concurrency;
    const source = lane.source;
    if (concurrency !== undefined && source.written.concurrency === undefined && plan.endpoint?.mode === 'paged')
      lane.source = { ...source, options: { ...source.options, concurrency } };
  }

  #regionOverride(lane: SourceLane): ConnectionOverride | undefined {
    return lane.region === undefined ? undefined : this.#opts.regionConnections?.[lane.region];
  }

  /** Says why a run with a stored cursor reads its source whole: a sink's periodic full read is due. */
  #announceFullRead(lane: SourceLane, due: NonNullable<WindowedRead['fullReadDue']>): void {
    const days = due.everyMs / 86_400_000;
    const since = due.lastFullRunAt ? `the last full run started ${due.lastFullRunAt}` : 'no full run is recorded';
    this.#events.emit('info', {
      code: 'full_read_due',
      message: `${lane.region ? `region ${lane.region}: ` : ''}full run: a sink reads the whole source every ${days} day(s) to find what left it (fullReadEvery), and ${since}; the cursor in ${lane.store!.location} is not used this time`,
    });
  }

  /** The context every stage of this run is created with. */
  #context(): StageContext {
    const plan = this.#plan;
    // A fan-out is incremental when every region has a cursor; it reads from the earliest.
    const cursors = this.#lanes.map((l) => l.previous?.cursor);
    const incremental = cursors.every((c) => c !== undefined);
    const mode: RunMode = {
      incremental,
      previousCursor: incremental ? Math.min(...(cursors as number[])) : undefined,
      allowDeletes: this.#opts.allowDeletes === true,
      ...(this.#opts.fullRefresh ? { fullRefresh: true } : {}),
    };
    const ctx: StageContext = {
      run: { id: this.#runId, name: plan.name, startedAt: this.#startedAt },
      baseDir: plan.baseDir,
      moduleDir: plan.moduleDir,
      signal: this.#controller.signal,
      events: this.#events,
      client: this.#lanes[0]!.client,
      mode,
      source: { type: plan.source.type, resource: plan.endpoint?.resource, endpoint: plan.endpoint?.name },
      resourceSchemas,
      // Dead-letter sinks receive records as a stage got them: they get the resource schema, not the records'.
      createSink: (spec) => this.#deadLetterSink(spec, { ...ctx, recordSchema: undefined, recordLookup: undefined }),
      describeRun: () => this.#describe(),
      // Sinks take their columns from the records' schema: the resource through the transforms.
      recordSchema: plan.recordSchema,
      declaredColumns: declaredColumns(plan),
      recordLookup: this.#recordLookup(() => ctx),
      // Every sink's commit points prove the run still holds its state locks (core/lock.ts, Fencing).
      fence: fenceOfAll(this.#lanes.map((l) => l.lock)),
      // A fan-out's failed regions: their earlier files are not superseded (shared/failed-regions.ts).
      failedRegions: plan.connection.regions ? () => failedRegions(this.#lanes) : undefined,
    };
    this.#ctx = ctx;
    return ctx;
  }

  /** The run's source asked again by id: through each region's client in a fan-out. */
  #recordLookup(ctx: () => StageContext): StageContext['recordLookup'] {
    const plan = this.#plan;
    const lookups = this.#lanes.map((lane) =>
      createRecordLookup({ plan, source: () => lane.source, ctx: () => ({ ...ctx(), client: lane.client }) }),
    );
    return plan.connection.regions ? fanOutLookup(this.#lanes, lookups) : lookups[0];
  }

  /** A dead-letter sink a stage asks for: planned with the stage's options, so it is made, not parsed again. */
  #deadLetterSink(spec: { type: string }, ctx: StageContext): SinkStream {
    const planned = this.#plan.nestedSinks.find((n) => n.spec === spec);
    if (planned) return planned.stage.definition.create(planned.stage.options, ctx) as SinkStream;
    // A spec a stage made itself at run time (none of the built-in stages does): checked as any spec is.
    return this.#opts.registry.create<SinkStream>('sink', spec, ctx, 'deadLetter');
  }

  /** The source and transforms in front of the prepared sinks, and the watchdog over them. */
  #assemble(): void {
    // A stop during the sinks' preparation ends the run here, before any request.
    this.#controller.signal.throwIfAborted();
    const ctx = this.#ctx!;
    const sink = this.#sinkStream!;
    const streams = this.#lanes.map((lane) => {
      const stream = lane.source.definition.create(lane.source.options, { ...ctx, client: lane.client }) as Readable;
      // Like the sink's: a stop that destroys the source before pipeline() joins it must not be an uncaught 'error'
      // (pipeline() and the run's abort handling report it).
      stream.on('error', () => {});
      // A second 'data' listener does not change flow control.
      if (lane.store) {
        stream.on('data', (record: { meta?: { updatedAt?: unknown } }) => {
          const u = record?.meta?.updatedAt;
          if (typeof u === 'number' && (lane.maxUpdatedAt === undefined || u > lane.maxUpdatedAt))
            lane.maxUpdatedAt = u;
        });
      }
      return { lane, stream };
    });
    const source = this.#plan.connection.regions
      ? new FanOutSource(streams, this.#events, this.#controller.signal)
      : streams[0]!.stream;
    source.on('error', () => {});
    this.#chain = [source, sink];
    this.#transforms = this.#plan.transforms.map((t) => {
      const stream = t.definition.create(t.options, ctx) as Transform;
      if (stream instanceof RecordTransform) stream.placement = placementOf(t);
      return stream;
    });
    this.#chain = [source, ...fuseTransforms(this.#transforms), sink];
    this.#watchdog = new StallWatchdog(
      this.#opts.stallTimeoutMs ?? this.#plan.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS,
      this.#events,
      source,
      (err) => {
        this.#stalled = err;
        this.#controller.abort(err);
      },
    );
  }

  /**
   * After the commit point (every sink has committed): the outputs stay published whatever a stop request says,
   * so the cursor is stored and the run succeeds.
   */
  async #commit(): Promise<void> {
    const plan = this.#plan;
    this.#opts.signal?.removeEventListener('abort', this.#onAbort);
    const stored = this.#lanes.some((l) => l.store);
    this.#events.emit('info', {
      code: 'outputs_committed',
      pipeline: plan.name,
      message: `${plan.name}: every output committed${stored ? '; storing the cursor' : ''}`,
    });
    // A region that failed keeps its cursor: the next run reads its window again.
    for (const lane of this.#lanes) if (lane.store && lane.error === undefined) await this.#storeCursor(lane);
  }

  async #storeCursor(lane: SourceLane): Promise<void> {
    const plan = this.#plan;
    const store = lane.store!;
    lane.next = this.#nextCursor(lane);
    const finishedAt = new Date();
    await store.write({
      version: 1,
      pipeline: plan.name,
      host: lane.identity!.host,
      source: lane.identity!.source,
      cursor: lane.next,
      updatedAt: finishedAt.toISOString(),
      // A run without a cursor read the source whole: the next periodic full read counts from it.
      ...(lane.previous === undefined
        ? { lastFullRunAt: this.#startedAt.toISOString() }
        : lane.previous.lastFullRunAt !== undefined
          ? { lastFullRunAt: lane.previous.lastFullRunAt }
          : {}),
      lastRun: {
        runId: this.#runId,
        startedAt: this.#startedAt.toISOString(),
        finishedAt: finishedAt.toISOString(),
        records: lane.region === undefined ? this.#stats.counters.recordsRead : lane.records,
        source: plan.source.type,
      },
    });
    lane.stored = true;
    this.#events.emit('info', { code: 'state_saved', message: `cursor ${lane.next} saved to ${store.location}` });
  }

  /**
   * A run that committed: succeeded, unless a region of its fan-out failed. Then the other regions'
   * outputs stay published and their cursors stored, and the run fails with the first failed
   * region's error (its code and exit code: what that region alone would have given).
   */
  #outcome(): RunSummary {
    const failed = this.#lanes.filter((l) => l.error !== undefined);
    if (failed.length === 0) return this.#summarize('succeeded');
    const published = this.#lanes.filter((l) => l.error === undefined).map((l) => `${l.region} (${l.records} records)`);
    const cause = failed[0]!.error as Error;
    const error = new CatalogStreamsError(
      cause instanceof CatalogStreamsError ? cause.code : 'run.failed',
      `region ${failed.map((l) => l.region).join(', ')} failed: ${cause.message}; published: ${published.join(', ')}`,
      { cause, exitCode: cause instanceof CatalogStreamsError ? cause.exitCode : 1 },
    );
    throw new RunFailedError(this.#summarize('failed', error), error);
  }

  /** Waits for the streams' clean-up after a failure (destroying them first when nothing owns the chain yet). */
  async #closeChain(error: unknown): Promise<void> {
    // stream.pipeline rejects as soon as one stream fails, before the destroyed sinks have finished removing temp
    // files, aborting uploads or taking back a commit under way: wait for them. Before streaming, nothing owns the
    // chain: destroy what was made.
    if (this.#phase === 'preflight' || this.#phase === 'assembling')
      for (const s of this.#chain) if (!s.destroyed) s.destroy(error instanceof Error ? error : undefined);
    await whenClosed(this.#chain);
  }

  /**
   * Whether the sinks, once closed, are past the commit point: every output published and none taken back. A stop
   * (or any failure) that came while a sink settled, or while a commit that could not be taken back landed, finds
   * the run published; its outcome must say so.
   */
  #pastCommitPoint(): boolean {
    const sink = this.#sinkStream;
    if (!sink) return false;
    return sink.published ?? sink.writableFinished;
  }

  /** Outputs a sink could not take back after a stop or a failure before the commit point (`sink.revoke` said which). */
  #leftPublished(): boolean {
    return (this.#sinkStream?.outputs.length ?? 0) > 0;
  }

  /** The chain failed after the commit point: the run is one that published; the cursor is stored as after any. */
  async #committedBefore(error: unknown): Promise<RunSummary> {
    const signal = this.#controller.signal;
    const reason = signal.aborted ? describeReason(signal.reason) : describeReason(error);
    this.#events.emit('warning', {
      code: 'run.after_commit',
      message: `${this.#plan.name}: ${reason} after every output was published: the outputs stay, the cursor is stored and the run counts as done`,
    });
    try {
      this.#phase = 'committing';
      await this.#commit();
      this.#phase = 'done';
      return this.#outcome();
    } catch (err) {
      if (err instanceof RunFailedError) throw err;
      // The outputs are published, the cursor could not be stored: a failure, not a stop.
      throw new RunFailedError(this.#summarize('failed', err), err);
    }
  }

  /** The error a failed run throws, once its streams have cleaned up. */
  #failed(error: unknown): RunFailedError {
    const signal = this.#controller.signal;
    const aborted = !this.#stalled && (signal.aborted || (error as Error)?.name === 'AbortError');
    // Which error pipeline() reports after an abort depends on Node: up to 22 its own AbortError, on 24 the
    // AbortedError of a source that destroyed itself on the same signal first. Both mean the run was stopped.
    const stopped = aborted && (!(error instanceof CatalogStreamsError) || error instanceof AbortedError);
    const err =
      this.#stalled ??
      (stopped
        ? new AbortedError(
            `the run was stopped (${describeReason(signal.reason)}); ${this.#leftPublished() ? 'outputs that could not be taken back stay published (the summary lists them), the others were discarded' : 'outputs were discarded'} and the state cursor was left as it was`,
            { cause: error },
          )
        : error);
    // A reader that closed stdout stopped the run as a signal would: nothing failed.
    const readerGone = err instanceof StdoutClosedError;
    return new RunFailedError(this.#summarize(aborted || readerGone ? 'aborted' : 'failed', err), err);
  }

  async #release(): Promise<void> {
    this.#watchdog?.stop();
    for (const lane of this.#lanes)
      await lane.lock?.release().catch((err: unknown) =>
        this.#events.emit('warning', {
          code: 'state.unlock',
          message: `could not remove the state lock: ${(err as Error).message}`,
        }),
      );
    this.#opts.signal?.removeEventListener('abort', this.#onAbort);
    this.#unforward?.();
    for (const lane of this.#lanes) if (lane.ownClient) await lane.client.close();
  }

  /** What sinks write into manifests: the run, its source and filter, its cursor window. */
  /**
   * The cursor the next run starts from: the run's start on the API's clock when that was earlier
   * than this machine's (server-clock.ts), so a clock running ahead here never skips what the API
   * changed in the run's first seconds.
   */
  #nextCursor(lane: SourceLane): number {
    const onApi = lane.client.serverClock.toServer(this.#startedAt) ?? this.#startedAt;
    const start = onApi < this.#startedAt ? onApi : this.#startedAt;
    return nextCursor(start, this.#plan.state!.overlapSeconds, lane.maxUpdatedAt);
  }

  #describe(): RunDescription {
    const plan = this.#plan;
    return {
      runId: this.#runId,
      name: plan.name,
      startedAt: this.#startedAt,
      sourceType: plan.source.type,
      sourceFilter: this.#source.written.filter,
      cursor: this.#lanes[0]?.store
        ? {
            previous: this.#lanes[0].previous?.cursor,
            next: this.#lanes[0].next ?? this.#nextCursor(this.#lanes[0]),
          }
        : undefined,
    };
  }

  #summarize(status: RunSummary['status'], error?: unknown): RunSummary {
    const [first] = this.#lanes;
    const store = first?.store;
    const summary = summarizeRun({
      status,
      error,
      pipeline: this.#plan.name,
      runId: this.#runId,
      startedAt: this.#startedAt,
      source: this.#plan.source.type,
      sourceFilter: this.#source.written.filter,
      counters: this.#stats.counters,
      sinkOutputs: this.#sinkStream ? [...this.#sinkStream.outputs] : [],
      transforms: this.#transforms,
      cursor: store
        ? { previous: first.previous?.cursor, next: first.next, stored: first.stored, location: store.location }
        : undefined,
      redact: (text) => this.#loaded.redactor.redact(text),
    });
    if (!this.#plan.connection.regions) return summary;
    const redact = (text: string) => this.#loaded.redactor.redact(text);
    return { ...summary, regions: this.#lanes.map((lane) => regionOutcome(lane, redact)) };
  }
}

/** Resolves when every stream has closed (destroyed streams run their async clean-up first); bounded. */
function whenClosed(streams: readonly (Readable | Transform | Writable)[], timeoutMs = 30_000): Promise<void> {
  const closing = streams.map((s) =>
    s.closed ? Promise.resolve() : new Promise<void>((resolve) => s.once('close', () => resolve())),
  );
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, timeoutMs);
    timer.unref();
  });
  return Promise.race([Promise.all(closing).then(() => undefined), timeout]).finally(() => clearTimeout(timer));
}

/** Re-emits a pipeline's events on the caller's bus. */
function forwardEvents(from: RunEvents, to: RunEvents): () => void {
  // Node's EventEmitter<T> typings cannot relate a listener's arguments to emit's for a generic K:
  // the listener is typed once here for every event.
  const forward = (name: RunEventName): (() => void) => {
    const h = (...args: unknown[]) => (to as EventEmitter).emit(name, ...args);
    (from as EventEmitter).on(name, h);
    return () => (from as EventEmitter).off(name, h);
  };
  const handlers = RUN_EVENT_NAMES.map(forward);
  return () => handlers.forEach((off) => off());
}

function describeReason(reason: unknown): string {
  if (typeof reason === 'string') return reason;
  if (reason instanceof Error && reason.message) return reason.message;
  return 'aborted';
}

/** Fuses each run of adjacent RecordTransforms into one stream; other transforms stay as they are. */
/** `transforms[2] (nightly.yml:14:5)`: which stage of the file, for the errors it throws. */
function placementOf(stage: PlannedStage): string {
  const p = stage.position;
  if (!p) return stage.at;
  return `${stage.at} (${p.file}${p.line !== undefined ? `:${p.line}${p.column !== undefined ? `:${p.column}` : ''}` : ''})`;
}

export function fuseTransforms(stages: Transform[]): Transform[] {
  const out: Transform[] = [];
  let run: RecordTransform[] = [];
  const flush = () => {
    if (run.length > 0) out.push(RecordTransform.fuse(run));
    run = [];
  };
  for (const s of stages) {
    if (s instanceof RecordTransform) run.push(s);
    else {
      flush();
      out.push(s);
    }
  }
  flush();
  return out;
}

/** The field paths the plan's sinks declare with `columns:` (parquet, s3 with parquet, table). */
function declaredColumns(plan: PipelinePlan): ReadonlySet<string> {
  const paths = new Set<string>();
  for (const sink of plan.sinks) {
    const columns = sink.options.columns;
    if (columns && typeof columns === 'object') for (const path of Object.keys(columns)) paths.add(path);
  }
  return paths;
}

/** The state store of each source: the pipeline's, or a file per region of a fan-out (regionStatePath). */
function openStores(plan: PipelinePlan): Map<Region | undefined, StateStore | undefined> {
  const regions = plan.connection.regions;
  if (!regions) return new Map([[undefined, openPipelineState(plan)]]);
  const state = plan.state;
  return new Map(
    regions.map((entry) => {
      const region = regionOf(entry);
      return [region, state && openStateStore(regionStatePath(state.path, region), { baseDir: plan.baseDir })];
    }),
  );
}

/** What the summary says of one region of a fan-out. */
function regionOutcome(lane: SourceLane, redact: (text: string) => string): RegionOutcome {
  const err = lane.error as CatalogStreamsError | undefined;
  return {
    region: lane.region!,
    status: err ? 'failed' : 'succeeded',
    records: lane.records,
    ...(lane.store
      ? {
          cursor: {
            ...(lane.previous ? { previous: lane.previous.cursor } : {}),
            ...(lane.next !== undefined ? { next: lane.next } : {}),
            stored: lane.stored,
            location: lane.store.location,
          },
        }
      : {}),
    ...(err ? { error: { code: err.code ?? 'error', message: redact(err.message ?? String(err)) } } : {}),
  };
}
