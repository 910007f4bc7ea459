// products.query past the 10000 cap: the createdAt window walk estimateSource() counts with, on its own
// (in-memory, with dense instants placed exactly on window boundaries), then the extract, which
// reads page 0 of what is left, on a 30,000-product sandbox over loopback (every product exactly
// once), an over-cap single instant, a 2,500-id filter, and estimateSource() numbers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_REACHABLE_RESULTS } from '../../src/catalog/index.js';
import type { LazyPage } from '../../src/client/index.js';
import { DataError } from '../../src/errors.js';
import { type SliceStats, createdAtWindows } from '../../src/sources/sliced-products-query.js';
import { originOf, estimateSource, productsQuery } from '../../src/sources/index.js';
import type { SourceBody } from '../../src/sources/paged-query.js';
import { type SandboxHarness, allProductIds, productIdsWithStatus, sandboxHarness } from './sandbox-harness.js';
import { rng } from '../client/http-test-server.js';

/** An in-memory products.query over `createdAt` values: AND-ed createdAt windows, capped totals, id order. */
function memoryFetcher(createdAt: number[]) {
  const calls: { filter: unknown; size: number }[] = [];
  const fetchPage = async (body: SourceBody, no: number, size: number): Promise<LazyPage> => {
    calls.push({ filter: body.filter, size });
    const windows: { from: number; until: number }[] = [];
    const collect = (f: any) => {
      if (f?.and) f.and.forEach(collect);
      else if (f?.createdAt) windows.push(f.createdAt);
    };
    collect(body.filter);
    let ids = createdAt
      .map((t, i) => ({ id: i, t }))
      .filter((p) => windows.every((w) => p.t >= w.from && p.t <= w.until));
    const sort = body.sorting as { createdAt?: 'ASC' | 'DESC' } | undefined;
    if (sort?.createdAt) ids = ids.sort((a, b) => (sort.createdAt === 'ASC' ? a.t - b.t : b.t - a.t) || a.id - b.id);
    const results = ids
      .slice(no * size, (no + 1) * size)
      .map((p) => ({ id: p.id, meta: { createdAt: p.t, updatedAt: p.t } }));
    return {
      meta: { total: Math.min(ids.length, MAX_REACHABLE_RESULTS), page: { no, offset: no * size, size } },
      length: results.length,
      record: (i) => results[i]!,
      release: () => {},
    };
  };
  return { fetchPage, calls };
}

describe('createdAt windows', () => {
  it('products on the instant where one window ends and the next begins each land in exactly one window', async () => {
    // 0..199: 9000 products at 99 (the first window is [0, 99]: its last second),
    // 5000 at 100 (the next window's first second), 1000 spread evenly.
    const createdAt = [
      ...Array(9000).fill(99),
      ...Array(5000).fill(100),
      ...Array.from({ length: 1000 }, (_, i) => Math.floor(i / 5)),
    ];
    const { fetchPage } = memoryFetcher(createdAt);
    const stats: SliceStats = { wastedProbes: 0, windows: 0 };
    const windows = [];
    for await (const w of createdAtWindows({
      body: { filter: { status: 'active' }, sorting: { id: 'ASC' } },
      probeSize: 250,
      fetchPage,
      endpoint: 'products.query',
      stats,
    })) {
      windows.push({ label: w.label, total: w.firstPage.meta.total, filter: w.body.filter, last: w.last });
    }
    expect(windows[0]).toEqual({
      label: 'createdAt 0..99',
      total: 9000 + 500,
      filter: { and: [{ status: 'active' }, { createdAt: { from: 0, until: 99 } }] },
      last: false,
    });
    expect(windows[1]!.label).toMatch(/^createdAt 100\.\./);
    expect(windows.reduce((n, w) => n + w.total, 0)).toBe(15_000);
    expect(windows.at(-1)!.last).toBe(true);
    // Bounds (2) and the capped first halves are the only probes not reused as a page 0.
    expect(stats).toEqual({ wastedProbes: 2, windows: windows.length });
  });

  it('adapts the window width to the density: few wasted probes on 100,000 spread products', async () => {
    const random = rng(3);
    const createdAt = Array.from({ length: 100_000 }, () => 1_000_000 + Math.floor(random() * 50_000_000));
    const { fetchPage, calls } = memoryFetcher(createdAt);
    const stats: SliceStats = { wastedProbes: 0, windows: 0 };
    let total = 0;
    for await (const w of createdAtWindows({
      body: { sorting: { id: 'ASC' } },
      probeSize: 250,
      fetchPage,
      endpoint: 'products.query',
      stats,
    })) {
      expect(w.firstPage.meta.total).toBeLessThan(MAX_REACHABLE_RESULTS);
      total += w.firstPage.meta.total;
    }
    expect(total).toBe(100_000);
    // ~13 windows of ~8000; bounds + log2(10) halvings + the odd overshoot.
    expect(stats.windows).toBeLessThanOrEqual(16);
    expect(stats.wastedProbes).toBeLessThanOrEqual(8);
    expect(calls).toHaveLength(stats.windows + stats.wastedProbes);
  });

  it('an instant holding 10000 or more matches fails with a DataError naming it', async () => {
    const { fetchPage } = memoryFetcher([...Array(10_000).fill(500), 1, 2, 900]);
    const walk = async () => {
      for await (const _ of createdAtWindows({ body: {}, probeSize: 10, fetchPage, endpoint: 'products.query' }));
    };
    const err: any = await walk().catch((e) => e);
    expect(err).toBeInstanceOf(DataError);
    expect(err.code).toBe('source.instant_over_cap');
    expect(err.message).toContain('createdAt 500, 1970-01-01T00:08:20Z');
    expect(err.message).toContain('use products.stream');
  });
});

describe('products.query on a 30,000-product sandbox', () => {
  let h: SandboxHarness;
  const BULK = 9_500;
  let requests = 0;
  beforeAll(async () => {
    h = await sandboxHarness({ products: 30_000, seed: 11, bulkInstant: BULK });
  });
  afterAll(() => h.close());

  it('reads page 0 of what is left: every product exactly once, in createdAt order, bulk imports by id', async () => {
    const before = h.client.stats.requests;
    const src = productsQuery(h.client, { filter: { createdAt: { from: 0 } }, concurrency: 4 });
    const delivered: string[] = [];
    const createdAtOf = new Map<string, number>();
    let previous = -Infinity;
    let unordered = 0;
    for await (const p of src) {
      if (p.meta.createdAt < previous) unordered++;
      previous = p.meta.createdAt;
      delivered.push(p.id);
      createdAtOf.set(p.id, p.meta.createdAt);
    }
    requests = h.client.stats.requests - before;
    expect(unordered).toBe(0);
    expect(delivered.length).toBe(30_000);
    expect(new Set(delivered).size).toBe(30_000);
    expect([...delivered].sort()).toEqual(allProductIds(h.sandbox));
    expect(src.total).toBe(30_000);
    // Every bulk import (one straddles the 10000th createdAt rank, one holds 9,500 at one second) arrived once.
    // (A later import may overwrite part of an earlier one: compare with the dataset's own column.)
    const ds = h.sandbox.dataset;
    for (const bulk of ds.bulkImports) {
      const wrong = [];
      for (let i = bulk.start; i < bulk.start + bulk.size; i++)
        if (createdAtOf.get(ds.productId(i)) !== ds.createdAt[i]) wrong.push(i);
      expect(wrong).toEqual([]);
    }
    // The reader by page numbers this replaced made 133 requests here: at most 10 % more.
    expect(requests).toBeLessThanOrEqual(Math.ceil(133 * 1.1));
    console.log(`30,000 products: ${requests} requests`);
  });

  it('estimateSource() counts the products past the cap and predicts the requests of that extract within 15 %', async () => {
    const planner = h.newClient({ rateLimit: 6000 });
    const p = await estimateSource(planner, 'products.query', { filter: { createdAt: { from: 0 } } });
    expect(p.total).toBe(30_000);
    expect(p.slices.length).toBeGreaterThanOrEqual(4);
    expect(p.slices.every((s) => s.total! < MAX_REACHABLE_RESULTS && s.label!.startsWith('createdAt '))).toBe(true);
    expect(p.requests).toBe(Math.ceil(30_000 / 250));
    // The extract's lanes each end on a page that is not full, and a bulk second ends on one too.
    expect(Math.abs(p.requests - requests) / requests).toBeLessThanOrEqual(0.15);
    expect(p.planRequests).toBe(planner.stats.requests);
    expect(p.estimatedMs).toBe(Math.round((p.requests * 60_000) / 6000));
  });

  it('a 2,500-id filter delivers exactly those ids (10 chunks of a page each)', async () => {
    const random = rng(99);
    const all = allProductIds(h.sandbox);
    const picked = new Set<string>();
    while (picked.size < 2_500) picked.add(all[Math.floor(random() * all.length)]!);
    const wanted = [...picked, ...[...picked].slice(0, 10)]; // repeats are dropped before chunking
    const before = h.sandbox.stats.byEndpoint['products.query']?.[200] ?? 0;
    const src = productsQuery(h.client, { filter: { id: wanted } });
    const records = await src.toArray();
    expect(records.length).toBe(2_500);
    expect(new Set(records.map((r) => r.id))).toEqual(picked);
    expect(new Set(records.map((r) => originOf(r)!.slice))).toEqual(
      new Set(Array.from({ length: 10 }, (_, i) => `id chunk ${i + 1}/10`)),
    );
    // A chunk of 250 ids can match 250 products at most: one request each.
    expect((h.sandbox.stats.byEndpoint['products.query']?.[200] ?? 0) - before).toBe(10);
    expect(src.total).toBe(2_500);

    // Combined with the rest of the filter (and), through estimateSource() as well.
    const activeSet = new Set(productIdsWithStatus(h.sandbox, 'active'));
    const both = await productsQuery(h.client, { filter: { and: [{ status: 'active' }, { id: wanted }] } }).toArray();
    expect(new Set(both.map((r) => r.id))).toEqual(new Set([...picked].filter((id) => activeSet.has(id))));
    const p = await estimateSource(h.client, 'products.query', { filter: { id: wanted } });
    expect(p.slices.map((s) => [s.label, s.total, s.requests])).toEqual(
      Array.from({ length: 10 }, (_, i) => [`id chunk ${i + 1}/10`, 250, 1]),
    );
    expect(p.requests).toBe(10);
    expect(p.dedupe).toBe(false);
  });
});

describe('a single instant over the cap', () => {
  it('10,500 products of one second are read whole: the ids delivered first are excluded, the rest fits', async () => {
    const h = await sandboxHarness({ products: 12_000, seed: 2, bulkInstant: 10_500 });
    try {
      const records = await productsQuery(h.client, { filter: { createdAt: { from: 0 } } }).toArray();
      expect(records.length).toBe(12_000);
      expect(new Set(records.map((r) => r.id)).size).toBe(12_000);
    } finally {
      await h.close();
    }
  });

  it('fails with a clear DataError instead of truncating when even the rest is more than a query reaches', async () => {
    const h = await sandboxHarness({ products: 12_500, seed: 2, bulkInstant: 11_500 });
    try {
      const bulk = h.sandbox.dataset.bulkImports.find((b) => b.size === 11_500)!;
      const got: unknown[] = [];
      const src = productsQuery(h.client, { filter: { createdAt: { from: 0 } } });
      src.on('data', (r) => got.push(r));
      const err: any = await new Promise((resolve) => src.on('error', resolve).on('end', () => resolve(undefined)));
      expect(err).toBeInstanceOf(DataError);
      expect(err.code).toBe('source.instant_over_cap');
      expect(err.message).toContain(`createdAt ${bulk.at}`);
      expect(err.message).toMatch(/use products\.stream/);
      expect(got.length).toBeLessThan(12_500);
    } finally {
      await h.close();
    }
  });
});

describe('products.query against a sandbox with a smaller result window (client resultWindow)', () => {
  let h: SandboxHarness;
  beforeAll(async () => {
    h = await sandboxHarness({ products: 3_000, seed: 5, resultWindow: 400 }, { resultWindow: 400 });
  });
  afterAll(() => h.close());

  it('reads past the window (page 0 only) and delivers every product once; estimateSource() agrees within 15 %, and needs the setting', async () => {
    const before = h.client.stats.requests;
    const src = productsQuery(h.client, { filter: { createdAt: { from: 0 } }, pageSize: 100 });
    const delivered: string[] = [];
    for await (const p of src) delivered.push(p.id);
    const requests = h.client.stats.requests - before;
    expect(delivered.length).toBe(3_000);
    expect([...delivered].sort()).toEqual(allProductIds(h.sandbox));
    const planned = await estimateSource(h.newClient({ resultWindow: 400 }), 'products.query', {
      filter: { createdAt: { from: 0 } },
      pageSize: 100,
    });
    expect(planned.total).toBe(3_000);
    expect(Math.abs(planned.requests - requests) / requests).toBeLessThanOrEqual(0.15);
    // The extract never asks past page 0, so it does not depend on knowing the window; planning does:
    // the sandbox's meta.total says 400 (its cap), which a planner assuming the spec's 10000 takes as the whole answer.
    const unaware = h.newClient({ resultWindow: MAX_REACHABLE_RESULTS });
    let count = 0;
    for await (const _ of productsQuery(unaware, { filter: { createdAt: { from: 0 } }, pageSize: 100 })) count++;
    expect(count).toBe(3_000);
    const unawarePlan = await estimateSource(unaware, 'products.query', {
      filter: { createdAt: { from: 0 } },
      pageSize: 100,
    });
    expect(unawarePlan.total).toBe(400);
  });

  it('the client refuses a window past the spec cap', () => {
    expect(() => h.newClient({ resultWindow: 20_000 })).toThrow(
      'resultWindow must be an integer from 1 to 10000, got 20000',
    );
  });
});
