// The real products.query (and products.stream) source against an adversarial API written from
// the spec alone (test/helpers/adversarial-api.ts), checked against an oracle computed from that
// server's own event log for the user's filter (test/helpers/adversarial-oracle.ts): a product
// that matched for the whole run is delivered exactly once, in a version it had during the run;
// one that matched at some moment at most once; nothing else. Or the run fails loudly, with a
// source.* or stream.* code, where the test allows it. Cases are those of issue 35 (1-5, 9), then
// a churn model of 200 seeds (one seed alone: ADVERSARY_SEED=17 npx vitest run <this file>).
// The source is called as a user's code calls it: `productsQuery(client, options, { events })`,
// its run starting when it is made (the machine's clock), the client with `rateLimit: 0`.
import { afterEach, describe, expect, it } from 'vitest';
import { CatalogClient } from '../../src/client/index.js';
import { Product } from '../../src/catalog/resources/index.js';
import { CatalogStreamsError } from '../../src/errors.js';
import { RunEvents } from '../../src/events.js';
import { productsQuery, productsStream } from '../../src/sources/index.js';
import { type ProductState, prng } from '../helpers/adversarial-catalog.js';
import { type AdversarialApi, type AdversarialApiOptions, startAdversarialApi } from '../helpers/adversarial-api.js';
import { type DeliveredRecord, checkDelivery, describeCheck, exact, oracle } from '../helpers/adversarial-oracle.js';
import type { ChangeBatch, EventLog } from '../helpers/adversarial-state.js';

const ALL_STATUSES = ['active', 'inactive', 'replaced'] as const;

let api: AdversarialApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

async function start(options: AdversarialApiOptions): Promise<AdversarialApi> {
  await api?.close();
  api = await startAdversarialApi(options);
  return api;
}

interface Extract {
  records: DeliveredRecord[];
  error?: unknown;
  rereads: number;
  warnings: string[];
}

function client(server: AdversarialApi, events: RunEvents): CatalogClient {
  return new CatalogClient({
    baseUrl: server.url,
    ...server.credentials,
    rateLimit: 0,
    retry: { minTimeout: 1, maxTimeout: 5 },
    events,
  });
}

/** Reads the source to its end (or its error) the way a user's code does. */
async function drain(source: AsyncIterable<unknown>, c: CatalogClient, events: RunEvents, rereads: () => number) {
  const warnings: string[] = [];
  events.on('warning', (w) => warnings.push(String((w as { message?: unknown }).message)));
  const records: DeliveredRecord[] = [];
  let error: unknown;
  try {
    for await (const r of source) records.push(r as DeliveredRecord);
  } catch (e) {
    error = e;
  } finally {
    await c.close();
  }
  return { records, error, rereads: rereads(), warnings } satisfies Extract;
}

type QueryOptions = Parameters<typeof productsQuery>[1];

/** products.query as a user calls it: `productsQuery(client, options)`, its run starting now. */
async function query(server: AdversarialApi, options: QueryOptions): Promise<Extract> {
  const events = new RunEvents();
  const c = client(server, events);
  const source = productsQuery(c, options, { events });
  return drain(source, c, events, () => (source as unknown as { rereads?: number }).rereads ?? 0);
}

function errorText(e: unknown): string {
  return e instanceof CatalogStreamsError ? `${e.code}: ${e.message}` : String(e);
}

/** Exactly what the oracle allows, and the run did not fail. */
function expectExact(server: AdversarialApi, filter: unknown, run: Extract): void {
  expect(run.error, run.error ? errorText(run.error) : '').toBeUndefined();
  const check = checkDelivery(oracle(server.log, { filter }), run.records);
  expect(exact(check), describeCheck(check)).toBe(true);
}

/** A schedule with the same batch before each of requests `from`..`to`. */
function every(from: number, to: number, batch: ChangeBatch): Map<number, ChangeBatch> {
  const m = new Map<number, ChangeBatch>();
  for (let n = from; n <= to; n++) m.set(n, batch);
  return m;
}

/** A raw POST to the adversarial API, with its credentials. */
async function post(server: AdversarialApi, path: string, body: unknown) {
  const auth = Buffer.from(`${server.credentials.apiKey}:${server.credentials.apiSecret}`).toString('base64');
  return fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Basic ${auth}` },
    body: JSON.stringify(body),
  });
}

describe('the adversarial API answers as the spec allows', () => {
  it('pages with meta.total and meta.page, refuses a bad page size with 422, and dates answers by its own clock', async () => {
    const s = await start({ seed: 1, catalog: { products: 120 }, clockOffsetMs: -5000 });
    const before = Date.now();
    const ok = await post(s, '/v4/products/query', {
      filter: { status: [...ALL_STATUSES] },
      sorting: { id: 'ASC' },
      page: { no: 1, size: 50 },
    });
    const after = Date.now();
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { meta: { total: number; page: unknown }; results: { id: string }[] };
    expect(body.meta).toEqual({ total: 120, page: { no: 1, offset: 50, size: 50 } });
    expect(body.results).toHaveLength(50);
    expect(body.results.map((r) => r.id)).toEqual(body.results.map((r) => r.id).sort());
    // The Date header is the server's clock, five seconds behind the machine's (to the second).
    const date = Date.parse(ok.headers.get('date')!);
    expect(date).toBeLessThanOrEqual(after - 5000);
    expect(date).toBeGreaterThan(before - 6000);
    const bad = await post(s, '/v4/products/query', {
      filter: { status: 'active' },
      sorting: { id: 'ASC' },
      page: { no: 0, size: 20 },
    });
    expect(bad.status).toBe(422);
    expect(JSON.stringify(await bad.json())).toContain('page.size');
    const noPage = await post(s, '/v4/products/query', { filter: { status: 'active' }, sorting: { id: 'ASC' } });
    expect(noPage.status).toBe(422);
    const empty = await post(s, '/v4/products/stream', { filter: { id: 'MNOPE' }, sorting: { id: 'ASC' } });
    expect(empty.status).toBe(204);
  });

  it("sends products the project's product schema accepts, replaced ones with their successor", async () => {
    const s = await start({ seed: 5, catalog: { products: 100, activeShare: 0.2 } });
    const answer = await post(s, '/v4/products/query', {
      filter: { status: [...ALL_STATUSES] },
      sorting: { status: 'DESC' },
      page: { no: 0, size: 100 },
    });
    const { results } = (await answer.json()) as { results: { status: string }[] };
    expect(new Set(results.map((r) => r.status))).toEqual(new Set(ALL_STATUSES));
    expect(results.map((r) => r.status)).toEqual(
      results
        .map((r) => r.status)
        .sort()
        .reverse(),
    );
    const invalid = results.filter((r) => !Product.safeParse(r).success);
    expect(invalid).toEqual([]);
  });

  it('orders ties anew on each request, never the id sorting, and caps meta.total at the result window', async () => {
    const s = await start({ seed: 2, catalog: { products: 200, sameSecond: 40 }, resultWindow: 100 });
    const page = async (sorting: unknown, no = 0) =>
      (await (
        await post(s, '/v4/products/query', { filter: { createdAt: { from: 0 } }, sorting, page: { no, size: 50 } })
      ).json()) as {
        meta: { total: number };
        results: { id: string }[];
      };
    const orders = new Set<string>();
    for (let i = 0; i < 4; i++) orders.add((await page({ createdAt: 'ASC' })).results.map((r) => r.id).join());
    expect(orders.size).toBeGreaterThan(1);
    const ids = new Set<string>();
    for (let i = 0; i < 3; i++) ids.add((await page({ id: 'DESC' })).results.map((r) => r.id).join());
    expect(ids.size).toBe(1);
    expect((await page({ id: 'ASC' })).meta.total).toBe(100);
    expect(
      (
        await post(s, '/v4/products/query', {
          filter: { createdAt: { from: 0 } },
          sorting: { id: 'ASC' },
          page: { no: 2, size: 50 },
        })
      ).status,
    ).toBe(422);
  });

  it('lies about one page total and repeats a stream record when told, and logs both', async () => {
    const s = await start({
      seed: 3,
      catalog: { products: 30 },
      lyingTotal: { pageNo: 1, by: 3 },
      streamDuplicate: { index: 4 },
    });
    const q = (no: number) =>
      post(s, '/v4/products/query', {
        filter: { createdAt: { from: 0 } },
        sorting: { id: 'ASC' },
        page: { no, size: 10 },
      });
    const totals = [];
    for (const no of [0, 1, 1]) totals.push(((await (await q(no)).json()) as { meta: { total: number } }).meta.total);
    expect(totals).toEqual([30, 27, 30]);
    const text = await (
      await post(s, '/v4/products/stream', { filter: { createdAt: { from: 0 } }, sorting: { id: 'ASC' } })
    ).text();
    const lines = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { meta: { index: number; total: number }; result: { id: string } });
    expect(lines).toHaveLength(30);
    expect(lines[5]!.result.id).toBe(lines[4]!.result.id);
    expect(lines[5]!.meta).toEqual({ total: 30, index: 5 });
    expect(s.log.requests.filter((r) => r.lie).map((r) => r.lie)).toEqual([
      'meta.total 3 lower',
      'record 4 sent again at index 5',
    ]);
  });
  it('touches products every X ms of its own clock, and logs each change before the request it preceded', async () => {
    const s = await start({
      seed: 4,
      catalog: { products: 50 },
      touchEvery: { ms: 40, count: 2 },
      clockOffsetMs: 5000,
    });
    const body = { filter: { status: [...ALL_STATUSES] }, sorting: { touchedAt: 'DESC' }, page: { no: 0, size: 10 } };
    await post(s, '/v4/products/query', body);
    await new Promise((resolve) => setTimeout(resolve, 130));
    const sent = Date.now();
    const answer = (await (await post(s, '/v4/products/query', body)).json()) as {
      results: { id: string; meta: { updatedAt: number } }[];
    };
    const touched = s.log.changes.filter((c) => c.beforeRequest === 1);
    // At least three ticks of 40 ms passed: two products each.
    expect(touched.length).toBeGreaterThanOrEqual(6);
    expect(touched.every((c) => c.kind === 'touch')).toBe(true);
    // Touched by the server's clock, five seconds ahead of the machine's: they lead a touchedAt DESC sorting.
    expect(answer.results[0]!.meta.updatedAt).toBeGreaterThanOrEqual(Math.floor((sent + 5000) / 1000));
    expect(s.log.changes.map((c) => c.id)).toContain(answer.results[0]!.id);
  });
});

describe('the oracle, on a hand-made log', () => {
  const p = (id: string, status: ProductState['status'], updatedAt: number, removed = false): ProductState => ({
    id,
    status,
    createdAt: 100,
    updatedAt,
    removed,
  });
  const log: EventLog = {
    initial: [
      p('MA', 'active', 200),
      p('MB', 'inactive', 200),
      p('MC', 'active', 200),
      p('MD', 'active', 150, true),
      p('ME', 'active', 200),
      p('MF', 'inactive', 200),
    ],
    changes: [
      // Before the run (its first request is 1): MF becomes active, MA is touched.
      { kind: 'status', id: 'MF', at: 0, beforeRequest: 0, after: p('MF', 'active', 250) },
      { kind: 'touch', id: 'MA', at: 0, beforeRequest: 0, after: p('MA', 'active', 260) },
      // During: MA touched again (still matches), MB enters, MC leaves, MD restored, ME leaves and comes back.
      { kind: 'touch', id: 'MA', at: 0, beforeRequest: 1, after: p('MA', 'active', 300) },
      { kind: 'status', id: 'MB', at: 0, beforeRequest: 2, after: p('MB', 'active', 310) },
      { kind: 'remove', id: 'MC', at: 0, beforeRequest: 2, after: p('MC', 'active', 200, true) },
      { kind: 'restore', id: 'MD', at: 0, beforeRequest: 3, after: p('MD', 'active', 150) },
      { kind: 'status', id: 'ME', at: 0, beforeRequest: 3, after: p('ME', 'inactive', 320) },
      { kind: 'status', id: 'ME', at: 0, beforeRequest: 4, after: p('ME', 'active', 330) },
      // After the run (its last request is 4): MF leaves; it matched all along.
      { kind: 'status', id: 'MF', at: 0, beforeRequest: 5, after: p('MF', 'inactive', 400) },
    ],
    requests: [],
  };
  const o = oracle(log, { filter: { status: ['active'] }, firstRequest: 1, lastRequest: 4 });

  it('requires what matched for the whole run, allows what matched at some moment, with its versions', () => {
    expect([...o.required].sort()).toEqual(['MA', 'MF']);
    expect([...o.allowed].sort()).toEqual(['MA', 'MB', 'MC', 'MD', 'ME', 'MF']);
    expect([...o.versions.get('MA')!].sort()).toEqual([260, 300]);
    expect([...o.versions.get('ME')!].sort()).toEqual([200, 330]);
    expect([...o.versions.get('MF')!]).toEqual([250]);
  });

  it('reports a missing, a repeated, an unexpected record and a version the product never had', () => {
    const r = (id: string, updatedAt: number) => ({ id, meta: { updatedAt } });
    expect(exact(checkDelivery(o, [r('MA', 300), r('MF', 250), r('MD', 150)]))).toBe(true);
    const c = checkDelivery(o, [r('MA', 200), r('MB', 310), r('MB', 310), r('MX', 1)]);
    expect(c.missing).toEqual(['MF']);
    expect(c.duplicates).toEqual(['MB']);
    expect(c.unexpected).toEqual(['MX']);
    expect(c.wrongVersion).toEqual(['MA']);
  });

  it('reads a filter on createdAt and updatedSince windows, either end left out', () => {
    const w = oracle(log, {
      filter: { and: [{ createdAt: { until: 100 } }, { updatedSince: { from: 300 } }] },
      firstRequest: 1,
      lastRequest: 4,
    });
    expect([...w.required]).toEqual([]);
    expect([...w.allowed].sort()).toEqual(['MA', 'MB', 'ME']);
    expect(
      [...oracle(log, { filter: { updatedSince: 250 }, firstRequest: 1, lastRequest: 4 }).required].sort(),
    ).toEqual(['MA', 'MF']);
  });
});

describe('issue 35: products.query against the adversarial API', () => {
  it('case 1: a full extract sorted by touchedAt while 3 products are touched before every request: each product once', async () => {
    const s = await start({ seed: 11, catalog: { products: 3000 }, schedule: every(0, 400, { touch: 3 }) });
    const filter = { status: [...ALL_STATUSES] };
    const run = await query(s, { filter, sorting: { touchedAt: 'ASC' }, pageSize: 100 });
    expect(s.log.changes.length).toBeGreaterThan(50);
    expectExact(s, filter, run);
    expect(run.records).toHaveLength(3000);
  });

  it('case 1 by the clock: the server touches 3 products every 20 ms of its own time, 5 s ahead: each product once', async () => {
    const s = await start({
      seed: 21,
      catalog: { products: 1500 },
      clockOffsetMs: 5000,
      touchEvery: { ms: 20, count: 3 },
    });
    const filter = { status: [...ALL_STATUSES] };
    const run = await query(s, { filter, sorting: { touchedAt: 'ASC' }, pageSize: 100 });
    expect(s.log.changes.length).toBeGreaterThan(0);
    expectExact(s, filter, run);
  });

  it('case 2: createdAt ASC in pages of 250 on a still catalog, 40 products per second, ties ordered anew per request', async () => {
    const s = await start({ seed: 12, catalog: { products: 2000, sameSecond: 40 } });
    const filter = { status: [...ALL_STATUSES] };
    const run = await query(s, { filter, sorting: { createdAt: 'ASC' }, pageSize: 250 });
    expect(s.log.changes).toEqual([]);
    expectExact(s, filter, run);
    expect(run.records).toHaveLength(2000);
  });

  it.each([
    ['3 s behind', -3000],
    ['5 s behind', -5000],
    ['4 s ahead', 4000],
  ])('case 3: the API clock %s, products updated during a touchedAt extract: each product once', async (_, offset) => {
    // Ties in a stable order here: what is missed is the clock's doing (case 2 and the churn model shuffle ties).
    const s = await start({
      seed: 13,
      catalog: { products: 1000 },
      tieOrder: 'stable',
      clockOffsetMs: offset,
      schedule: every(1, 200, { touch: 2 }),
    });
    const filter = { status: [...ALL_STATUSES] };
    const run = await query(s, { filter, sorting: { touchedAt: 'ASC' }, pageSize: 50 });
    expectExact(s, filter, run);
  });

  it('case 4: sorted by id, filtered on createdAt: before page 6 a page-0 product leaves and an old one is restored', async () => {
    let fired = false;
    let left: string | undefined;
    let restored: string | undefined;
    const s = await start({
      seed: 14,
      catalog: { products: 1000, removed: 20 },
      // Just before page 6, or the 7th request if the reader pages otherwise.
      beforeAnswer: ({ n, page, state }) => {
        if (fired || (page?.no !== 6 && n < 6)) return;
        fired = true;
        left = state
          .visible()
          .map((p) => p.id)
          .sort()[0]!;
        restored = state
          .removedProducts()
          .map((p) => p.id)
          .sort()
          .at(-1)!;
        state.remove([left]);
        state.restore([restored]);
      },
    });
    const filter = { createdAt: { from: 0 } };
    const run = await query(s, { filter, sorting: { id: 'ASC' }, pageSize: 100 });
    expect(fired).toBe(true);
    // The restored product sorts after page 6 (every later record slides back one place) and the total does not move.
    expect(s.log.initial.filter((p) => !p.removed && p.id < restored!).length).toBeGreaterThan(700);
    expect(s.log.changes.map((c) => [c.kind, c.id])).toEqual([
      ['remove', left],
      ['restore', restored],
    ]);
    expect(s.state.visible()).toHaveLength(1000);
    // The one that left was matched at the start, the restored one entered: each at most once, the rest exactly once.
    expectExact(s, filter, run);
  });

  it('more than a page removed at once between two pages, sorted by id: each product present all along once', async () => {
    const s = await start({
      seed: 16,
      catalog: { products: 1000 },
      beforeAnswer: ({ n, page, state }) => {
        // Before page 4: 120 of the products already read (pages 0-3) leave at once.
        if (state.log.changes.length > 0 || (page?.no !== 4 && n < 4)) return;
        state.remove(
          state
            .visible()
            .map((p) => p.id)
            .sort()
            .slice(30, 150),
        );
      },
    });
    const filter = { status: [...ALL_STATUSES] };
    const run = await query(s, { filter, sorting: { id: 'ASC' }, pageSize: 50 });
    expect(s.log.changes.filter((c) => c.kind === 'remove')).toHaveLength(120);
    expectExact(s, filter, run);
  });

  it('case 5: a stream sorted by id repeats record 100 in place of record 101: never a duplicate and a gap with exit 0', async () => {
    const s = await start({ seed: 15, catalog: { products: 300 }, streamDuplicate: { index: 100 } });
    const filter = { status: [...ALL_STATUSES] };
    const events = new RunEvents();
    const c = client(s, events);
    const source = productsStream(c, { filter, sorting: { id: 'ASC' } }, { events });
    const run = await drain(source, c, events, () => source.resumes);
    if (run.error) {
      expect(run.error, errorText(run.error)).toBeInstanceOf(CatalogStreamsError);
      expect((run.error as CatalogStreamsError).code).toMatch(/^(source|stream)\./);
    } else {
      const check = checkDelivery(oracle(s.log, { filter }), run.records);
      expect(exact(check), describeCheck(check)).toBe(true);
    }
  });

  it.each([
    ['page 5', { pageNo: 5 }],
    ['the 6th answer', { request: 5 }],
  ])(
    'case 9: meta.total 3 lower on %s: a few requests more at most, and no blame on a changing catalog',
    async (_, at) => {
      const s = await start({ seed: 19, catalog: { products: 1000 }, lyingTotal: { ...at, by: 3 } });
      const filter = { status: [...ALL_STATUSES] };
      const run = await query(s, { filter, sorting: { id: 'ASC' }, pageSize: 50 });
      // A reader that asks only for page 0 of what is left never meets a lie told about page 5.
      if ('request' in at) expect(s.log.requests.some((r) => r.lie)).toBe(true);
      const pages = Math.ceil(1000 / 50);
      expect.soft(s.requestCount('products.query'), 'requests').toBeLessThanOrEqual(pages + 3);
      if (run.error) {
        // A failure names the service's inconsistent answer, not a catalog that changed (nothing did).
        expect(s.log.changes).toEqual([]);
        expect((run.error as CatalogStreamsError).code, errorText(run.error)).toMatch(/^source\./);
        expect(errorText(run.error)).not.toMatch(
          /records (kept )?(leaving|left|entered)|data changed|catalog changed|changed during/i,
        );
      } else {
        expectExact(s, filter, run);
      }
    },
  );

  it('request count on a still catalog', async () => {
    const s = await start({ seed: 20, catalog: { products: 3000 } });
    const filter = { status: [...ALL_STATUSES] };
    const pageSize = 100;
    const run = await query(s, { filter, sorting: { touchedAt: 'ASC' }, pageSize });
    const requests = s.requestCount('products.query');
    console.log(
      `request count on a still catalog: ${requests} requests for 3000 products in pages of ${pageSize} (touchedAt ASC, status filter)`,
    );
    expect(requests).toBeLessThanOrEqual(Math.ceil(3000 / pageSize) * 1.1 + 3);
    // Still, but ties in touchedAt come in a new order per request: the count holds for an exact read.
    expectExact(s, filter, run);
  });
});

// --- The churn model ------------------------------------------------------------------------

const SEEDS = 200;
type Sorting = Record<string, 'ASC' | 'DESC'>;

interface Scenario {
  kind: 'query' | 'stream';
  options: AdversarialApiOptions;
  /** The user's filter, given the catalog at the start (an incremental window needs its updatedAt values). */
  filter: (log: EventLog) => unknown;
  sorting: Sorting;
  pageSize: 10 | 50;
  concurrency: number;
}

/** The median updatedAt at the start: where an incremental run's window begins. */
function medianUpdatedAt(log: EventLog): number {
  const xs = log.initial.map((p) => p.updatedAt).sort((a, b) => a - b);
  return xs[Math.floor(xs.length / 2)]!;
}

const FILTERS: ((log: EventLog) => unknown)[] = [
  () => ({ status: [...ALL_STATUSES] }),
  () => ({ status: ['active', 'inactive'] }),
  () => ({ status: 'active' }),
  () => ({ createdAt: { from: 0 } }),
  () => ({ and: [{ status: ['active', 'replaced'] }, { createdAt: { from: 0 } }] }),
  // An incremental run: open-ended (products touched during the run enter) or bounded before the run (they leave).
  (log) => ({ updatedSince: medianUpdatedAt(log) }),
  (log) => ({
    and: [
      { status: [...ALL_STATUSES] },
      { updatedSince: { from: medianUpdatedAt(log), until: medianUpdatedAt(log) + 900 } },
    ],
  }),
];

/** A seed's catalog, clock, filter, sorting and schedule of changes. */
function scenario(seed: number): Scenario {
  const r = prng(seed * 7919 + 5);
  const kind = r.next() < 0.15 ? 'stream' : 'query';
  const products = 300 + r.int(700);
  const pageSize = r.next() < 0.2 ? 10 : 50;
  const sorting = r.pick<Sorting>(
    kind === 'stream'
      ? [{ id: 'ASC' }, { id: 'DESC' }, { createdAt: 'ASC' }, { createdAt: 'DESC' }]
      : [
          { id: 'ASC' },
          { id: 'DESC' },
          { createdAt: 'ASC' },
          { createdAt: 'DESC' },
          { touchedAt: 'ASC' },
          { touchedAt: 'DESC' },
        ],
  );
  const filter = r.pick(FILTERS);
  const schedule = new Map<number, ChangeBatch>();
  const requests = Math.ceil(products / pageSize) * 2;
  const busy = 0.1 + r.next() * 0.5;
  for (let n = 0; n < requests; n++) {
    if (r.next() >= busy) continue;
    // Now and then more than a page removed between two requests.
    const many = r.next() < 0.04;
    schedule.set(n, {
      create: r.int(3),
      touch: r.int(4),
      status: r.int(3),
      remove: many ? pageSize + 1 + r.int(pageSize) : r.int(3),
      restore: r.next() < 0.2 ? 1 + r.int(2) : 0,
    });
  }
  const duplicate = kind === 'stream' && r.next() < 0.5 ? { index: r.int(products / 2) } : undefined;
  return {
    kind,
    options: {
      seed,
      catalog: { products, removed: r.int(30), sameSecond: r.pick([1, 3, 10, 40]) },
      clockOffsetMs: r.int(10_001) - 5000,
      schedule,
      ...(duplicate ? { streamDuplicate: duplicate } : {}),
    },
    filter,
    sorting,
    pageSize,
    concurrency: 1 + r.int(3),
  };
}

async function runScenario(server: AdversarialApi, s: Scenario, filter: unknown): Promise<Extract> {
  if (s.kind === 'query')
    return query(server, {
      filter: filter as never,
      sorting: s.sorting as never,
      pageSize: s.pageSize,
      concurrency: s.concurrency,
    });
  const events = new RunEvents();
  const c = client(server, events);
  const source = productsStream(c, { filter: filter as never, sorting: s.sorting as never }, { events });
  return drain(source, c, events, () => source.resumes);
}

describe('the oracle, against the server it judges', () => {
  // Any one consistent answer given during the run (here: a stream, between pages that move the
  // schedule on) is what an exact reader may deliver; the oracle must accept it, whatever the
  // churn, and refuse it with a record that matched all along taken out.
  it('accepts a whole-result answer given at any request of a churning run, and misses one taken out', async () => {
    let checked = 0;
    for (let seed = 1; seed <= 30; seed++) {
      const s = scenario(seed);
      const server = await start({ ...s.options, streamDuplicate: undefined });
      const filter = s.filter(server.log);
      const at = seed % 12;
      let records: DeliveredRecord[] = [];
      for (let n = 0; n < 12; n++) {
        if (n !== at) {
          await post(server, '/v4/products/query', { filter, sorting: { id: 'ASC' }, page: { no: n % 3, size: 50 } });
          continue;
        }
        const text = await (await post(server, '/v4/products/stream', { filter, sorting: s.sorting })).text();
        records = text
          .split('\n')
          .filter(Boolean)
          .map((line) => (JSON.parse(line) as { result: DeliveredRecord }).result);
      }
      const o = oracle(server.log, { filter });
      expect(exact(checkDelivery(o, records)), `seed ${seed}: ${describeCheck(checkDelivery(o, records))}`).toBe(true);
      const dropped = records.findIndex((r) => o.required.has(r.id));
      if (dropped >= 0) {
        const c = checkDelivery(
          o,
          records.filter((_, i) => i !== dropped),
        );
        expect(c.missing).toEqual([records[dropped]!.id]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(20);
  });
});

describe('the churn model against the adversarial API', () => {
  it(
    `${SEEDS} seeded schedules, tie order drawn per request, clocks within 5 s: exact, or a loud failure`,
    { timeout: 300_000 },
    async () => {
      let loud = 0;
      let loudDuplicates = 0;
      let rereadSeeds = 0;
      const wrong: string[] = [];
      const only = process.env.ADVERSARY_SEED ? Number(process.env.ADVERSARY_SEED) : undefined;
      for (let seed = only ?? 1; seed <= (only ?? SEEDS); seed++) {
        const s = scenario(seed);
        const server = await start(s.options);
        const filter = s.filter(server.log);
        const run = await runScenario(server, s, filter);
        const label = `seed ${seed} ${JSON.stringify({ kind: s.kind, filter, sorting: s.sorting, pageSize: s.pageSize, products: s.options.catalog.products, offset: s.options.clockOffsetMs, duplicate: s.options.streamDuplicate })}`;
        if (run.error) {
          // A stream that repeated an id may fail the run (issue 35: "fails the run or re-reads").
          if (s.options.streamDuplicate) loudDuplicates++;
          else loud++;
          const coded = run.error instanceof CatalogStreamsError && /^(source|stream)\./.test(run.error.code);
          if (!coded) wrong.push(`${label}: failed without a source or stream code: ${errorText(run.error)}`);
          else console.log(`loud failure, ${label}: ${errorText(run.error)}`);
        } else {
          const check = checkDelivery(oracle(server.log, { filter }), run.records);
          if (!exact(check)) {
            wrong.push(`${label}: ${describeCheck(check)}`);
            console.log(`not exact, ${label}: ${describeCheck(check)}`);
          }
          if (run.rereads > 0) rereadSeeds++;
        }
        await server.close();
        api = undefined;
      }
      console.log(
        `adversarial churn model: ${SEEDS} seeds, ${wrong.length} inexact, ${loud} loud failures (+${loudDuplicates} on a repeated stream id), ${rereadSeeds} needed re-reads or resumes`,
      );
      expect(wrong.slice(0, 10), `${wrong.length} seeds not exact`).toEqual([]);
      // Loud failures must stay rare: a reader that gives up on every churn would prove nothing.
      expect(loud).toBeLessThan(SEEDS / 20);
    },
  );
});
