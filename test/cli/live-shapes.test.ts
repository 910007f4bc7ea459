// Issue 11, first paragraph, through the built CLI: the core pipeline shape (validate with dead
// letters, flatten-locales, select-media-format, normalize-codes, JSONL and Parquet) over 2,400
// products in the live service's shape, served by a small fixture HTTP server (products/query
// pages). Before the fix the run dead-lettered all 2,400 and still exited 0 with an empty JSONL
// file; with maxInvalid "1%" it rejected the whole catalog. Now every product is written, and a
// run that rejects everything fails, naming its dead-letter file.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../client/http-test-server.js';
import { keyed, queryAnswer } from '../helpers/query-fixture.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { liveProductJson } from '../helpers/live-shapes.js';
import { lostLeaves } from '../helpers/lossless.js';
import {
  expectExactIds,
  jsonLines,
  jsonlIds,
  jsonlLines,
  leftBehind,
  parquetIds,
  runCli,
  sandboxEnv,
  workspace,
  type Workspace,
} from '../faults/support.js';

const COUNT = 2400;

function pipeline(maxInvalid?: string): string {
  return `name: live-core
source:
  type: products.query
  filter: { status: active }
  sorting: { id: ASC }
transforms:
  - type: validate
    onInvalid: dead-letter
    deadLetter: { type: jsonl, path: out/rejected.jsonl }
${maxInvalid ? `    maxInvalid: "${maxInvalid}"\n` : ''}  - { type: flatten-locales, locales: [en, nl, fr] }
  - { type: select-media-format }
  - { type: normalize-codes }
sinks:
  - { type: jsonl, path: out/products.jsonl }
  - { type: parquet, path: out/products.parquet }
`;
}

describe('the core pipeline over 2,400 live-shaped products (issue 11)', () => {
  let server: TestServer;
  let records: string[] = liveProductJson(COUNT);
  let ws: Workspace;
  const ids = () => records.map((r) => (JSON.parse(r) as { id: string }).id);

  beforeAll(async () => {
    // products/query as the service answers it: pages of the requested size, meta.total and meta.page
    server = await startTestServer((req, res) => {
      if (req.method !== 'POST' || !req.url.startsWith('/v4/products/query')) {
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end('{"error":{"status":404,"code":"not_found","message":"no such endpoint"}}');
        return;
      }
      const body = queryAnswer(keyed(records), req.body as Record<string, unknown>);
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
  });
  afterAll(() => server?.close());
  beforeEach(async () => {
    ws = await workspace();
    records = liveProductJson(COUNT);
  });
  afterEach(() => ws?.remove());

  async function run(maxInvalid?: string) {
    await ws.write('live-core.yml', pipeline(maxInvalid));
    const env = sandboxEnv({ url: server.url, credentials: { apiKey: 'key', apiSecret: 'secret' } });
    const result = await runCli(['run', 'live-core.yml'], { cwd: ws.dir, env });
    return { ...result, lines: jsonLines(result.stderr) };
  }

  it('default maxInvalid: every product is written once to JSONL and Parquet, none dead-lettered', async () => {
    const result = await run();
    expect(result.code, result.stderr).toBe(0);
    expect(result.lines.find((l) => l.event === 'summary')).toMatchObject({
      status: 'succeeded',
      records: { read: COUNT, invalid: 0, deadLettered: 0, written: { jsonl: COUNT, parquet: COUNT } },
    });
    expectExactIds(await jsonlIds(ws.path('out/products.jsonl')), ids());
    expectExactIds(await parquetIds(ws.path('out/products.parquet')), ids());
    expect(await leftBehind(ws.path('out'))).toEqual({ final: ['products.jsonl', 'products.parquet'], temp: [] });
    // the values are there: plain names in every locale column, codes as digit strings with their zeros
    const [first] = await jsonlLines(ws.path('out/products.jsonl'));
    expect(first).toMatchObject({
      brands: [{ id: 411, name_en: 'Examplebrand', name_nl: 'Examplebrand', name_fr: 'Examplebrand' }],
      eanGtin13: '0609500004711',
      // strings as sent (issue 35): the 12-digit UPC stays beside its 13-digit form
      ean: ['609500004711', '0609500004711'],
      weightWithUnit: { value: 0.37, unit: 'kg' },
    });
    const { rows } = await duckdbQuery(
      `SELECT eanGtin13, eanGtin12 FROM read_parquet(${sqlString(ws.path('out/products.parquet'))}) LIMIT 1`,
    );
    expect(rows[0]).toEqual({ eanGtin13: '0609500004711', eanGtin12: '609500004711' });
  });

  it('with maxInvalid "1%" (as in pipelines/demo.yml) the catalog is no longer rejected', async () => {
    const result = await run('1%');
    expect(result.code, result.stderr).toBe(0);
    expect(result.lines.find((l) => l.event === 'summary')).toMatchObject({
      status: 'succeeded',
      records: { invalid: 0, written: { jsonl: COUNT, parquet: COUNT } },
    });
    expectExactIds(await parquetIds(ws.path('out/products.parquet')), ids());
  });

  it('a run that dead-letters every record exits 1, naming the dead-letter file it kept', async () => {
    // a status neither documented nor observed: still an issue
    records = records.map((r) => r.replace('"status":"active"', '"status":"withdrawn"'));
    const result = await run();
    expect(result.code, result.stderr).toBe(1);
    const failed = result.lines.find((l) => l.event === 'failed');
    expect(failed, result.stderr).toMatchObject({
      code: 'data.max_invalid',
      message: expect.stringMatching(
        /2400 invalid records of 2400 \(100%\) exceed maxInvalid 10% \(the default\); the rejected records are in .*rejected\.jsonl/,
      ),
    });
    expect(result.lines.find((l) => l.event === 'summary')).toMatchObject({
      status: 'failed',
      records: { invalid: COUNT },
    });
    expect(await leftBehind(ws.path('out'))).toEqual({ final: ['rejected.jsonl'], temp: [] });
    expectExactIds(await jsonlIds(ws.path('out/rejected.jsonl'), (l) => l.record.id), ids());
  });
});

// Issue 24 (the second look): the shapes of samples 6, 7 and 10-15 among 2,600 live-shaped
// products. Before, 691 of them were dead-lettered (a zero-led string hsCode, a decimal weight,
// a replaced product's nulled codes); now every one is written, each value kept.
describe('the core pipeline over 2,600 products with the second look`s shapes (issue 24)', () => {
  const TOTAL = 2600;
  let server: TestServer;
  let ws: Workspace;
  const variants: ((p: Record<string, any>, i: number) => Record<string, any>)[] = [
    (p) => ({ ...p, hsCode: '030211' }),
    (p) => ({ ...p, hsCode: 30211 }),
    (p) => ({ ...p, weight: 12.5, weightWithUnit: { value: 0.0125, unit: 'kg' } }),
    (p) => ({
      ...p,
      status: 'replaced',
      replacement: 'MD0A1B2C3D',
      ean: [],
      eanGtin8: null,
      eanGtin12: null,
      eanGtin13: null,
      eanGtin14: null,
      gtin: null,
    }),
    (p) => ({ ...p, brands: [411, 412] }),
    (p) => ({ ...p, eanGtin13: ['0609500004711', '5400000000017'], eanGtin14: ['00609500004711'] }),
    (p) => ({ ...p, eanGtin14: '19350000000017' }),
    (p) => ({
      ...p,
      upc12: '012345678905',
      upc11: '01234567890',
      gtin: '00012345678905',
      ndc: '12345-678-90',
      organizations: [
        {
          id: 77,
          name: 'Example Labs Inc',
          type: 'supplier',
          contactInformation: { city: 'Austin', region: 'US-TX', country: 'US' },
        },
      ],
    }),
  ];
  // every fourth product takes one of the shapes, in turn (650 of 2,600; the rest as issue 11 left them)
  const records = liveProductJson(TOTAL).map((json, i) =>
    i % 4 === 0 ? JSON.stringify(variants[(i / 4) % variants.length]!(JSON.parse(json), i)) : json,
  );
  const byId = new Map(
    records.map((r) => [(JSON.parse(r) as { id: string }).id, JSON.parse(r) as Record<string, any>]),
  );

  const served = keyed(records);
  beforeAll(async () => {
    server = await startTestServer((req, res) => {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(queryAnswer(served, req.body as Record<string, unknown>));
    });
    ws = await workspace();
  });
  afterAll(async () => {
    server?.close();
    await ws?.remove();
  });

  it('writes every product, none dead-lettered; hsCode a zero-led string, weight a double, lists and bare ids kept', async () => {
    await ws.write(
      'live-core.yml',
      pipeline().replace('filter: { status: active }', 'filter: { status: [active, replaced] }'),
    );
    const env = sandboxEnv({ url: server.url, credentials: { apiKey: 'key', apiSecret: 'secret' } });
    const result = await runCli(['run', 'live-core.yml'], { cwd: ws.dir, env });
    expect(result.code, result.stderr).toBe(0);
    expect(jsonLines(result.stderr).find((l) => l.event === 'summary')).toMatchObject({
      status: 'succeeded',
      records: { read: TOTAL, invalid: 0, deadLettered: 0, written: { jsonl: TOTAL, parquet: TOTAL } },
    });
    const file = sqlString(ws.path('out/products.parquet'));
    const { rows, types } = await duckdbQuery(
      `SELECT id, hsCode, weight, status, replacement, eanGtin13, eanGtin13List, eanGtin14, upc12, upc11, gtin, ndc, brands,
              organizations[1].contactInformation.region AS region, _extra FROM read_parquet(${file}) ORDER BY id`,
    );
    expect(types).toMatchObject({ hsCode: 'VARCHAR', weight: 'DOUBLE', upc12: 'VARCHAR', gtin: 'VARCHAR' });
    const row = (k: number) => rows[4 * k]!;
    expect([row(0).hsCode, row(1).hsCode]).toEqual(['030211', '030211']);
    expect(rows.some((r) => r.hsCode === '30211' || typeof r.hsCode === 'bigint')).toBe(false);
    expect(row(2).weight).toBe(12.5);
    expect(row(3)).toMatchObject({ status: 'replaced', replacement: 'MD0A1B2C3D', eanGtin13: null, eanGtin14: null });
    // bare brand ids fill brands[].id; lists of codes their column and the list beside it (issue 37)
    expect((row(4).brands as Array<{ id: bigint }>).map((b) => b.id)).toEqual([411n, 412n]);
    expect(row(5)).toMatchObject({
      eanGtin13: '0609500004711',
      eanGtin13List: ['0609500004711', '5400000000017'],
      eanGtin14: '00609500004711',
    });
    expect(rows.filter((r) => r._extra !== null).map((r) => r._extra)).toEqual([]);
    expect(rows.filter((r) => r.eanGtin14 === '19350000000017').length).toBeGreaterThanOrEqual(2);
    expect(row(7)).toMatchObject({
      upc12: '012345678905',
      upc11: '01234567890',
      gtin: '00012345678905',
      ndc: '12345-678-90',
      region: 'US-TX',
    });
    // nothing lost between what the service sent and the JSONL output
    const out = await jsonlLines(ws.path('out/products.jsonl'));
    expect(out).toHaveLength(TOTAL);
    expect(
      lostLeaves([...byId.values()], out, [
        { type: 'flatten-locales', locales: ['en', 'nl', 'fr'] },
        { type: 'select-media-format' },
      ]),
    ).toEqual([]);
  });
});
