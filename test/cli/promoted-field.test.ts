// Issue 37 item 10: promoting a field with `columns:`, as the `_extra` warning advises, must end
// the warnings about it. Before, `validate` kept warning on every run that the field is not in
// the catalog schema (it knew nothing of the sinks' columns), and the `_extra` warning told a
// field that has a column, but sent a value of another shape, to be declared again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../client/http-test-server.js';
import { keyed, queryAnswer } from '../helpers/query-fixture.js';
import { liveProductJson } from '../helpers/live-shapes.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { jsonLines, runCli, sandboxEnv, workspace, type Workspace } from '../faults/support.js';

const pipeline = (sinkOptions: string) => `name: promoted
source: { type: products.query, filter: { status: active }, sorting: { id: ASC } }
transforms:
  - { type: validate, onInvalid: dead-letter, deadLetter: { type: jsonl, path: out/rejected.jsonl } }
  - { type: flatten-locales, locales: [en] }
sinks:
  - { type: parquet, path: out/products.parquet${sinkOptions} }
`;

describe('a field promoted with columns: is no longer warned about', { timeout: 120_000 }, () => {
  let server: TestServer;
  let ws: Workspace;
  // 30 products with a field the catalog schema does not have; the last sends it as an object.
  const records = liveProductJson(30).map((json, i) => {
    const p = JSON.parse(json) as Record<string, unknown>;
    p.routeCode = i === 29 ? { code: 'PO' } : 'oral';
    return JSON.stringify(p);
  });
  beforeAll(async () => {
    server = await startTestServer((req, res) => {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(queryAnswer(keyed(records), req.body as Record<string, unknown>));
    });
    ws = await workspace();
  });
  afterAll(async () => {
    server?.close();
    await ws?.remove();
  });

  async function run(sinkOptions: string) {
    await ws.write('promoted.yml', pipeline(sinkOptions));
    const env = sandboxEnv({ url: server.url, credentials: { apiKey: 'key', apiSecret: 'secret' } });
    const r = await runCli(['run', 'promoted.yml'], { cwd: ws.dir, env });
    expect(r.code, r.stderr).toBe(0);
    return jsonLines(r.stderr).filter((l) => l.level === 'warn' && String(l.message).includes('routeCode'));
  }

  it('undeclared: validate and the sink say so, and the sink advises columns:', async () => {
    const warned = await run('');
    expect(warned.map((l) => l.event).sort()).toEqual(['sink.parquet.extra', 'validate.unknown_field']);
    expect(warned.find((l) => l.event === 'sink.parquet.extra')!.message).toMatch(
      /field "routeCode" .* is not in the Parquet schema; kept in the _extra JSON column \(declare it in the sink's columns:/,
    );
  });

  it('declared: no validate warning; a value that does not fit is kept in _extra without advising what was done', async () => {
    const warned = await run(', columns: { routeCode: string }');
    expect(warned.map((l) => l.event)).toEqual(['sink.parquet.extra']);
    expect(warned[0]!.message).toMatch(
      /field "routeCode" has a column, but this value \(object\) does not fit its type/,
    );
    expect(warned[0]!.message).not.toMatch(/declare it in the sink's columns/);
    const { rows } = await duckdbQuery(
      `SELECT count(routeCode) AS typed, count(*) FILTER (WHERE _extra LIKE '%routeCode%') AS aside FROM read_parquet(${sqlString(ws.path('out/products.parquet'))})`,
    );
    expect(rows[0]).toEqual({ typed: 29n, aside: 1n });
  });

  it('declared as json: every shape has the column, nothing is warned about', async () => {
    expect(await run(', columns: { routeCode: json }')).toEqual([]);
  });
});
