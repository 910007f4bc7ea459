// Issue 35, item 5: a products.stream that repeats an id. Sorted by id, the server sends record
// 1000 twice (the second at index 1001, in place of record 1001): the indexes run on and the count
// matches `meta.total`, so before, the run wrote record 1000 twice, lost record 1001 and exited 0
// without a warning. Now a resumable stream (sorted by id or createdAt) that repeats a record or
// sends one out of order fails before publishing, as do an index gap and a count that does not
// match `meta.total` (those already did). The server is written here from the spec alone (§4.3:
// NDJSON lines `{meta: {total, index}, result}`, 204 for no results), on node:http, not the
// project's sandbox, and the runs go through the CLI's `main()` as a user's would.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runMain } from '../cli/cli-process.js';

const COUNT = 1200;
/** Product `n` (0-based): ids sort by code unit as they do by number; 40 products per createdAt second. */
const product = (n: number) => ({
  id: `P${String(n).padStart(7, '0')}`,
  status: 'active',
  meta: { createdAt: 1_700_000_000 + Math.floor(n / 40), updatedAt: 1_700_000_000 },
});

interface StreamServer {
  url: string;
  /** The bodies of the requests to /v4/products/stream. */
  requests: unknown[];
  close(): Promise<void>;
}

/** Serves `lines()` (each a `{meta, result}` object, written as one NDJSON line) on POST /v4/products/stream. */
async function streamServer(lines: () => object[]): Promise<StreamServer> {
  const requests: unknown[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.startsWith('/v4/products/stream')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        return void res.end('{"error":{"status":404,"code":"not_found","message":"no such endpoint"}}');
      }
      requests.push(JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null'));
      const body = lines();
      if (body.length === 0) return void res.writeHead(204).end();
      res.writeHead(200, { 'content-type': 'application/x-json-stream' });
      res.end(body.map((l) => `${JSON.stringify(l)}\n`).join(''));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The lines of a stream delivering these products, indexes 0.. and the total as given. */
const linesOf = (products: object[], total = products.length) =>
  products.map((result, index) => ({ meta: { total, index }, result }));

/** Products 0..COUNT-1 in the sorting's order, with `change` applied to the list. */
function catalog(order: 'ASC' | 'DESC', change: (list: object[]) => object[] = (l) => l): object[] {
  const list = Array.from({ length: COUNT }, (_, n) => product(n));
  return change(order === 'ASC' ? list : list.reverse());
}

let server: StreamServer | undefined;
let dir: string | undefined;
afterEach(async () => {
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  server = undefined;
  dir = undefined;
});

/** Runs a products.stream -> JSONL pipeline against the server; the exit code, the error event and the files left. */
async function run(lines: () => object[], sorting: string, extra = '') {
  server = await streamServer(lines);
  dir = await mkdtemp(join(tmpdir(), 'stream-repeats-'));
  const file = join(dir, 'stream.yml');
  await writeFile(
    file,
    `name: stream\nsource:\n  type: products.stream\n  filter: { status: active }\n  sorting: ${sorting}\n${extra}sinks:\n  - { type: jsonl, path: out/products.jsonl }\n`,
  );
  const result = await runMain(['run', file], {
    CATALOG_BASE_URL: server.url,
    CATALOG_API_KEY: 'k-0000000000',
    CATALOG_API_SECRET: 's-0000000000',
    CATALOG_RATE_LIMIT: '0',
  });
  const events = result.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, any>);
  const files = await readdir(join(dir, 'out')).catch(() => [] as string[]);
  return { code: result.code, stderr: result.stderr, events, files };
}

/** The run failed with `code`, naming the index, and published nothing. */
function expectFailed(r: Awaited<ReturnType<typeof run>>, code: string, index: number, says: RegExp) {
  expect(r.code, r.stderr).toBe(1);
  const error = r.events.find((e) => e.code === code);
  expect(error, r.stderr).toBeDefined();
  expect(String(error!.message)).toMatch(says);
  expect(String(error!.message)).toContain(`index ${index}`);
  expect(r.files).toEqual([]);
}

describe('a products.stream that repeats an id, or breaks its order, fails the run (issue 35, item 5)', () => {
  it('sorted by id: record 1000 sent again at index 1001, in place of 1001: stream.repeated_id, exit 1, nothing written', async () => {
    const lines = linesOf(catalog('ASC', (l) => l.map((p, i) => (i === 1001 ? l[1000]! : p))));
    expect(lines).toHaveLength(COUNT);
    const r = await run(() => lines, '{ id: ASC }');
    expectFailed(r, 'stream.repeated_id', 1001, /sent id "P0001000" twice, at index 1000 and again at index 1001/);
    expect(server!.requests).toHaveLength(1);
  });

  it('sorted by id: the duplicate at the very end (the last line repeats the one before): stream.repeated_id', async () => {
    const lines = linesOf(catalog('ASC', (l) => l.map((p, i) => (i === COUNT - 1 ? l[COUNT - 2]! : p))));
    const r = await run(() => lines, '{ id: ASC }');
    expectFailed(r, 'stream.repeated_id', COUNT - 1, /sent id "P0001198" twice/);
  });

  it('sorted by id: a duplicate line past the end (index 1200 of a total of 1200): stream.index_gap', async () => {
    const list = catalog('ASC');
    const lines = [...linesOf(list), { meta: { total: COUNT, index: COUNT }, result: list[COUNT - 1] }];
    const r = await run(() => lines, '{ id: ASC }');
    expectFailed(r, 'stream.index_gap', COUNT, /expected meta\.index 1200/);
  });

  it('sorted by id DESC: record 500 sent again far from its place (index 1001): stream.out_of_order', async () => {
    const lines = linesOf(catalog('DESC', (l) => l.map((p, i) => (i === 1001 ? l[699]! : p))));
    const r = await run(() => lines, '{ id: DESC }');
    expectFailed(r, 'stream.out_of_order', 1001, /id "P0000500" at index 1001 came after "P0000199"/);
  });

  it('sorted by id: two records swapped (nothing repeated, nothing missing): stream.out_of_order', async () => {
    const lines = linesOf(catalog('ASC', (l) => l.map((p, i) => (i === 600 ? l[601]! : i === 601 ? l[600]! : p))));
    const r = await run(() => lines, '{ id: ASC }');
    expectFailed(r, 'stream.out_of_order', 601, /id "P0000600" at index 601 came after "P0000601"/);
  });

  it('sorted by createdAt: a record repeated among the 40 of its second, in place of another: stream.repeated_id', async () => {
    // Ties in any order (the spec promises none): the second's records reversed, one repeated.
    const lines = linesOf(
      catalog('ASC', (l) => {
        const out = [...l.slice(0, 1000), ...l.slice(1000, 1040).reverse(), ...l.slice(1040)];
        out[1030] = out[1010]!;
        return out;
      }),
    );
    const r = await run(() => lines, '{ createdAt: ASC }');
    expectFailed(r, 'stream.repeated_id', 1030, /sent id "P0001029" twice, at index 1010 and again at index 1030/);
  });

  it('sorted by createdAt DESC: an older second before a newer one: stream.out_of_order', async () => {
    const lines = linesOf(catalog('DESC', (l) => l.map((p, i) => (i === 300 ? l[900]! : p))));
    const r = await run(() => lines, '{ createdAt: DESC }');
    expectFailed(
      r,
      'stream.out_of_order',
      301,
      /createdAt DESC order: createdAt 1700000022 at index 301 after 1700000007/,
    );
  });

  it('an index gap (index 1001 never sent): stream.index_gap', async () => {
    const lines = linesOf(catalog('ASC')).filter((l) => l.meta.index !== 1001);
    const r = await run(() => lines, '{ id: ASC }');
    expectFailed(r, 'stream.index_gap', 1001, /expected meta\.index 1001 but got 1002/);
  });

  it('fewer lines than meta.total on every request: stream.short', async () => {
    const lines = linesOf(catalog('ASC').slice(0, COUNT - 1), COUNT);
    const r = await run(() => lines, '{ id: ASC }', '  maxResumes: 0\n');
    expectFailed(r, 'stream.short', COUNT - 1, /ended after 1199 of 1200 lines/);
  });

  it('the same catalog, sent right: exit 0, every record exactly once', async () => {
    const lines = linesOf(catalog('ASC'));
    const r = await run(() => lines, '{ id: ASC }');
    expect(r.code, r.stderr).toBe(0);
    expect(r.files).toEqual(['products.jsonl']);
    const ids = (await readFile(join(dir!, 'out/products.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { id: string }).id);
    expect(ids).toEqual(catalog('ASC').map((p) => (p as { id: string }).id));
  });
});
