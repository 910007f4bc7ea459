// One run's snapshot of one Iceberg table, one class per operation as pyiceberg has them
// (pyiceberg/table/update/snapshot.py: `_FastAppendFiles`, `_OverwriteFiles`), built the same for
// either catalog: the manifests and the manifest list are written under `metadata/` first (new
// names, invisible until metadata names them), then the TableCommit the catalog applies, with the
// expiry of older snapshots (expire-snapshots.ts) in the same commit. A commit that never lands
// leaves those files unreferenced; iceberg-garbage.ts finds them.
//
// - `FastAppend` (the changes table): a new manifest of the run's files (ADDED) plus the parent
//   snapshot's manifests, listed again as they are (nothing is rewritten).
// - `Overwrite` (the current table): a manifest of the run's files (ADDED) and one of every live
//   file of the parent (DELETED, sequence numbers explicit as the spec requires of them), so
//   readers and expiry tools see what the snapshot replaced.
import { randomUUID } from 'node:crypto';
import { IcebergMetadataError } from './iceberg-catalog.js';
import {
  mainRequirements,
  newSnapshotId,
  ORDER_ID,
  SPEC_ID,
  tableSchema,
  type PrepareCommitArgs,
  type PreparedCommit,
} from './iceberg-commit.js';
import type { IcebergSchemaResult } from './iceberg-schema.js';
import type { Snapshot, TableMetadata, TableUpdate } from './iceberg-types.js';
import { ExpireSnapshots } from './expire-snapshots.js';
import {
  ADDED,
  DELETED,
  EXISTING,
  encodeManifest,
  encodeManifestList,
  readManifestList,
  readSnapshotManifests,
  type ManifestEntry,
  type ManifestFile,
} from './manifests.js';

export type SnapshotArgs = Omit<PrepareCommitArgs, 'operation'>;

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function manifestFile(
  path: string,
  length: number,
  entries: readonly ManifestEntry[],
  snapshotId: number,
  sequenceNumber: number,
  content: 0 | 1,
): ManifestFile {
  const count = (status: number): ManifestEntry[] => entries.filter((e) => e.status === status);
  const live = entries.filter((e) => e.status !== DELETED);
  return {
    manifest_path: path,
    manifest_length: length,
    partition_spec_id: SPEC_ID,
    content,
    sequence_number: sequenceNumber,
    // A manifest of DELETED entries only has no live file: its own sequence number bounds nothing.
    min_sequence_number: Math.min(sequenceNumber, ...live.map((e) => e.sequence_number ?? sequenceNumber)),
    added_snapshot_id: snapshotId,
    added_files_count: count(ADDED).length,
    existing_files_count: count(EXISTING).length,
    deleted_files_count: count(DELETED).length,
    added_rows_count: sum(count(ADDED).map((e) => e.data_file.record_count)),
    existing_rows_count: sum(count(EXISTING).map((e) => e.data_file.record_count)),
    deleted_rows_count: sum(count(DELETED).map((e) => e.data_file.record_count)),
    partitions: null,
    key_metadata: null,
  };
}

/** Totals of the parent snapshot's summary, when it has them (else the new summary has none). */
function parentTotals(parent: Snapshot | undefined): { records: number; files: number; size: number } | undefined {
  if (!parent) return { records: 0, files: 0, size: 0 };
  const s = parent.summary;
  const records = Number(s['total-records']);
  const files = Number(s['total-data-files']);
  const size = Number(s['total-files-size']);
  return [records, files, size].every(Number.isSafeInteger) ? { records, files, size } : undefined;
}

/** What every operation does: the run's files in an ADDED manifest, the list, the snapshot and its commit. */
abstract class SnapshotProducer {
  abstract readonly operation: 'append' | 'overwrite';
  protected readonly args: SnapshotArgs;
  protected readonly metadata: TableMetadata | undefined;
  protected readonly snapshotId: number;
  protected readonly parent: Snapshot | undefined;
  readonly #schema: IcebergSchemaResult;
  readonly #sequenceNumber: number;
  readonly #written: string[] = [];
  protected readonly listed: ManifestFile[] = [];
  #next = 0;

  constructor(args: SnapshotArgs) {
    if (!Number.isSafeInteger(args.keepSnapshots) || args.keepSnapshots < 1)
      throw new IcebergMetadataError(`keepSnapshots must be a positive integer, not ${args.keepSnapshots}`, {
        code: 'iceberg.update_invalid',
      });
    this.args = args;
    const metadata = (this.metadata = args.base?.metadata);
    this.#schema = tableSchema(metadata, args.columns);
    this.snapshotId = newSnapshotId(metadata);
    this.#sequenceNumber = (metadata?.['last-sequence-number'] ?? 0) + 1;
    const parentId = metadata?.refs?.main?.['snapshot-id'] ?? metadata?.['current-snapshot-id'] ?? undefined;
    this.parent = metadata?.snapshots?.find((s) => s['snapshot-id'] === parentId);
  }

  /** The parent's part: its manifests listed again (append) or its files deleted (overwrite); returns the deleted entries. */
  protected abstract carryOver(): Promise<ManifestEntry[]>;

  /** The run's files' entries: a manifest of their own (a rewrite lists them with the files it keeps). */
  protected async addFiles(added: ManifestEntry[]): Promise<void> {
    if (added.length > 0) await this.writeManifest(added);
  }

  /** The summary entries of the files this snapshot deletes (an overwrite's). */
  protected deletedSummary(_deleted: readonly ManifestEntry[]): Record<string, string> {
    return {};
  }

  /** The position-delete files live in the new snapshot, and those it added and removed (the summary's counts). */
  protected deleteFiles(): {
    live: readonly ManifestEntry[];
    added: readonly ManifestEntry[];
    removed: readonly ManifestEntry[];
  } {
    return { live: [], added: [], removed: [] };
  }

  /**
   * Writes the manifests and the manifest list of the run's snapshot, and returns the commit that
   * makes it the table's current snapshot (a new table: the create commit with it).
   */
  async commit(): Promise<PreparedCommit> {
    const { table, base, files, runId } = this.args;
    const added: ManifestEntry[] = files.map((f) => ({
      status: ADDED,
      snapshot_id: this.snapshotId,
      // Null: inherited from the manifest list, as the spec wants of ADDED entries (the list is
      // what carries the sequence number a commit retry would reassign).
      sequence_number: null,
      file_sequence_number: null,
      data_file: {
        content: 0,
        file_path: f.location,
        file_format: 'PARQUET',
        partition: {},
        record_count: f.rows,
        file_size_in_bytes: f.bytes,
      },
    }));
    await this.addFiles(added);
    const deleted = await this.carryOver();
    const listRel = `metadata/snap-${this.snapshotId}-${runId}.avro`;
    const list = encodeManifestList(this.listed, {
      snapshotId: this.snapshotId,
      parentSnapshotId: this.parent?.['snapshot-id'],
      sequenceNumber: this.#sequenceNumber,
    });
    // The snapshot id is fresh and random: a name already taken is a broken store, not a retry.
    if (!(await table.store.putIfAbsent(listRel, list, { contentType: 'application/octet-stream' })))
      throw new IcebergMetadataError(`${table.store.location(listRel)} exists already; nothing was committed`);
    this.#written.push(listRel);
    const snapshot = this.#snapshot(listRel, deleted);
    const { keepSnapshotsMs, now } = this.args;
    const age = keepSnapshotsMs === undefined ? undefined : { maxAgeMs: keepSnapshotsMs, now };
    const expiry = new ExpireSnapshots(this.metadata, this.args.keepSnapshots, this.args.keep, age);
    const updates: TableUpdate[] = [
      ...this.#tableUpdates(),
      ...expiry.logUpdates(),
      { action: 'add-snapshot', snapshot },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': this.snapshotId },
      ...expiry.removals(snapshot),
    ];
    return { commit: { table, base, requirements: mainRequirements(base), updates }, snapshot, written: this.#written };
  }

  /**
   * Never replaces a file: a run that prepares again after a commit it could not confirm (a REST
   * timeout) may find its first manifests committed, so it takes the next free number instead.
   */
  protected async writeManifest(entries: ManifestEntry[], content: 0 | 1 = 0): Promise<void> {
    const { table, runId } = this.args;
    const schema = this.#schema.schema;
    const bytes = encodeManifest(entries, {
      schemaJson: JSON.stringify(schema),
      schemaId: schema['schema-id'],
      partitionSpecId: SPEC_ID,
      partitionFieldsJson: '[]',
      content: content === 1 ? 'deletes' : 'data',
    });
    let rel: string;
    do rel = `metadata/${runId}-m${this.#next++}.avro`;
    while (!(await table.store.putIfAbsent(rel, bytes, { contentType: 'application/octet-stream' })));
    this.#written.push(rel);
    this.listed.push(
      manifestFile(`${table.location}/${rel}`, bytes.length, entries, this.snapshotId, this.#sequenceNumber, content),
    );
  }

  #snapshot(listRel: string, deleted: readonly ManifestEntry[]): Snapshot {
    const { files } = this.args;
    const addedRecords = sum(files.map((f) => f.rows));
    const addedSize = sum(files.map((f) => f.bytes));
    const deletedRecords = sum(deleted.map((e) => e.data_file.record_count));
    const deletedSize = sum(deleted.map((e) => e.data_file.file_size_in_bytes));
    const totals = parentTotals(this.parent);
    const deletes = this.deleteFiles();
    const rows = (entries: readonly ManifestEntry[]) => sum(entries.map((e) => e.data_file.record_count));
    const size = (entries: readonly ManifestEntry[]) => sum(entries.map((e) => e.data_file.file_size_in_bytes));
    const summary: Snapshot['summary'] = {
      ...this.args.summary,
      operation: this.operation,
      'added-data-files': String(files.length),
      'added-records': String(addedRecords),
      'added-files-size': String(addedSize + size(deletes.added)),
      ...(deletes.added.length > 0 && {
        'added-delete-files': String(deletes.added.length),
        'added-position-delete-files': String(deletes.added.length),
        'added-position-deletes': String(rows(deletes.added)),
      }),
      ...(deletes.removed.length > 0 && {
        'removed-delete-files': String(deletes.removed.length),
        'removed-position-delete-files': String(deletes.removed.length),
        'removed-position-deletes': String(rows(deletes.removed)),
      }),
      ...this.deletedSummary(deleted),
      ...(totals && {
        // total-records counts the data files' rows, deleted positions included (as Iceberg's own writers do).
        'total-records': String(totals.records + addedRecords - deletedRecords),
        'total-data-files': String(totals.files + files.length - deleted.length),
        'total-files-size': String(totals.size + addedSize - deletedSize + size(deletes.added) - size(deletes.removed)),
        'total-delete-files': String(deletes.live.length),
        'total-position-deletes': String(rows(deletes.live)),
        'total-equality-deletes': '0',
      }),
    };
    return {
      'snapshot-id': this.snapshotId,
      ...(this.parent && { 'parent-snapshot-id': this.parent['snapshot-id'] }),
      'sequence-number': this.#sequenceNumber,
      'timestamp-ms': this.args.now.getTime(),
      'manifest-list': `${this.args.table.location}/${listRel}`,
      summary,
      'schema-id': this.#schema.schema['schema-id'],
    };
  }

  /** A new table's identity, spec, order and location, and a changed schema. */
  #tableUpdates(): TableUpdate[] {
    const updates: TableUpdate[] = [];
    const schema = this.#schema;
    if (!this.metadata)
      updates.push(
        { action: 'assign-uuid', uuid: randomUUID() },
        { action: 'upgrade-format-version', 'format-version': 2 },
      );
    if (schema.changed)
      updates.push(
        { action: 'add-schema', schema: schema.schema, 'last-column-id': schema.lastColumnId },
        { action: 'set-current-schema', 'schema-id': -1 },
      );
    if (!this.metadata)
      updates.push(
        { action: 'add-spec', spec: { 'spec-id': SPEC_ID, fields: [] } },
        { action: 'set-default-spec', 'spec-id': -1 },
        { action: 'add-sort-order', 'sort-order': { 'order-id': ORDER_ID, fields: [] } },
        { action: 'set-default-sort-order', 'sort-order-id': -1 },
        { action: 'set-location', location: this.args.table.location },
      );
    return updates;
  }
}

/** The changes table's snapshot: the run's files added, the parent's manifests kept as they are. */
export class FastAppend extends SnapshotProducer {
  readonly operation = 'append';

  protected async carryOver(): Promise<ManifestEntry[]> {
    if (!this.parent) return [];
    const { table } = this.args;
    // The parent's manifests, listed again unchanged (only the list is read: an append never
    // opens the manifests, however many runs they hold); their entries keep the parent's
    // snapshot ids and sequence numbers, inherited from these same manifest_file records. A
    // manifest of DELETED entries only has nothing left to read.
    for (const m of await readManifestList(table.store, table.location, this.parent['manifest-list']))
      if (m.added_files_count + m.existing_files_count > 0) this.listed.push(m);
    return [];
  }
}

/** The current table's snapshot: the run's files added, every live file of the parent deleted (its delete files too). */
export class Overwrite extends SnapshotProducer {
  readonly operation = 'overwrite';
  #removedDeletes: ManifestEntry[] = [];

  protected async carryOver(): Promise<ManifestEntry[]> {
    if (!this.parent) return [];
    const { table } = this.args;
    const parentManifests = await readSnapshotManifests(table.store, table.location, this.parent['manifest-list']);
    const liveOfParent = parentManifests.flatMap((m) => m.entries.filter((e) => e.status !== DELETED));
    const gone = (e: ManifestEntry): ManifestEntry => ({
      status: DELETED,
      snapshot_id: this.snapshotId,
      sequence_number: e.sequence_number,
      file_sequence_number: e.file_sequence_number,
      data_file: e.data_file,
    });
    const deleted = liveOfParent.filter((e) => e.data_file.content === 0).map(gone);
    this.#removedDeletes = liveOfParent.filter((e) => e.data_file.content === 1).map(gone);
    if (deleted.length > 0) await this.writeManifest(deleted);
    if (this.#removedDeletes.length > 0) await this.writeManifest(this.#removedDeletes, 1);
    return deleted;
  }

  protected override deleteFiles() {
    return { live: [], added: [], removed: this.#removedDeletes };
  }

  protected override deletedSummary(deleted: readonly ManifestEntry[]): Record<string, string> {
    return deletedFilesSummary(deleted);
  }
}

/** A run's position-delete files, as RewriteFiles takes them. */
export interface DeleteFilesArgs {
  /** Every live delete file of the new snapshot (locations): the parent's kept and the run's. */
  order: readonly string[];
  /** The run's delete files (their locations are in `order`). */
  added: ReadonlyArray<{ location: string; rows: number; bytes: number }>;
}

/**
 * The current table's snapshot, copy-on-write per file or as a row delta: `order` is every live
 * data file of the new snapshot, each either one of the run's files or a live file of the parent
 * kept as it is; the parent's other files are deleted. One manifest lists the live files in that
 * order (the kept ones EXISTING, with their own snapshot ids and sequence numbers), a second one
 * the DELETED files. With `deletes` (a row delta, table/delta-files.ts), the live position-delete
 * files go in a delete manifest (content 1) the same way, and the parent's others in a DELETED
 * one. Its cost is the run's files plus up to four manifests, whatever the table's size.
 */
export class RewriteFiles extends SnapshotProducer {
  readonly operation = 'overwrite';
  readonly #order: readonly string[];
  readonly #deletes: DeleteFilesArgs | undefined;
  #added: ManifestEntry[] = [];
  #deleteFiles = { live: [] as ManifestEntry[], added: [] as ManifestEntry[], removed: [] as ManifestEntry[] };

  constructor(args: SnapshotArgs & { order: readonly string[]; deletes?: DeleteFilesArgs | undefined }) {
    const { order, deletes, ...rest } = args;
    super(rest);
    this.#order = order;
    this.#deletes = deletes;
  }

  protected override addFiles(added: ManifestEntry[]): Promise<void> {
    this.#added = added;
    return Promise.resolve();
  }

  protected async carryOver(): Promise<ManifestEntry[]> {
    const { table } = this.args;
    const parentLive = new Map<string, ManifestEntry>();
    if (this.parent)
      for (const m of await readSnapshotManifests(table.store, table.location, this.parent['manifest-list']))
        for (const e of m.entries) if (e.status !== DELETED) parentLive.set(e.data_file.file_path, e);
    const ofContent = (content: 0 | 1) => new Map([...parentLive].filter(([, e]) => e.data_file.content === content));
    const { live, deleted } = this.#carry(ofContent(0), this.#added, this.#order);
    if (live.length > 0) await this.writeManifest(live);
    if (deleted.length > 0) await this.writeManifest(deleted);
    const added = (this.#deletes?.added ?? []).map((f) => this.#entry(f, 1));
    const deletes = this.#carry(ofContent(1), added, this.#deletes?.order ?? []);
    if (deletes.live.length > 0) await this.writeManifest(deletes.live, 1);
    if (deletes.deleted.length > 0) await this.writeManifest(deletes.deleted, 1);
    this.#deleteFiles = { live: deletes.live, added, removed: deletes.deleted };
    return deleted;
  }

  #entry(f: { location: string; rows: number; bytes: number }, content: 0 | 1): ManifestEntry {
    return {
      status: ADDED,
      snapshot_id: this.snapshotId,
      sequence_number: null,
      file_sequence_number: null,
      data_file: {
        content,
        file_path: f.location,
        file_format: 'PARQUET',
        partition: {},
        record_count: f.rows,
        file_size_in_bytes: f.bytes,
      },
    };
  }

  /** The live entries in `order` (the run's ADDED, the parent's EXISTING) and the parent's others DELETED. */
  #carry(
    parentLive: ReadonlyMap<string, ManifestEntry>,
    addedEntries: readonly ManifestEntry[],
    order: readonly string[],
  ): { live: ManifestEntry[]; deleted: ManifestEntry[] } {
    const { table } = this.args;
    const added = new Map(addedEntries.map((e) => [e.data_file.file_path, e]));
    const live = order.map((location): ManifestEntry => {
      const mine = added.get(location);
      if (mine) return mine;
      const kept = parentLive.get(location);
      if (!kept)
        throw new IcebergMetadataError(
          `${location} is kept by the new snapshot of ${table.location} but is not a live file of its parent; nothing was committed`,
          { code: 'iceberg.update_invalid' },
        );
      return { ...kept, status: EXISTING };
    });
    if (added.size !== live.filter((e) => e.status === ADDED).length)
      throw new IcebergMetadataError(`the run's files of ${table.location} are not all in the new snapshot's order`, {
        code: 'iceberg.update_invalid',
      });
    const keptPaths = new Set(order);
    const deleted = [...parentLive.values()]
      .filter((e) => !keptPaths.has(e.data_file.file_path))
      .map((e): ManifestEntry => ({ ...e, status: DELETED, snapshot_id: this.snapshotId }));
    return { live, deleted };
  }

  protected override deleteFiles() {
    return this.#deleteFiles;
  }

  protected override deletedSummary(deleted: readonly ManifestEntry[]): Record<string, string> {
    return deletedFilesSummary(deleted);
  }
}

/** The spec's summary keys for the data files a snapshot deletes (overwrite and rewrite alike). */
function deletedFilesSummary(deleted: readonly ManifestEntry[]): Record<string, string> {
  return {
    'deleted-data-files': String(deleted.length),
    'deleted-records': String(sum(deleted.map((e) => e.data_file.record_count))),
    'removed-files-size': String(sum(deleted.map((e) => e.data_file.file_size_in_bytes))),
  };
}

/** The operation by name: `overwrite` or `append` (what tests and callers that choose by a value use). */
export async function prepareCommit(args: PrepareCommitArgs): Promise<PreparedCommit> {
  const { operation, ...rest } = args;
  return (operation === 'overwrite' ? new Overwrite(rest) : new FastAppend(rest)).commit();
}
