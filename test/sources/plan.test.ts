// estimateSource(): slices, totals, request counts and duration at the client's rate,
// checked against what the extract then really does. (The createdAt windows of
// a capped products.query are planned in sliced-products-query.test.ts.)
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { brandsQuery, estimateSource, productsQuery } from '../../src/sources/index.js';
import { type SandboxHarness, sandboxHarness } from './sandbox-harness.js';

let h: SandboxHarness;
beforeAll(async () => {
  h = await sandboxHarness({ products: 800, seed: 9 });
});
afterAll(() => h.close());

it('a small query: one slice, pages at 250, duration at 100/min', async () => {
  const c = h.newClient({ rateLimit: 100 });
  const p = await estimateSource(c, 'products.query', { filter: { status: 'active' }, pageSize: 100 });
  expect(p.planRequests).toBe(1);
  expect(p.slices).toEqual([
    {
      label: undefined,
      // Read by createdAt, page 0 of what is left (createdat-query.ts): no window is added to the filter.
      filter: { status: 'active' },
      total: p.total,
      requests: Math.ceil(p.total! / 100),
    },
  ]);
  expect(p.requests).toBe(Math.ceil(p.total! / 100));
  expect(p.estimatedMs).toBe(p.requests * 600);
  expect(p.rateLimit).toBe(100);
  // The extract makes the planned requests, and one more for each lane it splits into at most (concurrency 3).
  const before = h.client.stats.requests;
  const records = await productsQuery(h.client, { filter: { status: 'active' }, pageSize: 100 }).toArray();
  expect(records.length).toBe(p.total);
  expect(h.client.stats.requests - before).toBeGreaterThanOrEqual(p.requests);
  expect(h.client.stats.requests - before).toBeLessThanOrEqual(p.requests + 3);
});

it('reference data and streams', async () => {
  const brands = await estimateSource(h.client, 'brands.query', {});
  const count = (await brandsQuery(h.client).toArray()).length;
  expect(brands).toMatchObject({ total: count, requests: Math.ceil(count / 250), estimatedMs: 0, rateLimit: Infinity });
  const before = h.client.stats.requests;
  const media = await estimateSource(h.client, 'media.stream', { filter: { product: ['P0000001'] } });
  expect(media).toMatchObject({
    slices: [{ filter: { product: ['P0000001'] }, requests: 1 }],
    total: undefined,
    requests: 1,
    planRequests: 0,
  });
  expect(h.client.stats.requests).toBe(before);
});

it('rejects bad options and unknown types like the loader does', async () => {
  await expect(
    estimateSource(h.client, 'products.query', { filter: { status: 'active' }, pageSize: 7 }),
  ).rejects.toThrow(/products.query.pageSize/);
  await expect(estimateSource(h.client, 'nope.query' as never, {})).rejects.toBeInstanceOf(ConfigError);
});
