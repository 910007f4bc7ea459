// The `media-mirror` sink: takes product or media records, collects the files they name (each
// once), and at the end of the stream mirrors them into a folder or S3 prefix with its media table
// (media-mirror.ts; docs/media-mirror.md). A sink rather than a pipeline kind: a mirror is fed by
// the same sources, filters and incremental windows as every other output.
import { once } from 'node:events';
import path from 'node:path';
import { Writable } from 'node:stream';
import { z } from 'zod';
import { defaultUserAgent } from '../../client/user-agent.js';
import { duration } from '../../core/duration.js';
import { fences, RunLock, storeLockBackend } from '../../core/lock.js';
import { defineStage, type SinkStream, type StageContext } from '../../core/stage.js';
import { stageFactory } from '../../core/stage-factory.js';
import type { PartialStageContext } from '../../core/default-context.js';
import { SinkError } from '../../errors.js';
import type { OutputRecord } from '../../events.js';
import { createS3Client } from '../../storage/s3-client.js';
import { LocalObjectStore, type ObjectStore } from '../../storage/object-store.js';
import { S3ObjectStore } from '../../storage/s3-object-store.js';
import { isPlainObject } from '../../values.js';
import { byteSize } from '../shared/option-schemas.js';
import type { WithOptionDocs } from '../../generated/stage-option-docs.js';
import { MediaMirror, type MirrorSummary } from './media-mirror.js';
import { type MediaTarget, mergeTargets, targetsOf } from './media-targets.js';
import { estimateMirror, type MirrorEstimate } from './mirror-estimate.js';
import { feedTable, mediaTableConfig, mediaTableOption, openMediaTable } from './media-table-sink.js';
import type { TableSink, TableSinkConfig } from '../table/table-sink.js';

const DAY_MS = 86_400_000;
/** One run at a time per mirror folder (docs/media-mirror.md, "One run at a time"). */
export const LOCK_REL = '_mirror/lock.json';

export const mediaMirrorOptions = z.strictObject({
  path: z
    .string()
    .min(1)
    .describe(
      'Folder or s3://bucket/prefix of the mirror: files/<URL path>, media.parquet, _mirror/state.json, _journal/',
    ),
  formats: z
    .array(z.string().min(1))
    .min(1)
    .default(['largeWebp', 'large', 'largeJpg'])
    .describe('Image format keys in order of preference; the first a photo or frontal has is mirrored'),
  images: z
    .enum(['frontal-or-photo', 'all', 'none'])
    .default('frontal-or-photo')
    .describe(
      "Products: each one's first frontal, its first photo when it has none (default), every photo and frontal, or none; media records: every image item unless none",
    ),
  brochures: z
    .boolean()
    .default(true)
    .describe('Mirror the PDFs of links with linkType brochure (other link types are pages, never fetched)'),
  concurrency: z
    .number()
    .int()
    .min(1)
    .max(64)
    .default(8)
    .describe('Downloads at once (the asset host pool, apart from the API client)'),
  requestsPerSecond: z
    .number()
    .positive()
    .max(10_000)
    .default(20)
    .describe('Requests per second to the asset host, spaced evenly'),
  timeout: duration().default(60_000).describe('Per file and attempt, first byte to last ("60s")'),
  maxFileBytes: byteSize()
    .default(20 * 1024 * 1024)
    .describe('Largest file accepted ("20MiB", the live service\'s PDF limit)'),
  retries: z
    .number()
    .int()
    .min(0)
    .max(10)
    .default(2)
    .describe('Attempts after the first for a 5xx, 429, timeout, wrong type or short body, with doubling backoff'),
  retryDelay: duration().default(500).describe('First backoff between attempts ("500ms"), doubled each time'),
  failedBackoff: duration()
    .default(3_600_000)
    .describe(
      'A file that failed in an earlier run is asked for again only this long after that failure ("1h"), doubled per failed run in a row, at most 7 days',
    ),
  retryFailed: z
    .boolean()
    .default(false)
    .describe('Ask again now for every file that failed in an earlier run, whatever its backoff'),
  revalidate: z
    .enum(['auto', 'always'])
    .default('auto')
    .describe(
      'auto: a stored file named by a content hash is not asked for again, others get a conditional GET; always: conditional GET for every stored file',
    ),
  removeAfterDays: z
    .number()
    .min(0)
    .default(7)
    .describe(
      'A stored file no record names is removed after this many days (full runs only; only files the mirror wrote)',
    ),
  fullRelistDays: z
    .number()
    .positive()
    .default(7)
    .describe(
      'With state: (incremental runs), read the source whole once this many days passed since the last full run, to find items that left it with no timestamp moving (expired media); --full-refresh does it at once',
    ),
  maxFailedShare: z
    .number()
    .min(0)
    .max(1)
    .default(0)
    .describe(
      'Share of the files that may fail before the run fails with media.download_failed (exit 1); default 0: any failure',
    ),
  userAgent: z
    .string()
    .min(1)
    .optional()
    .describe('User-Agent of the downloads; default catalog-streams/<version> (node <version>) media-mirror'),
  endpoint: z.url().optional().describe('s3:// paths: S3-compatible endpoint URL; default: env S3_ENDPOINT, else AWS'),
  region: z.string().min(1).optional().describe('s3:// paths: region'),
  forcePathStyle: z.boolean().optional().describe('s3:// paths: path-style URLs; default: true with a custom endpoint'),
  table: mediaTableOption.optional(),
});
export type MediaMirrorConfig = z.output<typeof mediaMirrorOptions>;
/** Options as a caller writes them (defaults optional), each option's description shown on hover. */
export type MediaMirrorOptions = WithOptionDocs<'media-mirror', z.input<typeof mediaMirrorOptions>>;

function storeOf(config: MediaMirrorConfig, baseDir: string, env: NodeJS.ProcessEnv): ObjectStore {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(config.path);
  if (!m) return new LocalObjectStore(path.resolve(baseDir, config.path));
  const prefix = m[2]!.replace(/\/+$/, '');
  return new S3ObjectStore({
    bucket: m[1]!,
    prefix: prefix ? `${prefix}/` : '',
    client: () => createS3Client(config, env, 's3-media'),
    feature: 's3-media',
  });
}

export class MediaMirrorSink extends Writable implements SinkStream {
  readonly #config: MediaMirrorConfig;
  readonly #ctx: StageContext;
  readonly #targets = new Map<string, MediaTarget>();
  #invalid = 0;
  #store: ObjectStore | undefined;
  #lock: RunLock | undefined;
  /** The `table:` option's table sink (media-table-sink.ts), made once the folder's lock is held. */
  readonly #tableConfig: TableSinkConfig | undefined;
  #table: TableSink | undefined;
  /** Set while the rows go to the table: its failure is then the mirror's `_final`'s. */
  #feeding = false;
  /** The last run's summary (tests, the code API). */
  summary: MirrorSummary | undefined;
  readonly outputs: OutputRecord[] = [];
  /** Each file is published on its own once complete; past `_final` nothing is taken back. */
  published = false;

  constructor(config: MediaMirrorConfig, ctx: StageContext) {
    // Checked before the Writable exists: its _construct (which takes the lock) must not run for a sink that fails here.
    const tableConfig = config.table && mediaTableConfig(config.table, config, ctx.baseDir);
    super({ objectMode: true, highWaterMark: 64 });
    this.#config = config;
    this.#ctx = ctx;
    this.#tableConfig = tableConfig;
  }

  /**
   * Nothing is taken back when a sibling sink fails: every file was published whole and replaced
   * only by a whole newer one, and the table describes them; removing them would lose good copies.
   * (Without this method the tee would remove the listed table itself.)
   */
  revoke(): Promise<void> {
    return Promise.resolve();
  }

  override _write(record: unknown, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    if (!isPlainObject(record))
      return done(new SinkError('media-mirror: received something that is not a record', { code: 'sink.record' }));
    mergeTargets(
      this.#targets,
      targetsOf(record, this.#config, () => this.#invalid++),
    );
    done();
  }

  /**
   * Takes the folder's lock before any record is read: a second run into the same path fails at
   * once (`publish.locked`, naming the holder) instead of after reading its whole source. Two runs
   * sharing a folder would overwrite each other's state and table, and one's sweep could remove a
   * file the other just stored.
   */
  override _construct(callback: (error?: Error | null) => void): void {
    const ctx = this.#ctx;
    const store = (this.#store = storeOf(this.#config, ctx.baseDir, ctx.env ?? process.env));
    RunLock.acquire(
      storeLockBackend(store, LOCK_REL),
      { runId: ctx.run.id, pipeline: ctx.run.name },
      { what: `media mirror ${store.location('')}`, code: 'publish.locked', onLost: (err) => this.destroy(err) },
    ).then(
      (lock) => {
        this.#lock = lock;
        try {
          this.#openTable();
        } catch (err) {
          this.#releaseLock()
            .then(() => this.#closeStore())
            .finally(() => callback(err as Error));
          return;
        }
        callback();
      },
      (err: unknown) => {
        this.#closeStore().finally(() => callback(err as Error));
      },
    );
  }

  /**
   * The table sink takes its own lock now, beside the folder's: a table another run holds fails
   * this run before a record is read. Its commit points assert the mirror's locks too.
   */
  #openTable(): void {
    if (!this.#tableConfig) return;
    const table = openMediaTable(this.#tableConfig, this.#ctx, fences(this.#ctx.fence, this.#lock));
    this.#table = table;
    table.on('error', (err) => {
      if (!this.#feeding) this.destroy(err);
    });
  }

  /** A table not published yet discards what it staged and releases its lock (its own stop). */
  async #stopTable(error: Error | null): Promise<void> {
    const table = this.#table;
    if (!table || table.closed) return;
    const closed = once(table, 'close').catch(() => {});
    table.destroy(error ?? undefined);
    await closed;
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#stopTable(error)
      .then(() => this.#releaseLock())
      .then(() => this.#closeStore())
      .finally(() => callback(error));
  }

  async #releaseLock(): Promise<void> {
    const lock = this.#lock;
    this.#lock = undefined;
    await lock?.release().catch((err: unknown) =>
      this.#ctx.events.emit('warning', {
        code: 'sink.unlock',
        message: `media-mirror could not remove its lock ${lock.location}: ${(err as Error).message}; remove it once no run uses the folder`,
      }),
    );
  }

  async #closeStore(): Promise<void> {
    const store = this.#store;
    this.#store = undefined;
    await store?.close();
  }

  override _final(done: (err?: Error | null) => void): void {
    this.#mirror().then(() => done(), done);
  }

  async #mirror(): Promise<void> {
    const c = this.#config;
    const ctx = this.#ctx;
    const store = this.#store!;
    if (this.#invalid > 0)
      ctx.events.emit('warning', {
        code: 'media.url_invalid',
        message: `media-mirror: ${this.#invalid} media URL(s) are not http(s) URLs; skipped`,
      });
    const mirror = new MediaMirror(store, {
      concurrency: c.concurrency,
      requestsPerSecond: c.requestsPerSecond,
      timeoutMs: c.timeout,
      maxBytes: c.maxFileBytes,
      userAgent: c.userAgent ?? `${defaultUserAgent()} media-mirror`,
      retries: c.retries,
      retryDelayMs: c.retryDelay,
      revalidate: c.revalidate,
      removeAfterMs: c.removeAfterDays * DAY_MS,
      full: !ctx.mode.incremental,
      failedBackoffMs: c.failedBackoff,
      retryFailed: c.retryFailed,
      runId: ctx.run.id,
      // The state and the table are written only while this run holds the folder's lock (and the run's own).
      fence: fences(ctx.fence, this.#lock),
      signal: ctx.signal,
      warn: (code, message) => ctx.events.emit('warning', { code, message: `media-mirror: ${message}` }),
    });
    try {
      const s = (this.summary = await mirror.run(this.#targets));
      ctx.events.emit('info', { code: 'media.summary', message: describe(s), ...counts(s) });
      if (s.waiting > 0)
        ctx.events.emit('warning', {
          code: 'media.retry_later',
          message: `media-mirror: ${s.waiting} file(s) that failed in earlier runs were not asked for: each is retried once its backoff (failedBackoff, doubled per failed run) has passed; set retryFailed: true to ask now. See last_error in ${store.location('media.parquet')}`,
        });
      if (s.table) {
        const output: OutputRecord = {
          kind: store.kind,
          location: s.table.location,
          rows: s.table.rows,
          bytes: s.table.bytes,
          sink: 'media-mirror',
        };
        this.outputs.push(output);
        ctx.events.emit('output', output);
      }
      // Before the failure check: the table describes the files as media.parquet does, failed ones included.
      if (this.#table) {
        this.#feeding = true;
        await feedTable(this.#table, mirror.tableRecords());
        this.outputs.push(...this.#table.outputs);
      }
      if (s.failed > c.maxFailedShare * s.files) throw failedError(s, c.maxFailedShare);
      // Only now: the runner counts a sink that published as a run that succeeded.
      this.published = true;
    } finally {
      await this.#releaseLock();
      await this.#closeStore();
    }
  }
}

const counts = (s: MirrorSummary) => ({
  files: s.files,
  toFetch: s.toFetch,
  fetched: s.fetched,
  bytesFetched: s.bytesFetched,
  unchanged: s.unchanged,
  adopted: s.adopted,
  failed: s.failed,
  waiting: s.waiting,
  deferred: s.deferred,
  removed: s.removed,
});

function describe(s: MirrorSummary): string {
  return (
    `media-mirror: ${s.files} file(s) named, ${s.toFetch} to fetch; fetched ${s.fetched} (${s.bytesFetched} bytes), ` +
    `${s.unchanged} unchanged, ${s.adopted} adopted, ${s.failed} failed, ${s.waiting} waiting (failed before; retried after a backoff), ${s.deferred} deferred, ${s.removed} removed`
  );
}

function failedError(s: MirrorSummary, share: number): SinkError {
  const first = s.failures
    .slice(0, 3)
    .map((f) => `${f.url}: ${f.reason}`)
    .join('; ');
  return new SinkError(
    `media-mirror: ${s.failed} of ${s.files} file(s) failed (allowed: ${Math.floor(share * s.files)}); the previous copies stay and the next run retries them. First: ${first}`,
    { code: 'media.download_failed' },
  );
}

/**
 * The dry run's estimate for a media-mirror sink with these options (as written in the pipeline
 * file): read from its state only; nothing is written and no lock is taken.
 */
export async function estimateMediaMirror(
  options: unknown,
  baseDir: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<MirrorEstimate> {
  const c = mediaMirrorOptions.parse(options);
  const store = storeOf(c, baseDir, env);
  try {
    return await estimateMirror(store, {
      revalidate: c.revalidate,
      failedBackoffMs: c.failedBackoff,
      retryFailed: c.retryFailed,
    });
  } finally {
    await store.close();
  }
}

export const mediaMirrorStage = defineStage({
  kind: 'sink',
  type: 'media-mirror',
  description:
    'Mirrors the chosen image format of photos/frontals and the brochure PDFs that product or media records name into a folder or S3 prefix, each file once, with a media table (media.parquet; with table:, also kept by the table sink: snapshot/changes or Iceberg)',
  options: mediaMirrorOptions,
  create: (options, ctx): SinkStream => new MediaMirrorSink(options, ctx),
  // An item can leave the catalog's available set with no timestamp moving (availableUntil
  // passing): only a whole read shows it gone, so an incremental pipeline re-lists periodically.
  fullReadEvery: (options) => options.fullRelistDays * DAY_MS,
});

/** The media mirror for code: `await pipeline(productsQuery(...), mediaMirror({path: 'out/media'}))`. */
export const mediaMirror: (options: MediaMirrorOptions, ctx?: PartialStageContext) => SinkStream =
  stageFactory(mediaMirrorStage);
