// Issue 24, second look at the live service: bad input from the service never blocks or corrupts a
// run. Each case against a loopback server sending raw bodies (in random chunk sizes where a body
// is streamed); timeouts with tiny configured values, never asserting how long anything took.
import { afterEach, describe, expect, it } from 'vitest';
import {
  ApiError,
  CatalogClient,
  type CatalogClientOptions,
  NetworkError,
  ResponseTooLargeError,
  StreamProtocolError,
} from '../../src/client/index.js';
import { RunEvents } from '../../src/events.js';
import { brandsQuery, productsStream } from '../../src/sources/index.js';
import {
  failure,
  rng,
  sendJson,
  startTestServer,
  type Handler,
  type TestServer,
  writeInRandomChunks,
} from './http-test-server.js';

let server: TestServer | undefined;
let client: CatalogClient | undefined;
afterEach(async () => {
  await client?.destroy();
  await server?.close();
  server = undefined;
  client = undefined;
});

async function serve(handler: Handler, options: Partial<CatalogClientOptions> = {}) {
  server = await startTestServer(handler);
  const events = new RunEvents();
  client = new CatalogClient({
    baseUrl: server.url,
    apiKey: 'k',
    apiSecret: 'secret',
    rateLimit: 0,
    events,
    retry: { minTimeout: 1, maxTimeout: 2 },
    ...options,
  });
  return { events, client };
}

function warnings(events: RunEvents): Array<{ code: string; message: string }> {
  const out: Array<{ code: string; message: string }> = [];
  events.on('warning', (w) => out.push(w));
  return out;
}

const streamLines = (results: string[]) =>
  results.map((r, index) => `{"meta":{"total":${results.length},"index":${index}},"result":${r}}\n`).join('');

const product = (id: string, extra = '') =>
  `{"id":"${id}","status":"active","name":{"en":"P ${id}"},"meta":{"createdAt":1700000000,"updatedAt":1700000000}${extra}}`;

describe('integers past 2^53 are kept exact', () => {
  const HUGE =
    ',"snomedMpp":32000000000000001,"artgId":9007199254740993,"neg":-9007199254740993,"safe":9007199254740991,' +
    '"float":12345678901234567.5,"exp":12345678901234567e2,"text":"id 32000000000000001 in a string","list":[32000000000000001]';

  it('in a page (queryLazy and query), whatever the chunk boundaries', async () => {
    const random = rng(7);
    const body = `{"meta":{"total":2},"results":[${product('A', HUGE)},${product('B')}]}`;
    await serve(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      await writeInRandomChunks(res, body, random, { maxChunk: 16 });
    });
    const lazy = await client!.queryLazy('brands.query', {});
    const whole = await client!.query('brands.query', {});
    for (const record of [lazy.record(0), whole.results[0]!]) {
      expect(record).toMatchObject({
        snomedMpp: '32000000000000001',
        artgId: '9007199254740993',
        neg: '-9007199254740993',
        safe: 9007199254740991,
        float: 12345678901234568,
        exp: 1.2345678901234568e18,
        text: 'id 32000000000000001 in a string',
        list: ['32000000000000001'],
      });
    }
    lazy.release();
  });

  it('in a stream line', async () => {
    const random = rng(8);
    await serve(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-json-stream' });
      await writeInRandomChunks(res, streamLines([product('A', HUGE), product('B')]), random, { maxChunk: 7 });
    });
    const records = await productsStream(client!, { filter: { status: 'active' } }).toArray();
    expect(records.map((r) => [r.id, r.snomedMpp, r.artgId])).toEqual([
      ['A', '32000000000000001', '9007199254740993'],
      ['B', undefined, undefined],
    ]);
  });
});

describe('invalid UTF-8 is counted and named, not replaced silently', () => {
  // "Cr\xffme": 0xff is never valid in UTF-8; "é" (2 bytes) beside it is valid, and random chunks split it
  const withBadByte = (text: string) => {
    const [before, after] = text.split('BAD');
    return Buffer.concat([Buffer.from(before!), Buffer.from([0xff]), Buffer.from(after!)]);
  };

  it('in a stream: a warning names the record id and field, and the run goes on', async () => {
    const random = rng(9);
    const body = withBadByte(
      streamLines([product('A', ',"caption":"Crème"'), product('B', ',"caption":"CrBADme"'), product('C')]),
    );
    const { events } = await serve(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-json-stream' });
      await writeInRandomChunks(res, body, random, { maxChunk: 5 });
    });
    const said = warnings(events);
    const records = await productsStream(client!, { filter: { status: 'active' } }).toArray();
    expect(records.map((r) => r.id)).toEqual(['A', 'B', 'C']);
    expect(records[0]!.caption).toBe('Crème');
    expect(records[1]!.caption).toBe('Cr\uFFFDme');
    expect(said.filter((w) => w.code === 'source.invalid_utf8').map((w) => w.message)).toEqual([
      expect.stringMatching(
        /^products\.stream: record "B" \(index 1\) had bytes that are not valid UTF-8 in field caption;/,
      ),
      "products.stream: 1 record(s) had bytes that are not valid UTF-8, replaced by U+FFFD (the service's data or encoding is broken there)",
    ]);
  });

  it('a valid U+FFFD sent by the service is not reported', async () => {
    await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-json-stream' });
      res.end(streamLines([product('A', ',"caption":"sent as \uFFFD"')]));
    });
    const { events } = { events: client!.events };
    const said = warnings(events);
    await productsStream(client!, { filter: { status: 'active' } }).toArray();
    expect(said).toEqual([]);
  });

  it('in a page: the record and its field are named', async () => {
    const body = withBadByte(
      `{"meta":{"total":2},"results":[{"id":1,"name":{"fr":"Crème"}},{"id":2,"name":{"fr":"CrBADme"}}]}`,
    );
    const { events } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
    const said = warnings(events);
    const records = await brandsQuery(client!, {}).toArray();
    expect(records.map((r) => r.id)).toEqual([1, 2]);
    expect(said.map((w) => w.message)).toEqual([
      expect.stringMatching(
        /^brands\.query: record 2 \(page 0, index 1\) had bytes that are not valid UTF-8 in field name\.fr;/,
      ),
      expect.stringContaining('brands.query: 1 record(s) had bytes that are not valid UTF-8'),
    ]);
  });
});

describe('an HTML page with status 200 on a stream', () => {
  it.each([
    ['text/html', 'text/html; charset=utf-8'],
    ['a JSON content type', 'application/x-json-stream'],
    ['no content type', undefined],
  ])('with %s: "not the catalog API", asked once, not resumed as a truncated stream', async (_what, type) => {
    const random = rng(10);
    await serve(async (_req, res) => {
      res.writeHead(200, type ? { 'content-type': type } : {});
      await writeInRandomChunks(res, '<!DOCTYPE html>\n<html><body>Please log in</body></html>', random);
    });
    const err = await failure(productsStream(client!, { filter: { status: 'active' } }).toArray());
    expect(err).toBeInstanceOf(ApiError);
    expect(err.code).toBe('api.invalid_response');
    expect(err.message).toMatch(
      /^products\.stream answered 200 but the response is an HTML page, not NDJSON \(it starts with "<!DOCTYPE html>.*is CATALOG_BASE_URL the catalog API\?$/,
    );
    expect(server!.requests).toHaveLength(1);
  });
});

describe('a page body has a size bound', () => {
  it('past maxPageBytes the request fails naming the endpoint and the bound, and is not asked again', async () => {
    const big = `{"meta":{"total":1},"results":[{"id":1,"name":{"en":"${'x'.repeat(5000)}"}}]}`;
    await serve(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(big);
      },
      { maxPageBytes: 1024 },
    );
    const err = await failure(client!.queryLazy('brands.query', {}));
    expect(err).toBeInstanceOf(ResponseTooLargeError);
    expect(err.code).toBe('api.response_too_large');
    expect(err.message).toMatch(
      /^brands\.query at 127\.0\.0\.1:\d+ answered with a body larger than 1 KiB \(connection\.maxPageBytes\)/,
    );
    expect(server!.requests).toHaveLength(1);
    // the same bound on query() and find()
    expect((await failure(client!.query('brands.query', {}))).code).toBe('api.response_too_large');
    expect((await failure(client!.find('products.find', 'M1'))).code).toBe('api.response_too_large');
  });

  it('a page under the bound is read whole', async () => {
    await serve((_req, res) => sendJson(res, 200, { meta: { total: 1 }, results: [{ id: 1 }] }), {
      maxPageBytes: 1024,
    });
    expect((await client!.query('brands.query', {})).results).toEqual([{ id: 1 }]);
  });
});

describe('long bodies: an idle gap or a trickle fails, naming the endpoint and the limit', () => {
  /** Sends the headers and the start of a body, then nothing (the connection stays open). */
  const stalls: Handler = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"meta":{"total":1},');
  };
  /** Sends a byte at a time, as long as the client listens. */
  const trickles: Handler = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-json-stream' });
    const timer = setInterval(() => res.write(' '), 2);
    res.on('close', () => clearInterval(timer));
  };

  it('idle page body: retried, then a network.timeout naming timeouts.body', async () => {
    await serve(stalls, { timeouts: { body: 30 }, retry: { maxAttempts: 2, minTimeout: 1, maxTimeout: 2 } });
    const err = await failure(client!.query('brands.query', {}));
    expect(err).toBeInstanceOf(NetworkError);
    expect(err.code).toBe('network.timeout');
    expect(err.message).toMatch(
      /^the catalog API at 127\.0\.0\.1:\d+ timed out \(no byte of the response body came for 30 ms \(connection\.timeouts\.body\)\) on brands\.query after 2 attempts/,
    );
    expect(server!.requests).toHaveLength(2);
  });

  it('trickling stream: stopped and resumed, then failing with the rate it came at and the minimum', async () => {
    await serve(trickles, { timeouts: { body: 60_000, minBodyRate: 1_000_000, rateWindow: 30 } });
    const err = await failure(productsStream(client!, { filter: { status: 'active' }, maxResumes: 1 }).toArray());
    expect(err).toBeInstanceOf(StreamProtocolError);
    expect(err.code).toBe('stream.resume_exhausted');
    expect(err.message).toMatch(
      /^products\.stream: the stream was stopped: the response body came at \d+ bytes\/s over \d+ ms, below 1000000 bytes\/s \(connection\.timeouts\.minBodyRate over timeouts\.rateWindow\) \(next index 0\), 2 times in a row without progress/,
    );
    expect(server!.requests).toHaveLength(2);
  });

  it('idle stream: resumed, then failing with the idle limit', async () => {
    await serve(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/x-json-stream' });
        res.write(streamLines([product('A')]).slice(0, 20));
      },
      { timeouts: { body: 25 } },
    );
    const err = await failure(productsStream(client!, { filter: { status: 'active' }, maxResumes: 0 }).toArray());
    expect(err.message).toContain(
      'products.stream: the stream was stopped: no byte of the response body came for 25 ms (connection.timeouts.body)',
    );
  });
});
