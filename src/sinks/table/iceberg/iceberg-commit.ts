// What every commit to one Iceberg table shares (the schema a run's columns have in it, a fresh
// snapshot id, the requirements on `main`), and the commits that are not a run's snapshot: a
// rollback and the repair of an append-only table. A run's snapshot is one class per operation
// (snapshot-operations.ts: `FastAppend`, `Overwrite`), its expiry expire-snapshots.ts.
import { randomBytes } from 'node:crypto';
import type { TypedColumn } from '../../shared/column-types.js';
import { IcebergMetadataError } from './iceberg-catalog.js';
import type { IcebergTableRef, LoadedTable, TableCommit } from './iceberg-catalog.js';
import { icebergSchema, type IcebergSchemaResult } from './iceberg-schema.js';
import type { IcebergSchema, Snapshot, TableMetadata, TableRequirement, TableUpdate } from './iceberg-types.js';
import { encodeManifestList, readManifestList } from './manifests.js';

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
  /** Which snapshot operation (snapshot-operations.ts `prepareCommit`: `Overwrite` or `FastAppend`). */
  operation: 'append' | 'overwrite';
  /** The table's columns as the run wrote them (ids are assigned here again, the same way: see tableSchema). */
  columns: readonly TypedColumn[];
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
  /** Snapshots older than this (ms before `now`) expire too, whatever `keepSnapshots` says; the new one stays. */
  keepSnapshotsMs?: number | undefined;
  now: Date;
}

export interface PreparedCommit {
  commit: TableCommit;
  snapshot: Snapshot;
  /** Store-relative names of the Avro files written (manifests, then the manifest list). */
  written: string[];
}

/** The spec's id of the unpartitioned spec and unsorted order every table here uses. */
export const SPEC_ID = 0;
export const ORDER_ID = 0;
const MAX_SAFE = (1n << 53n) - 1n;

export function currentSchema(metadata: TableMetadata): IcebergSchema {
  const schema = metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id']);
  if (!schema)
    throw new IcebergMetadataError(`the table at ${metadata.location} has no schema ${metadata['current-schema-id']}`);
  return schema;
}

/**
 * The schema a run's columns have in the table `base` (a new table: none), ids stable by name:
 * the sink calls it for the Parquet writer's columns, the snapshot operations (snapshot-operations.ts) for the same result.
 */
export function tableSchema(base: TableMetadata | undefined, columns: readonly TypedColumn[]): IcebergSchemaResult {
  if (!base) return icebergSchema(columns, undefined, 0, 0);
  const next = Math.max(...base.schemas.map((s) => s['schema-id'])) + 1;
  return icebergSchema(columns, currentSchema(base), base['last-column-id'], next);
}

/** A positive random snapshot id below 2^53 (exact as a JS number, in JSON and Avro) that the table does not have. */
export function newSnapshotId(metadata: TableMetadata | undefined): number {
  const taken = new Set(metadata?.snapshots?.map((s) => s['snapshot-id']));
  for (;;) {
    const id = Number(randomBytes(8).readBigUInt64BE() & MAX_SAFE);
    if (id > 0 && !taken.has(id)) return id;
  }
}

/** The snapshot `main` names (or the current one of a table without refs); undefined for none. */
export function currentSnapshot(loaded: LoadedTable | undefined): Snapshot | undefined {
  const metadata = loaded?.metadata;
  const id = metadata?.refs?.main?.['snapshot-id'] ?? metadata?.['current-snapshot-id'];
  if (id === undefined || id === null || id < 0) return undefined;
  return metadata!.snapshots?.find((s) => s['snapshot-id'] === id);
}

export function mainRequirements(base: LoadedTable | undefined): TableRequirement[] {
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
