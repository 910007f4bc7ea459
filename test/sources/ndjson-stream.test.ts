// The NDJSON reader against a node:http server that writes bodies in random
// chunk sizes (1-64 bytes, so lines and UTF-8 characters split anywhere):
// order, resume after a cut at a random byte, and every contract violation.
import { afterEach, describe, expect, it } from 'vitest';
import { CatalogClient, StreamProtocolError } from '../../src/client/index.js';
import { AbortedError } from '../../src/errors.js';
import { RunEvents } from '../../src/events.js';
import { mediaStream, originOf, productsStream } from '../../src/sources/index.js';
import { type TestServer, failure, rng, startTestServer, writeInRandomChunks } from '../client/http-test-server.js';

let server: TestServer | undefined;
let client: CatalogClient | undefined;
afterEach(async () => {
  await client?.close();
  await server?.close();
  server = undefined;
  client = undefined;
});

type Lines = (n: number) => string[];

/** `count` media lines; the record text has multi-byte characters so chunks split them too. */
function mediaLines(count: number, total = count): string[] {
  return Array.from({ length: count }, (_, index) =>
    JSON.stringify({ meta: { total, index }, result: { id: index + 1, caption: `Crème ${index} — ∑ 🌿` } }),
  );
}

/** Serves `lines(n)` for request n, in random chunks, cut after `cut(n)` bytes when given. */
async function ndjsonServer(
  lines: Lines,
  opts: { cut?: (n: number) => number | undefined; status?: (n: number) => number; seed?: number } = {},
) {
  const random = rng(opts.seed ?? 42);
  server = await startTestServer(async (req, res) => {
    const status = opts.status?.(req.n) ?? 200;
    res.writeHead(status, { 'content-type': 'application/x-json-stream' });
    if (status === 204) return void res.end();
    const text = lines(req.n)
      .map((l) => `${l}\n`)
      .join('');
    await writeInRandomChunks(res, text, random, { cutAfter: opts.cut?.(req.n) });
  });
  const events = new RunEvents();
  client = new CatalogClient({
    baseUrl: server.url,
    apiKey: 'k',
    apiSecret: 'secret',
    rateLimit: 0,
    events,
    retry: { minTimeout: 1, maxTimeout: 2 },
  });
  return events;
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** One stream's lines for these ids, in this order (indexes and total its own). */
function idLines(ids: unknown[], meta: (id: any) => object = () => ({})): string[] {
  return ids.map((id, index) =>
    JSON.stringify({ meta: { total: ids.length, index }, result: { id, caption: `m ${String(id)}`, meta: meta(id) } }),
  );
}

/** Bytes of the first `count` lines: a cut there delivers exactly those. */
const bytesOf = (lines: string[], count: number) => Buffer.byteLength(lines.slice(0, count).join('\n') + '\n');

describe('NDJSON stream source', () => {
  it('reads every line once and in order whatever the chunk boundaries', async () => {
    await ndjsonServer(() => mediaLines(700));
    const src = mediaStream(client!, {});
    const metas: unknown[] = [];
    src.on('meta', (m) => metas.push(m));
    const records = await src.toArray();
    expect(records.map((r) => r.id)).toEqual(range(1, 700));
    expect(records[3].caption).toBe('Crème 3 — ∑ 🌿');
    expect(metas).toEqual([{ total: 700 }]);
    expect(originOf(records[5])).toEqual({ endpoint: 'media.stream', index: 5 });
    expect(server!.requests[0]!.body).toEqual({ sorting: { id: 'ASC' } });
    expect(server!.requests[0]!.url).toBe('/v4/media/stream');
  });

  it('204 is an empty stream with total 0', async () => {
    await ndjsonServer(() => [], { status: () => 204 });
    const src = productsStream(client!, { filter: { status: 'active' } });
    expect(await src.toArray()).toEqual([]);
    expect(src.total).toBe(0);
  });

  it.each([1, 2, 3, 4, 5])(
    'a stream cut at a random byte (seed %i) is resumed: each record once, in order',
    async (seed) => {
      const random = rng(seed * 101);
      const full = mediaLines(400);
      const bytes = Buffer.byteLength(full.map((l) => `${l}\n`).join(''));
      // Two cuts at random places, then a whole stream.
      const cuts = [Math.floor(random() * bytes), Math.floor(random() * bytes)];
      const events = await ndjsonServer(() => full, { cut: (n) => cuts[n - 1], seed });
      const retries: unknown[] = [];
      events.on('retry', (e) => retries.push(e));
      const src = mediaStream(client!, {});
      const records = await src.toArray();
      expect(records.map((r) => r.id)).toEqual(range(1, 400));
      expect(src.resumes).toBe(2);
      expect(retries).toHaveLength(2);
      expect(server!.requests).toHaveLength(3);
      expect(new Set(server!.requests.map((r) => JSON.stringify(r.body))).size).toBe(1);
    },
  );

  it('gives up after maxResumes cuts in a row without progress', async () => {
    await ndjsonServer(() => mediaLines(50), { cut: () => 30 });
    const src = mediaStream(client!, { maxResumes: 2 });
    const err = await failure(src.toArray());
    expect(err).toBeInstanceOf(StreamProtocolError);
    expect(err.code).toBe('stream.resume_exhausted');
    expect(err.message).toMatch(/next index 0\), 3 times in a row without progress/);
    expect(src.resumes).toBe(2);
    expect(server!.requests).toHaveLength(3);
  });

  it('a malformed line fails with its index', async () => {
    await ndjsonServer(() => {
      const l = mediaLines(10);
      l[6] = l[6]!.slice(0, 20);
      return l;
    });
    const received: number[] = [];
    const src = mediaStream(client!, {});
    src.on('data', (r) => received.push(r.id));
    const err = await failure(new Promise((resolve, reject) => src.on('error', reject).on('end', resolve)));
    expect(err).toBeInstanceOf(StreamProtocolError);
    expect(err.code).toBe('stream.malformed_line');
    expect(err.index).toBe(6);
    expect(err.message).toMatch(/media.stream: the line at index 6 is not valid JSON/);
    expect(received).toEqual(range(1, 6));
  });

  it('an error line is a typed error carrying what the service said', async () => {
    await ndjsonServer(() => [
      ...mediaLines(3, 10),
      JSON.stringify({ error: { status: 500, code: 'internal_error', message: 'the stream failed' } }),
    ]);
    const err = await failure(mediaStream(client!, {}).toArray());
    expect(err).toBeInstanceOf(StreamProtocolError);
    expect(err.code).toBe('stream.error_line');
    expect(err.index).toBe(3);
    expect(err.apiError).toEqual({ status: 500, apiCode: 'internal_error', apiMessage: 'the stream failed' });
    expect(err.message).toContain('500 internal_error the stream failed');
  });

  it('fewer lines than total on every request is an error naming the next index (after resuming)', async () => {
    await ndjsonServer(() => mediaLines(8, 10));
    const err = await failure(mediaStream(client!, { maxResumes: 1 }).toArray());
    expect(err.code).toBe('stream.short');
    expect(err.message).toMatch(/ended after 8 of 10 lines \(truncated\) \(next index 8\)/);
  });

  it('an index gap, a changing total, a 200 without lines and an over-long line are errors', async () => {
    const cases: [string, Lines, string][] = [
      ['gap', () => mediaLines(10).filter((_, i) => i !== 4), 'stream.index_gap'],
      [
        'total',
        () => mediaLines(10).map((l, i) => (i === 5 ? l.replace('"total":10', '"total":11') : l)),
        'stream.total_changed',
      ],
      ['empty', () => [], 'stream.empty'],
      ['shape', () => ['{"meta":{"total":1},"result":{}}'], 'stream.malformed_line'],
      [
        'long',
        () => [
          ...mediaLines(2, 3),
          JSON.stringify({ meta: { total: 3, index: 2 }, result: { id: 3, blob: 'x'.repeat(5000) } }),
        ],
        'stream.line_too_long',
      ],
    ];
    for (const [name, lines, code] of cases) {
      await ndjsonServer(lines);
      const err = await failure(mediaStream(client!, { maxLineLength: 1000 }).toArray());
      expect([name, err.code]).toEqual([name, code]);
      await client!.close();
      await server!.close();
    }
    client = undefined;
    server = undefined;
  });

  it('a resumed request has its own total: records that arrived or left during the cut change it', async () => {
    // Cut after 5 lines; meanwhile id 2 (delivered) left and id 21 arrived. The resume skips by id,
    // not by position (skipping 5 positions would lose id 7), and checks the new request against
    // its own total of 20.
    const first = idLines(range(1, 20));
    const second = idLines([1, ...range(3, 21)]);
    await ndjsonServer((n) => (n === 1 ? first : second), { cut: (n) => (n === 1 ? bytesOf(first, 5) : undefined) });
    const src = mediaStream(client!, {});
    const metas: unknown[] = [];
    src.on('meta', (m) => metas.push(m));
    const records = await src.toArray();
    expect(records.map((r) => r.id)).toEqual(range(1, 21));
    expect(src.resumes).toBe(1);
    // 5 delivered + 20 in the resumed request - 4 of them delivered before (id 2 left): 21.
    expect(metas).toEqual([{ total: 20 }, { total: 21 }]);
    expect(src.total).toBe(21);
  });

  it('the last delivered record gone during the cut: resumed after the one before it', async () => {
    const first = idLines([10, 20, 30, 40, 50]);
    const second = idLines([10, 20, 40, 50]);
    await ndjsonServer((n) => (n === 1 ? first : second), { cut: (n) => (n === 1 ? bytesOf(first, 3) : undefined) });
    const src = mediaStream(client!, {});
    expect((await src.toArray()).map((r) => r.id)).toEqual([10, 20, 30, 40, 50]);
    expect(src.total).toBe(5);
  });

  it('sorted by id DESC: skips what sorts before the last delivered id in descending order', async () => {
    const first = idLines([50, 40, 30, 20, 10]);
    const second = idLines([60, 50, 40, 20, 10]); // 30 left, 60 arrived before the cut point
    await ndjsonServer((n) => (n === 1 ? first : second), { cut: (n) => (n === 1 ? bytesOf(first, 3) : undefined) });
    const records = await mediaStream(client!, { sorting: { id: 'DESC' } }).toArray();
    expect(records.map((r) => r.id)).toEqual([50, 40, 30, 20, 10]);
  });

  // Issue 35, item 5: a stream out of order is no longer read whole when it is not cut.
  it('a stream whose ids contradict the comparison fails with stream.out_of_order before the record out of order', async () => {
    // Digit strings in numeric order: "10" after "9" is not UTF-16 order.
    const lines = idLines(range(1, 20).map(String));
    await ndjsonServer(() => lines);
    const got: string[] = [];
    const src = mediaStream(client!, {});
    src.on('data', (r) => got.push(r.id));
    const err = await failure(new Promise((resolve, reject) => src.on('error', reject).on('end', resolve)));
    expect(err).toBeInstanceOf(StreamProtocolError);
    expect(err.code).toBe('stream.out_of_order');
    expect(err.index).toBe(9);
    expect(err.message).toContain('id "10" at index 9 came after "9"');
    expect(err.message).toContain('sort by createdAt');
    expect(got).toEqual(range(1, 9).map(String));
    expect(server!.requests).toHaveLength(1);
  });

  it('a media item listed as a photo and as a frontal is two records; the same item twice is stream.repeated_id', async () => {
    const item = (id: number, type: string) => ({ id, type, caption: `m ${id}` });
    const asLines = (items: object[]) =>
      items.map((result, index) => JSON.stringify({ meta: { total: items.length, index }, result }));
    const good = asLines([item(1, 'photo'), item(2, 'photo'), item(2, 'frontal'), item(3, 'photo')]);
    await ndjsonServer(() => good);
    const records = await mediaStream(client!, {}).toArray();
    expect(records.map((r) => `${r.id}/${r.type}`)).toEqual(['1/photo', '2/photo', '2/frontal', '3/photo']);
    await client!.close();
    await server!.close();

    const bad = asLines([item(1, 'photo'), item(2, 'frontal'), item(2, 'photo'), item(2, 'frontal'), item(4, 'photo')]);
    await ndjsonServer(() => bad);
    const err = await failure(mediaStream(client!, {}).toArray());
    expect(err.code).toBe('stream.repeated_id');
    expect(err.index).toBe(3);
    expect(err.message).toContain('sent media item 2 (2/frontal) twice, at index 1 and again at index 3');
  });

  it('a resumed request that contradicts the comparison fails at once', async () => {
    const first = idLines(range(1, 20).map(String));
    await ndjsonServer(() => first, { cut: (n) => (n === 1 ? bytesOf(first, 5) : undefined) });
    const err = await failure(mediaStream(client!, {}).toArray());
    expect(err.code).toBe('stream.resume_not_exact');
    expect(err.message).toMatch(/the resumed stream is not in the order .*id "10" at index 9 came after "9"/);
    expect(server!.requests).toHaveLength(2);
  });

  it('skipping cannot be checked (the last delivered ids left, an unknown id in their place): resume_not_exact', async () => {
    const first = idLines([10, 20, 30, 40, 50]);
    const second = idLines([10, 20, 25, 40, 50]); // 30 left; 25 arrived where it stood
    await ndjsonServer((n) => (n === 1 ? first : second), { cut: (n) => (n === 1 ? bytesOf(first, 3) : undefined) });
    const err = await failure(mediaStream(client!, {}).toArray());
    expect(err.code).toBe('stream.resume_not_exact');
    expect(err.message).toContain('skipped id 25 as coming before the last delivered id 30');
  });

  it('sorted by createdAt, a record without createdAt: a cut after it fails with resume_not_exact', async () => {
    const lines = idLines(range(1, 10), (id) => (id === 4 ? {} : { createdAt: 1000 + id }));
    await ndjsonServer(() => lines, { cut: (n) => (n === 1 ? bytesOf(lines, 6) : undefined) });
    const err = await failure(mediaStream(client!, { sorting: { createdAt: 'ASC' } }).toArray());
    expect(err.code).toBe('stream.resume_not_exact');
    expect(err.message).toContain('without an integer meta.createdAt at index 3');
    expect(err.message).toContain('sort by id');
  });

  it('aborting the run mid-stream stops it before the body ends and closes the connection', async () => {
    // The body takes seconds to write (100,000 lines, a pause every 50): a source that ignored the
    // abort would see it end; one that stopped reading but kept the connection would never close it.
    let bodyEnded = false;
    let connectionClosed!: () => void;
    const closed = new Promise<void>((resolve) => (connectionClosed = resolve));
    server = await startTestServer(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-json-stream' });
      res.on('close', () => connectionClosed());
      for (let i = 0; !res.destroyed && i < 100_000; i++) {
        const line = { meta: { total: 100_000, index: i }, result: { id: i + 1, caption: `m ${i}` } };
        if (!res.write(`${JSON.stringify(line)}\n`)) await new Promise((r) => res.once('drain', r));
        if (i % 50 === 0) await new Promise((r) => setTimeout(r, 5));
      }
      bodyEnded = !res.destroyed;
    });
    client = new CatalogClient({ baseUrl: server.url, apiKey: 'k', apiSecret: 'secret', rateLimit: 0 });
    const run = new AbortController();
    const src = mediaStream(client, {}, { signal: run.signal });
    let got = 0;
    src.on('data', () => {
      if (++got === 120) run.abort();
    });
    const err = await new Promise((resolve) => src.on('error', resolve).on('end', () => resolve(undefined)));
    expect(err).toBeInstanceOf(AbortedError);
    expect(bodyEnded).toBe(false);
    await closed;
    await client.close();
  });

  it('pauses the body when the consumer is slow (backpressure), without losing lines', async () => {
    await ndjsonServer(() => mediaLines(3000));
    const src = mediaStream(client!, {});
    const got: number[] = [];
    for await (const r of src) {
      got.push(r.id);
      if (got.length === 100) await new Promise((r) => setTimeout(r, 50));
    }
    expect(got).toEqual(range(1, 3000));
  });
});
