// Issue 24, "bad input from the service never blocks or corrupts a run", through the built CLI: a
// products/stream (raw NDJSON from a loopback server, in random chunk sizes) holding one record
// nested 200,000 levels deep and one with integers past 2^53. Before: every run failed with
// "Maximum call stack size exceeded", naming no record, and the integers were rounded
// (32000000000000001 -> 32000000000000000) in every output. Now the run exits 0: the deep record
// is dead-lettered with its id and origin, the other written with its digits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rng, startTestServer, type TestServer, writeInRandomChunks } from '../client/http-test-server.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { liveProduct } from '../helpers/live-shapes.js';
import { jsonLines, leftBehind, runCli, sandboxEnv, workspace, type Workspace } from '../faults/support.js';
import { readFile } from 'node:fs/promises';

const DEPTH = 200_000;

function records(): string[] {
  const base = liveProduct();
  const text = (id: string, extra = '') => JSON.stringify({ ...base, id }).replace(/}$/, `${extra}}`);
  return [
    text('M0000000001'),
    text('M0000000002', `,"deep":${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`),
    // snomedMpp is declared (a code: integer or digit string); artgId too; hugeExtra is not (Parquet _extra)
    text('M0000000003', ',"snomedMpp":32000000000000001,"hugeExtra":[-9007199254740993,1.5e300]').replace(
      '"artgId":"123456"',
      '"artgId":9007199254740993',
    ),
    text('M0000000004'),
  ];
}

const PIPELINE = `name: hostile
source:
  type: products.stream
  filter: { status: active }
  sorting: { id: ASC }
transforms:
  - type: validate
    onInvalid: dead-letter
    deadLetter: { type: jsonl, path: out/rejected.jsonl }
    maxInvalid: 5
sinks:
  - { type: jsonl, path: out/products.jsonl }
  - { type: parquet, path: out/products.parquet }
`;

describe('a stream with a 200,000-deep record and integers past 2^53 (issue 24)', () => {
  let server: TestServer;
  let ws: Workspace;
  const lines = records();

  beforeAll(async () => {
    expect(lines[2]).toContain('"artgId":9007199254740993');
    const random = rng(24);
    server = await startTestServer(async (req, res) => {
      if (!req.url.startsWith('/v4/products/stream')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"status":404,"code":"not_found"}}');
        return;
      }
      const body = lines
        .map((r, index) => `{"meta":{"total":${lines.length},"index":${index}},"result":${r}}\n`)
        .join('');
      res.writeHead(200, { 'content-type': 'application/x-json-stream' });
      await writeInRandomChunks(res, body, random, { maxChunk: 64 * 1024 });
    });
    ws = await workspace();
  });
  afterAll(async () => {
    await server?.close();
    await ws?.remove();
  });

  it('exits 0: the deep record dead-lettered with its id and origin, the big integers written exactly', async () => {
    await ws.write('hostile.yml', PIPELINE);
    const env = sandboxEnv({ url: server.url, credentials: { apiKey: 'key', apiSecret: 'secret' } });
    const result = await runCli(['run', 'hostile.yml'], { cwd: ws.dir, env });
    expect(result.code, result.stderr).toBe(0);
    expect(jsonLines(result.stderr).find((l) => l.event === 'summary')).toMatchObject({
      status: 'succeeded',
      records: { read: 4, invalid: 1, deadLettered: 1, written: { jsonl: 3, parquet: 3 } },
    });
    expect(await leftBehind(ws.path('out'))).toEqual({
      final: ['products.jsonl', 'products.parquet', 'rejected.jsonl'],
      temp: [],
    });

    const jsonl = await readFile(ws.path('out/products.jsonl'), 'utf8');
    const written = jsonl.split('\n').filter(Boolean);
    expect(written.map((l) => (JSON.parse(l) as { id: string }).id)).toEqual([
      'M0000000001',
      'M0000000003',
      'M0000000004',
    ]);
    // the text itself: 17 digits, as strings (a number would be rounded by any JSON reader)
    expect(written[1]).toContain('"snomedMpp":"32000000000000001"');
    expect(written[1]).toContain('"artgId":"9007199254740993"');
    expect(written[1]).toContain('"hugeExtra":["-9007199254740993",1.5e+300]');

    const [letter, ...more] = (await readFile(ws.path('out/rejected.jsonl'), 'utf8')).split('\n').filter(Boolean);
    expect(more).toEqual([]);
    const dead = JSON.parse(letter!) as Record<string, any>;
    expect(dead).toMatchObject({
      id: 'M0000000002',
      stage: 'validate',
      origin: { endpoint: 'products.stream', index: 1 },
      issues: [{ path: 'deep', message: expect.stringContaining(`nested ${DEPTH + 1} levels deep`) }],
    });
    // lossless: the deep value is in the dead letter, as its JSON text
    expect(dead.record.deep).toBe(`${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`);

    const { rows } = await duckdbQuery(
      `SELECT id, CAST(snomedMpp AS VARCHAR) AS snomedMpp, CAST(artgId AS VARCHAR) AS artgId, _extra FROM read_parquet(${sqlString(ws.path('out/products.parquet'))}) ORDER BY id`,
    );
    expect(rows.map((r) => r.id)).toEqual(['M0000000001', 'M0000000003', 'M0000000004']);
    expect(rows[1]).toMatchObject({ snomedMpp: '32000000000000001', artgId: '9007199254740993' });
    expect(String(rows[1]!._extra)).toContain('"-9007199254740993"');
  });
});
