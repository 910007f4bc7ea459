// Runs a loaded pipeline: one CatalogClient (the run's request budget), the
// source with the incremental cursor added to its filter, the transforms (cheap
// synchronous stages fused into one stream), and the sinks (several behind a
// tee), joined by stream.pipeline under one AbortSignal. A run walks named
// phases (RunPhase: preflight, assembling, streaming, committing). The state
// cursor is written only after every sink has committed; a failed or aborted run
// leaves the previous one, so the next run redoes the work (at-least-once).
import type { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { getEndpoint } from '../catalog/endpoints/index.js';
import { resourceSchemas } from '../catalog/resources/index.js';
import { secondBefore } from '../sources/index.js';
import { DEFAULT_RATE_LIMIT_PER_MINUTE } from '../catalog/limits.js';
import { isoSeconds } from '../catalog/timestamp.js';
import {
  CatalogClient,
  type CatalogClientOptions,
  type ClientTimeouts,
  envRateLimit,
  envResultWindow,
} from '../client/catalog-client.js';
import { AbortedError, CatalogStreamsError, ConfigError, StdoutClosedError } from '../errors.js';
import { type Remedy, describeCode } from '../error-codes.js';
import type { EventEmitter } from 'node:events';
import { RUN_EVENT_NAMES, RunEvents, type OutputRecord, type RunEventName } from '../events.js';
import { RecordTransform } from '../transforms/record-transform.js';
import { incrementalOutputProblems } from './incremental-outputs.js';
import { joinPath } from '../core/issues.js';
import type { LoadedPipeline } from './loader.js';
import type { ConnectionBlock, StageSpec } from './pipeline-file.js';
import type { StageRegistry } from '../core/registry.js';
import { newRunId } from '../core/run-id.js';
import { RunStats } from './run-stats.js';
import { pipelineRecordSchema } from './schema-chain.js';
import { createRecordLookup } from './record-lookup.js';
import type { RunDescription, SinkStream, StageContext } from '../core/stage.js';
import type { RunLock } from '../core/lock.js';
import { checkDestinations } from './preflight.js';
import {
  checkStateIdentity,
  type PipelineState,
  type StateIdentity,
  type StateStore,
  openStateStore,
} from './state.js';
import { TeeSink } from './tee.js';

export interface ResolvedConnection {
  baseUrl: string;
  apiKey: string;
  apiSecret: string;
  /** Where the key and secret came from (named by a credentials error). */
  credentialSource?: string;
  rateLimit: number;
  concurrency?: number;
  /** Attempts per request before it fails (default: the client's, 8). */
  maxAttempts?: number;
  /** Total wait between the attempts of one request, ms (default: the client's, 180 s). */
  maxRetryWaitMs?: number;
  /** Connect / headers / body timeouts, ms (default: the client's). */
  timeouts?: ClientTimeouts;
  /** Largest page body, bytes (default: the client's, 256 MiB). */
  maxPageBytes?: number;
  /** Results one query reaches, for a sandbox started with --result-window (CATALOG_RESULT_WINDOW; default 10000). */
  resultWindow?: number;
  /** The embedded sandbox (`--sandbox`): a state cursor records the host `sandbox`, whatever its port. */
  sandbox?: boolean;
}

export interface RunOptions {
  registry: StageRegistry;
  /** Overrides the file's `connection:` and the environment (the `--sandbox` flag uses it). */
  connection?: Partial<ResolvedConnection>;
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
   * the sinks' dataset locks). Requests a caller makes beside the run (the progress plan) wait for it, so a run
   * refused there makes none.
   */
  onPreflight?(): void;
}

/** A run with no request, record, page or output for this long has stopped making progress. */
export const DEFAULT_STALL_TIMEOUT_MS = 10 * 60_000;

export interface RunSummary {
  pipeline: string;
  runId: string;
  status: 'succeeded' | 'failed' | 'aborted';
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  source: string;
  /** The filter actually sent (with the incremental `updatedSince`). */
  sourceFilter?: unknown;
  /**
   * read: from the source; written: rows per sink type; invalid: rejected by a
   * stage (dead-lettered or skipped); dropped: left out by transforms for other
   * reasons (a filter, dedupe). Without explode or flat-map, read = written
   * (per sink) + invalid + dropped.
   */
  records: {
    read: number;
    written: Record<string, number>;
    invalid: number;
    deadLettered: number;
    skipped: number;
    dropped: number;
  };
  requests: number;
  retries: number;
  throttles: number;
  pages: number;
  bytes: number;
  /** Local files and S3 objects committed (a manifest counts as an object). */
  files: number;
  objects: number;
  outputs: OutputRecord[];
  recordsPerSecond: number;
  cursor?: { previous?: number; next?: number; stored: boolean; location: string };
  warnings: string[];
  /**
   * Why the run did not succeed. `remedy` (from the error-code catalogue, when it knows the code):
   * `retry` when running again unchanged may pass, `fix` when something must change first.
   */
  error?: { code: string; message: string; remedy?: Remedy };
}

/** Connection settings: the override, then the file's block, then the environment. */
export function resolveConnection(
  loaded: LoadedPipeline,
  override: Partial<ResolvedConnection> = {},
  env: NodeJS.ProcessEnv = process.env,
): ResolvedConnection {
  const block: ConnectionBlock = loaded.config.connection ?? {};
  const baseUrl = override.baseUrl ?? block.baseUrl ?? env.CATALOG_BASE_URL;
  const apiKey = override.apiKey ?? block.apiKey ?? env.CATALOG_API_KEY;
  const apiSecret = override.apiSecret ?? block.apiSecret ?? env.CATALOG_API_SECRET;
  const missing = [
    !baseUrl && 'CATALOG_BASE_URL',
    !apiKey && 'CATALOG_API_KEY',
    !apiSecret && 'CATALOG_API_SECRET',
  ].filter(Boolean);
  if (missing.length > 0) {
    throw new ConfigError(
      `${loaded.file}: no API connection: set ${missing.join(', ')} (or a connection: block in the file), or pass --sandbox to run against the embedded sandbox`,
      { file: loaded.file, path: 'connection' },
      { code: 'config.connection' },
    );
  }
  loaded.redactor.add(apiKey);
  loaded.redactor.add(apiSecret);
  const from = (name: 'apiKey' | 'apiSecret', variable: string) =>
    override[name] !== undefined
      ? 'sandbox'
      : block[name] !== undefined
        ? `connection.${name} in ${loaded.file}`
        : `${variable} in the environment`;
  const keyFrom = from('apiKey', 'CATALOG_API_KEY');
  const secretFrom = from('apiSecret', 'CATALOG_API_SECRET');
  const credentialSource =
    keyFrom === 'sandbox'
      ? 'the sandbox credentials given by --sandbox'
      : keyFrom.endsWith(' in the environment') && secretFrom.endsWith(' in the environment')
        ? 'CATALOG_API_KEY and CATALOG_API_SECRET in the environment'
        : `${keyFrom} and ${secretFrom}`;
  checkBaseUrl(
    baseUrl!,
    override.baseUrl !== undefined
      ? undefined
      : block.baseUrl !== undefined
        ? { file: loaded.file, path: 'connection.baseUrl' }
        : { path: 'CATALOG_BASE_URL' },
  );
  return {
    baseUrl: baseUrl!,
    apiKey: apiKey!,
    apiSecret: apiSecret!,
    credentialSource,
    rateLimit: override.rateLimit ?? block.rateLimit ?? envRateLimit(env) ?? DEFAULT_RATE_LIMIT_PER_MINUTE,
    concurrency: override.concurrency ?? block.concurrency,
    maxAttempts: override.maxAttempts ?? block.maxAttempts,
    maxRetryWaitMs: override.maxRetryWaitMs ?? block.maxRetryWait,
    timeouts: override.timeouts ?? block.timeouts,
    maxPageBytes: override.maxPageBytes ?? block.maxPageBytes,
    resultWindow: override.resultWindow ?? envResultWindow(env),
    ...(override.sandbox ? { sandbox: true } : {}),
  };
}

/** A base URL without http:// or https:// (`127.0.0.1:42911`) is a usage error naming where it was set. */
function checkBaseUrl(baseUrl: string, where: { file?: string; path: string } | undefined): void {
  if (!where) return;
  let protocol: string | undefined;
  try {
    protocol = new URL(baseUrl).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol === 'http:' || protocol === 'https:') return;
  const name = where.file ? `${where.file}: ${where.path}` : where.path;
  // A URL with user:password@ is never echoed.
  const shown = baseUrl.includes('@') ? '(not shown: it contains "@")' : `"${baseUrl}"`;
  const hint =
    /^[\w.-]+(:\d+)?(\/|$)/.test(baseUrl) && !baseUrl.includes('@')
      ? `; add the scheme: http://${baseUrl} or https://${baseUrl}`
      : '';
  throw new ConfigError(
    `${name} must be an http:// or https:// URL such as https://api.example.com, got ${shown}${hint}`,
    where,
    { code: 'config.connection' },
  );
}

/** The CatalogClient settings of a resolved connection (one client per run). */
export function clientOptions(connection: ResolvedConnection): CatalogClientOptions {
  const {
    baseUrl,
    apiKey,
    apiSecret,
    credentialSource,
    rateLimit,
    maxAttempts,
    maxRetryWaitMs,
    timeouts,
    maxPageBytes,
    resultWindow,
  } = connection;
  const retry = {
    ...(maxAttempts !== undefined ? { maxAttempts } : {}),
    ...(maxRetryWaitMs !== undefined ? { maxWaitMs: maxRetryWaitMs } : {}),
  };
  return {
    baseUrl,
    apiKey,
    apiSecret,
    ...(credentialSource !== undefined ? { credentialSource } : {}),
    rateLimit,
    ...(resultWindow !== undefined ? { resultWindow } : {}),
    ...(Object.keys(retry).length > 0 ? { retry } : {}),
    ...(maxPageBytes !== undefined ? { maxPageBytes } : {}),
    ...(timeouts
      ? { timeouts: Object.fromEntries(Object.entries(timeouts).filter(([, ms]) => ms !== undefined)) }
      : {}),
  };
}

/**
 * Combines the source's filter with `updatedSince` by `and`: `{from: cursor}`, bounded
 * `{from: cursor, until}` when `until` is given (`{until}` alone on a first run).
 */
export function withUpdatedSince(source: StageSpec, cursor: number | undefined, until?: number): StageSpec {
  const window: Record<string, number> = {};
  if (cursor !== undefined) window.from = cursor;
  if (until !== undefined) window.until = Math.max(until, cursor ?? 0);
  if (Object.keys(window).length === 0) return source;
  const since = { updatedSince: window };
  const filter = source.filter as Record<string, unknown> | undefined;
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

export function openPipelineState(loaded: LoadedPipeline): StateStore | undefined {
  const state = loaded.config.state;
  return state ? openStateStore(state.path, { baseDir: loaded.outputDir ?? loaded.baseDir }) : undefined;
}

/**
 * The source a run starts from: the file's, with `updatedSince` from the stored cursor when
 * there is one (and no full refresh). `run` and `run --dry-run` both start here.
 */
export async function sourceWithCursor(
  source: StageSpec,
  store: StateStore | undefined,
  fullRefresh: boolean | undefined,
  identity?: StateIdentity,
  startedAt: Date = new Date(),
): Promise<{ source: StageSpec; previous: PipelineState | undefined }> {
  const previous = store && !fullRefresh ? await store.read() : undefined;
  if (previous && identity) checkStateIdentity(previous, identity, store!.location);
  // With a state, every run (the first and a full refresh too) reads a bounded window.
  return { source: store ? withUpdatedSince(source, previous?.cursor, windowUntil(startedAt)) : source, previous };
}

/** What a pipeline's cursor belongs to: its name, the API host (`sandbox` for --sandbox) and its source. */
export function stateIdentity(
  config: LoadedPipeline['config'],
  baseUrl: string,
  sandbox: boolean | undefined,
): StateIdentity {
  return {
    pipeline: config.name,
    host: sandbox ? 'sandbox' : new URL(baseUrl).host,
    source: {
      type: config.source.type,
      ...(config.source.filter !== undefined ? { filter: config.source.filter } : {}),
    },
  };
}

export async function runPipeline(loaded: LoadedPipeline, opts: RunOptions): Promise<RunSummary> {
  return new PipelineRun(loaded, opts).run();
}

/**
 * The phases of a run, in order. `preflight` makes no request that reads records and writes nothing but locks:
 * a run refused there spent no request budget. From `streaming` on, stream.pipeline owns the chain (it destroys
 * every stream on failure). `committing` starts once every sink has committed: a stop request no longer changes
 * the outcome.
 */
export type RunPhase = 'preflight' | 'assembling' | 'streaming' | 'committing' | 'done';

/** One run of a loaded pipeline; `run()` walks the phases of RunPhase. */
class PipelineRun {
  readonly #loaded: LoadedPipeline;
  readonly #config: LoadedPipeline['config'];
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
  readonly #stateStore: StateStore | undefined;
  readonly #ownClient: boolean;

  #phase: RunPhase = 'preflight';
  #client: CatalogClient | undefined;
  #stateLock: RunLock | undefined;
  #identity: StateIdentity | undefined;
  /** The source as sent: the file's, with the incremental window and the connection's concurrency. */
  #sourceSpec: StageSpec;
  #previous: PipelineState | undefined;
  #ctx: StageContext | undefined;
  #sinkStream: SinkStream | undefined;
  #transforms: Transform[] = [];
  /** The streams made so far, source to sink; destroyed together when the run fails before streaming. */
  #chain: (Readable | Transform | Writable)[] = [];
  #watchdog: StallWatchdog | undefined;
  #stalled: CatalogStreamsError | undefined;
  /** The newest `meta.updatedAt` the source delivered (the next cursor never passes it). */
  #maxUpdatedAt: number | undefined;
  #next: number | undefined;
  #stored = false;

  constructor(loaded: LoadedPipeline, opts: RunOptions) {
    this.#loaded = loaded;
    this.#config = loaded.config;
    this.#opts = opts;
    checkIncrementalOutputs(loaded, opts.registry);
    this.#unforward = opts.events ? forwardEvents(this.#events, opts.events) : undefined;
    this.#startedAt = opts.now?.() ?? new Date();
    this.#runId = newRunId(this.#startedAt);
    this.#stateStore = openPipelineState(loaded);
    this.#sourceSpec = this.#config.source;
    this.#client = opts.client;
    this.#ownClient = !opts.client;
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
      return this.#summarize('succeeded');
    } catch (error) {
      throw await this.#failed(error);
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
    const config = this.#config;
    if (!this.#client) {
      const connection = resolveConnection(this.#loaded, this.#opts.connection, this.#opts.env);
      this.#client = new CatalogClient({
        ...clientOptions(connection),
        events: this.#events,
        signal: this.#controller.signal,
      });
    }
    await checkDestinations(this.#loaded, this.#opts.registry, config.state?.path);
    // One run per state at a time; a run that loses its lock stops.
    this.#stateLock = await this.#stateStore?.lock({ runId: this.#runId, pipeline: config.name }, (err) =>
      this.#controller.abort(err),
    );
    this.#identity = stateIdentity(config, this.#client.baseUrl, this.#opts.sandbox ?? this.#opts.connection?.sandbox);
    ({ source: this.#sourceSpec, previous: this.#previous } = await sourceWithCursor(
      config.source,
      this.#stateStore,
      this.#opts.fullRefresh,
      this.#identity,
      this.#startedAt,
    ));
    if (this.#previous) {
      const cursor = this.#previous.cursor;
      const until = windowUntil(this.#startedAt);
      this.#events.emit('info', {
        code: 'incremental',
        message: `incremental run: updatedSince ${isoSeconds(cursor)} until ${isoSeconds(until)} (unix ${cursor}..${until}) from ${this.#stateStore!.location}`,
      });
    }
    const endpoint = getEndpoint(config.source.type);
    const concurrency = this.#opts.connection?.concurrency ?? config.connection?.concurrency;
    if (concurrency !== undefined && this.#sourceSpec.concurrency === undefined && endpoint?.mode === 'paged')
      this.#sourceSpec = { ...this.#sourceSpec, concurrency };

    const ctx = this.#context();
    // Until the chain streams, the tee (or sink) has no other 'error' listener: a failed preparation reaches the run
    // through prepared().
    const sinks = config.sinks.map((s, i) => this.#opts.registry.create<SinkStream>('sink', s, ctx, `sinks[${i}]`));
    this.#sinkStream = sinks.length === 1 ? sinks[0]! : new TeeSink(sinks, this.#events);
    this.#sinkStream.on('error', () => {});
    this.#chain = [this.#sinkStream];
    await this.#sinkStream.prepared?.();
    this.#opts.onPreflight?.();
  }

  /** The context every stage of this run is created with. */
  #context(): StageContext {
    const config = this.#config;
    const endpoint = getEndpoint(config.source.type);
    // Sinks take their columns from the records' schema (the resource through the transforms); dead-letter sinks
    // receive records as a stage got them, so they get the resource schema only.
    const services = { resourceSchemas };
    const ctx: StageContext = {
      run: { id: this.#runId, name: config.name, startedAt: this.#startedAt },
      baseDir: this.#loaded.outputDir ?? this.#loaded.baseDir,
      moduleDir: this.#loaded.baseDir,
      signal: this.#controller.signal,
      events: this.#events,
      client: this.#client,
      source: { type: config.source.type, resource: endpoint?.resource, endpoint: endpoint?.name },
      createSink: (spec) => this.#opts.registry.create<SinkStream>('sink', spec, { ...ctx, services }, 'deadLetter'),
      describeRun: () => this.#describe(),
      services: {
        ...services,
        recordSchema: pipelineRecordSchema(config, this.#opts.registry),
        recordLookup: createRecordLookup({
          config,
          registry: this.#opts.registry,
          sourceSpec: this.#sourceSpec,
          ctx: () => ctx,
        }),
      },
    };
    this.#ctx = ctx;
    return ctx;
  }

  /** The source and transforms in front of the prepared sinks, and the watchdog over them. */
  #assemble(): void {
    // A stop during the sinks' preparation ends the run here, before any request.
    this.#controller.signal.throwIfAborted();
    const { registry } = this.#opts;
    const ctx = this.#ctx!;
    const sink = this.#sinkStream!;
    const source = registry.create<Readable>('source', this.#sourceSpec, ctx, 'source');
    // Like the sink's: a stop that destroys the source before pipeline() joins it must not be an uncaught 'error'
    // (pipeline() and the run's abort handling report it).
    source.on('error', () => {});
    this.#chain = [source, sink];
    // A second 'data' listener does not change flow control.
    if (this.#stateStore) {
      source.on('data', (record: { meta?: { updatedAt?: unknown } }) => {
        const u = record?.meta?.updatedAt;
        if (typeof u === 'number' && (this.#maxUpdatedAt === undefined || u > this.#maxUpdatedAt))
          this.#maxUpdatedAt = u;
      });
    }
    this.#transforms = this.#config.transforms.map((t, i) =>
      registry.create<Transform>('transform', t, ctx, `transforms[${i}]`),
    );
    this.#chain = [source, ...fuseTransforms(this.#transforms), sink];
    this.#watchdog = new StallWatchdog(
      this.#opts.stallTimeoutMs ?? this.#config.stallTimeout ?? DEFAULT_STALL_TIMEOUT_MS,
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
    const config = this.#config;
    this.#opts.signal?.removeEventListener('abort', this.#onAbort);
    const store = this.#stateStore;
    this.#events.emit('info', {
      code: 'outputs_committed',
      pipeline: config.name,
      message: `${config.name}: every output committed${store ? '; storing the cursor' : ''}`,
    });
    if (!store) return;
    this.#next = nextCursor(this.#startedAt, config.state!.overlapSeconds, this.#maxUpdatedAt);
    const finishedAt = new Date();
    await store.write({
      version: 1,
      pipeline: config.name,
      host: this.#identity!.host,
      source: this.#identity!.source,
      cursor: this.#next,
      updatedAt: finishedAt.toISOString(),
      lastRun: {
        runId: this.#runId,
        startedAt: this.#startedAt.toISOString(),
        finishedAt: finishedAt.toISOString(),
        records: this.#stats.counters.recordsRead,
        source: config.source.type,
      },
    });
    this.#stored = true;
    this.#events.emit('info', { code: 'state_saved', message: `cursor ${this.#next} saved to ${store.location}` });
  }

  /** The error a failed run throws, once its streams have cleaned up. */
  async #failed(error: unknown): Promise<RunFailedError> {
    // stream.pipeline rejects as soon as one stream fails, before the destroyed sinks have finished removing temp
    // files or aborting uploads: wait for them. Before streaming, nothing owns the chain: destroy what was made.
    if (this.#phase === 'preflight' || this.#phase === 'assembling')
      for (const s of this.#chain) if (!s.destroyed) s.destroy(error instanceof Error ? error : undefined);
    await whenClosed(this.#chain);
    const signal = this.#controller.signal;
    const aborted = !this.#stalled && (signal.aborted || (error as Error)?.name === 'AbortError');
    // Which error pipeline() reports after an abort depends on Node: up to 22 its own AbortError, on 24 the
    // AbortedError of a source that destroyed itself on the same signal first. Both mean the run was stopped.
    const stopped = aborted && (!(error instanceof CatalogStreamsError) || error instanceof AbortedError);
    const err =
      this.#stalled ??
      (stopped
        ? new AbortedError(
            `the run was stopped (${describeReason(signal.reason)}); outputs were discarded and the state cursor was left as it was`,
            { cause: error },
          )
        : error);
    // A reader that closed stdout stopped the run as a signal would: nothing failed.
    const readerGone = err instanceof StdoutClosedError;
    return new RunFailedError(this.#summarize(aborted || readerGone ? 'aborted' : 'failed', err), err);
  }

  async #release(): Promise<void> {
    this.#watchdog?.stop();
    await this.#stateLock?.release().catch((err: unknown) =>
      this.#events.emit('warning', {
        code: 'state.unlock',
        message: `could not remove the state lock: ${(err as Error).message}`,
      }),
    );
    this.#opts.signal?.removeEventListener('abort', this.#onAbort);
    this.#unforward?.();
    if (this.#ownClient) await this.#client?.close();
  }

  /** What sinks write into manifests: the run, its source and filter, its cursor window. */
  #describe(): RunDescription {
    const config = this.#config;
    return {
      runId: this.#runId,
      name: config.name,
      startedAt: this.#startedAt,
      sourceType: config.source.type,
      sourceFilter: this.#sourceSpec.filter,
      cursor: this.#stateStore
        ? {
            previous: this.#previous?.cursor,
            next: this.#next ?? nextCursor(this.#startedAt, config.state!.overlapSeconds, this.#maxUpdatedAt),
          }
        : undefined,
      ...(this.#opts.allowDeletes ? { allowDeletes: true } : {}),
    };
  }

  #summarize(status: RunSummary['status'], error?: unknown): RunSummary {
    const config = this.#config;
    const finishedAt = new Date();
    const c = this.#stats.counters;
    // Rows written count the pipeline's sinks; the outputs list everything committed (dead letters and manifests
    // too) when the run succeeded, and nothing that a failed run took back.
    const sinkOutputs = this.#sinkStream ? [...this.#sinkStream.outputs] : [];
    const outputs = status === 'succeeded' ? [...c.outputs] : sinkOutputs;
    const written: Record<string, number> = {};
    for (const o of sinkOutputs) written[o.sink] = (written[o.sink] ?? 0) + o.rows;
    // The stages' own counters (fused stages keep counting into them); invalid records are counted apart.
    const dropped = this.#transforms.reduce(
      (n, t) => (t instanceof RecordTransform ? n + t.stats.dropped - t.stats.invalid : n),
      0,
    );
    const durationMs = finishedAt.getTime() - this.#startedAt.getTime();
    const err = error as CatalogStreamsError | undefined;
    const store = this.#stateStore;
    return {
      pipeline: config.name,
      runId: this.#runId,
      status,
      startedAt: this.#startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      durationMs,
      source: config.source.type,
      sourceFilter: this.#sourceSpec.filter,
      records: {
        read: c.recordsRead,
        written,
        invalid: c.invalid,
        deadLettered: c.deadLettered,
        skipped: c.skipped,
        dropped,
      },
      requests: c.requests,
      retries: c.retries,
      throttles: c.throttles,
      pages: c.pages,
      bytes: outputs.reduce((n, o) => n + o.bytes, 0),
      files: outputs.filter((o) => o.kind === 'file').length,
      objects: outputs.filter((o) => o.kind === 'object').length,
      outputs,
      recordsPerSecond: durationMs > 0 ? Math.round((c.recordsRead * 1000) / durationMs) : 0,
      cursor: store
        ? { previous: this.#previous?.cursor, next: this.#next, stored: this.#stored, location: store.location }
        : undefined,
      warnings: c.warnings,
      error: err
        ? {
            code: err.code ?? 'error',
            message: this.#loaded.redactor.redact(err.message ?? String(err)),
            ...remedyOf(err.code ?? 'error'),
          }
        : undefined,
    };
  }
}

function remedyOf(code: string): { remedy?: Remedy } {
  const remedy = describeCode(code)?.remedy;
  return remedy ? { remedy } : {};
}

/** The loader refuses an incremental pipeline with fixed output names; a pipeline built in code meets the same rule. */
function checkIncrementalOutputs(loaded: LoadedPipeline, registry: StageRegistry): void {
  const [fixed] = incrementalOutputProblems(loaded.config, registry);
  if (!fixed) return;
  const at = joinPath('', [...fixed.at, ...fixed.issue.path]);
  throw new ConfigError(
    `${loaded.file}: ${at}: ${fixed.issue.message}`,
    { file: loaded.file, path: at },
    { code: 'config.state_fixed_output' },
  );
}

/**
 * Fails a run whose chain stops moving: no request, retry, page, record from the
 * source or committed output for `timeoutMs`. Its interval timer is ref'd on
 * purpose: while the chain runs it keeps the process alive, so a chain stuck on
 * a Promise that never settles (user code) cannot let the event loop empty and
 * the process exit 0 with nothing committed and no summary.
 */
class StallWatchdog {
  readonly #timer: NodeJS.Timeout;
  readonly #off: () => void;
  #last = performance.now();

  constructor(timeoutMs: number, events: RunEvents, source: Readable, onStall: (err: CatalogStreamsError) => void) {
    const touch = () => {
      this.#last = performance.now();
    };
    const names = ['request', 'retry', 'page', 'output', 'total', 'info'] as const;
    for (const n of names) events.on(n, touch);
    source.on('data', touch);
    this.#off = () => {
      for (const n of names) events.off(n, touch);
      source.off('data', touch);
    };
    this.#timer = setInterval(
      () => {
        if (performance.now() - this.#last < timeoutMs) return;
        this.stop();
        const seconds = Math.round(timeoutMs / 100) / 10;
        onStall(
          new CatalogStreamsError(
            'run.stalled',
            `the run made no progress for ${seconds} s (no request, record or output): a stage is stuck, e.g. a custom function whose Promise never settles; ` +
              'outputs were discarded and the state cursor was left as it was (raise stallTimeout if a step legitimately takes longer)',
          ),
        );
      },
      Math.min(1000, Math.max(20, timeoutMs / 10)),
    );
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#off();
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

/** A run that did not succeed, with the summary of what it did before it stopped. */
export class RunFailedError extends CatalogStreamsError {
  readonly summary: RunSummary;
  constructor(summary: RunSummary, cause: unknown) {
    const c = cause as CatalogStreamsError;
    super(c?.code ?? 'run.failed', c?.message ?? String(cause), { cause, exitCode: c?.exitCode ?? 1 });
    this.summary = summary;
  }
}
