// The media table through the table sink (issue 39, "a media table (Parquet, and the `table`
// sink's snapshot/changes or Iceberg when asked)"): media-mirror's `table:` option feeds the rows
// of media.parquet to a table sink keyed by source_url. Two runs with a replaced media item (its
// new file inserted, its old one deleted once removed), an expired one (deleted) and a file gone
// from the host (its row updated with the error): the Iceberg current/ read back by icebird, and
// the hive snapshot read by DuckDB, hold media.parquet's rows; changes/ holds exactly those changes.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CatalogClient } from '../../src/client/index.js';
import { RunLock, storeLockBackend } from '../../src/core/lock.js';
import { RunEvents } from '../../src/events.js';
import { LocalObjectStore } from '../../src/storage/object-store.js';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { runPipeline } from '../../src/pipeline/runner.js';
import type { RunSummary } from '../../src/pipeline/run-summary.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { readIceberg } from '../helpers/iceberg-reader.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { workspace, type Workspace } from '../faults/support.js';

const pipeline = (table: string) => `name: media-table
source: { type: media.stream, filter: { available: true } }
sinks:
  - type: media-mirror
    path: out/media
    retries: 0
    removeAfterDays: 0
    revalidate: always
    maxFailedShare: 0.5
    table: ${table}
`;

type Row = Record<string, unknown>;

let sandbox: TestSandbox;
let ws: Workspace;
beforeAll(async () => {
  sandbox = await startTestSandbox({ products: 12, rateLimit: 0, assetHost: true, profile: 'be' });
});
afterAll(() => sandbox?.close());
beforeEach(async () => {
  ws = await workspace('catalog-streams-media-table-');
});
afterEach(() => ws?.remove());

async function run(): Promise<RunSummary> {
  const file = ws.path('media-table.yml');
  const [loaded] = parsePipelines(await readFile(file, 'utf8'), createRegistry(), { file });
  const events = new RunEvents();
  const client = new CatalogClient({ baseUrl: sandbox.url, ...sandbox.credentials, rateLimit: 0, events });
  try {
    return await runPipeline(loaded!, { registry: createRegistry(), client, events });
  } finally {
    await client.close();
  }
}

/** A value as both readers agree on it: timestamps and int64 as numbers (ms), lists as arrays. */
function plain(value: unknown): unknown {
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(plain);
  return value ?? null;
}

const COLUMNS = [
  'media_id',
  'type',
  'format',
  'product_ids',
  'source_url',
  'stored_path',
  'content_type',
  'bytes',
  'sha256',
  'etag',
  'last_modified',
  'first_seen',
  'last_seen',
  'last_attempt_at',
  'last_status',
  'last_error',
];

/** Rows by source_url, with only `columns`. */
function byUrl(rows: Row[], columns = COLUMNS): Map<string, Row> {
  return new Map(
    rows.map((r) => [r.source_url as string, Object.fromEntries(columns.map((c) => [c, plain(r[c])]))] as const),
  );
}

const mediaParquet = async () =>
  (await duckdbQuery(`SELECT * FROM read_parquet(${sqlString(ws.path('out/media/media.parquet'))})`)).rows;

/** One media item of each kind the test changes, among those the mirror stored, and their files' URLs. */
async function pick(): Promise<{ replaced: number; expired: number; gone: number; urls: Map<number, string[]> }> {
  const urls = new Map<number, string[]>();
  for (const r of await mediaParquet()) {
    if (r.last_status === 'failed' || r.media_id === null) continue;
    const id = Number(r.media_id);
    urls.set(id, [...(urls.get(id) ?? []), r.source_url as string]);
  }
  const [replaced, expired, gone] = [...urls.keys()].filter((id) => urls.get(id)!.length === 1).sort((a, b) => a - b);
  return { replaced: replaced!, expired: expired!, gone: gone!, urls };
}

/** Replaces one item's file, expires another, and takes a third's file off the host. */
function change(p: Awaited<ReturnType<typeof pick>>): void {
  sandbox.touch({ replaceMedia: [p.replaced], expireMedia: [p.expired] });
  sandbox.assets!.remove(new URL(p.urls.get(p.gone)![0]!).pathname);
}

/** The change rows of `runId`, as [change, source_url], sorted. */
const changesOf = (rows: Row[], runId: string) =>
  rows
    .filter((r) => r._run_id === runId)
    .map((r) => [r._change, r.source_url])
    .sort((a, b) => String(a).localeCompare(String(b)));

/** The changes run 2 must have made, from the media rows before and after. */
function expectedChanges(p: Awaited<ReturnType<typeof pick>>, after: Map<string, Row>) {
  const old = p.urls.get(p.replaced)![0]!;
  const added = [...after.values()].filter((r) => r.media_id === String(p.replaced)).map((r) => r.source_url);
  expect(added).toHaveLength(1);
  expect(added[0]).not.toBe(old);
  return [
    ['delete', old],
    ['delete', p.urls.get(p.expired)![0]!],
    ['insert', added[0]],
    ['update', p.urls.get(p.gone)![0]!],
  ].sort((a, b) => String(a).localeCompare(String(b)));
}

describe('media-mirror table:', () => {
  it('format: iceberg: current/ holds the media rows after each run, changes/ the replaced, expired and failed files', async () => {
    await ws.write('media-table.yml', pipeline('{ format: iceberg }'));
    const first = await run();
    const table = ws.path('out/media/table');
    // The ignored columns (every run moves them) aside, current/ is media.parquet.
    const compared = COLUMNS.filter((c) => !['last_seen', 'last_attempt_at', 'last_status'].includes(c));
    const rows1 = byUrl(await mediaParquet(), compared);
    expect(rows1.size).toBeGreaterThan(5);
    expect(byUrl(await readIceberg(join(table, 'current')), compared)).toEqual(rows1);
    // Reported as the table sink reports its tables.
    expect(first.outputs.some((o) => o.sink === 'table' && o.location.startsWith(join(table, 'current')))).toBe(true);
    expect(first.tables?.map((t) => t.location)).toEqual([pathToFileURL(join(table, 'current')).href]);

    const picked = await pick();
    change(picked);
    const second = await run();
    const after = byUrl(await mediaParquet(), compared);
    expect(byUrl(await readIceberg(join(table, 'current')), compared)).toEqual(after);
    const gone = after.get(picked.urls.get(picked.gone)![0]!)!;
    expect(gone.last_error).toEqual(expect.stringContaining('404'));
    // Exactly these: the files seen again unchanged (last_seen moved) are no change.
    const changes = await readIceberg(join(table, 'changes'));
    expect(changesOf(changes, second.runId)).toEqual(expectedChanges(picked, after));
    expect(changesOf(changes, first.runId).every(([c]) => c === 'insert')).toBe(true);
  });

  it('format: hive with ignoreFields []: the snapshot read by DuckDB equals media.parquet, every column', async () => {
    await ws.write('media-table.yml', pipeline('{ path: out/media-table, ignoreFields: [] }'));
    await run();
    const picked = await pick();
    change(picked);
    const second = await run();
    const root = ws.path('out/media-table');
    const manifest = JSON.parse(await readFile(join(root, '_table.json'), 'utf8'));
    const version = manifest.versions.at(-1);
    expect(version.runId).toBe(second.runId);
    const files = (version.snapshot as Array<{ path: string }>).map((f) => sqlString(join(root, f.path)));
    const snapshot = await duckdbQuery(`SELECT * FROM read_parquet([${files.join(', ')}])`);
    const after = byUrl(await mediaParquet());
    expect(byUrl(snapshot.rows)).toEqual(after);
    const changeFiles = (version.changes as Array<{ path: string }>).map((f) => sqlString(join(root, f.path)));
    const changes = await duckdbQuery(`SELECT * FROM read_parquet([${changeFiles.join(', ')}])`);
    // Without ignored columns every file seen again is an update (its last_seen moved).
    const expected = expectedChanges(picked, after);
    const rows = changesOf(changes.rows, second.runId);
    for (const c of expected.filter(([kind]) => kind !== 'update')) expect(rows).toContainEqual(c);
    expect(rows.filter(([kind]) => kind === 'update').length).toBe(after.size - 1);
  });

  it('a table another run holds stops the run (publish.locked): nothing published, the mirror folder unlocked', async () => {
    await ws.write('media-table.yml', pipeline('{ format: iceberg }'));
    const tableStore = new LocalObjectStore(ws.path('out/media/table'));
    const held = await RunLock.acquire(
      storeLockBackend(tableStore, '.publish.lock'),
      { runId: 'other-run', pipeline: 'other' },
      { what: 'table', code: 'publish.locked' },
    );
    try {
      await expect(run()).rejects.toMatchObject({ code: 'publish.locked' });
      expect(existsSync(ws.path('out/media/table/current'))).toBe(false);
      expect(existsSync(ws.path('out/media/_mirror/lock.json'))).toBe(false);
    } finally {
      await held.release();
      await tableStore.close();
    }
    // Released: the next run publishes.
    await run();
    expect(existsSync(ws.path('out/media/table/current/metadata/version-hint.text'))).toBe(true);
  });

  it('refuses a table in the mirror folder itself', async () => {
    await ws.write('media-table.yml', pipeline('{ path: out/media }'));
    await expect(run()).rejects.toThrow(/table\.path is the mirror's own folder/);
  });
});
