// One mirror run over a set of targets (docs/media-mirror.md): remove what killed runs left and,
// on a full run, what no record names for longer than the grace period (only files a write
// journal proves are ours); then fetch each target once through the bounded pool, publishing each
// good body atomically under its name (a failure leaves the previous copy); then the state and
// the media table. Never loses a good copy: nothing is removed or replaced before a complete new
// body is in hand, and a removal needs both the grace period and a journal naming the file.
import type { Fence } from '../../core/lock.js';
import { StorageError } from '../../errors.js';
import type { ObjectStore } from '../../storage/object-store.js';
import { MAX_FILES, WriteJournal } from '../../storage/write-journal.js';
import { AssetFetcher, type FetcherOptions, type FetchOutcome } from './asset-fetcher.js';
import { DownloadedBody } from './downloaded-body.js';
import { FILES_FOLDER, type MediaTarget } from './media-targets.js';
import { PublishQueue } from './publish-queue.js';
import { type FileState, MirrorState, STATE_REL } from './mirror-state.js';
import { mediaTableRecords, TABLE_REL, writeMediaTable } from './media-table.js';
import { createHash } from 'node:crypto';

export interface MirrorSettings extends FetcherOptions {
  /** `auto`: a stored file whose URL name is a content name is not asked for again; `always`: conditional GET. */
  revalidate: 'auto' | 'always';
  /** A file no record names is removed after this long (full runs only). */
  removeAfterMs: number;
  /** A full run sees every referenced file, so it may remove the unreferenced ones; an incremental one never does. */
  full: boolean;
  /** A file that failed in an earlier run is asked for again only this long after its last failure, doubled per failure in a row (default 1 h). */
  failedBackoffMs?: number;
  /** Retry every failed file now, whatever its backoff. */
  retryFailed?: boolean;
  runId: string;
  /** Asked right before the state or the table is written: the run still holds the folder's lock. */
  fence?: Fence;
  signal: AbortSignal;
  warn(code: string, message: string): void;
  progress?(summary: MirrorSummary): void;
  /** Tests: the clock (unix ms). */
  now?(): number;
}

export interface MirrorSummary {
  /** Distinct files the records name. */
  files: number;
  /** Files asked for this run (new, missing, or revalidated). */
  toFetch: number;
  /** Bytes of the revalidated ones as last stored (new files' sizes are unknown until fetched). */
  knownBytesToFetch: number;
  fetched: number;
  bytesFetched: number;
  /** 304 answers and content-named files not asked for again. */
  unchanged: number;
  /** Stored by a killed run after its last state save: hashed from the store, not downloaded. */
  adopted: number;
  failed: number;
  /** Failed in an earlier run and still within their backoff: not asked for this run (their previous copy, if any, stays). */
  waiting: number;
  /** Left for the next run: more files to fetch than one run's journal holds (MAX_FILES). */
  deferred: number;
  removed: number;
  failures: Array<{ url: string; reason: string }>;
  table?: { location: string; bytes: number; rows: number };
}

type Plan = 'skip' | 'adopt' | 'fetch' | 'foreign' | 'defer' | 'wait';
/** The state is saved at most this often while files arrive (a killed run loses at most this much, adopted later). */
const SAVE_EVERY_MS = 2000;

export class MediaMirror {
  readonly #store: ObjectStore;
  readonly #settings: MirrorSettings;
  readonly #fetcher: AssetFetcher;
  readonly #summary: MirrorSummary = {
    files: 0,
    toFetch: 0,
    knownBytesToFetch: 0,
    fetched: 0,
    bytesFetched: 0,
    unchanged: 0,
    adopted: 0,
    failed: 0,
    waiting: 0,
    deferred: 0,
    removed: 0,
    failures: [],
  };
  #state!: MirrorState;
  #journal!: WriteJournal;
  #journaled = new Set<string>();
  /** Bodies being published beside the downloads (at most `concurrency` at once). */
  readonly #publishing: PublishQueue;
  #existing = new Set<string>();
  #savedAt = performance.now();
  #saving: Promise<void> | undefined;

  constructor(store: ObjectStore, settings: MirrorSettings) {
    this.#store = store;
    this.#settings = settings;
    this.#fetcher = new AssetFetcher(settings);
    this.#publishing = new PublishQueue(settings.concurrency);
  }

  #now(): number {
    return this.#settings.now?.() ?? Date.now();
  }

  async run(targets: ReadonlyMap<string, MediaTarget>): Promise<MirrorSummary> {
    try {
      await this.#prepare(targets);
      const plans = [...targets.values()].map((t) => ({ target: t, plan: this.#plan(t) }));
      this.#summary.files = targets.size;
      for (const { target, plan } of plans)
        if (plan === 'fetch') {
          this.#summary.toFetch++;
          this.#summary.knownBytesToFetch += this.#state.files.get(target.rel)?.bytes ?? 0;
        }
      await this.#recordAhead(plans);
      this.#settings.progress?.(this.#summary);
      await this.#work(plans);
      // Both from the state in memory, so at once: the state's fsync while the table is encoded.
      const [, table] = await Promise.all([this.#save(), this.#writeTable()]);
      this.#summary.table = table;
      return this.#summary;
    } finally {
      await this.#fetcher.close();
    }
  }

  /** After `run`: the media table's rows (media.parquet's), for the table sink of the `table:` option. */
  tableRecords(): Iterable<Record<string, unknown>> {
    return mediaTableRecords(this.#store, this.#state);
  }

  /** State, journals, the listing of stored files, the sweep; each target marked seen. */
  async #prepare(targets: ReadonlyMap<string, MediaTarget>): Promise<void> {
    // A killed run's half-written table or state (dead writer's temp files) goes first.
    await this.#store.removeAbandoned('', (rel) => rel === TABLE_REL || rel === STATE_REL, 2);
    this.#state = await MirrorState.load(this.#store);
    const now = this.#now();
    for (const t of targets.values()) this.#seen(t, now);
    await this.#sweep(targets, now);
    const journals = await WriteJournal.ownedBy(this.#store, '', {
      ignored: (where, why) => this.#settings.warn('media.journal_ignored', `${where} was not used: ${why}`),
    });
    for (const j of journals) for (const rel of j.files) this.#journaled.add(rel);
    for await (const { rel } of this.#store.list(FILES_FOLDER)) this.#existing.add(rel);
    for (const rel of this.#journaled)
      if (this.#existing.has(rel) && !this.#state.files.has(rel))
        this.#state.files.set(rel, { ...UNKNOWN, ...NEVER_STORED, stored: true, firstSeen: now, lastSeen: now });
    this.#journal = await WriteJournal.open(this.#store, this.#settings.runId);
  }

  async #writeTable(): Promise<MirrorSummary['table']> {
    await this.#settings.fence?.assertHeld();
    return writeMediaTable(this.#store, this.#state);
  }

  /** Saves the state only while the run holds the lock: a run that lost it writes nothing more. */
  async #save(): Promise<void> {
    await this.#settings.fence?.assertHeld();
    await this.#state.save();
  }

  #seen(t: MediaTarget, now: number): void {
    const known = this.#state.files.get(t.rel);
    const productIds = [...new Set([...(known?.productIds ?? []), ...t.productIds])].sort();
    const base = {
      url: t.url,
      mediaId: t.mediaId ?? known?.mediaId ?? null,
      type: t.type,
      format: t.format,
      productIds,
    };
    if (known) Object.assign(known, base, { lastSeen: now });
    else this.#state.files.set(t.rel, { ...base, ...NEVER_STORED, firstSeen: now, lastSeen: now });
  }

  /**
   * Removes the temp files of killed runs and, on a full run, the files no record named for
   * `removeAfterMs`: only those a journal names (WriteJournal.sweep: on S3 also the object's run
   * metadata), never a file another writer put beside ours.
   */
  async #sweep(targets: ReadonlyMap<string, MediaTarget>, now: number): Promise<void> {
    const { full, removeAfterMs } = this.#settings;
    const expired = new Set<string>();
    const keep = (rel: string): boolean => {
      if (!full || targets.has(rel)) return true;
      const known = this.#state.files.get(rel);
      // Not in the state (a killed run stored it after its last save): #prepare starts its grace period.
      if (known && now - known.lastSeen >= removeAfterMs) {
        expired.add(rel);
        return false;
      }
      return true;
    };
    const result = await WriteJournal.sweep(this.#store, '', keep, { shared: (rel) => !rel.startsWith(FILES_FOLDER) });
    for (const rel of expired) this.#state.files.delete(rel);
    this.#summary.removed = result.removed.length;
  }

  #plan(t: MediaTarget): Plan {
    const known = this.#state.files.get(t.rel);
    const present = this.#existing.has(t.rel);
    const ours = known?.stored === true || this.#journaled.has(t.rel);
    if (present && !ours) return 'foreign';
    if (present && known?.stored && t.contentName && this.#settings.revalidate === 'auto') return 'skip';
    if (present && !known?.stored && t.contentName) return 'adopt';
    if (known && this.#backingOff(known)) return 'wait';
    return 'fetch';
  }

  /**
   * Whether a file that failed in an earlier run is still within its backoff: a host that lost a
   * file (404) or keeps failing on it is not asked again every run, each costing a failed run.
   */
  #backingOff(f: FileState): boolean {
    return backingOff(f, this.#settings, this.#now());
  }

  /**
   * Journals every name this run may write, in one document before the first download (a name
   * whose download then fails is simply not there for the sweep): one write instead of one per
   * file, which would serialize the pool. A journal holds at most MAX_FILES names: the fetches past
   * that wait for the next run (`deferred`).
   */
  async #recordAhead(plans: Array<{ target: MediaTarget; plan: Plan }>): Promise<void> {
    let room = MAX_FILES;
    const names: string[] = [];
    for (const p of plans) {
      if (p.plan !== 'fetch') continue;
      if (room-- > 0) names.push(p.target.rel);
      else {
        p.plan = 'defer';
        this.#summary.toFetch--;
        this.#summary.deferred++;
      }
    }
    if (names.length > 0) await this.#journal.record(names);
  }

  /** `concurrency` workers take the targets in turn; finished bodies are published beside them. */
  async #work(plans: Array<{ target: MediaTarget; plan: Plan }>): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < plans.length && !this.#settings.signal.aborted && !this.#publishing.failed) {
        const { target, plan } = plans[next++]!;
        await this.#one(target, plan);
        if (performance.now() - this.#savedAt >= SAVE_EVERY_MS && !this.#saving) {
          // In the background, one at a time: the workers do not wait for the state's fsync.
          this.#savedAt = performance.now();
          // A failed intermediate save is only lost progress: the final save (awaited) reports a broken store.
          this.#saving = this.#save()
            .catch(() => {})
            .finally(() => (this.#saving = undefined));
        }
        this.#settings.progress?.(this.#summary);
      }
    };
    try {
      await Promise.all(Array.from({ length: this.#settings.concurrency }, worker));
    } finally {
      // Even when a worker failed: no publish may outlive the run (the state and table come after).
      await this.#publishing.settle().finally(() => this.#saving);
    }
    this.#settings.signal.throwIfAborted();
  }

  async #one(t: MediaTarget, plan: Plan): Promise<void> {
    const f = this.#state.files.get(t.rel)!;
    if (plan === 'skip') {
      this.#summary.unchanged++;
      return void Object.assign(f, { lastStatus: 'skipped' });
    }
    if (plan === 'foreign') {
      const where = this.#store.location(t.rel);
      this.#settings.warn(
        'media.foreign_file',
        `${where} was not written by the mirror; it is left as it is and ${t.url} is not stored`,
      );
      return this.#failed(t, f, {
        kind: 'failed',
        reason: `a file the mirror did not write is at ${where}`,
        transient: false,
      });
    }
    if (plan === 'defer') return;
    if (plan === 'wait') {
      this.#summary.waiting++;
      return;
    }
    if (plan === 'adopt') return this.#adopt(t, f);
    const validators = f.stored ? { etag: f.etag ?? undefined, lastModified: f.lastModified ?? undefined } : {};
    let body: DownloadedBody | undefined;
    const open = async (contentType: string) => {
      // A name never stored is created on S3 only if no object took it meanwhile (If-None-Match: *).
      const options = this.#journal.writeOptions({ contentType, ifAbsent: !f.stored });
      return (body = new DownloadedBody(this.#store, t.rel, options));
    };
    const outcome = await this.#fetcher.fetch(t.url, t.expect, validators, open, this.#settings.signal);
    if (outcome.kind !== 'stored') return this.#record(t, f, outcome);
    const stored = body!;
    await this.#publishing.add(() => this.#publish(t, f, stored, outcome));
  }

  /** Publishes a complete, checked body; a store that refuses (a link, a name outside) fails the run. */
  async #publish(t: MediaTarget, f: FileState, body: DownloadedBody, outcome: FetchOutcome): Promise<void> {
    let reason: string | undefined;
    try {
      if (!(await body.publish()))
        reason = `an object appeared at ${this.#store.location(t.rel)} during the run (the conditional put found it); it is left as it is`;
    } catch (err) {
      await body.discard().catch(() => {});
      if (err instanceof StorageError) throw err;
      reason = `storing it failed: ${(err as Error).message}`;
    }
    if (reason === undefined) return this.#record(t, f, outcome);
    this.#failed(t, f, { kind: 'failed', reason, transient: true });
  }

  #record(t: MediaTarget, f: FileState, outcome: FetchOutcome): void {
    const now = this.#now();
    if (outcome.kind === 'failed') return this.#failed(t, f, outcome);
    const v = outcome.validators;
    Object.assign(f, {
      lastAttemptAt: now,
      lastError: null,
      failures: 0,
      lastFailedAt: null,
      etag: v.etag ?? null,
      lastModified: v.lastModified ?? null,
    });
    if (outcome.kind === 'unchanged') {
      this.#summary.unchanged++;
      return void Object.assign(f, { lastStatus: 'unchanged' });
    }
    this.#summary.fetched++;
    this.#summary.bytesFetched += outcome.bytes;
    Object.assign(f, {
      lastStatus: 'stored',
      stored: true,
      bytes: outcome.bytes,
      sha256: outcome.sha256,
      contentType: outcome.contentType,
    });
  }

  /** A failure keeps what was stored (`stored`, bytes, sha256): the previous copy stays published. */
  #failed(t: MediaTarget, f: FileState, outcome: Extract<FetchOutcome, { kind: 'failed' }>): void {
    this.#summary.failed++;
    if (this.#summary.failures.length < 100) this.#summary.failures.push({ url: t.url, reason: outcome.reason });
    const now = this.#now();
    Object.assign(f, {
      lastAttemptAt: now,
      lastFailedAt: now,
      lastStatus: 'failed',
      lastError: outcome.reason,
      failures: f.failures + 1,
    });
  }

  /** A file a killed run published after its last state save: hashed from the store, not downloaded again. */
  async #adopt(t: MediaTarget, f: FileState): Promise<void> {
    const hash = createHash('sha256');
    let bytes = 0;
    for await (const chunk of await this.#store.readStream(t.rel)) {
      hash.update(chunk);
      bytes += chunk.length;
    }
    this.#summary.adopted++;
    Object.assign(f, {
      stored: true,
      bytes,
      sha256: hash.digest('hex'),
      lastStatus: 'stored',
      lastError: null,
      contentType: f.contentType ?? guessType(t),
    });
  }
}

export const DEFAULT_FAILED_BACKOFF_MS = 3_600_000;
/** The longest wait before a failed file is asked for again. */
export const MAX_FAILED_BACKOFF_MS = 7 * 86_400_000;

/** The wait after `failures` failed runs in a row: `firstMs`, doubled per further failure, at most 7 days. */
export function retryDelayAfter(failures: number, firstMs: number): number {
  return Math.min(firstMs * 2 ** Math.min(Math.max(failures - 1, 0), 30), MAX_FAILED_BACKOFF_MS);
}

export type BackoffSettings = Pick<MirrorSettings, 'failedBackoffMs' | 'retryFailed'>;

/** Whether `f` failed in an earlier run and its backoff has not passed at `now` (the dry run asks too). */
export function backingOff(f: FileState, settings: BackoffSettings, now: number): boolean {
  if (settings.retryFailed || f.lastStatus !== 'failed' || f.failures < 1) return false;
  const at = f.lastFailedAt;
  if (typeof at !== 'number') return false;
  return now - at < retryDelayAfter(f.failures, settings.failedBackoffMs ?? DEFAULT_FAILED_BACKOFF_MS);
}

const NEVER_STORED = {
  stored: false,
  contentType: null,
  bytes: null,
  sha256: null,
  etag: null,
  lastModified: null,
  lastAttemptAt: null,
  lastStatus: 'skipped',
  lastError: null,
  failures: 0,
  lastFailedAt: null,
} as const;
/** What is known of a journaled file no state names: only that it is ours and stored. */
const UNKNOWN = { url: '', mediaId: null, type: 'photo' as const, format: '', productIds: [] as string[] };

function guessType(t: MediaTarget): string {
  if (!t.expect.endsWith('/')) return t.expect;
  const ext = /\.([a-z]+)$/.exec(t.rel)?.[1];
  return ext === 'png' ? 'image/png' : ext === 'webp' ? 'image/webp' : 'image/jpeg';
}
