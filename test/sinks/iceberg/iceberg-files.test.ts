// Two Iceberg tables written through the files-only catalog on a local store, as the table sink
// writes them: `current` (every run an overwrite snapshot) and `changes` (every run an append),
// with a column added, snapshots expired, a killed commit and a rollback. Read back by icebird
// (an independent reader: it fetches the table's file:// URLs through the test's fetch, see
// iceberg-helpers.ts), every version by its metadata file (time travel); every Avro file decoded
// by avsc's own container reader against the spec's schemas written out in iceberg-helpers.ts;
// every metadata file checked for the spec's required v2 fields.
import { readFile } from 'node:fs/promises';
import avro from 'avsc';
import { icebergRead } from 'icebird';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TypedColumn } from '../../../src/sinks/shared/column-types.js';
import {
  applyUpdates,
  IcebergCommitConflictError,
  type IcebergTableRef,
} from '../../../src/sinks/table/iceberg/iceberg-catalog.js';
import { rollbackTo, tableSchema } from '../../../src/sinks/table/iceberg/iceberg-commit.js';
import { prepareCommit } from '../../../src/sinks/table/iceberg/snapshot-operations.js';
import { ManifestNames, unreferenced } from '../../../src/sinks/table/iceberg/iceberg-garbage.js';
import { FilesCatalog } from '../../../src/sinks/table/iceberg/files-catalog.js';
import type { TableMetadata } from '../../../src/sinks/table/iceberg/iceberg-types.js';
import { duckdbQuery, sqlString } from '../../helpers/duckdb.js';
import { tempDir } from '../records.js';
import {
  avroIds,
  localTable,
  SPEC_MANIFEST_ENTRY,
  SPEC_MANIFEST_FILE,
  run,
  T0,
  writeDataFile,
} from './iceberg-helpers.js';
import { icebirdFetch } from '../../helpers/iceberg-reader.js';

beforeAll(() => {
  vi.stubGlobal('fetch', icebirdFetch());
});
afterAll(() => {
  vi.unstubAllGlobals();
});

const BASE_COLUMNS: TypedColumn[] = [
  { name: 'id', type: { kind: 'string' } },
  { name: 'qty', type: { kind: 'int64' } },
  { name: 'tags', type: { kind: 'list', element: { kind: 'string' } } },
];
const WITH_COLOR: TypedColumn[] = [...BASE_COLUMNS, { name: 'color', type: { kind: 'string' } }];

const CHANGE_COLUMNS: TypedColumn[] = [
  { name: '_change', type: { kind: 'string' } },
  { name: '_changed_at', type: { kind: 'timestamp-micros' } },
  { name: '_run_id', type: { kind: 'string' } },
  { name: 'id', type: { kind: 'string' } },
  { name: 'qty', type: { kind: 'int64' } },
];

async function read(table: IcebergTableRef, version?: number): Promise<Record<string, unknown>[]> {
  const rows = await icebergRead({
    tableUrl: table.location,
    ...(version !== undefined && { metadataFileName: `v${version}.metadata.json` }),
  });
  return rows.sort(
    (a, b) => String(a.id).localeCompare(String(b.id)) || String(a._run_id).localeCompare(String(b._run_id)),
  );
}

/** Decodes an Avro file with avsc's own container reader, resolving the writer's schema to the spec's. */
async function decodeWithSpec(
  file: string,
  spec: object,
): Promise<{ meta: Record<string, string>; writerSchema: unknown; records: Array<Record<string, unknown>> }> {
  const meta: Record<string, string> = {};
  let writerSchema: unknown;
  const records: Array<Record<string, unknown>> = [];
  await new Promise<void>((resolve, reject) => {
    avro
      .createFileDecoder(file, { readerSchema: spec })
      .on('metadata', (_type: unknown, _codec: unknown, header: { meta: Record<string, Buffer> }) => {
        for (const [k, v] of Object.entries(header.meta)) meta[k] = v.toString('utf8');
        writerSchema = JSON.parse(meta['avro.schema']!);
      })
      .on('data', (r: Record<string, unknown>) => records.push(r))
      .on('error', reject)
      .on('end', resolve);
  });
  return { meta, writerSchema, records };
}

const REQUIRED_V2 = [
  'format-version',
  'table-uuid',
  'location',
  'last-sequence-number',
  'last-updated-ms',
  'last-column-id',
  'schemas',
  'current-schema-id',
  'partition-specs',
  'default-spec-id',
  'last-partition-id',
  'sort-orders',
  'default-sort-order-id',
] as const;

function checkMetadata(m: TableMetadata, table: IcebergTableRef): void {
  for (const field of REQUIRED_V2) expect(m, field).toHaveProperty([field]);
  expect(m['format-version']).toBe(2);
  expect(m['table-uuid']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  expect(m.location).toBe(table.location);
  expect(m.schemas.map((s) => s['schema-id'])).toContain(m['current-schema-id']);
  for (const s of m.schemas) expect(s).toMatchObject({ type: 'struct', 'schema-id': expect.any(Number) });
  expect(m['partition-specs']).toEqual([{ 'spec-id': 0, fields: [] }]);
  expect(m['default-spec-id']).toBe(0);
  expect(m['sort-orders']).toEqual([{ 'order-id': 0, fields: [] }]);
  expect(m['default-sort-order-id']).toBe(0);
  for (const s of m.snapshots ?? []) {
    for (const f of ['snapshot-id', 'sequence-number', 'timestamp-ms', 'manifest-list', 'summary'])
      expect(s, f).toHaveProperty([f]);
    expect(Number.isSafeInteger(s['snapshot-id']) && s['snapshot-id'] > 0).toBe(true);
    expect(s['sequence-number']).toBeLessThanOrEqual(m['last-sequence-number']);
    expect(['append', 'overwrite']).toContain(s.summary.operation);
  }
  expect(m['current-snapshot-id']).toBe(m.refs?.main?.['snapshot-id']);
  expect(m.refs?.main?.type).toBe('branch');
  // Every id in every schema is at most last-column-id (the spec: ids are never reused).
  const ids = JSON.stringify(m.schemas)
    .match(/"(?:id|element-id)":\d+/g)!
    .map((x) => Number(x.split(':')[1]));
  expect(Math.max(...ids)).toBeLessThanOrEqual(m['last-column-id']);
}

/** Checks every file under metadata/; returns how many of each kind it decoded. */
async function checkAllFiles(table: IcebergTableRef): Promise<{ metadata: number; lists: number; manifests: number }> {
  const counts = { metadata: 0, lists: 0, manifests: 0 };
  const entrySpecIds = avroIds(SPEC_MANIFEST_ENTRY);
  const fileSpecIds = avroIds(SPEC_MANIFEST_FILE);
  for await (const { rel } of table.store.list('metadata/')) {
    const path = table.store.location(rel);
    if (rel.endsWith('.metadata.json')) {
      checkMetadata(JSON.parse(await readFile(path, 'utf8')) as TableMetadata, table);
      counts.metadata++;
    } else if (rel.startsWith('metadata/snap-')) {
      const { meta, writerSchema, records } = await decodeWithSpec(path, SPEC_MANIFEST_FILE);
      expect(meta['format-version']).toBe('2');
      expect(avroIds(writerSchema)).toEqual(fileSpecIds);
      for (const r of records) expect(String(r.manifest_path)).toMatch(/^file:\/\/.*\.avro$/);
      counts.lists++;
    } else if (rel.endsWith('.avro')) {
      const { meta, writerSchema, records } = await decodeWithSpec(path, SPEC_MANIFEST_ENTRY);
      // The key-value metadata the spec requires of a v2 manifest.
      expect(JSON.parse(meta.schema!)).toMatchObject({ type: 'struct', fields: expect.any(Array) });
      expect(meta['schema-id']).toMatch(/^\d+$/);
      expect(JSON.parse(meta['partition-spec']!)).toEqual([]);
      expect(meta['partition-spec-id']).toBe('0');
      expect(meta['format-version']).toBe('2');
      expect(meta.content).toBe('data');
      expect(avroIds(writerSchema)).toEqual(entrySpecIds);
      for (const r of records) {
        expect([0, 1, 2]).toContain(r.status);
        const df = r.data_file as Record<string, unknown>;
        expect(df).toMatchObject({ content: 0, file_format: 'PARQUET', partition: {} });
        expect(String(df.file_path).startsWith(`${table.location}/data/`)).toBe(true);
        if (r.status !== 1) expect(r.sequence_number).not.toBeNull();
      }
      counts.manifests++;
    } else if (rel !== 'metadata/version-hint.text') {
      throw new Error(`unexpected file ${rel}`);
    }
  }
  return counts;
}

describe('Iceberg tables through the files-only catalog', () => {
  it('writes current (overwrite) and changes (append) versions that icebird reads exactly, by version', async () => {
    const root = await tempDir('iceberg-');
    const catalog = new FilesCatalog({ now: () => new Date(T0) });
    const current = localTable(root, 'current');
    const changes = localTable(root, 'changes');
    const at = (minute: number): bigint => BigInt(T0 + minute * 60_000) * 1000n;

    // Run 1: the tables are created.
    await run(catalog, current, {
      runId: 'r1',
      operation: 'overwrite',
      columns: BASE_COLUMNS,
      rows: [
        ['a', 1n, ['x', 'y']],
        ['b', 2n, null],
      ],
      minute: 1,
    });
    await run(catalog, changes, {
      runId: 'r1',
      operation: 'append',
      columns: CHANGE_COLUMNS,
      rows: [
        ['insert', at(1), 'r1', 'a', 1n],
        ['insert', at(1), 'r1', 'b', 2n],
      ],
      minute: 1,
    });
    // Run 2: b changes, c arrives.
    await run(catalog, current, {
      runId: 'r2',
      operation: 'overwrite',
      columns: BASE_COLUMNS,
      rows: [
        ['a', 1n, ['x', 'y']],
        ['b', 3n, []],
        ['c', 4n, ['z']],
      ],
      minute: 2,
    });
    await run(catalog, changes, {
      runId: 'r2',
      operation: 'append',
      columns: CHANGE_COLUMNS,
      rows: [
        ['update', at(2), 'r2', 'b', 3n],
        ['insert', at(2), 'r2', 'c', 4n],
      ],
      minute: 2,
    });
    // Run 3: a column is added, b is deleted.
    const v3 = await run(catalog, current, {
      runId: 'r3',
      operation: 'overwrite',
      columns: WITH_COLOR,
      rows: [
        ['a', 1n, ['x', 'y'], 'red'],
        ['c', 4n, ['z'], null],
      ],
      minute: 3,
    });
    await run(catalog, changes, {
      runId: 'r3',
      operation: 'append',
      columns: CHANGE_COLUMNS,
      rows: [['delete', at(3), 'r3', 'b', null]],
      minute: 3,
    });

    // Ids: kept columns keep theirs, the new one gets the next after last-column-id.
    expect(v3.metadata.schemas).toHaveLength(2);
    const schema = v3.metadata.schemas.find((s) => s['schema-id'] === v3.metadata['current-schema-id'])!;
    expect(schema.fields.map((f) => [f.name, f.id])).toEqual([
      ['id', 1],
      ['qty', 2],
      ['tags', 3],
      ['color', 5],
    ]);
    expect(v3.metadata['last-column-id']).toBe(5);
    // The Parquet file carries the same ids (DuckDB reads the footer's field_id).
    const { rows: parquetIds } = await duckdbQuery(
      `SELECT name, field_id FROM parquet_schema(${sqlString(`${root}/current/data/part-00000-r3.parquet`)}) WHERE field_id IS NOT NULL`,
    );
    expect(parquetIds.map((r) => [r.name, Number(r.field_id)])).toEqual([
      ['id', 1],
      ['qty', 2],
      ['tags', 3],
      ['element', 4],
      ['color', 5],
    ]);

    // icebird, every version of current: exactly that run's rows (an old file lacks color: null).
    expect(await read(current, 1)).toEqual([
      { id: 'a', qty: 1n, tags: ['x', 'y'] },
      { id: 'b', qty: 2n, tags: undefined },
    ]);
    expect(await read(current, 2)).toEqual([
      { id: 'a', qty: 1n, tags: ['x', 'y'] },
      { id: 'b', qty: 3n, tags: [] },
      { id: 'c', qty: 4n, tags: ['z'] },
    ]);
    expect(await read(current)).toEqual([
      { id: 'a', qty: 1n, tags: ['x', 'y'], color: 'red' },
      { id: 'c', qty: 4n, tags: ['z'], color: null },
    ]);
    // changes: every version holds every run so far.
    expect((await read(changes, 1)).map((r) => [r._change, r.id, r.qty])).toEqual([
      ['insert', 'a', 1n],
      ['insert', 'b', 2n],
    ]);
    expect((await read(changes)).map((r) => [r._change, r._run_id, r.id, r.qty])).toEqual([
      ['insert', 'r1', 'a', 1n],
      ['insert', 'r1', 'b', 2n],
      ['update', 'r2', 'b', 3n],
      ['delete', 'r3', 'b', null],
      ['insert', 'r2', 'c', 4n],
    ]);
    // timestamptz in microseconds, read back as the instants written.
    expect((await read(changes)).map((r) => (r._changed_at as Date).toISOString())).toEqual([
      '2026-11-01T00:01:00.000Z',
      '2026-11-01T00:01:00.000Z',
      '2026-11-01T00:02:00.000Z',
      '2026-11-01T00:03:00.000Z',
      '2026-11-01T00:02:00.000Z',
    ]);

    // current: 3 versions, 3 lists, 5 manifests (runs 2 and 3 each add a DELETED one); changes: 3, 3, 3.
    expect(await checkAllFiles(current)).toEqual({ metadata: 3, lists: 3, manifests: 5 });
    expect(await checkAllFiles(changes)).toEqual({ metadata: 3, lists: 3, manifests: 3 });
    // Nothing is garbage while every snapshot is kept.
    expect(await unreferenced(current, await catalog.load(current))).toEqual([]);
    expect(await unreferenced(changes, await catalog.load(changes))).toEqual([]);

    // Run 4, keepSnapshots 2: runs 1 and 2 expire from current; the files only they used are garbage.
    const v4 = await run(catalog, current, {
      runId: 'r4',
      operation: 'overwrite',
      columns: WITH_COLOR,
      rows: [['d', 5n, null, 'blue']],
      keepSnapshots: 2,
      minute: 4,
    });
    expect(v4.metadata.snapshots!.map((s) => s.summary['catalog-streams.run-id'])).toEqual(['r3', 'r4']);
    expect(v4.metadata['metadata-log']!.map((e) => e['metadata-file'].split('/').pop())).toEqual(['v3.metadata.json']);
    const garbage = await unreferenced(current, v4);
    expect(garbage.filter((g) => !/^metadata\/(r[12]-m\d+\.avro|snap-\d+-r[12]\.avro)$/.test(g))).toEqual([
      'data/part-00000-r1.parquet',
      'data/part-00000-r2.parquet',
      'metadata/v1.metadata.json',
      'metadata/v2.metadata.json',
    ]);
    // r1: one ADDED manifest; r2: ADDED and DELETED manifests; a manifest list each.
    expect(garbage.filter((g) => g.endsWith('.avro'))).toHaveLength(5);
    for (const g of garbage) await current.store.remove(g);
    // What is kept still reads: the current version and the one before it.
    expect(await read(current)).toEqual([{ id: 'd', qty: 5n, tags: undefined, color: 'blue' }]);
    expect(await read(current, 3)).toEqual([
      { id: 'a', qty: 1n, tags: ['x', 'y'], color: 'red' },
      { id: 'c', qty: 4n, tags: ['z'], color: null },
    ]);
    await checkAllFiles(current);

    // Run 5 is killed after the changes commit and before the current one: changes rolls back.
    const beforeR5 = (await catalog.load(changes))!;
    await run(catalog, changes, {
      runId: 'r5',
      operation: 'append',
      columns: CHANGE_COLUMNS,
      rows: [['insert', at(5), 'r5', 'e', 6n]],
      minute: 5,
    });
    const r5 = (await catalog.load(changes))!;
    const [rolledBack] = await catalog.commit([rollbackTo(changes, r5, beforeR5.metadata['current-snapshot-id']!)]);
    expect(rolledBack!.metadata['current-snapshot-id']).toBe(beforeR5.metadata['current-snapshot-id']);
    expect(rolledBack!.metadata.snapshots!.map((s) => s.summary['catalog-streams.run-id'])).toEqual(['r1', 'r2', 'r3']);
    expect((await read(changes)).map((r) => r._run_id)).toEqual(['r1', 'r1', 'r2', 'r3', 'r2']);
    const rolledGarbage = await unreferenced(changes, rolledBack);
    expect(rolledGarbage.filter((g) => !/^metadata\/(r5-m0\.avro|snap-\d+-r5\.avro)$/.test(g))).toEqual([
      'data/part-00000-r5.parquet',
    ]);
    expect(rolledGarbage).toHaveLength(3);
    await checkAllFiles(changes);
  });

  it('finds exactly what a killed commit left, and a later commit succeeds once it is removed', async () => {
    const root = await tempDir('iceberg-');
    const catalog = new FilesCatalog();
    const current = localTable(root, 'current');
    await run(catalog, current, {
      runId: 'r1',
      operation: 'overwrite',
      columns: BASE_COLUMNS,
      rows: [['a', 1n, null]],
      minute: 1,
    });
    const v1 = (await catalog.load(current))!;

    // A run writes its data file and manifests, writes v2.metadata.json, and is killed before the hint.
    const schema = tableSchema(v1.metadata, BASE_COLUMNS);
    const file = await writeDataFile(current, 'data/part-00000-r2.parquet', schema.columns, schema.schema, [
      ['b', 2n, null],
    ]);
    const prepared = await prepareCommit({
      table: current,
      base: v1,
      files: [file],
      operation: 'overwrite',
      columns: BASE_COLUMNS,
      summary: {},
      runId: 'r2',
      keepSnapshots: 5,
      now: new Date(T0),
    });
    await current.store.putIfAbsent(
      'metadata/v2.metadata.json',
      JSON.stringify(applyUpdates(v1.metadata, prepared.commit.requirements, prepared.commit.updates, new Date(T0))),
    );
    // Readers and the catalog still see version 1.
    expect((await catalog.load(current))!.version).toBe(1);
    expect(await read(current)).toEqual([{ id: 'a', qty: 1n, tags: undefined }]);
    expect(await unreferenced(current, await catalog.load(current))).toEqual(
      ['data/part-00000-r2.parquet', ...prepared.written, 'metadata/v2.metadata.json'].sort(),
    );

    // The next run cannot take version 2 while the killed run's file holds the name.
    const next = await prepareCommit({
      table: current,
      base: v1,
      files: [],
      operation: 'overwrite',
      columns: BASE_COLUMNS,
      summary: {},
      runId: 'r3',
      keepSnapshots: 5,
      now: new Date(T0),
    });
    // Prepared again by the same run (as after a commit it could not confirm): nothing is replaced.
    const again = await prepareCommit({
      table: current,
      base: v1,
      files: [],
      operation: 'overwrite',
      columns: BASE_COLUMNS,
      summary: {},
      runId: 'r3',
      keepSnapshots: 5,
      now: new Date(T0),
    });
    expect(next.written[0]).toBe('metadata/r3-m0.avro');
    expect(again.written[0]).toBe('metadata/r3-m1.avro');
    await current.store.remove(again.written[0]!);
    await current.store.remove(again.written[1]!);
    const conflict = await catalog.commit([next.commit]).catch((err: unknown) => err);
    expect(conflict).toBeInstanceOf(IcebergCommitConflictError);
    expect((conflict as IcebergCommitConflictError).code).toBe('iceberg.commit_conflict');
    for (const g of await unreferenced(current, await catalog.load(current)))
      if (!next.written.includes(g)) await current.store.remove(g);
    const [v2] = await catalog.commit([next.commit]);
    expect(v2!.version).toBe(2);
    // Snapshot r1 is kept, so its data file is too, though r3 replaced it.
    expect(await unreferenced(current, v2)).toEqual([]);
    // An overwrite with no files: the table is empty, and icebird says so.
    await expect(read(current)).rejects.toThrow(/No data manifest files/);
  });

  it("walks each manifest list and manifest once per run: a walk after a commit reads only the new snapshot's", async () => {
    const root = await tempDir('iceberg-');
    const catalog = new FilesCatalog();
    const changes = localTable(root, 'changes');
    const row = (k: number): unknown[] => ['insert', BigInt(T0 + k) * 1000n, `r${k}`, `id${k}`, BigInt(k)];
    for (let k = 1; k <= 4; k++)
      await run(catalog, changes, {
        runId: `r${k}`,
        operation: 'append',
        columns: CHANGE_COLUMNS,
        rows: [row(k)],
        minute: k,
      });
    const reads: string[] = [];
    const store = changes.store;
    // What the walk calls of a store: reads counted, the rest passed on.
    const counted = {
      ...changes,
      store: {
        readStream: (rel: string) => (reads.push(rel), store.readStream(rel)),
        location: (rel: string) => store.location(rel),
        list: (prefix: string) => store.list(prefix),
      } as unknown as typeof store,
    };
    const names = new ManifestNames();
    // A stray file a killed run left, and the four snapshots' files kept.
    await store.putIfAbsent('metadata/r9-m0.avro', Buffer.from('left by a killed run'));
    expect(await unreferenced(counted, await catalog.load(changes), names)).toEqual(['metadata/r9-m0.avro']);
    // Four lists, four manifests (each list names every earlier manifest again: read once each).
    expect(reads.filter((r) => r.includes('/snap-'))).toHaveLength(4);
    expect(reads.filter((r) => /\/r\d-m\d\.avro$/.test(r))).toHaveLength(4);

    reads.length = 0;
    await run(catalog, changes, {
      runId: 'r5',
      operation: 'append',
      columns: CHANGE_COLUMNS,
      rows: [row(5)],
      minute: 5,
    });
    const loaded = (await catalog.load(changes))!;
    expect(await unreferenced(counted, loaded, names)).toEqual(['metadata/r9-m0.avro']);
    expect(reads.map((r) => r.replace(/snap-\d+-/, 'snap-N-'))).toEqual([
      'metadata/snap-N-r5.avro',
      'metadata/r5-m0.avro',
    ]);
    // The same answer as a walk that remembers nothing.
    expect(await unreferenced(changes, loaded)).toEqual(['metadata/r9-m0.avro']);
  });

  it('refuses a commit whose base is stale (another writer moved main)', async () => {
    const root = await tempDir('iceberg-');
    const catalog = new FilesCatalog();
    const changes = localTable(root, 'changes');
    await run(catalog, changes, { runId: 'r1', operation: 'append', columns: CHANGE_COLUMNS, rows: [], minute: 1 });
    const v1 = (await catalog.load(changes))!;
    const stale = await prepareCommit({
      table: changes,
      base: v1,
      files: [],
      operation: 'append',
      columns: CHANGE_COLUMNS,
      summary: {},
      runId: 'r2',
      keepSnapshots: 5,
      now: new Date(T0),
    });
    await run(catalog, changes, { runId: 'r3', operation: 'append', columns: CHANGE_COLUMNS, rows: [], minute: 2 });
    const v2 = (await catalog.load(changes))!;
    // Requirements checked against what is current: main moved.
    expect(() => applyUpdates(v2.metadata, stale.commit.requirements, stale.commit.updates, new Date())).toThrow(
      IcebergCommitConflictError,
    );
    // Against its own base, the next name is taken.
    await expect(catalog.commit([stale.commit])).rejects.toBeInstanceOf(IcebergCommitConflictError);
  });
});
