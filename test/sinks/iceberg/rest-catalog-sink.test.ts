// The sink's commits (prepareCommit, rollbackTo) through RestCatalog to the spec-following test
// server, whose metadata files icebird then reads: the two tables created, then advanced together
// in one transaction with a column added, snapshots expired, and one table rolled back. After
// each commit, the metadata the server computed with its own code is compared with src's
// applyUpdates on the same commit: two independent readings of the spec that must agree on
// everything the spec decides (catalog-owned fields, such as timestamps and the metadata log, aside).
// icebird fetches the table's files through a `fetch` stub that serves file:// URLs from disk.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { icebergRead } from 'icebird';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { TypedColumn } from '../../../src/sinks/shared/column-types.js';
import {
  applyUpdates,
  type IcebergTableRef,
  type LoadedTable,
  type TableCommit,
} from '../../../src/sinks/table/iceberg/iceberg-catalog.js';
import { rollbackTo, tableSchema } from '../../../src/sinks/table/iceberg/iceberg-commit.js';
import { prepareCommit } from '../../../src/sinks/table/iceberg/snapshot-operations.js';
import type { TableMetadata } from '../../../src/sinks/table/iceberg/iceberg-types.js';
import { RestCatalog } from '../../../src/sinks/table/iceberg/rest-catalog.js';
import { type IcebergRestServer, startIcebergRestServer } from '../../helpers/iceberg-rest-server.js';
import { localTable, writeDataFile } from './iceberg-helpers.js';
import { icebirdFetch } from '../../helpers/iceberg-reader.js';

const NAMESPACE = ['lake', 'products'];
const COLUMNS: TypedColumn[] = [
  { name: 'id', type: { kind: 'string' } },
  { name: 'qty', type: { kind: 'int64' } },
];
const WITH_COLOR: TypedColumn[] = [...COLUMNS, { name: 'color', type: { kind: 'string' } }];
const T0 = Date.parse('2026-11-01T00:00:00Z');

let dir: string;
let server: IcebergRestServer;
let catalog: RestCatalog;

beforeAll(() => {
  vi.stubGlobal('fetch', icebirdFetch());
});
afterAll(() => {
  vi.unstubAllGlobals();
});
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'iceberg-rest-sink-'));
  server = await startIcebergRestServer({ clients: { sink: 'sink-secret-0123456789' } });
  catalog = new RestCatalog({ uri: server.url, namespace: NAMESPACE, credential: 'sink:sink-secret-0123456789' });
});
afterEach(async () => {
  await catalog.close();
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

/** One run's commit for one table: its data file written, then prepareCommit. */
async function prepare(
  table: IcebergTableRef,
  base: LoadedTable | undefined,
  args: { runId: string; columns: TypedColumn[]; rows: unknown[][]; minute: number; keepSnapshots?: number },
): Promise<TableCommit> {
  const schema = tableSchema(base?.metadata, args.columns);
  const file = await writeDataFile(table, `data/${args.runId}.parquet`, schema.columns, schema.schema, args.rows);
  const prepared = await prepareCommit({
    table,
    base,
    files: [file],
    operation: table.name === 'current' ? 'overwrite' : 'append',
    columns: args.columns,
    summary: { 'catalog-streams.run-id': args.runId },
    runId: args.runId,
    keepSnapshots: args.keepSnapshots ?? 10,
    now: new Date(T0 + args.minute * 60_000),
  });
  return prepared.commit;
}

/** What the spec decides of a table's metadata (the catalog's own bookkeeping left out). */
function decided(m: TableMetadata) {
  return {
    formatVersion: m['format-version'],
    uuid: m['table-uuid'],
    location: m.location,
    lastSequenceNumber: m['last-sequence-number'],
    lastColumnId: m['last-column-id'],
    schemas: m.schemas,
    currentSchemaId: m['current-schema-id'],
    specs: m['partition-specs'],
    defaultSpecId: m['default-spec-id'],
    lastPartitionId: m['last-partition-id'],
    sortOrders: m['sort-orders'],
    defaultSortOrderId: m['default-sort-order-id'],
    properties: m.properties ?? {},
    currentSnapshotId: m['current-snapshot-id'] ?? null,
    snapshots: m.snapshots ?? [],
    refs: m.refs ?? {},
  };
}

/** Commits through the catalog and checks the server's metadata against applyUpdates on the same commits. */
async function commit(changes: TableCommit[]): Promise<LoadedTable[]> {
  const results = await catalog.commit(changes);
  changes.forEach((change, i) => {
    const expected = applyUpdates(change.base?.metadata, change.requirements, change.updates, new Date());
    expect(decided(results[i]!.metadata), change.table.name).toEqual(decided(expected));
  });
  return results;
}

async function read(table: IcebergTableRef, loaded: LoadedTable): Promise<Record<string, unknown>[]> {
  const rows = await icebergRead({ tableUrl: table.location, metadataFileName: `v${loaded.version}.metadata.json` });
  return rows.sort((a, b) => String(a.id).localeCompare(String(b.id)) || String(a.qty).localeCompare(String(b.qty)));
}

describe('the sink commits through RestCatalog', () => {
  it('creates both tables, advances them together, expires snapshots and rolls one back', async () => {
    const current = localTable(dir, 'current');
    const changes = localTable(dir, 'changes');

    // Run 1: both tables are new.
    const [cur1, chg1] = await commit([
      await prepare(current, undefined, {
        runId: 'r1',
        columns: COLUMNS,
        rows: [
          ['a', 1n],
          ['b', 2n],
        ],
        minute: 1,
      }),
      await prepare(changes, undefined, {
        runId: 'r1',
        columns: COLUMNS,
        rows: [
          ['a', 1n],
          ['b', 2n],
        ],
        minute: 1,
      }),
    ]);
    expect(await read(current, cur1!)).toEqual([
      { id: 'a', qty: 1n },
      { id: 'b', qty: 2n },
    ]);

    // Run 2: a column added; both existing tables commit in one transaction.
    const before = server.requests.length;
    const [cur2, chg2] = await commit([
      await prepare(current, cur1, { runId: 'r2', columns: WITH_COLOR, rows: [['a', 3n, 'red']], minute: 2 }),
      await prepare(changes, chg1, { runId: 'r2', columns: WITH_COLOR, rows: [['a', 3n, 'red']], minute: 2 }),
    ]);
    expect(server.requests.slice(before).filter((r) => r.path.endsWith('/transactions/commit'))).toHaveLength(1);
    expect(cur2!.metadata['current-schema-id']).toBe(1);
    expect(await read(current, cur2!)).toEqual([{ id: 'a', qty: 3n, color: 'red' }]);
    // Run 1's file has no color column: icebird leaves it out of those rows.
    expect(await read(changes, chg2!)).toEqual([
      { id: 'a', qty: 1n, color: undefined },
      { id: 'a', qty: 3n, color: 'red' },
      { id: 'b', qty: 2n, color: undefined },
    ]);

    // Run 3 keeps two snapshots: the server expires run 1's.
    const [cur3, chg3] = await commit([
      await prepare(current, cur2, {
        runId: 'r3',
        columns: WITH_COLOR,
        rows: [['c', 5n, 'blue']],
        minute: 3,
        keepSnapshots: 2,
      }),
      await prepare(changes, chg2, {
        runId: 'r3',
        columns: WITH_COLOR,
        rows: [['c', 5n, 'blue']],
        minute: 3,
        keepSnapshots: 2,
      }),
    ]);
    expect(cur3!.metadata.snapshots!.map((s) => s.summary['catalog-streams.run-id'])).toEqual(['r2', 'r3']);
    expect(chg3!.metadata.snapshots).toHaveLength(2);

    // Undo run 3 in changes alone (what the sink does when a kill left only one table committed).
    const [rolledBack] = await commit([rollbackTo(changes, chg3!, chg2!.metadata['current-snapshot-id']!)]);
    expect(rolledBack!.metadata['current-snapshot-id']).toBe(chg2!.metadata['current-snapshot-id']);
    expect(await read(changes, rolledBack!)).toEqual(await read(changes, chg2!));
    expect(await catalog.load(changes)).toEqual(rolledBack);
  });
});
