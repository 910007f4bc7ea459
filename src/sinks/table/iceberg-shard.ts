// Several processes, one table (issue 40; ARCHITECTURE.md, "The table sink: Iceberg", Shards):
// with the table option `shard`, each process (a region, a pod of an Indexed Job) owns a part of
// the Iceberg table. Its data files of `current/` are under `current/data/shard=<shard>/`, its
// merge state is named in `current/`'s snapshot summary under its own keys
// (`catalog-streams.shard.<shard>.*`), and its commit replaces only its own files. Two shards
// commit with the same conditional commits as one run (the files-only catalog's put-if-absent,
// the REST catalog's assert-ref-snapshot-id); the one that lost reloads the table and builds its
// snapshot again on the winner's (`commitRebasing`): the winner's files are kept, its own
// replaced, and a winner that changed this shard's files is a conflict no rebase can settle.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Fence } from '../../core/lock.js';
import { SinkError } from '../../errors.js';
import type { IcebergCatalog, IcebergTableRef, LoadedTable, TableCommit } from './iceberg/iceberg-catalog.js';
import { IcebergCommitConflictError } from './iceberg/iceberg-catalog.js';
import type { Snapshot } from './iceberg/iceberg-types.js';
import { DELETED, readSnapshotManifests } from './iceberg/manifests.js';
import { currentSnapshot as currentSnapshotOf } from './iceberg/iceberg-commit.js';

/** On `current/` snapshots: the shards whose keys the summary holds, comma-separated. */
export const SHARDS = 'catalog-streams.shards';
/** On every snapshot a shard commits (both tables): which shard committed it. */
export const SHARD = 'catalog-streams.shard';
const SHARD_PREFIX = 'catalog-streams.shard.';

/** A summary key of one shard's own: `run-id`, `state`, `rows`, `started-at`. */
export function shardKey(shard: string, what: 'run-id' | 'state' | 'rows' | 'started-at'): string {
  return `${SHARD_PREFIX}${shard}.${what}`;
}

/** Where a shard's data files of `kind` are, relative to the table's root. */
export function shardFolder(kind: 'current' | 'changes', shard: string): string {
  return `${kind}/data/shard=${shard}/`;
}

/** A sharded commit cannot be made without touching another writer's part; nothing of it is visible. */
export class IcebergShardConflictError extends SinkError {
  constructor(message: string) {
    super(message, { code: 'iceberg.shard_conflict' });
  }
}

/**
 * The run a shard merges into, from the current snapshot of `current/` (undefined: the shard has
 * none yet). A snapshot written without shards, with a shard set now (or the other way round), is
 * refused: the files of one would be kept beside the other's rows of the same keys.
 */
export function shardRun(
  snapshot: Snapshot | undefined,
  shard: string | undefined,
  where: string,
): { runId: unknown; state: unknown; startedAt?: string } | undefined {
  const sharded = snapshot !== undefined && typeof snapshot.summary[SHARDS] === 'string';
  if (snapshot && shard !== undefined && !sharded)
    throw new IcebergShardConflictError(
      `table: ${where} was written by runs without shard:, this run has shard: ${shard}; its files would stay beside this shard's rows. Write the shards to a new path, or remove shard:`,
    );
  if (snapshot && shard === undefined && sharded)
    throw new IcebergShardConflictError(
      `table: ${where} is written by shards (${snapshot.summary[SHARDS]}), this run has no shard:; it would replace every shard's rows. Set shard: to this run's part (one of ${snapshot.summary[SHARDS]}, or a new one)`,
    );
  if (!snapshot || shard === undefined) return undefined;
  const runId = snapshot.summary[shardKey(shard, 'run-id')];
  if (runId === undefined) return undefined;
  const startedAt = snapshot.summary[shardKey(shard, 'started-at')];
  return { runId, state: snapshot.summary[shardKey(shard, 'state')], ...(startedAt ? { startedAt } : {}) };
}

/** The summary of a shard's snapshot of `current/`: every other shard's keys as the parent has them, and its own. */
export function shardSummary(
  parent: Snapshot | undefined,
  shard: string,
  own: { runId: string; state: string; rows: number; startedAt: Date },
): Record<string, string> {
  const kept = Object.entries(parent?.summary ?? {}).filter(
    ([k]) => k.startsWith(SHARD_PREFIX) && !k.startsWith(`${SHARD_PREFIX}${shard}.`),
  );
  const shards = new Set((parent?.summary[SHARDS] ?? '').split(',').filter(Boolean));
  shards.add(shard);
  return {
    ...Object.fromEntries(kept),
    [SHARDS]: [...shards].sort().join(','),
    [SHARD]: shard,
    [shardKey(shard, 'run-id')]: own.runId,
    [shardKey(shard, 'state')]: own.state,
    [shardKey(shard, 'rows')]: String(own.rows),
    [shardKey(shard, 'started-at')]: own.startedAt.toISOString(),
  };
}

/** The live data files of a table's current snapshot, in manifest order (full URIs). */
export async function liveFiles(table: IcebergTableRef, snapshot: Snapshot | undefined): Promise<string[]> {
  if (!snapshot) return [];
  const manifests = await readSnapshotManifests(table.store, table.location, snapshot['manifest-list']);
  return manifests.flatMap((m) => m.entries.filter((e) => e.status !== DELETED).map((e) => e.data_file.file_path));
}

/**
 * The live files of a shard's new snapshot of `current/`: the other shards' files of `live` (the
 * base it commits on) as they are, then its own new ones. `ownPrefix`: the URI its files start
 * with; `expected`: its files in the base it merged into. The base's files of this shard must be
 * those: another writer that replaced them made rows this run did not merge.
 */
export function rebasedOrder(args: {
  live: readonly string[];
  ownPrefix: string;
  expected: ReadonlySet<string>;
  added: readonly string[];
  where: string;
}): string[] {
  const own = args.live.filter((f) => f.startsWith(args.ownPrefix));
  const same = own.length === args.expected.size && own.every((f) => args.expected.has(f));
  if (!same)
    throw new IcebergShardConflictError(
      `table: another writer changed this shard's files of ${args.where} since the run read them (${own.length} live, ${args.expected.size} read); ` +
        'nothing was committed. Two runs of one shard at once, or a run without the shard lock: run each shard in one process at a time, then run again',
    );
  return [...args.live.filter((f) => !f.startsWith(args.ownPrefix)), ...args.added];
}

/** One table's commit built on a base, and the snapshot id that tells it landed. */
export interface ShardAttempt {
  commit: TableCommit;
  snapshotId: number;
}

export interface RebasingOptions<N extends string> {
  catalog: IcebergCatalog;
  tables: Record<N, IcebergTableRef>;
  /** The tables' bases, in commit order (`changes` first). */
  bases: Array<[N, LoadedTable | undefined]>;
  /**
   * Builds a table's commit on `base` (again after a lost race, on the winner's metadata);
   * undefined when the table needs none any more (`base` is then what it is).
   */
  build: (name: N, base: LoadedTable | undefined) => Promise<ShardAttempt | undefined>;
  fence?: Fence | undefined;
  /** Told each lost race, before the retry. */
  retried: (message: string) => void;
  attempts?: number;
  /** The backoff before attempt n+1 (n from 1), before jitter. */
  backoffMs?: (n: number) => number;
}

const DEFAULT_ATTEMPTS = 8;
const defaultBackoff = (n: number): number => Math.min(2000, 50 * 2 ** (n - 1));

function hasSnapshot(loaded: LoadedTable | undefined, id: number): boolean {
  return (loaded?.metadata.snapshots ?? []).some((s) => s['snapshot-id'] === id);
}

/**
 * Commits the tables (all at once where the catalog can), and on a conflict reloads them: a table
 * that holds its attempt's snapshot landed (the files-only catalog commits one table at a time),
 * the others are built again on what the winner committed, after a jittered backoff, at most
 * `attempts` times. Returns each table as committed.
 */
export async function commitRebasing<N extends string>(options: RebasingOptions<N>): Promise<Record<N, LoadedTable>> {
  const attempts = options.attempts ?? DEFAULT_ATTEMPTS;
  const backoff = options.backoffMs ?? defaultBackoff;
  const committed = {} as Record<N, LoadedTable>;
  let pending = options.bases;
  for (let n = 1; ; n++) {
    const built: Array<[N, ShardAttempt]> = [];
    for (const [name, base] of pending) {
      const attempt = await options.build(name, base);
      if (attempt) built.push([name, attempt]);
      else if (base) committed[name] = base;
    }
    if (built.length === 0) return committed;
    try {
      const landed = await options.catalog.commit(
        built.map(([, a]) => a.commit),
        options.fence,
      );
      built.forEach(([name], i) => (committed[name] = landed[i]!));
      return committed;
    } catch (err) {
      if (!(err instanceof IcebergCommitConflictError)) throw err;
      if (n >= attempts)
        throw new IcebergCommitConflictError(
          `${err.message}; gave up after ${attempts} attempts (other writers kept committing first)`,
          { cause: err },
        );
      const wait = Math.round(backoff(n) * (0.5 + Math.random()));
      options.retried(
        `commit attempt ${n} of ${built.map(([name]) => options.tables[name].location).join(' and ')} lost to another writer (${err.message}); reloading, rebasing and trying again in ${wait} ms`,
      );
      await sleep(wait);
      const next: Array<[N, LoadedTable | undefined]> = [];
      for (const [name, attempt] of built) {
        const reloaded = await options.catalog.load(options.tables[name]);
        if (hasSnapshot(reloaded, attempt.snapshotId)) committed[name] = reloaded!;
        else next.push([name, reloaded]);
      }
      pending = next;
      if (pending.length === 0) return committed;
    }
  }
}

/**
 * The snapshots of `changes/` a shard's stopped runs left (committed there, never in `current/`):
 * the shard's, of another run than the one `current/` names for it, started after that run (a
 * shard's runs take its lock one at a time, so an earlier one was repaired by the run named).
 */
export function shardRunsAhead(
  changes: LoadedTable | undefined,
  shard: string,
  named: { runId: unknown; startedAt?: string } | undefined,
): number[] {
  return (changes?.metadata.snapshots ?? [])
    .filter(
      (s) =>
        s.summary[SHARD] === shard &&
        s.summary['catalog-streams.run-id'] !== named?.runId &&
        (named?.startedAt === undefined || String(s.summary['catalog-streams.started-at']) > named.startedAt),
    )
    .map((s) => s['snapshot-id']);
}

type TableName = 'current' | 'changes';

/** What a shard's commit is built from: the sink's version, as far as the shard needs it. */
export interface ShardVersion {
  runId: string;
  state: string;
  rows: number;
  startedAt: Date;
  /** The run's new files of current/ and changes/, relative to the table's root. */
  snapshot: ReadonlyArray<{ path: string; rows: number; bytes: number }>;
  changes: ReadonlyArray<{ path: string; rows: number; bytes: number }>;
}

/** Builds one table's commit on a base (iceberg-layout.ts): the run's files, summary, and for current/ the live files' order. */
export type BuildCommit = (
  name: TableName,
  files: ShardVersion['snapshot'],
  extra: Record<string, string>,
  base: LoadedTable | undefined,
  order?: readonly string[],
) => Promise<ShardAttempt>;

/** A repair commit of changes/ without some snapshots' manifests (iceberg-commit.ts `withoutSnapshots`). */
export type WithoutSnapshots = (args: {
  table: IcebergTableRef;
  base: LoadedTable;
  head: Snapshot;
  undone: readonly number[];
  summary: Record<string, string>;
}) => Promise<{ commit: TableCommit; snapshot: Snapshot }>;

export interface ShardDeps {
  catalog: IcebergCatalog;
  tables: Record<TableName, IcebergTableRef>;
  /** The table's root URI, with a trailing `/`. */
  root: string;
  retried: (message: string) => void;
}

/** One shard's side of a sharded table: what it read at open, its commit and its repair. */
export class IcebergShard {
  readonly name: string;
  readonly #deps: ShardDeps;
  /** The shard's previous run, as current/'s summary names it. */
  run: ReturnType<typeof shardRun>;
  /** The shard's files of current/ in the version it merged into: its commit replaces exactly these. */
  #files: ReadonlySet<string> = new Set();

  constructor(name: string, deps: ShardDeps) {
    this.name = name;
    this.#deps = deps;
  }

  /** Where the shard's own files are (its clean-up looks nowhere else: the other shards write beside it). */
  get folders(): string[] {
    return [shardFolder('current', this.name), shardFolder('changes', this.name)];
  }

  get #prefix(): string {
    return `${this.#deps.root}${shardFolder('current', this.name)}`;
  }

  async open(snapshot: Snapshot | undefined, named: ReturnType<typeof shardRun>): Promise<void> {
    this.run = named;
    const live = await liveFiles(this.#deps.tables.current, snapshot);
    this.#files = new Set(live.filter((f) => f.startsWith(this.#prefix)));
  }

  /** Commits both tables: changes/ appended to, the shard's files of current/ replaced, rebased on a lost race. */
  async publish(
    version: ShardVersion,
    loaded: Partial<Record<TableName, LoadedTable>>,
    fence: Fence,
    commit: BuildCommit,
  ): Promise<Record<TableName, LoadedTable>> {
    const { tables } = this.#deps;
    const added = version.snapshot.map((f) => `${this.#deps.root}${f.path}`);
    return commitRebasing<TableName>({
      catalog: this.#deps.catalog,
      tables,
      bases: [
        ['changes', loaded.changes],
        ['current', loaded.current],
      ],
      fence,
      retried: this.#deps.retried,
      build: async (name, base) => {
        if (name === 'changes') return commit('changes', version.changes, { [SHARD]: this.name }, base);
        const parent = currentSnapshotOf(base);
        const order = rebasedOrder({
          live: await liveFiles(tables.current, parent),
          ownPrefix: this.#prefix,
          expected: this.#files,
          added,
          where: tables.current.location,
        });
        return commit('current', version.snapshot, shardSummary(parent, this.name, version), base, order);
      },
    });
  }

  /**
   * The `changes/` snapshots this shard's stopped runs left (never committed in `current/`),
   * their manifests dropped in a new snapshot; the other shards' rows stay. Undefined: none.
   */
  async repair(
    changes: LoadedTable | undefined,
    without: WithoutSnapshots,
  ): Promise<{ changes: LoadedTable; message: string } | undefined> {
    const { tables } = this.#deps;
    let undone: number[] = [];
    const landed = await commitRebasing<TableName>({
      catalog: this.#deps.catalog,
      tables,
      bases: [['changes', changes]],
      retried: this.#deps.retried,
      build: async (_name, base) => {
        undone = shardRunsAhead(base, this.name, this.run);
        const head = currentSnapshotOf(base);
        if (!base || !head || undone.length === 0) return undefined;
        const summary = { 'catalog-streams.run-id': String(this.run?.runId ?? '') };
        const prepared = await without({ table: tables.changes, base, head, undone, summary });
        return { commit: prepared.commit, snapshotId: prepared.snapshot['snapshot-id'] };
      },
    });
    if (undone.length === 0 || !landed.changes) return undefined;
    return {
      changes: landed.changes,
      message: `${tables.changes.location} held ${undone.length} snapshot(s) of shard ${this.name} that ${tables.current.location} never committed (a run stopped between the two commits); their change rows were dropped, the other shards' kept: this run writes those changes again`,
    };
  }
}
