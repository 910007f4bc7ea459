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
//
// Fencing: the heartbeat alone cannot stop a run that was paused (a frozen pod, SIGSTOP, a long
// GC or network partition) and resumes right at its commit point: its next beat comes too late.
// So every commit point (`_table.json`, the Iceberg pointer, a dataset's manifest or record, the
// state cursor) asks `assertHeld()` right before it writes: the lock is read back and must still
// carry this run's fencing token (run id plus a random nonce written at acquisition), and its
// heartbeat must be younger than `staleMs` less a margin, since past `staleMs` any other run may
// take it over at any moment even if none did yet. A failed check is `lock.lost`: the run stops
// without publishing. What remains is the window between the check and the write itself (no
// plain file system or S3 rename can be made conditional on another object); the margin keeps it
// far below `staleMs`, and the Iceberg commits are conditional on the version read besides.
// proper-lockfile was considered: its lock is an empty folder (no holder to name in the error)
// and it has no S3 counterpart; one protocol for both keeps the behaviour the same everywhere.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import path from 'node:path';
import { CatalogStreamsError } from '../errors.js';
import { processExists } from '../storage/local-file.js';
import { LocalObjectStore, type ObjectStore } from '../storage/object-store.js';
import { processStep } from '../storage/step-hook.js';

export interface LockHolder {
  runId: string;
  pipeline: string;
  host: string;
  pid: number;
  acquiredAt: string;
  heartbeatAt: string;
  /** The fencing token: random per acquisition, so only this holder's commit points pass `assertHeld`. */
  token?: string;
}

/**
 * What a commit point asks right before it writes: proof that the run still holds the lock(s)
 * guarding what it is about to publish. One mechanism for every commit point (RunLock, or several
 * combined with `fences`).
 */
export interface Fence {
  /** Resolves while the run holds the lock; throws `LockLostError` (`lock.lost`) once it may not publish. */
  assertHeld(): Promise<void>;
}

/** The run lost (or may have lost) a lock it held: it must not publish anything more. */
export class LockLostError extends CatalogStreamsError {
  constructor(message: string) {
    super('lock.lost', message);
    this.name = 'LockLostError';
  }
}

/** One fence over several (the run's state lock and a sink's dataset lock); undefined ones are skipped. */
export function fences(...parts: readonly (Fence | undefined)[]): Fence {
  const held = parts.filter((f): f is Fence => f !== undefined);
  return {
    assertHeld: async () => {
      for (const fence of held) await fence.assertHeld();
    },
  };
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

export class RunLock implements Fence {
  readonly #backend: LockBackend;
  readonly #holder: LockHolder;
  readonly #options: LockOptions;
  #timer: NodeJS.Timeout | undefined;
  #released = false;
  /** Set once the lock is known (or feared) lost: every later check fails with it. */
  #lost: LockLostError | undefined;
  /** When this process last confirmed the lock (acquisition or heartbeat), by its own clock. */
  #confirmedAt = Date.now();

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
    const holder: LockHolder = {
      ...who,
      host: hostname(),
      pid: process.pid,
      acquiredAt: now,
      heartbeatAt: now,
      token: randomUUID(),
    };
    const body = JSON.stringify(holder);
    for (let attempt = 0; attempt < 2; attempt++) {
      if (await backend.create(body)) {
        const current = parseHolder(await backend.read());
        if (current?.runId !== holder.runId || current.token !== holder.token)
          throw heldError(backend, current, options);
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
    // A beat that comes after `staleMs` (the process was paused) does not renew: another run may
    // be taking the lock over right now.
    this.#check(parseHolder(await this.#backend.read()), this.#staleMs);
    this.#holder.heartbeatAt = new Date().toISOString();
    await this.#backend.replace(JSON.stringify(this.#holder));
    this.#confirmedAt = Date.parse(this.#holder.heartbeatAt);
  }

  /**
   * The fence of a commit point: reads the lock back and throws `lock.lost` unless it still holds
   * this run's token and its heartbeat is younger than `staleMs` less a margin (a heartbeat period,
   * at most half of `staleMs`), so the write that follows lands long before anyone may take over.
   */
  async assertHeld(): Promise<void> {
    // Test hook: the fencing tests pause the process here (SIGSTOP) to play a frozen run.
    processStep('fence', this.#backend.location);
    if (this.#lost) throw this.#lost;
    if (this.#released) throw this.#lose('this run released it already');
    const staleMs = this.#staleMs;
    const margin = Math.min(this.#options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS, staleMs / 2);
    // A lock that cannot be read proves nothing: its read error fails the commit as it is.
    this.#check(parseHolder(await this.#backend.read()), staleMs - margin);
  }

  get #staleMs(): number {
    return this.#options.staleMs ?? DEFAULT_STALE_MS;
  }

  /** Throws (and remembers) `lock.lost` unless `current` is this holder's lock, confirmed within `limitMs`. */
  #check(current: LockHolder | undefined, limitMs: number): void {
    if (this.#lost) throw this.#lost;
    if (current?.runId !== this.#holder.runId || current.token !== this.#holder.token) {
      throw this.#lose(
        current ? `run ${current.runId} of pipeline "${current.pipeline}" took it over` : 'it was removed',
      );
    }
    // The older of the two clocks' views: the document (what other runs judge by) and this process's memory.
    const beat = Math.min(Date.parse(current.heartbeatAt), this.#confirmedAt);
    const age = Date.now() - beat;
    if (!(age <= limitMs)) {
      throw this.#lose(
        `its last heartbeat is ${Math.round(age / 1000)} s old (the process was paused or blocked), more than the ${Math.round(limitMs / 1000)} s ` +
          `that leave a write time to land before another run may take the lock over as stale (after ${Math.round(this.#staleMs / 1000)} s)`,
      );
    }
  }

  #lose(why: string): LockLostError {
    clearInterval(this.#timer);
    this.#lost ??= new LockLostError(
      `lost the lock on ${this.#options.what} (${this.#backend.location}): ${why}; this run stopped and published nothing there. ` +
        `If another run took over, its version stands; otherwise run again (and give runs time: a lock counts as stale after ${Math.round(this.#staleMs / 1000)} s without a heartbeat)`,
    );
    return this.#lost;
  }

  /** Removes the lock if it is still this run's. Idempotent. */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    clearInterval(this.#timer);
    const current = parseHolder(await this.#backend.read().catch(() => undefined));
    if (current?.runId === this.#holder.runId && current.token === this.#holder.token) await this.#backend.remove();
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
