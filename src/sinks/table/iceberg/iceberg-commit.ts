// One run's commit to one Iceberg table, built the same for either catalog: the manifests and the
// manifest list are written under `metadata/` first (new names, invisible until metadata names
// them), then the TableCommit the catalog applies. A commit that never lands leaves those files
// unreferenced; iceberg-garbage.ts finds them.
//
// Operations as the sink uses them:
// - `append` (the changes table): a new manifest of the run's files (ADDED) plus the parent
//   snapshot's manifests, listed again as they are (a "fast append": nothing is rewritten).
// - `overwrite` (the current table): a manifest of the run's files (ADDED) and one of every
//   live file of the parent (DELETED, sequence numbers explicit as the spec requires of them),
//   so readers and expiry tools see what the snapshot replaced.
// Expiry: snapshots beyond the newest `keepSnapshots` are removed in the same commit, except
// those the caller names in `keep` (what a rollback may need), and the metadata log is bounded to
// match (files it still names stay readable for time travel).
import { randomBytes, randomUUID } from 'node:crypto';
import type { ParquetColumn } from '../../parquet/parquet-types.js';
import { IcebergMetadataError } from './iceberg-catalog.js';
import type { IcebergTableRef, LoadedTable, TableCommit } from './iceberg-catalog.js';
import { icebergSchema, type IcebergSchemaResult } from './iceberg-schema.js';
import type { IcebergSchema, Snapshot, TableMetadata, TableRequirement, TableUpdate } from './iceberg-types.js';
import { PREVIOUS_VERSIONS_MAX } from './files-catalog.js';
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

/** A data file the run wrote (committed under its final name), as the manifest lists it. */
export interface AddedDataFile {
  /** Full URI, under the table's location: `${table.location}/data/...`. */
  location: string;
  rows: number;
  bytes: number;
}

export interface PrepareCommitArgs {
  table: IcebergTableRef;
  base: LoadedTable | undefined;
  files: readonly AddedDataFile[];
  operation: 'append' | 'overwrite';
  /** The table's columns as the run wrote them (ids are assigned here again, the same way: see tableSchema). */
  columns: readonly ParquetColumn[];
  /** Extra snapshot summary entries (the sink's run id, state, key, mode, counts). */
  summary: Record<string, string>;
  runId: string;
  /** Snapshots kept after this one is added (at least 1). */
  keepSnapshots: number;
  /**
   * Snapshots kept whatever `keepSnapshots` says: the sink's repair and revoke roll back to them
   * (the one each table had when the run started), so expiry must not take them yet.
   */
  keep?: readonly number[];
  now: Date;
}

export interface PreparedCommit {
  commit: TableCommit;
  snapshot: Snapshot;
  /** Store-relative names of the Avro files written (manifests, then the manifest list). */
  written: string[];
}

/** The spec's id of the unpartitioned spec and unsorted order every table here uses. */
const SPEC_ID = 0;
const ORDER_ID = 0;
const MAX_SAFE = (1n << 53n) - 1n;

export function currentSchema(metadata: TableMetadata): IcebergSchema {
  const schema = metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id']);
  if (!schema)
    throw new IcebergMetadataError(`the table at ${metadata.location} has no schema ${metadata['current-schema-id']}`);
  return schema;
}

/**
 * The schema a run's columns have in the table `base` (a new table: none), ids stable by name:
 * the sink calls it for the Parquet writer's columns, prepareCommit for the same result.
 */
export function tableSchema(base: TableMetadata | undefined, columns: readonly ParquetColumn[]): IcebergSchemaResult {
  if (!base) return icebergSchema(columns, undefined, 0, 0);
  const next = Math.max(...base.schemas.map((s) => s['schema-id'])) + 1;
  return icebergSchema(columns, currentSchema(base), base['last-column-id'], next);
}

/** A positive random snapshot id below 2^53 (exact as a JS number, in JSON and Avro) that the table does not have. */
function newSnapshotId(metadata: TableMetadata | undefined): number {
  const taken = new Set(metadata?.snapshots?.map((s) => s['snapshot-id']));
  for (;;) {
    const id = Number(randomBytes(8).readBigUInt64BE() & MAX_SAFE);
    if (id > 0 && !taken.has(id)) return id;
  }
}

function mainRequirements(base: LoadedTable | undefined): TableRequirement[] {
  if (!base) return [{ type: 'assert-create' }];
  return [
    { type: 'assert-table-uuid', uuid: base.metadata['table-uuid'] },
    { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': base.metadata.refs?.main?.['snapshot-id'] ?? null },
  ];
}

/**
 * The snapshots a ref other than `main` names (a tag or branch another engine made): expiry and
 * rollbacks keep them, so the ref is never dropped with its snapshot (the sink makes only `main`).
 */
export function refSnapshotIds(metadata: TableMetadata | undefined): number[] {
  return Object.entries(metadata?.refs ?? {})
    .filter(([name]) => name !== 'main')
    .map(([, ref]) => ref['snapshot-id']);
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function manifestFile(
  path: string,
  length: number,
  entries: readonly ManifestEntry[],
  snapshotId: number,
  sequenceNumber: number,
): ManifestFile {
  const count = (status: number): ManifestEntry[] => entries.filter((e) => e.status === status);
  const live = entries.filter((e) => e.status !== DELETED);
  return {
    manifest_path: path,
    manifest_length: length,
    partition_spec_id: SPEC_ID,
    content: 0,
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

/**
 * Writes the manifests and the manifest list of one run's snapshot, and returns the commit that
 * makes it the table's current snapshot (a new table: the create commit with it).
 */
export async function prepareCommit(args: PrepareCommitArgs): Promise<PreparedCommit> {
  const { table, base, files, operation, runId, now } = args;
  if (!Number.isSafeInteger(args.keepSnapshots) || args.keepSnapshots < 1)
    throw new IcebergMetadataError(`keepSnapshots must be a positive integer, not ${args.keepSnapshots}`, {
      code: 'iceberg.update_invalid',
    });
  const metadata = base?.metadata;
  const schema = tableSchema(metadata, args.columns);
  const snapshotId = newSnapshotId(metadata);
  const sequenceNumber = (metadata?.['last-sequence-number'] ?? 0) + 1;
  const parentId = metadata?.refs?.main?.['snapshot-id'] ?? metadata?.['current-snapshot-id'] ?? undefined;
  const parent = metadata?.snapshots?.find((s) => s['snapshot-id'] === parentId);

  const manifestMeta = {
    schemaJson: JSON.stringify(schema.schema),
    schemaId: schema.schema['schema-id'],
    partitionSpecId: SPEC_ID,
    partitionFieldsJson: '[]',
  };
  const written: string[] = [];
  const listed: ManifestFile[] = [];
  // Never replaces a file: a run that prepares again after a commit it could not confirm (a REST
  // timeout) may find its first manifests committed, so it takes the next free number instead.
  let next = 0;
  const writeManifest = async (entries: ManifestEntry[]): Promise<void> => {
    const bytes = encodeManifest(entries, manifestMeta);
    let rel: string;
    do rel = `metadata/${runId}-m${next++}.avro`;
    while (!(await table.store.putIfAbsent(rel, bytes, { contentType: 'application/octet-stream' })));
    written.push(rel);
    listed.push(manifestFile(`${table.location}/${rel}`, bytes.length, entries, snapshotId, sequenceNumber));
  };

  const added: ManifestEntry[] = files.map((f) => ({
    status: ADDED,
    snapshot_id: snapshotId,
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
  if (added.length > 0) await writeManifest(added);

  let deleted: ManifestEntry[] = [];
  if (operation === 'overwrite' && parent) {
    const parentManifests = await readSnapshotManifests(table.store, table.location, parent['manifest-list']);
    const liveOfParent = parentManifests.flatMap((m) => m.entries.filter((e) => e.status !== DELETED));
    deleted = liveOfParent.map((e) => ({
      status: DELETED,
      snapshot_id: snapshotId,
      sequence_number: e.sequence_number,
      file_sequence_number: e.file_sequence_number,
      data_file: e.data_file,
    }));
    if (deleted.length > 0) await writeManifest(deleted);
  } else if (operation === 'append' && parent) {
    // The parent's manifests, listed again unchanged (only the list is read: an append never
    // opens the manifests, however many runs they hold); their entries keep the parent's
    // snapshot ids and sequence numbers, inherited from these same manifest_file records. A
    // manifest of DELETED entries only has nothing left to read.
    for (const m of await readManifestList(table.store, table.location, parent['manifest-list']))
      if (m.added_files_count + m.existing_files_count > 0) listed.push(m);
  }

  const listRel = `metadata/snap-${snapshotId}-${runId}.avro`;
  const list = encodeManifestList(listed, { snapshotId, parentSnapshotId: parent?.['snapshot-id'], sequenceNumber });
  // The snapshot id is fresh and random: a name already taken is a broken store, not a retry.
  if (!(await table.store.putIfAbsent(listRel, list, { contentType: 'application/octet-stream' })))
    throw new IcebergMetadataError(`${table.store.location(listRel)} exists already; nothing was committed`);
  written.push(listRel);

  const addedRecords = sum(files.map((f) => f.rows));
  const addedSize = sum(files.map((f) => f.bytes));
  const deletedRecords = sum(deleted.map((e) => e.data_file.record_count));
  const deletedSize = sum(deleted.map((e) => e.data_file.file_size_in_bytes));
  const totals = parentTotals(parent);
  const summary: Snapshot['summary'] = {
    ...args.summary,
    operation,
    'added-data-files': String(files.length),
    'added-records': String(addedRecords),
    'added-files-size': String(addedSize),
    ...(operation === 'overwrite' && {
      'deleted-data-files': String(deleted.length),
      'deleted-records': String(deletedRecords),
      'removed-files-size': String(deletedSize),
    }),
    ...(totals && {
      'total-records': String(totals.records + addedRecords - deletedRecords),
      'total-data-files': String(totals.files + files.length - deleted.length),
      'total-files-size': String(totals.size + addedSize - deletedSize),
      'total-delete-files': '0',
      'total-position-deletes': '0',
      'total-equality-deletes': '0',
    }),
  };
  const snapshot: Snapshot = {
    'snapshot-id': snapshotId,
    ...(parent && { 'parent-snapshot-id': parent['snapshot-id'] }),
    'sequence-number': sequenceNumber,
    'timestamp-ms': now.getTime(),
    'manifest-list': `${table.location}/${listRel}`,
    summary,
    'schema-id': schema.schema['schema-id'],
  };

  const updates: TableUpdate[] = [];
  if (!metadata)
    updates.push(
      { action: 'assign-uuid', uuid: randomUUID() },
      { action: 'upgrade-format-version', 'format-version': 2 },
    );
  if (schema.changed)
    updates.push(
      { action: 'add-schema', schema: schema.schema, 'last-column-id': schema.lastColumnId },
      { action: 'set-current-schema', 'schema-id': -1 },
    );
  if (!metadata)
    updates.push(
      { action: 'add-spec', spec: { 'spec-id': SPEC_ID, fields: [] } },
      { action: 'set-default-spec', 'spec-id': -1 },
      { action: 'add-sort-order', 'sort-order': { 'order-id': ORDER_ID, fields: [] } },
      { action: 'set-default-sort-order', 'sort-order-id': -1 },
      { action: 'set-location', location: table.location },
    );
  // Older metadata files than this may name expired snapshots, whose manifest lists garbage
  // collection removes: the log keeps only versions whose current snapshot can still be kept.
  const previousVersions = String(Math.max(1, args.keepSnapshots - 1));
  if (metadata?.properties?.[PREVIOUS_VERSIONS_MAX] !== previousVersions)
    updates.push({ action: 'set-properties', updates: { [PREVIOUS_VERSIONS_MAX]: previousVersions } });
  updates.push(
    { action: 'add-snapshot', snapshot },
    { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snapshotId },
  );
  const kept = [...(metadata?.snapshots ?? []), snapshot]
    .sort((a, b) => b['sequence-number'] - a['sequence-number'])
    .slice(0, args.keepSnapshots)
    .map((s) => s['snapshot-id'])
    .concat(args.keep ?? [], refSnapshotIds(metadata));
  const expired = (metadata?.snapshots ?? []).map((s) => s['snapshot-id']).filter((id) => !kept.includes(id));
  if (expired.length > 0) updates.push({ action: 'remove-snapshots', 'snapshot-ids': expired });

  return { commit: { table, base, requirements: mainRequirements(base), updates }, snapshot, written };
}

/**
 * The commit that makes `snapshotId` (an earlier snapshot of the table) current again and
 * removes the snapshots after it: the sink undoes with it a run a kill left committed in one
 * table and not in the other.
 */
export function rollbackTo(table: IcebergTableRef, base: LoadedTable, snapshotId: number): TableCommit {
  const target = base.metadata.snapshots?.find((s) => s['snapshot-id'] === snapshotId);
  if (!target)
    throw new IcebergMetadataError(
      `cannot roll ${table.location} back to snapshot ${snapshotId}: the table does not have it`,
      {
        code: 'iceberg.update_invalid',
      },
    );
  const tagged = refSnapshotIds(base.metadata);
  const later = (base.metadata.snapshots ?? [])
    .filter((s) => s['sequence-number'] > target['sequence-number'])
    .map((s) => s['snapshot-id'])
    .filter((id) => !tagged.includes(id));
  const updates: TableUpdate[] = [
    { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snapshotId },
  ];
  if (later.length > 0) updates.push({ action: 'remove-snapshots', 'snapshot-ids': later });
  return { table, base, requirements: mainRequirements(base), updates };
}

/**
 * An append-only table back to what it held before the snapshots `undone` (the newest ones, whose
 * parent is gone: expired by a writer that did not keep it), as a new snapshot: `head`'s manifests
 * without those the undone snapshots added, every undone snapshot removed. The repair of a
 * `changes/` table that a kill left ahead of `current/` when the snapshot to roll back to is no
 * longer there: every earlier run's rows stay (a rollback to no snapshot would lose them all).
 */
export async function withoutSnapshots(args: {
  table: IcebergTableRef;
  base: LoadedTable;
  head: Snapshot;
  undone: readonly number[];
  summary: Record<string, string>;
  now: Date;
}): Promise<PreparedCommit> {
  const { table, base, head, undone } = args;
  const metadata = base.metadata;
  const kept = (await readManifestList(table.store, table.location, head['manifest-list'])).filter(
    (m) => !undone.includes(m.added_snapshot_id),
  );
  const snapshotId = newSnapshotId(metadata);
  const sequenceNumber = metadata['last-sequence-number'] + 1;
  const listRel = `metadata/snap-${snapshotId}-repair.avro`;
  const list = encodeManifestList(kept, { snapshotId, parentSnapshotId: undefined, sequenceNumber });
  if (!(await table.store.putIfAbsent(listRel, list, { contentType: 'application/octet-stream' })))
    throw new IcebergMetadataError(`${table.store.location(listRel)} exists already; nothing was committed`);
  const snapshot: Snapshot = {
    'snapshot-id': snapshotId,
    'sequence-number': sequenceNumber,
    'timestamp-ms': args.now.getTime(),
    'manifest-list': `${table.location}/${listRel}`,
    summary: { ...args.summary, operation: 'delete' },
    'schema-id': metadata['current-schema-id'],
  };
  const updates: TableUpdate[] = [
    { action: 'add-snapshot', snapshot },
    { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snapshotId },
  ];
  const removable = undone.filter((id) => !refSnapshotIds(metadata).includes(id));
  if (removable.length > 0) updates.push({ action: 'remove-snapshots', 'snapshot-ids': removable });
  return { commit: { table, base, requirements: mainRequirements(base), updates }, snapshot, written: [listRel] };
}
