// Pacing measured where it matters, at the server: request arrival times of a
// scaled-down budget (600/min), with a server that enforces the same budget as
// a rolling window (scaled to 100 per 10 s) and answers 429 past it. The rate
// must be within 5 % of the limit with no 429, also when each response takes
// 1.5 intervals (concurrency keeps the budget full). The window is scaled down
// but scheduling jitter is not: the limiter's 1 % margin is 600 ms per real
// 60 s window and only 100 ms per 10 s one, so a shorter window would test the
// machine's load rather than the limiter; the client is told the window
// (rateLimitWindowMs) as it would be told the sandbox's.
import { afterEach, describe, expect, it } from 'vitest';
import { CatalogClient } from '../../src/client/index.js';
import { type TestServer, measuredRatePerMinute, sendJson, sleep, startTestServer } from './http-test-server.js';

const LIMIT = 600;
const INTERVAL = 60_000 / LIMIT;
// 10 s: the limiter's 1 % margin is then 100 ms of slack per window, enough to
// absorb the event-loop jitter of a loaded 2-core CI machine running other test files.
const WINDOW = 10_000;
const PER_WINDOW = (LIMIT * WINDOW) / 60_000;

let server: TestServer | undefined;
let client: CatalogClient | undefined;
afterEach(async () => {
  await client?.close();
  await server?.close();
});

/** A server with a rolling-window budget (429s do not count) and a fixed latency. */
async function budgetServer(latencyMs: number) {
  const accepted: number[] = [];
  let throttled = 0;
  server = await startTestServer(async (req, res) => {
    const inWindow = accepted.filter((t) => t > req.at - WINDOW).length;
    if (inWindow >= PER_WINDOW) {
      throttled++;
      return sendJson(res, 429, { error: { status: 429, code: 'too_many_requests', message: 'slow down' } });
    }
    accepted.push(req.at);
    await sleep(latencyMs);
    sendJson(res, 200, { meta: { total: 0, page: { no: 0, offset: 0, size: 10 } }, results: [] });
  });
  return { accepted, throttled: () => throttled };
}

async function run(workers: number, requests: number): Promise<void> {
  let left = requests;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (left-- > 0) await client!.query('brands.query', { page: { no: 0, size: 10 } });
    }),
  );
}

describe('pacing at the server', () => {
  it('600/min over ~10 s: rate within 5 % of the limit, no 429', async () => {
    const s = await budgetServer(0);
    client = new CatalogClient({
      baseUrl: server!.url,
      apiKey: 'k',
      apiSecret: 'secret',
      rateLimit: LIMIT,
      rateLimitWindowMs: WINDOW,
    });
    await run(4, 101);
    expect(s.throttled()).toBe(0);
    expect(client.stats.byStatus).toEqual({ 200: 101 });
    const rate = measuredRatePerMinute(s.accepted);
    console.log(`client pacing: ${rate.toFixed(1)}/min`);
    expect(Math.abs(rate - LIMIT) / LIMIT).toBeLessThan(0.05);
  });

  it('with responses taking 1.5 intervals, concurrency keeps the budget full', async () => {
    const s = await budgetServer(1.5 * INTERVAL);
    client = new CatalogClient({
      baseUrl: server!.url,
      apiKey: 'k',
      apiSecret: 'secret',
      rateLimit: LIMIT,
      rateLimitWindowMs: WINDOW,
    });
    await run(3, 101);
    expect(s.throttled()).toBe(0);
    const rate = measuredRatePerMinute(s.accepted);
    expect(Math.abs(rate - LIMIT) / LIMIT).toBeLessThan(0.05);
  });

  it('without the limiter the same server throttles: the check above can fail', async () => {
    const s = await budgetServer(0);
    client = new CatalogClient({
      baseUrl: server!.url,
      apiKey: 'k',
      apiSecret: 'secret',
      rateLimit: 0,
      retry: { maxAttempts: 1 },
    });
    await run(4, 120).catch(() => {});
    expect(s.throttled()).toBeGreaterThan(0);
  });
});
