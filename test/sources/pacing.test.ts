// A paged source against the sandbox's own rolling-window limiter, scaled to
// 100 requests per 10 s (= 600/min) so a few seconds say what a minute would
// (the window is scaled, scheduling jitter is not: 10 s keeps 100 ms of the 1 %
// margin, enough for a loaded CI machine; see test/client/pacing.test.ts):
// with every response taking 1.5 intervals, concurrency keeps the budget full
// (rate within 5 % of the limit) and the limiter keeps it under (no 429).
import { afterEach, expect, it } from 'vitest';
import { productsQuery } from '../../src/sources/index.js';
import { measuredRatePerMinute } from '../client/http-test-server.js';
import { type SandboxHarness, expectSameSequence, productIdsWithStatus, sandboxHarness } from './sandbox-harness.js';

const LIMIT_PER_MINUTE = 600;
const INTERVAL = 60_000 / LIMIT_PER_MINUTE;

let h: SandboxHarness | undefined;
afterEach(() => h?.close());

it('a source at 600/min with 150 ms responses: rate within 5 % of the limit, no 429, exact ids', async () => {
  const answered: number[] = [];
  h = await sandboxHarness(
    {
      products: 2_000,
      seed: 4,
      rateLimit: 100,
      rateLimitWindowMs: 10_000,
      faults: { latencyMs: 1.5 * INTERVAL },
      log: () => answered.push(performance.now()),
    },
    { rateLimit: LIMIT_PER_MINUTE, rateLimitWindowMs: 10_000 },
  );
  const expected = productIdsWithStatus(h.sandbox, 'active');
  const records = await productsQuery(h.client, {
    filter: { status: 'active' },
    pageSize: 10,
    concurrency: 3,
  }).toArray();
  expectSameSequence(
    records.map((r) => r.id),
    expected,
  );
  expect(h.sandbox.stats.rateLimited).toBe(0);
  expect(h.client.stats.byStatus).toEqual({ 200: Math.ceil(expected.length / 10) });
  // More requests than one window holds, so the window's limit is really tested.
  expect(answered.length).toBeGreaterThanOrEqual(110);
  const rate = measuredRatePerMinute(answered);
  console.log(`source pacing: ${rate.toFixed(1)}/min`);
  expect(Math.abs(rate - LIMIT_PER_MINUTE) / LIMIT_PER_MINUTE).toBeLessThan(0.05);
});
