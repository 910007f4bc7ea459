// Issue 37 item 10 for local files: a parquet or csv sink's run whose columns differ from the
// previous output's of the same path says so in its summary (sink.schema_changed, schemaChanges),
// as the s3 sink does from its manifest (schema-changed.test.ts). The previous columns come from
// the previous file itself: a Parquet footer's catalog-streams.schema, a CSV header line. A file
// another tool put at the path (or garbage) means no comparison, never a failure.
import { mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { jsonLines, runMain, sandboxEnv, workspace } from './cli-process.js';

const pipeline = (sink: string, transforms = '') => `name: brands-local
source: { type: brands.query, sorting: { id: ASC } }
${transforms}sinks:
  - ${sink}
`;

const PROMOTED = { name: 'logoUrl', type: 'VARCHAR' };

describe('a local file sink says when its columns changed since the previous output', { timeout: 120_000 }, () => {
  let sandbox: TestSandbox;
  let ws: Awaited<ReturnType<typeof workspace>>;
  beforeAll(async () => {
    [sandbox, ws] = await Promise.all([startTestSandbox({ products: 20 }), workspace()]);
  });
  afterAll(async () => {
    await Promise.all([sandbox?.close(), ws?.remove()]);
  });

  async function summary(sink: string, transforms = '') {
    const file = join(ws.dir, 'brands-local.yml');
    await writeFile(file, pipeline(sink, transforms));
    // In process (the summary line is the CLI's all the same): eleven runs stay quick.
    const r = await runMain(['run', file], sandboxEnv(sandbox));
    expect(r.code, r.stderr).toBe(0);
    return jsonLines(r.stderr).find((l) => l.event === 'summary')!;
  }

  it('parquet, a fixed path: first run nothing; a promoted column is listed; the same columns again nothing', async () => {
    const sink = (columns: string) => `{ type: parquet, path: out/fixed/brands.parquet${columns} }`;
    expect(await summary(sink(''))).not.toHaveProperty('schemaChanges');
    const promoted = await summary(sink(', columns: { logoUrl: string }'));
    expect(promoted.schemaChanges).toEqual([
      {
        sink: 'parquet',
        location: join(ws.dir, 'out/fixed/brands.parquet'),
        change: expect.objectContaining({ added: [PROMOTED], removed: [], retyped: [] }),
      },
    ]);
    expect(promoted.schemaChanges[0].change.from).toMatch(/^[0-9a-f]{16}$/);
    expect(promoted.schemaChanges[0].change.from).not.toBe(promoted.schemaChanges[0].change.to);
    expect(await summary(sink(', columns: { logoUrl: string }'))).not.toHaveProperty('schemaChanges');
  });

  it('parquet, a {run} path: compared with the newest earlier run of the dataset', async () => {
    const sink = (columns: string) => `{ type: parquet, path: "out/runs/run={run}/part-{part}.parquet"${columns} }`;
    await summary(sink(''));
    const promoted = await summary(sink(', columns: { logoUrl: string }'));
    expect(promoted.schemaChanges).toEqual([
      {
        sink: 'parquet',
        location: join(ws.dir, 'out/runs/run={run}/part-{part}.parquet'),
        change: expect.objectContaining({ added: [PROMOTED], removed: [], retyped: [] }),
      },
    ]);
    expect(await summary(sink(', columns: { logoUrl: string }'))).not.toHaveProperty('schemaChanges');
  });

  it('parquet, a {date} path on a new day: compared with the newest earlier day of the dataset', async () => {
    const sink = (columns: string) => `{ type: parquet, path: "out/daily/dt={date}/brands.parquet"${columns} }`;
    await summary(sink(''));
    // That run as yesterday's: today's folder does not exist yet at the next run.
    const today = (await readdir(join(ws.dir, 'out/daily')))[0]!;
    await rename(join(ws.dir, 'out/daily', today), join(ws.dir, 'out/daily/dt=2020-01-01'));
    const promoted = await summary(sink(', columns: { logoUrl: string }'));
    expect(promoted.schemaChanges).toEqual([
      expect.objectContaining({
        location: join(ws.dir, 'out/daily', today, 'brands.parquet'),
        change: expect.objectContaining({ added: [PROMOTED], removed: [], retyped: [] }),
      }),
    ]);
  });

  it('csv: the header line of the replaced file; a column a transform adds is listed, the same columns again nothing', async () => {
    const sink = '{ type: csv, path: out/csv/brands.csv.gz }';
    const extract = 'transforms:\n  - { type: extract, columns: { brand_id: id } }\n';
    await summary(sink);
    const promoted = await summary(sink, extract);
    expect(promoted.schemaChanges).toEqual([
      {
        sink: 'csv',
        location: join(ws.dir, 'out/csv/brands.csv.gz'),
        // A CSV file records names, not types, nor a schema hash.
        change: expect.objectContaining({ from: '', added: [{ name: 'brand_id', type: expect.any(String) }] }),
      },
    ]);
    expect(promoted.schemaChanges[0].change).toMatchObject({ removed: [], retyped: [] });
    expect(await summary(sink, extract)).not.toHaveProperty('schemaChanges');
  });

  it('a foreign or garbage file in place: no comparison, and the run succeeds', async () => {
    await mkdir(join(ws.dir, 'out/foreign'), { recursive: true });
    const garbage = Buffer.concat([
      Buffer.from('PAR1'),
      Buffer.alloc(64, 0xff),
      Buffer.from([0x40, 0, 0, 0]),
      Buffer.from('PAR1'),
    ]);
    await writeFile(join(ws.dir, 'out/foreign/brands.parquet'), garbage);
    await writeFile(join(ws.dir, 'out/foreign/brands.csv'), 'id,name\r\n1,somebody else\r\n');
    const parquet = await summary('{ type: parquet, path: out/foreign/brands.parquet }');
    expect(parquet).not.toHaveProperty('schemaChanges');
    const csv = await summary('{ type: csv, path: out/foreign/brands.csv }');
    expect(csv).not.toHaveProperty('schemaChanges');
  });
});
