// Incremental state: the cursor an incremental run starts from (`updatedSince`)
// and facts about the last successful run. Stored in a local file (written to a
// temporary name and renamed, so a crash never leaves half a file:
// storage/local-file.ts, which never follows a link planted at the temp name) or in an S3
// object (`s3://bucket/key`, one PUT, which S3 makes atomic). It is written only
// after every sink has committed; a failed run leaves the previous cursor.
// A state records what its cursor belongs to (pipeline, API host, source type and filter) and is
// locked by the run using it, so a cursor is never applied to another extract or by two runs.
// A local state is never reached through a symbolic link (storage/no-symlink.ts): neither the file
// nor its lock, nor, for a relative state.path, a folder between the pipeline file's folder and the
// state file (a link planted there would make the run replace and lock a file elsewhere). An
// absolute state.path is the operator's explicit choice: its folder may be a link.
import path from 'node:path';
import { z } from 'zod';
import { ConfigError, CatalogStreamsError, StorageError } from '../errors.js';
import { RunLock, storeLockBackend } from '../core/lock.js';
import { LocalObjectStore, type ObjectStore } from '../storage/object-store.js';
import { createS3Client, parseS3Location, type S3Env } from '../storage/s3-client.js';
import { S3ObjectStore } from '../storage/s3-object-store.js';

export const PipelineState = z.looseObject({
  version: z.literal(1),
  pipeline: z.string(),
  /** The API host the cursor was read from (`api.example.com`, `sandbox` for --sandbox runs); absent in older states. */
  host: z.string().optional(),
  /** The source the cursor belongs to (type and filter as in the pipeline file); absent in older states. */
  source: z.looseObject({ type: z.string(), filter: z.unknown().optional() }).optional(),
  /** Unix seconds: the next run asks for `updatedSince: {from: cursor}`. */
  cursor: z.int().nonnegative(),
  updatedAt: z.string(),
  /**
   * When the last full run (no cursor: the first, a --full-refresh, or one a sink's `fullReadEvery`
   * made due) started, ISO time; absent in older states (a sink that needs full reads then gets one).
   */
  lastFullRunAt: z.string().optional(),
  lastRun: z
    .looseObject({
      runId: z.string(),
      startedAt: z.string(),
      finishedAt: z.string(),
      records: z.int().nonnegative(),
      source: z.string(),
    })
    .optional(),
});
export type PipelineState = z.infer<typeof PipelineState>;

export interface StateStore {
  /** `path/to/file.json` or `s3://bucket/key`. */
  readonly location: string;
  read(): Promise<PipelineState | undefined>;
  write(state: PipelineState): Promise<void>;
  /**
   * Takes the state's lock for one run (`<file>.lock`, `s3://bucket/<key>.lock`), or fails with
   * `state.locked` naming the run that holds it. Undefined when the S3 I/O cannot lock.
   */
  lock(who: { runId: string; pipeline: string }, onLost: (err: Error) => void): Promise<RunLock | undefined>;
}

/** What a cursor belongs to: a cursor of another pipeline, host or source is refused. */
export interface StateIdentity {
  pipeline: string;
  /** `host[:port]` of the API, or `sandbox` for the embedded sandbox of `--sandbox`. */
  host: string;
  source: { type: string; filter?: unknown };
}

const lockOptions = (location: string, onLost: (err: Error) => void) => ({
  what: `state ${location}`,
  code: 'state.locked',
  onLost,
});

/** JSON with object keys sorted, so two equal filters compare equal whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value ?? null, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as object).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

const describeHost = (host: string) => (host === 'sandbox' ? 'the embedded sandbox (--sandbox)' : `API host ${host}`);

/**
 * Refuses a stored cursor that belongs to another pipeline, API host or source (type and
 * filter). States written before the host and source were recorded are checked by pipeline only.
 */
export function checkStateIdentity(state: PipelineState, identity: StateIdentity, location: string): void {
  const problems: string[] = [];
  if (state.pipeline !== identity.pipeline)
    problems.push(`it belongs to pipeline "${state.pipeline}", this is pipeline "${identity.pipeline}"`);
  if (state.host !== undefined && state.host !== identity.host) {
    problems.push(`it was read from ${describeHost(state.host)}, this run reads ${describeHost(identity.host)}`);
  }
  if (
    state.source !== undefined &&
    canonical({ type: state.source.type, filter: state.source.filter }) !== canonical(identity.source)
  ) {
    problems.push(
      `it is the cursor of source ${state.source.type} with filter ${canonical(state.source.filter)}, this run reads ${identity.source.type} with filter ${canonical(identity.source.filter)}`,
    );
  }
  if (problems.length === 0) return;
  throw new CatalogStreamsError(
    'state.mismatch',
    `state ${location} cannot be used: ${problems.join('; ')}. A cursor only holds for the pipeline, source and API host that saved it ` +
      `(using it elsewhere skips records): give this pipeline a state.path of its own, or run with --full-refresh to extract everything and replace the cursor`,
  );
}

export function openStateStore(location: string, opts: { baseDir: string; env?: S3Env }): StateStore {
  const s3 = parseS3Location(location);
  // A state file needs a key: `s3://bucket` and `s3://bucket/` fall through to the error below.
  if (s3 && s3.key !== '') {
    const { key } = s3;
    const slash = key.lastIndexOf('/') + 1;
    // The AWS SDK's credential chain, S3_ENDPOINT for S3-compatible servers: the s3 sink's settings.
    const store = new S3ObjectStore({
      bucket: s3.bucket,
      prefix: key.slice(0, slash),
      client: () => createS3Client({ maxAttempts: 3 }, opts.env, 's3-state'),
      feature: 's3-state',
    });
    return new ObjectStateStore(location, store, key.slice(slash));
  }
  if (location.startsWith('s3:'))
    throw new ConfigError(`state.path: "${location}" is not of the form s3://bucket/key`, { path: 'state.path' });
  const file = path.resolve(opts.baseDir, location);
  const checkedFrom = path.isAbsolute(location) ? undefined : opts.baseDir;
  return new ObjectStateStore(file, new LocalObjectStore(path.dirname(file), { checkedFrom }), path.basename(file));
}

function parseState(text: string, location: string): PipelineState {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new CatalogStreamsError(
      'state.corrupt',
      `state ${location} is not valid JSON; fix it, or delete it and run with --full-refresh`,
    );
  }
  const parsed = PipelineState.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CatalogStreamsError(
      'state.corrupt',
      `state ${location}: ${issue.path.join('.') || '(root)'}: ${issue.message}; fix it, or delete it and run with --full-refresh`,
    );
  }
  return parsed.data;
}

/** A state in a store: a local file (its folder) or an S3 object (its prefix); the lock beside it. */
class ObjectStateStore implements StateStore {
  /** The lock this store's run took: the cursor is written only while it holds it. */
  #lock: RunLock | undefined;

  constructor(
    readonly location: string,
    private readonly store: ObjectStore,
    private readonly name: string,
  ) {}

  async lock(who: { runId: string; pipeline: string }, onLost: (err: Error) => void): Promise<RunLock> {
    this.#lock = await RunLock.acquire(
      storeLockBackend(this.store, `${this.name}.lock`),
      who,
      lockOptions(this.location, onLost),
    );
    return this.#lock;
  }

  async read(): Promise<PipelineState | undefined> {
    const text = await this.store.readText(this.name).catch((err: unknown) => {
      throw this.#failure('read', err);
    });
    return text === undefined ? undefined : parseState(text, this.location);
  }

  async write(state: PipelineState): Promise<void> {
    // The cursor's commit point: a run that lost the state's lock must not move a newer run's cursor back.
    await this.#lock?.assertHeld();
    await this.store.write(this.name, `${JSON.stringify(state, null, 2)}\n`).catch((err: unknown) => {
      throw this.#failure('write', err);
    });
  }

  #failure(action: 'read' | 'write', err: unknown): CatalogStreamsError {
    // Its own code and remedy (replace the link, or name the real folder), not a retry.
    if (err instanceof StorageError && err.code === 'storage.symlink') return err;
    if (this.store.kind === 'object') {
      const cause = (err as Error).cause as Error | undefined;
      return new CatalogStreamsError(
        'state.s3',
        `cannot ${action} state ${this.location}: ${cause?.name ?? (err as Error).name}: ${cause?.message ?? (err as Error).message} (check AWS credentials, region and S3_ENDPOINT)`,
        { cause: err },
      );
    }
    const reason = err instanceof StorageError ? err.reason : (err as Error).message;
    return new CatalogStreamsError(`state.${action}`, `cannot ${action} state ${this.location}: ${reason}`, {
      cause: err,
    });
  }
}
