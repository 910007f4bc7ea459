// The `iceberg` layout: under the table's path, two Iceberg format-version 2 tables, `current/`
// (one row per key; every run an `overwrite` snapshot whose files replace all earlier ones) and
// `changes/` (append-only change rows), plus the merge state `_table/state-<run>.v8.gz`, which the
// current snapshot's summary names. ARCHITECTURE.md, "The table sink: Iceberg".
//
// One run is one commit of each table, `changes/` first and `current/` last: the current
// snapshot of `current/` is the table's commit point (its summary names the run and the state
// the next run merges into). A kill between the two leaves `changes/` one run ahead; the next
// run finds its current snapshot's run id differs from `current/`'s and rolls `changes/` back
// before anything else, so no change row is ever counted twice. A REST catalog commits both in
// one transaction.
import { pathToFileURL } from 'node:url';
import type { Fence } from '../../core/lock.js';
import { SinkError } from '../../errors.js';
import type { ObjectStore } from '../../storage/object-store.js';
import type { TypedColumn } from '../shared/column-types.js';
import { isTableFile, type TableStore } from './table-store.js';
import { TABLE_MANIFEST } from './hive-layout.js';
import { VERSION_HINT } from './iceberg/files-catalog.js';
import type {
  CleanupWarning,
  NewVersion,
  PreviousVersion,
  PublishedFile,
  TableColumns,
  TableFile,
  TableFilesReport,
  TableLayout,
} from './table-layout.js';
import type { IcebergCatalog, IcebergTableRef, LoadedTable, TableCommit } from './iceberg/iceberg-catalog.js';
import { parquetFooterMetadata, type IcebergSchemaResult } from './iceberg/iceberg-schema.js';
import {
  currentSnapshot,
  refSnapshotIds,
  rollbackTo,
  tableSchema,
  withoutSnapshots,
} from './iceberg/iceberg-commit.js';
import { FastAppend, Overwrite, RewriteFiles } from './iceberg/snapshot-operations.js';
import { ManifestNames, referenced } from './iceberg/iceberg-garbage.js';
import type { Snapshot, TableMetadata } from './iceberg/iceberg-types.js';
import { KEY, COLUMNS, SCHEMA_HASH, changedProperties, describedColumns } from './iceberg-properties.js';
import { IcebergShard, shardFolder, shardRun, type ShardAttempt } from './iceberg-shard.js';
import { POSITIONS, positionsOf, snapshotPositions } from './iceberg-positions.js';

/** The summary and property keys the sink reads back; prefixed as Iceberg asks of writers' own keys. */
export const RUN_ID = 'catalog-streams.run-id';
const STATE = 'catalog-streams.state';

const TABLES = ['current', 'changes'] as const;
type TableName = (typeof TABLES)[number];

/** Where the layout's files are, under the table's root: what a foreign file is looked for in. */
const FOLDERS = ['current/data/', 'current/metadata/', 'changes/data/', 'changes/metadata/', '_table/'];

export interface IcebergLayoutOptions {
  key: string;
  keepSnapshots: number;
  /** Snapshots older than this many days expire too (undefined: no age limit). */
  keepSnapshotsDays?: number | undefined;
  catalog: IcebergCatalog;
  /** The stores rooted at `<path>/current` and `<path>/changes`. */
  stores: Record<TableName, ObjectStore>;
  /** This run's part of a table several processes commit (iceberg-shard.ts). */
  shard?: string | undefined;
  /** Told each commit a sharded run lost to another shard and retries (iceberg.commit_retried). */
  retried?: (message: string) => void;
}

/** The URI of a store's root as Iceberg metadata writes locations: file:///abs/path or s3://bucket/prefix. */
export function storeUri(store: ObjectStore): string {
  const location = store.location('').replace(/\/+$/, '');
  return store.kind === 'file' ? pathToFileURL(location).href : location;
}

const days = (n: number | undefined) => (n === undefined ? undefined : n * 24 * 60 * 60 * 1000);

export class IcebergLayout implements TableLayout {
  readonly name = 'iceberg' as const;
  readonly #store: TableStore;
  readonly #options: IcebergLayoutOptions;
  readonly #tables: Record<TableName, IcebergTableRef>;
  /** What this run's garbage walks have read of each table's manifests (immutable files). */
  readonly #manifestNames: Record<TableName, ManifestNames> = {
    current: new ManifestNames(),
    changes: new ManifestNames(),
  };
  readonly #loaded: Partial<Record<TableName, LoadedTable>> = {};
  readonly #schemas: Partial<Record<TableName, IcebergSchemaResult>> = {};
  readonly #columns: Partial<Record<TableName, readonly TypedColumn[]>> = {};
  #previous: PreviousVersion | undefined;
  /** A sharded run's side of the table (table option `shard`). */
  readonly #shard: IcebergShard | undefined;
  /** This run's merge state, which its commit names. */
  #state: string | undefined;
  /** This run's row positions, which its commit names beside the state. */
  #positions: string | undefined;
  /** The summary of this run's snapshot of `current/` (files added, deleted, in the table). */
  #rewrite: Snapshot['summary'] | undefined;
  /** The tables as this run committed them, for the settle (expired files) and a revoke. */
  #committed: Partial<Record<TableName, LoadedTable>> | undefined;

  constructor(store: TableStore, options: IcebergLayoutOptions) {
    this.#store = store;
    this.#options = options;
    const ref = (name: TableName): IcebergTableRef => ({
      name,
      location: storeUri(options.stores[name]),
      store: options.stores[name],
    });
    this.#tables = { current: ref('current'), changes: ref('changes') };
    if (options.shard !== undefined)
      this.#shard = new IcebergShard(options.shard, {
        catalog: options.catalog,
        tables: this.#tables,
        root: `${storeUri(store.objects)}/`,
        retried: (message: string) => options.retried?.(`table: ${message}`),
      });
    // A shard rewrites its own files whole: positions would name the other shards' files too.
    else
      this.positionDeletes = {
        file: (runId: string) => `current/data/deletes-${runId}.parquet`,
        location: (rel: string) => `${storeUri(store.objects)}/${rel}`,
      };
  }

  /** Position deletes: one file per run under current/data/, naming data files by their table locations. */
  readonly positionDeletes: TableLayout['positionDeletes'];

  get commitPoint(): string {
    return this.#options.catalog.kind === 'files'
      ? this.#store.location('current/metadata/version-hint.text')
      : `the REST catalog's table for ${this.#store.location('current')}`;
  }

  async open(): Promise<{
    previous: PreviousVersion | undefined;
    removed: string[];
    repaired?: string;
    foreign: string[];
  }> {
    if ((await this.#store.objects.readText(TABLE_MANIFEST)) !== undefined) {
      throw new SinkError(
        `table: ${this.#store.location('')} holds a table of the hive layout (${TABLE_MANIFEST}); format: iceberg writes two Iceberg tables beside no other layout. ` +
          'Point path at a new folder for the Iceberg tables (the hive table stays readable where it is), or keep format: hive',
        { code: 'table.layout_mismatch' },
      );
    }
    const catalog = this.#options.catalog;
    for (const name of TABLES) this.#loaded[name] = await catalog.load(this.#tables[name]);
    const current = this.#loaded.current;
    const key = current?.metadata.properties?.[KEY];
    if (current && key !== undefined && key !== this.#options.key) {
      throw new SinkError(
        `table: ${this.#tables.current.location} is keyed by "${key}" (table property ${KEY}), the sink by "${this.#options.key}"; keep key: ${key} or write to a new path`,
        { code: 'table.key_changed' },
      );
    }
    const snapshot = currentSnapshot(current);
    const shard = this.#shard;
    // A run without shard: on a sharded table (or the other way round) is refused here.
    const named = shardRun(snapshot, shard?.name, this.#tables.current.location);
    if (shard) await shard.open(snapshot, named);
    const merged = shard ? named && snapshot : snapshot;
    this.#previous = merged ? this.#previousOf(merged, current!.metadata) : undefined;
    // A shard's run rewrites its own files whole: the positions name the whole table's files.
    if (!shard && snapshot && this.#previous) {
      const table = this.#tables.current;
      const delta = await snapshotPositions(this.#store.objects, table, snapshot, this.positionDeletes!.location);
      if (delta) this.#previous.delta = delta;
    }
    const repaired = shard ? await this.#repairShard(shard) : await this.#repairChanges();
    const { removed, foreign } = await this.#removeGarbage();
    return { previous: this.#previous, removed, foreign, ...(repaired ? { repaired } : {}) };
  }

  #previousOf(snapshot: Snapshot, metadata: TableMetadata): PreviousVersion {
    const named = this.#shard?.run;
    const runId = named ? named.runId : snapshot.summary[RUN_ID];
    const state = named ? named.state : snapshot.summary[STATE];
    if (typeof runId !== 'string' || typeof state !== 'string' || !isTableFile(state) || !state.startsWith('_table/')) {
      throw new SinkError(
        `table: the current snapshot ${snapshot['snapshot-id']} of ${this.#tables.current.location} names no state of this table (summary ${STATE}: ${JSON.stringify(state)}); ` +
          'it was not written by the table sink: point path at a new folder',
        { code: 'table.manifest' },
      );
    }
    const schema = metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id']);
    const described = describedColumns(metadata.properties?.[COLUMNS], snapshot.summary[SCHEMA_HASH]);
    return {
      runId,
      state,
      columnNames: schema?.fields.map((f) => f.name),
      ...(described ? { schema: described } : {}),
    };
  }

  /**
   * `changes/` is ahead of `current/` when a run was killed (or failed) between its two commits:
   * its change rows would be written again by the next run. Rolled back to the snapshot of the
   * run `current/` names (or to none), before this run reads anything.
   */
  async #repairChanges(): Promise<string | undefined> {
    const changes = this.#loaded.changes;
    const head = currentSnapshot(changes);
    const runId = this.#previous?.runId;
    if (!changes || !head || head.summary[RUN_ID] === runId) return undefined;
    const snapshots = new Map((changes.metadata.snapshots ?? []).map((s) => [s['snapshot-id'], s]));
    const ahead: number[] = [];
    let target: Snapshot | undefined = head;
    while (target && target.summary[RUN_ID] !== runId) {
      ahead.push(target['snapshot-id']);
      const parent: number | undefined = target['parent-snapshot-id'];
      target = parent === undefined ? undefined : snapshots.get(parent);
    }
    const said = `${this.#tables.changes.location} held the change rows of run ${head.summary[RUN_ID] ?? head['snapshot-id']}, which ${this.#tables.current.location} never committed (a run stopped between the two commits)`;
    if (!target && runId !== undefined) {
      // current/ names a run whose snapshot of changes/ is gone (expired by a version that did not
      // keep it): a rollback to no snapshot would drop every earlier run's rows. Only the rows the
      // runs ahead added go.
      const prepared = await withoutSnapshots({
        table: this.#tables.changes,
        base: changes,
        head,
        undone: ahead,
        summary: { [RUN_ID]: runId },
        now: new Date(),
      });
      [this.#loaded.changes] = await this.#options.catalog.commit([prepared.commit]);
      return `${said}; run ${runId}'s snapshot had expired: a new snapshot holds every earlier run's change rows without that run's, which this run writes again`;
    }
    const commit = this.#rollback('changes', changes, target?.['snapshot-id']);
    const [rolled] = await this.#options.catalog.commit([commit]);
    this.#loaded.changes = rolled;
    return `${said}; rolled back to ${target ? `run ${runId}'s snapshot` : 'no snapshot'}: this run writes those changes again`;
  }

  /**
   * What killed runs and expired snapshots left: files this layout's journals name that neither
   * table keeps (nor the current merge state). Foreign files (another engine's, a README, files
   * written before journals) stay whatever their names: reported, never removed.
   */
  async #removeGarbage(): Promise<{ removed: string[]; foreign: string[] }> {
    const kept = await this.#kept(this.#loaded, this.#previous?.state, this.#previousPositions());
    // A shard looks only in its own data folders: the other shards' runs write beside it.
    const folders = this.#shard?.folders ?? FOLDERS;
    const { removed, foreign, ignored } = await this.#store.sweep((rel) => kept.has(rel), folders);
    return { removed, foreign: [...foreign, ...ignored] };
  }

  /** Root-relative names of what `loaded` keeps of both tables, and the merge state `state`. */
  async #kept(
    loaded: Partial<Record<TableName, LoadedTable>>,
    state: string | undefined,
    positions: string | undefined,
  ): Promise<Set<string>> {
    const kept = new Set<string>([state, positions].filter((f): f is string => f !== undefined));
    for (const name of TABLES) {
      kept.add(`${name}/${VERSION_HINT}`);
      for (const rel of await referenced(this.#tables[name], loaded[name], this.#manifestNames[name]))
        kept.add(`${name}/${rel}`);
    }
    return kept;
  }

  /** The positions file the current snapshot names (this run merged from it). */
  #previousPositions(): string | undefined {
    const snapshot = currentSnapshot(this.#loaded.current);
    return snapshot && positionsOf(snapshot);
  }

  async close(): Promise<void> {
    await this.#options.catalog.close();
    for (const name of TABLES) await this.#options.stores[name].close();
  }

  /** Back to `snapshotId`, or to no snapshot at all (a table whose only runs are undone). */
  #rollback(name: TableName, base: LoadedTable, snapshotId: number | undefined): TableCommit {
    const table = this.#tables[name];
    if (snapshotId !== undefined) return rollbackTo(table, base, snapshotId);
    // Every snapshot but those another engine's tag or branch names (the ref stays with it).
    const tagged = refSnapshotIds(base.metadata);
    const all = (base.metadata.snapshots ?? []).map((s) => s['snapshot-id']).filter((id) => !tagged.includes(id));
    return {
      table,
      base,
      requirements: [{ type: 'assert-table-uuid', uuid: base.metadata['table-uuid'] }],
      updates: [
        { action: 'remove-snapshot-ref', 'ref-name': 'main' },
        ...(all.length > 0 ? [{ action: 'remove-snapshots' as const, 'snapshot-ids': all }] : []),
      ],
    };
  }

  dataFile(kind: 'snapshot' | 'changes', _date: string, part: number, runId: string): string {
    const table = kind === 'snapshot' ? 'current' : 'changes';
    const folder = this.#options.shard === undefined ? `${table}/data/` : shardFolder(table, this.#options.shard);
    return `${folder}part-${String(part).padStart(5, '0')}-${runId}.parquet`;
  }

  columns(planned: TableColumns): TableColumns {
    const ids = (name: TableName, columns: readonly TypedColumn[]) => {
      const result = tableSchema(this.#loaded[name]?.metadata, columns);
      this.#schemas[name] = result;
      this.#columns[name] = columns;
      return result.columns;
    };
    return { snapshot: ids('current', planned.snapshot), changes: ids('changes', planned.changes) };
  }

  fileMetadata(kind: 'snapshot' | 'changes'): Record<string, string> {
    const schema = this.#schemas[kind === 'snapshot' ? 'current' : 'changes']?.schema;
    // Iceberg's own writers put the schema in every data file's footer; some readers (icebird)
    // map a file's columns by it rather than by the Parquet field ids.
    return schema ? parquetFooterMetadata(schema) : {};
  }

  async publish(version: NewVersion, fence: Fence): Promise<PublishedFile[]> {
    const now = new Date();
    const summary = {
      [RUN_ID]: version.runId,
      'catalog-streams.run-name': version.runName,
      'catalog-streams.mode': version.mode,
      'catalog-streams.date': version.date,
      'catalog-streams.started-at': version.startedAt.toISOString(),
      [SCHEMA_HASH]: version.schema.hash,
      'catalog-streams.rows': String(version.rows),
      'catalog-streams.inserted': String(version.counts.inserted),
      'catalog-streams.updated': String(version.counts.updated),
      'catalog-streams.deleted': String(version.counts.deleted),
      'catalog-streams.unchanged': String(version.counts.unchanged),
      ...(version.sharedKeys ? { 'catalog-streams.shared-keys': String(version.sharedKeys) } : {}),
    };
    const uri = (f: { path: string }) => `${storeUri(this.#store.objects)}/${f.path}`;
    const commit = async (
      name: TableName,
      files: readonly TableFile[],
      extra: Record<string, string>,
      base = this.#loaded[name],
      sharded?: readonly string[],
    ): Promise<ShardAttempt> => {
      const args = {
        table: this.#tables[name],
        base,
        files: files.map((f) => ({ location: uri(f), rows: f.rows, bytes: f.bytes })),
        columns: this.#columns[name]!,
        summary: { ...summary, ...extra },
        runId: version.runId,
        keepSnapshots: this.#options.keepSnapshots,
        keepSnapshotsMs: days(this.#options.keepSnapshotsDays),
        keep: this.#rollbackTarget(name),
        now,
      };
      // `current/`: the changed rows added with position deletes (a row delta, delta-files.ts), `changes/`
      // appended to (ARCHITECTURE.md).
      const order = sharded ?? version.currentFiles?.files.map(uri);
      const deleteFiles = sharded ? undefined : version.currentFiles?.deleteFiles;
      const deletes = deleteFiles && {
        order: deleteFiles.map(uri),
        added: deleteFiles.filter((d) => !d.kept).map((d) => ({ location: uri(d), rows: d.rows, bytes: d.bytes })),
      };
      const operation =
        name === 'changes'
          ? new FastAppend(args)
          : order
            ? new RewriteFiles({ ...args, order, deletes })
            : new Overwrite(args);
      const prepared = await operation.commit();
      if (name === 'current') this.#rewrite = prepared.snapshot.summary;
      const commit = prepared.commit;
      const properties = changedProperties(name, this.#options.key, version, base);
      if (Object.keys(properties).length > 0) commit.updates.push({ action: 'set-properties', updates: properties });
      return { commit, snapshotId: prepared.snapshot['snapshot-id'] };
    };
    this.#state = version.state;
    if (this.#shard) {
      this.#committed = await this.#shard.publish(version, this.#loaded, fence, commit);
      return [
        { location: this.#committed.changes!.metadataLocation },
        { location: this.#committed.current!.metadataLocation },
      ];
    }
    this.#positions = version.currentFiles?.positions;
    const { commit: changes } = await commit('changes', version.changes, {});
    const positions: Record<string, string> = this.#positions ? { [POSITIONS]: this.#positions } : {};
    const { commit: current } = await commit('current', version.snapshot, { [STATE]: version.state, ...positions });
    // The files catalog asserts the fence before each of its writes; a REST catalog's commit is
    // conditional on the versions loaded besides (its requirements).
    await fence.assertHeld();
    const [changed, currented] = await this.#options.catalog.commit([changes, current], fence);
    this.#committed = { changes: changed, current: currented };
    // The catalog wrote the metadata files: their size is not known here.
    return [{ location: changed!.metadataLocation }, { location: currented!.metadataLocation }];
  }

  async #repairShard(shard: IcebergShard): Promise<string | undefined> {
    const repaired = await shard.repair(this.#loaded.changes, (args) => withoutSnapshots({ ...args, now: new Date() }));
    if (repaired) this.#loaded.changes = repaired.changes;
    return repaired?.message;
  }

  /** What this run's commit of `current/` wrote against the table's size (the summary's `tables`). */
  filesReport(): TableFilesReport | undefined {
    const s = this.#rewrite;
    if (!s) return undefined;
    const n = (key: string) => Number(s[key] ?? 0);
    return {
      location: this.#tables.current.location,
      filesInTable: n('total-data-files'),
      bytesInTable: n('total-files-size'),
      filesAdded: n('added-data-files'),
      filesRemoved: n('deleted-data-files'),
      bytesWritten: n('added-files-size'),
    };
  }

  /**
   * The snapshot each table had when the run started (after the repair: the run `current/` names,
   * in both tables), kept by this run's commit whatever `keepSnapshots` says. Until both tables
   * have moved past it, it is what a repair (a kill between the two commits: `changes/` goes
   * back to it) and a revoke (a sibling failing after the commit: both go back) roll back to;
   * expired, the repair would find no snapshot of that run and drop the whole change history.
   * The next run's commit expires it.
   */
  #rollbackTarget(name: TableName): number[] {
    const id = currentSnapshot(this.#loaded[name])?.['snapshot-id'];
    return id === undefined ? [] : [id];
  }

  /**
   * Removes what the new versions no longer reference (expired snapshots' files) and the earlier
   * state: only files a journal of this table names (on S3 with the run's metadata). A table
   * written before journals keeps its expired files; its earlier state, named by its own snapshot
   * with that run's id, is the table's all the same.
   */
  async settle(warn: CleanupWarning): Promise<void> {
    const committed = this.#committed;
    if (!committed) return;
    const state = this.#previous?.state;
    let journaled: ReadonlySet<string> = new Set();
    try {
      const kept = await this.#kept(committed, this.#state, this.#positions);
      ({ journaled } = await this.#store.sweep((rel) => kept.has(rel), []));
    } catch (err) {
      warn(
        'sink.cleanup',
        `table sink could not remove the files of expired snapshots of ${this.#store.location('')}: ${(err as Error).message}; the next run of the table removes them`,
      );
    }
    if (state && !journaled.has(state) && state === `_table/state-${this.#previous!.runId}.v8.gz`)
      await this.#store.objects
        .remove(state)
        .catch((err: unknown) =>
          warn(
            'sink.cleanup',
            `table sink could not remove ${this.#store.location(state)}, the earlier merge state: ${(err as Error).message}; remove it by hand`,
          ),
        );
  }

  /** Both tables back to the snapshots they had before this run; this run's files are then garbage. */
  async revoke(warn: CleanupWarning): Promise<boolean> {
    const committed = this.#committed;
    if (!committed) return true;
    if (this.#shard) {
      // A rollback would take back the other shards' commits made since; this run's version stays.
      warn(
        'sink.cleanup',
        `table sink did not take back its commit of ${this.#tables.current.location}: shard ${this.#options.shard} shares the table with other shards, and a rollback would drop their commits; the run's version stays the table's`,
      );
      return false;
    }
    // current/ first, on its own: it is the commit point. Once it names the earlier run again the
    // run is taken back; changes/ left one run ahead is what the next run's repair rolls back.
    const back = (name: TableName) =>
      this.#options.catalog.commit([
        this.#rollback(name, committed[name]!, currentSnapshot(this.#loaded[name])?.['snapshot-id']),
      ]);
    try {
      await back('current');
    } catch (err) {
      warn(
        'sink.cleanup',
        `table sink could not roll ${this.#tables.current.location} back to its earlier snapshot: ${(err as Error).message}`,
      );
      return false;
    }
    this.#committed = undefined;
    await back('changes').catch((err: unknown) =>
      warn(
        'sink.cleanup',
        `table sink could not roll ${this.#tables.changes.location} back to its earlier snapshot: ${(err as Error).message}; the next run of the table rolls it back to the snapshot current/ names`,
      ),
    );
    return true;
  }
}
