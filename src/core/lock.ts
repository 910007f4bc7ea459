// An exclusive lock held by one run: on a state file (two runs must never share a cursor) and on
// a dataset a run publishes into (two runs must never interleave their objects and manifests).
//
// The lock is a small JSON document naming its holder (run id, pipeline, host, pid, heartbeat):
// - local: `<file>.lock`, created by link(2) from a complete temp file, so it appears whole or
//   not at all, and a second creator gets EEXIST (storage/local-file.ts: the temp file is never
//   one that someone else planted, and a failed write names the lock file and leaves no temp);
// - S3: an object written with `If-None-Match: *` (a conditional put: S3 answers 412 when it
//   exists). A server that ignores the condition is caught when the lock is read back.
// The holder rewrites its heartbeat every `heartbeatMs`, checking first that the lock is still
// its own. A lock is stale when its holder is a process of this host that no longer exists, or
// when its heartbeat is older than `staleMs`; a stale lock is removed and taken over.
// proper-lockfile was considered: its lock is an empty folder (no holder to name in the error)
// and it has no S3 counterpart; one protocol for both keeps the behaviour the same everywhere.
import { hostname } from 'node:os';
import path from 'node:path';
import { CatalogStreamsError } from '../errors.js';
import { processExists } from '../storage/local-file.js';
import { LocalObjectStore, type ObjectStore } from '../storage/object-store.js';

export interface LockHolder {
  runId: string;
  pipeline: string;
  host: string;
  pid: number;
  acquiredAt: string;
  heartbeatAt: string;
}

/** Where a lock document lives. */
export interface LockBackend {
  /** `path/to/x.lock` or `s3://bucket/key`. */
  readonly location: string;
  /** Creates the lock only if it does not exist; false when it exists. */
  create(body: string): Promise<boolean>;
  /** The lock document, or undefined when there is none. */
  read(): Promise<string | undefined>;
  /** Rewrites the lock the caller holds. */
  replace(body: string): Promise<void>;
  remove(): Promise<void>;
}

export interface LockOptions {
  /** What the lock guards, for messages: `state .state/x.json`, `dataset s3://lake/catalog/products/dt=2026-01-02/`. */
  what: string;
  /** The error code a held lock fails with. */
  code: string;
  staleMs?: number;
  heartbeatMs?: number;
  /** Called when the heartbeat finds the lock taken by another run (the run should stop). */
  onLost?(error: Error): void;
}

export const DEFAULT_STALE_MS = 120_000;
export const DEFAULT_HEARTBEAT_MS = 15_000;

export class RunLock {
  readonly #backend: LockBackend;
  readonly #holder: LockHolder;
  readonly #options: LockOptions;
  #timer: NodeJS.Timeout | undefined;
  #released = false;

  private constructor(backend: LockBackend, holder: LockHolder, options: LockOptions) {
    this.#backend = backend;
    this.#holder = holder;
    this.#options = options;
  }

  get location(): string {
    return this.#backend.location;
  }

  /**
   * Takes the lock or fails with `options.code`, naming the holder and what to do. A stale lock
   * is taken over once; a lock that another run takes at the same moment wins.
   */
  static async acquire(
    backend: LockBackend,
    who: { runId: string; pipeline: string },
    options: LockOptions,
  ): Promise<RunLock> {
    const now = new Date().toISOString();
    const holder: LockHolder = { ...who, host: hostname(), pid: process.pid, acquiredAt: now, heartbeatAt: now };
    const body = JSON.stringify(holder);
    for (let attempt = 0; attempt < 2; attempt++) {
      if (await backend.create(body)) {
        const current = parseHolder(await backend.read());
        if (current?.runId !== holder.runId) throw heldError(backend, current, options);
        const lock = new RunLock(backend, holder, options);
        lock.#startHeartbeat();
        return lock;
      }
      const current = parseHolder(await backend.read());
      if (current && !isStale(current, options.staleMs ?? DEFAULT_STALE_MS)) throw heldError(backend, current, options);
      // Stale (or unreadable, or gone again): remove it and try once more.
      await backend.remove();
    }
    throw heldError(backend, parseHolder(await backend.read()), options);
  }

  #startHeartbeat(): void {
    const every = this.#options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
    this.#timer = setInterval(() => {
      this.#beat().catch((err: unknown) => this.#options.onLost?.(err as Error));
    }, every);
    this.#timer.unref();
  }

  async #beat(): Promise<void> {
    if (this.#released) return;
    const current = parseHolder(await this.#backend.read());
    if (current?.runId !== this.#holder.runId) {
      clearInterval(this.#timer);
      throw new CatalogStreamsError(
        this.#options.code,
        `lost the lock on ${this.#options.what} (${this.#backend.location}): ${current ? `run ${current.runId} took it over` : 'it was removed'}; ` +
          `this run stops without publishing`,
      );
    }
    this.#holder.heartbeatAt = new Date().toISOString();
    await this.#backend.replace(JSON.stringify(this.#holder));
  }

  /** Removes the lock if it is still this run's. Idempotent. */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    clearInterval(this.#timer);
    const current = parseHolder(await this.#backend.read().catch(() => undefined));
    if (current?.runId === this.#holder.runId) await this.#backend.remove();
  }
}

function parseHolder(text: string | undefined): LockHolder | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as LockHolder;
    return typeof value?.runId === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

function isStale(holder: LockHolder, staleMs: number): boolean {
  if (holder.host === hostname() && holder.pid !== process.pid && !processExists(holder.pid)) return true;
  const beat = Date.parse(holder.heartbeatAt);
  return !Number.isFinite(beat) || Date.now() - beat > staleMs;
}

function heldError(backend: LockBackend, holder: LockHolder | undefined, options: LockOptions): CatalogStreamsError {
  const who = holder
    ? `run ${holder.runId} of pipeline "${holder.pipeline}" (pid ${holder.pid} on ${holder.host}, since ${holder.acquiredAt}, last heartbeat ${holder.heartbeatAt})`
    : 'another run';
  return new CatalogStreamsError(
    options.code,
    `${options.what} is locked by ${who}: ${backend.location}; this run stopped before writing anything. ` +
      `Wait for that run to finish; if it died, the lock counts as stale after ${Math.round((options.staleMs ?? DEFAULT_STALE_MS) / 1000)} s without a heartbeat ` +
      `(at once on the same host), or delete ${backend.location}`,
  );
}

/** The lock document at `rel` in a store: a local file (created by link(2)) or an S3 object (a conditional put). */
export function storeLockBackend(store: ObjectStore, rel: string): LockBackend {
  const options = { contentType: 'application/json' };
  return {
    location: store.location(rel),
    create: async (body) => {
      // A run killed while creating the lock leaves the lock's temp file (never the lock): swept here.
      const folder = rel.slice(0, rel.lastIndexOf('/') + 1);
      await store.removeAbandoned(folder, (finalRel) => finalRel === rel, rel.split('/').length);
      return store.putIfAbsent(rel, body, options);
    },
    read: () => store.readText(rel),
    replace: (body) => store.write(rel, body, options),
    remove: () => store.remove(rel),
  };
}

/** A local lock file at `lockPath`. */
export function fileLockBackend(lockPath: string): LockBackend {
  return storeLockBackend(new LocalObjectStore(path.dirname(lockPath)), path.basename(lockPath));
}
