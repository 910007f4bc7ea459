// CatalogClient against real node:http servers on port 0: the wire format
// (auth, User-Agent, body), every failure class and its retry decision,
// abort, and that no credential ever shows in an error or an event.
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { AbortedError, ConfigError, RequestValidationError } from '../../src/errors.js';
import { RunEvents } from '../../src/events.js';
import {
  ApiError,
  AuthError,
  CatalogClient,
  type CatalogClientOptions,
  NetworkError,
  RateLimitError,
} from '../../src/client/index.js';
import { type Handler, type TestServer, failure, sendJson, sleep, startTestServer } from './http-test-server.js';

const KEY = 'test-key-4f2a9c';
const SECRET = 's3cr3t-Zq81-never-show-me';
const TOKEN = Buffer.from(`${KEY}:${SECRET}`).toString('base64');

const page = (results: unknown[], total = results.length, no = 0) => ({
  meta: { total, page: { no, offset: no * 250, size: 250 } },
  results,
});
const BODY = {
  filter: { status: 'active' as const },
  sorting: { id: 'ASC' as const },
  page: { no: 3, size: 250 as const },
};

let servers: TestServer[] = [];
let clients: CatalogClient[] = [];
afterEach(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
  clients = [];
});

interface Harness {
  server: TestServer;
  client: CatalogClient;
  events: RunEvents;
  /** Every event emitted, as [name, payload]. */
  seen: [string, unknown][];
}

async function harness(handler: Handler, opts: Partial<CatalogClientOptions> = {}): Promise<Harness> {
  const server = await startTestServer(handler);
  servers.push(server);
  const events = new RunEvents();
  const seen: [string, unknown][] = [];
  for (const name of ['request', 'retry', 'throttle', 'total', 'page', 'info', 'warning'] as const) {
    events.on(name, (payload: unknown) => seen.push([name, payload]));
  }
  const client = new CatalogClient({
    baseUrl: server.url,
    apiKey: KEY,
    apiSecret: SECRET,
    rateLimit: 0,
    events,
    retry: { minTimeout: 5, maxTimeout: 20 },
    random: () => 0.5,
    ...opts,
  });
  clients.push(client);
  return { server, client, events, seen };
}

/** Fails if a credential shows anywhere in the error (message, stack, properties, cause) or any event. */
function expectNoSecrets(h: Harness, err?: unknown): void {
  const texts = [JSON.stringify(h.seen), inspect(h.client, { depth: 6 }), inspect(h.client.stats)];
  if (err !== undefined)
    texts.push(
      String(err),
      (err as Error).stack ?? '',
      inspect(err, { depth: 6, showHidden: true }),
      JSON.stringify(err),
    );
  for (const t of texts) {
    expect(t).not.toContain(SECRET);
    expect(t).not.toContain(KEY);
    expect(t).not.toContain(TOKEN);
  }
}

describe('CatalogClient wire format', () => {
  it('sends Basic auth, the User-Agent, JSON content type and the validated body to the endpoint path', async () => {
    const h = await harness((_req, res) => sendJson(res, 200, page([{ id: 'a' }], 1)));
    const result = await h.client.query('products.query', BODY);
    expect(result.results).toEqual([{ id: 'a' }]);
    const [req] = h.server.requests;
    expect(req!.method).toBe('POST');
    expect(req!.url).toBe('/v4/products/query');
    expect(req!.headers.authorization).toBe(`Basic ${TOKEN}`);
    expect(req!.headers['user-agent']).toMatch(/^catalog-streams\/0\.1\.0 \(node v\d+/);
    expect(req!.headers['content-type']).toBe('application/json');
    expect(req!.body).toEqual(BODY);
    expect(h.seen).toEqual([
      ['request', { endpoint: 'products.query', status: 200, durationMs: expect.any(Number), attempt: 1 }],
    ]);
    expect(h.client.stats).toEqual({ requests: 1, retries: 0, throttles: 0, byStatus: { 200: 1 } });
  });

  it('keeps a path prefix of the base URL and tolerates one ending in /v4', async () => {
    const h = await harness((_req, res) => sendJson(res, 200, page([])));
    for (const suffix of ['/api', '/api/', '/api/v4']) {
      const c = new CatalogClient({ baseUrl: h.server.url + suffix, apiKey: KEY, apiSecret: SECRET, rateLimit: 0 });
      clients.push(c);
      await c.query('brands.query', {});
    }
    expect(h.server.requests.map((r) => r.url)).toEqual([
      '/api/v4/brands/query',
      '/api/v4/brands/query',
      '/api/v4/brands/query',
    ]);
  });

  it('validates the body before sending: nothing goes out', async () => {
    const h = await harness((_req, res) => sendJson(res, 200, page([])));
    const err = await failure(
      h.client.query('products.query', {
        filter: { status: 'deleted' },
        sorting: { id: 'ASC' },
        page: { no: 0, size: 250 },
      } as any),
    );
    expect(err).toBeInstanceOf(RequestValidationError);
    expect(err.message).toContain('filter.status');
    expect(h.server.requests).toHaveLength(0);
  });

  it('refuses a stream endpoint for query() and a base URL holding credentials, without echoing it', async () => {
    const h = await harness((_req, res) => sendJson(res, 200, page([])));
    await expect(h.client.query('products.stream' as any, {})).rejects.toBeInstanceOf(ConfigError);
    const err = await failure(
      Promise.resolve().then(
        () => new CatalogClient({ baseUrl: `https://${KEY}:${SECRET}@example.test`, apiKey: KEY, apiSecret: SECRET }),
      ),
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).not.toContain(SECRET);
  });

  it('close() and destroy() can be called more than once', async () => {
    const h = await harness((_req, res) => sendJson(res, 200, page([])));
    await h.client.query('brands.query', {});
    await Promise.all([h.client.close(), h.client.close()]);
    await h.client.destroy();
    await expect(h.client.query('brands.query', {})).rejects.toBeInstanceOf(AbortedError);
  });

  it('fromEnv names the missing variable', () => {
    expect(() => CatalogClient.fromEnv({ CATALOG_BASE_URL: 'http://127.0.0.1:1', CATALOG_API_KEY: KEY })).toThrow(
      /CATALOG_API_SECRET is not set/,
    );
    expect(() => CatalogClient.fromEnv({ CATALOG_API_KEY: KEY, CATALOG_API_SECRET: SECRET })).toThrow(
      /CATALOG_BASE_URL is not set/,
    );
    const c = CatalogClient.fromEnv(
      { CATALOG_BASE_URL: 'http://127.0.0.1:1/', CATALOG_API_KEY: KEY, CATALOG_API_SECRET: SECRET },
      { rateLimit: 600 },
    );
    clients.push(c);
    expect(c.baseUrl).toBe('http://127.0.0.1:1');
    expect(c.rateLimit).toBe(600);
  });

  it('fromEnv reads CATALOG_RATE_LIMIT and CATALOG_RESULT_WINDOW as catalog-streams run does (overrides win)', () => {
    const env = {
      CATALOG_BASE_URL: 'http://127.0.0.1:1',
      CATALOG_API_KEY: KEY,
      CATALOG_API_SECRET: SECRET,
      CATALOG_RATE_LIMIT: '240',
      CATALOG_RESULT_WINDOW: '500',
    };
    const c = CatalogClient.fromEnv(env);
    clients.push(c);
    expect([c.rateLimit, c.resultWindow]).toEqual([240, 500]);
    const o = CatalogClient.fromEnv(env, { rateLimit: 60 });
    clients.push(o);
    expect(o.rateLimit).toBe(60);
    expect(() => CatalogClient.fromEnv({ ...env, CATALOG_RATE_LIMIT: 'fast' })).toThrow(
      'CATALOG_RATE_LIMIT must be a number of requests per minute (0: no limit), got "fast"',
    );
  });
});

describe('CatalogClient errors that are never retried', () => {
  it('401: exactly one request, an AuthError pointing at the credentials and the environment, no secret anywhere', async () => {
    // A hostile server that echoes the Authorization header and the secret in its message.
    const h = await harness((req, res) =>
      sendJson(res, 401, {
        error: {
          status: 401,
          code: 'authentication.not_authenticated',
          message: `bad credentials ${req.headers.authorization} (${SECRET})`,
        },
      }),
    );
    const err = await failure(h.client.query('products.query', BODY));
    expect(err).toBeInstanceOf(AuthError);
    expect(err.code).toBe('auth.unauthorized');
    expect(err.exitCode).toBe(1);
    expect(err.status).toBe(401);
    expect(err.apiCode).toBe('authentication.not_authenticated');
    expect(err.message).toMatch(/CATALOG_API_KEY and CATALOG_API_SECRET/);
    expect(err.message).toMatch(/production keys do not work on the sandbox/);
    expect(err.apiMessage).toContain('[redacted]');
    expect(h.server.requests).toHaveLength(1);
    expect(h.seen.filter(([n]) => n === 'retry')).toHaveLength(0);
    expectNoSecrets(h, err);
  });

  it('422 surfaces the violations, the API code and a short description of the request', async () => {
    const violations = [
      { path: 'filter.status', message: 'unknown value' },
      { propertyPath: 'page.size', message: 'must be 10, 50, 100 or 250' },
    ];
    const h = await harness((_req, res) =>
      sendJson(res, 422, {
        error: { status: 422, code: 'validation_failed', message: 'The request is invalid', violations },
      }),
    );
    const err = await failure(h.client.query('products.query', BODY));
    expect(err).toBeInstanceOf(ApiError);
    expect(err).not.toBeInstanceOf(AuthError);
    expect(err.code).toBe('api.validation_failed');
    expect(err.violations).toEqual(violations);
    expect(err.request).toBe('filter {status: active} sorting {id: ASC} page 3');
    expect(err.message).toBe(
      'products.query failed with 422 validation_failed: The request is invalid (filter {status: active} sorting {id: ASC} page 3); violations: filter.status: unknown value; page.size: must be 10, 50, 100 or 250',
    );
    expect(h.server.requests).toHaveLength(1);
  });

  it.each([400, 403, 404, 422])('%i is not retried', async (status) => {
    const h = await harness((_req, res) => sendJson(res, status, { error: { status, code: 'x', message: 'no' } }));
    const err = await failure(h.client.query('products.query', BODY));
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(status);
    expect(h.server.requests).toHaveLength(1);
  });

  it('copes with any error body or none: HTML, plain text, empty, no content-length', async () => {
    const bodies = [
      '<html><body><h1>Bad Gateway</h1> nginx</body></html>',
      'plain words',
      '',
      '{"error": "just a string"}',
      '{"message":',
    ];
    let i = 0;
    const h = await harness((_req, res) => {
      res.writeHead(418, { 'content-type': 'text/html' });
      res.end(bodies[i++]);
    });
    const messages: string[] = [];
    for (let k = 0; k < bodies.length; k++) {
      const err = await failure(h.client.query('brands.query', {}));
      expect(err).toBeInstanceOf(ApiError);
      expect(err.status).toBe(418);
      messages.push(err.message);
    }
    expect(messages).toEqual([
      'brands.query failed with 418: Bad Gateway nginx',
      'brands.query failed with 418: plain words',
      'brands.query failed with 418',
      'brands.query failed with 418: just a string',
      'brands.query failed with 418: {"message":',
    ]);
  });

  it('a 200 that is not a page is an ApiError, not retried', async () => {
    const h = await harness((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>login</html>');
    });
    const err = await failure(h.client.query('brands.query', {}));
    expect(err).toBeInstanceOf(ApiError);
    expect(err.code).toBe('api.invalid_response');
    expect(err.message).toMatch(/not valid JSON/);
    expect(h.server.requests).toHaveLength(1);
  });
});

describe('CatalogClient retries', () => {
  it('retries a burst of 503s, then returns the page; each retry is an event', async () => {
    const h = await harness((req, res) =>
      req.n <= 3
        ? sendJson(res, 503, { error: { status: 503, code: 'unavailable', message: 'busy' } })
        : sendJson(res, 200, page([{ id: 'x' }])),
    );
    const result = await h.client.query('products.query', BODY);
    expect(result.results).toEqual([{ id: 'x' }]);
    expect(h.server.requests).toHaveLength(4);
    const retries = h.seen.filter(([n]) => n === 'retry').map(([, p]) => p);
    expect(retries).toEqual(
      [1, 2, 3].map((attempt) => ({
        endpoint: 'products.query',
        attempt,
        reason: '503 unavailable',
        delayMs: expect.any(Number),
      })),
    );
    expect(h.client.stats).toMatchObject({ requests: 4, retries: 3, throttles: 0, byStatus: { 503: 3, 200: 1 } });
    // Every attempt carried the same body.
    expect(new Set(h.server.requests.map((r) => JSON.stringify(r.body))).size).toBe(1);
  });

  it('retries 500, 502 and 504 too', async () => {
    const statuses = [500, 502, 504];
    const h = await harness((req, res) =>
      req.n <= 3 ? sendJson(res, statuses[req.n - 1]!, {}) : sendJson(res, 200, page([])),
    );
    await h.client.query('brands.query', {});
    expect(h.client.stats.byStatus).toEqual({ 500: 1, 502: 1, 504: 1, 200: 1 });
  });

  it('429 burst: exponential backoff with jitter, throttle events, and the limiter slows down', async () => {
    const h = await harness(
      (req, res) =>
        req.n <= 3
          ? sendJson(res, 429, { error: { status: 429, code: 'too_many_requests', message: 'slow down' } })
          : sendJson(res, 200, page([])),
      { rateLimit: 6000, retry: { minTimeout: 40, maxTimeout: 1000 } },
    );
    await h.client.query('products.query', BODY);
    const throttles = h.seen
      .filter(([n]) => n === 'throttle')
      .map(([, p]) => p as { delayMs: number; retryAfter: boolean });
    // random() = 0.5: base/2 + base/4 = 0.75 * 40 * 2^(n-1)
    expect(throttles).toEqual(
      [30, 60, 120].map((delayMs) => ({ endpoint: 'products.query', delayMs, retryAfter: false })),
    );
    const at = h.server.requests.map((r) => r.at);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(28);
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(58);
    expect(at[3]! - at[2]!).toBeGreaterThanOrEqual(118);
    expect(h.client.limiter.slowdown).toBe(8);
    expect(h.client.stats.throttles).toBe(3);
  });

  it('honours Retry-After (seconds) when the server sends one', async () => {
    const h = await harness((req, res) =>
      req.n === 1 ? sendJson(res, 429, {}, { 'retry-after': '1' }) : sendJson(res, 200, page([])),
    );
    await h.client.query('brands.query', {});
    const [a, b] = h.server.requests;
    expect(b!.at - a!.at).toBeGreaterThanOrEqual(990);
    expect(h.seen.find(([n]) => n === 'throttle')![1]).toEqual({
      endpoint: 'brands.query',
      delayMs: 1000,
      retryAfter: true,
    });
  });

  it('gives up on 429 after maxAttempts with a RateLimitError', async () => {
    const h = await harness(
      (_req, res) => sendJson(res, 429, { error: { status: 429, code: 'too_many_requests', message: 'no' } }),
      { retry: { maxAttempts: 3, minTimeout: 1, maxTimeout: 2 } },
    );
    const err = await failure(h.client.query('brands.query', {}));
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err.code).toBe('api.rate_limited');
    expect(err.attempts).toBe(3);
    expect(h.server.requests).toHaveLength(3);
  });

  it('stops when the total wait would pass maxWaitMs', async () => {
    const h = await harness((_req, res) => sendJson(res, 503, {}), {
      retry: { maxAttempts: 100, minTimeout: 40, maxTimeout: 40, maxWaitMs: 100 },
    });
    const err = await failure(h.client.query('brands.query', {}));
    expect(err).toBeInstanceOf(ApiError);
    // 30 ms per wait (0.75 * 40): three waits fit in 100 ms, the fourth would not.
    expect(h.server.requests).toHaveLength(4);
    expect(err.message).toMatch(/after 4 attempts/);
  });

  it('retries connections reset before the response, and a page whose body is cut half-way', async () => {
    const full = JSON.stringify(page([{ id: 'p1' }, { id: 'p2' }], 2));
    const h = await harness((req, res) => {
      if (req.n === 1) return void res.socket?.destroy();
      if (req.n === 2) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(full) });
        res.write(full.slice(0, 20));
        setTimeout(() => res.socket?.destroy(), 10);
        return;
      }
      sendJson(res, 200, JSON.parse(full));
    });
    const result = await h.client.query('products.query', BODY);
    expect(result.results.map((r) => r.id)).toEqual(['p1', 'p2']);
    expect(h.server.requests).toHaveLength(3);
    const reasons = h.seen.filter(([n]) => n === 'retry').map(([, p]) => (p as { reason: string }).reason);
    expect(reasons).toHaveLength(2);
    for (const r of reasons) expect(r).toMatch(/ECONNRESET|UND_ERR_SOCKET|CONTENT_LENGTH/);
  });

  it('a headers timeout is retried, and a NetworkError names the host when every attempt times out', async () => {
    // undici's headers timer has a 1 s resolution: a 100 ms timeout fires within 0.5-1 s.
    const h = await harness(
      async (req, res) => {
        if (req.n !== 2) await sleep(2500);
        if (!res.destroyed) sendJson(res, 200, page([]));
      },
      { timeouts: { headers: 100 }, retry: { maxAttempts: 2, minTimeout: 1, maxTimeout: 1 } },
    );
    await h.client.query('brands.query', {});
    expect(h.seen.find(([n]) => n === 'retry')![1]).toMatchObject({ reason: 'UND_ERR_HEADERS_TIMEOUT' });
    const c = new CatalogClient({
      baseUrl: h.server.url,
      apiKey: KEY,
      apiSecret: SECRET,
      rateLimit: 0,
      timeouts: { headers: 100 },
      retry: { maxAttempts: 1 },
    });
    clients.push(c);
    const err = await failure(c.query('brands.query', {}));
    expect(err).toBeInstanceOf(NetworkError);
    expect(err.code).toBe('network.timeout');
    expect(err.errorCode).toBe('UND_ERR_HEADERS_TIMEOUT');
    expect(err.message).toContain(`127.0.0.1:${h.server.port}`);
    expect(err.attempts).toBe(1);
    expectNoSecrets(h, err);
  });

  it('an unreachable base URL is a NetworkError telling what to check', async () => {
    const h = await harness((_req, res) => sendJson(res, 200, page([])));
    const port = h.server.port;
    await h.server.close();
    servers = [];
    const err = await failure(h.client.query('brands.query', {}));
    expect(err).toBeInstanceOf(NetworkError);
    expect(err.code).toBe('network.unreachable');
    expect(err.message).toContain(`127.0.0.1:${port}`);
    expect(err.message).toContain('check CATALOG_BASE_URL');
    // Refused by a loopback host: nothing listens there, so no retry (retry-policy.ts).
    expect(err.attempts).toBe(1);
    expectNoSecrets(h, err);
  });
});

// No time bounds: each case is set up so that an abort that did not work shows
// as a different outcome (an answer, a request sent), or a wait longer than the
// test's timeout, whatever the machine's load.
describe('CatalogClient abort', () => {
  it('an AbortSignal stops a request in flight before its answer', async () => {
    const ac = new AbortController();
    let answered = false;
    const h = await harness(async (_req, res) => {
      ac.abort(); // the request is at the server: in flight
      await sleep(2_000);
      answered = true;
      if (!res.destroyed) sendJson(res, 200, page([]));
    });
    const err = await failure(h.client.query('brands.query', {}, { signal: ac.signal }));
    expect(err).toBeInstanceOf(AbortedError);
    expect(answered).toBe(false);
  });

  it('stops while waiting for the limiter and during a backoff, and the client signal aborts too', async () => {
    const h = await harness((req, res) => (req.n === 2 ? sendJson(res, 503, {}) : sendJson(res, 200, page([]))), {
      rateLimit: 60,
    });
    await h.client.query('brands.query', {});
    // The next slot is a second away: abort once the request is queued; it must never be sent.
    const ac = new AbortController();
    const queued = expect(h.client.query('brands.query', {}, { signal: ac.signal })).rejects.toBeInstanceOf(
      AbortedError,
    );
    await until(() => h.client.limiter.pending === 1);
    ac.abort();
    expect(h.client.limiter.pending).toBe(0); // it left the queue at once, not when its slot came
    await queued;
    expect(h.server.requests).toHaveLength(1);

    // A 503 with a backoff of minutes ahead (longer than the test may take): abort during the wait.
    const run = new AbortController();
    const c = new CatalogClient({
      baseUrl: h.server.url,
      apiKey: KEY,
      apiSecret: SECRET,
      rateLimit: 0,
      signal: run.signal,
      retry: { minTimeout: 600_000, maxTimeout: 600_000, maxWaitMs: 600_000 },
    });
    clients.push(c);
    const backoff = new Promise((resolve) => c.events.once('retry', resolve));
    const p = failure(c.query('brands.query', {}));
    await backoff;
    run.abort();
    expect(await p).toBeInstanceOf(AbortedError);
    expect(h.server.requests).toHaveLength(2);
  });
});

/** Yields to the event loop until `condition` holds. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setImmediate(r));
}

describe('CatalogClient.stream', () => {
  it('204 gives an empty stream; 200 gives the raw bytes with the stream Accept header', async () => {
    const h = await harness((req, res) => {
      if (req.n === 1) {
        res.writeHead(204);
        return void res.end();
      }
      res.writeHead(200, { 'content-type': 'application/x-json-stream' });
      res.end('{"meta":{"total":1,"index":0},"result":{"id":1}}\n');
    });
    const empty = await h.client.stream('media.stream', { sorting: { id: 'ASC' } });
    expect(await empty.toArray()).toEqual([]);
    const body = await h.client.stream('media.stream', { sorting: { id: 'ASC' } });
    expect(Buffer.concat(await body.toArray()).toString()).toBe('{"meta":{"total":1,"index":0},"result":{"id":1}}\n');
    expect(h.server.requests[1]!.url).toBe('/v4/media/stream');
    expect(h.server.requests[1]!.headers.accept).toContain('application/x-json-stream');
    expect(h.client.stats.byStatus).toEqual({ 204: 1, 200: 1 });
  });

  it('retries a stream request that fails before its body, and types the final error', async () => {
    const h = await harness((req, res) => (req.n === 1 ? sendJson(res, 502, {}) : sendJson(res, 401, {})));
    const err = await failure(
      h.client.stream('products.stream', { filter: { status: 'active' }, sorting: { id: 'ASC' } }),
    );
    expect(err).toBeInstanceOf(AuthError);
    expect(h.server.requests).toHaveLength(2);
  });
});
