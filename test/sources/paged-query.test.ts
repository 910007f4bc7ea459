// The paged reader against a precise node:http server: order under uneven
// latency, the in-flight bound, backpressure from a slow consumer, the
// consistency checks, abort, and the stage wiring (ctx.client, options).
// updates.query is paged by number (paged-query.ts); products and media are read by createdAt
// (createdat-query.test.ts).
import { afterEach, describe, expect, it } from 'vitest';
import { CatalogClient } from '../../src/client/index.js';
import { AbortedError, ConfigError, DataError, RequestValidationError } from '../../src/errors.js';
import { StageRegistry } from '../../src/core/registry.js';
import {
  brandsQuery,
  catalogCategoriesQuery,
  mediaQuery,
  originOf,
  productsQuery,
  sourceStages,
  updatesQuery,
} from '../../src/sources/index.js';
import { testContext } from '../helpers/stage-context.js';
import { type TestServer, rng, sendJson, sleep, startTestServer } from '../client/http-test-server.js';

let server: TestServer | undefined;
let client: CatalogClient | undefined;
afterEach(async () => {
  await client?.close();
  await server?.close();
  server = undefined;
  client = undefined;
});

interface PagedServer {
  inFlight: number;
  maxInFlight: number;
  /** Pages sent. */
  answered: number;
  /** Requests whose connection the client closed before their page was sent. */
  cancelled: number;
}

/** Serves `count` media `{id}` in pages (filters are not looked at); `latency(no)` per page; `tamper` may change a page. */
async function pagedServer(
  count: number,
  opts: { latency?: (no: number) => number; tamper?: (no: number, page: any) => any } = {},
): Promise<PagedServer> {
  const state = { inFlight: 0, maxInFlight: 0, answered: 0, cancelled: 0 };
  server = await startTestServer(async (req, res) => {
    res.on('close', () => {
      if (!res.writableFinished) state.cancelled++;
    });
    state.inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
    // Without `page` (an endpoint read whole) every record comes in one answer.
    const { no, size } = (req.body.page as { no: number; size: number } | undefined) ?? { no: 0, size: count };
    await sleep(opts.latency?.(no) ?? 0);
    const results = [];
    for (let i = no * size; i < Math.min(count, (no + 1) * size); i++)
      results.push({ id: i + 1, name: `brand ${i + 1}` });
    let page = { meta: { total: count, page: { no, offset: no * size, size } }, results };
    if (opts.tamper) page = opts.tamper(no, page);
    state.inFlight--;
    if (res.destroyed) return;
    state.answered++;
    sendJson(res, 200, page);
  });
  client = new CatalogClient({
    baseUrl: server.url,
    apiKey: 'k',
    apiSecret: 'secret',
    rateLimit: 0,
    retry: { minTimeout: 1, maxTimeout: 2 },
  });
  return state;
}

/** Polls `condition` until it holds (a hang fails by the test's timeout). */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await sleep(5);
}

const ids = (records: any[]) => records.map((r) => r.id);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('paged query source', () => {
  it('emits every record once, in page order, although later pages answer first', async () => {
    const random = rng(7);
    const state = await pagedServer(1234, { latency: (no) => (no === 0 ? 0 : Math.floor(random() * 40)) });
    const src = updatesQuery(client!, { pageSize: 100, concurrency: 4 });
    const metas: unknown[] = [];
    src.on('meta', (m) => metas.push(m));
    const records = await src.toArray();
    expect(ids(records)).toEqual(range(1, 1234));
    expect(metas).toEqual([{ total: 1234 }]);
    expect(src.total).toBe(1234);
    expect(state.maxInFlight).toBeGreaterThan(1);
    expect(state.maxInFlight).toBeLessThanOrEqual(4);
    // 13 pages, no request past the end.
    expect(server!.requests.map((r) => r.body.page.no as number).sort((a, b) => a - b)).toEqual(range(0, 12));
    expect(server!.requests.every((r) => JSON.stringify(r.body.sorting) === '{"id":"ASC"}')).toBe(true);
    expect(originOf(records[150])).toEqual({ endpoint: 'updates.query', page: 1, index: 150 });
  });

  it('a slow consumer holds back requests: at most concurrency pages ahead of what it read', async () => {
    await pagedServer(5000, {});
    const concurrency = 3;
    const src = updatesQuery(client!, { pageSize: 50, concurrency });
    let read = 0;
    const aheadSeen: number[] = [];
    for await (const _ of src) {
      read++;
      if (read % 25 === 0) {
        await sleep(5);
        // Pages requested beyond those being read: in flight + fetched + buffered in the stream.
        aheadSeen.push(server!.requests.length - Math.ceil(read / 50));
      }
      if (read === 1000) break;
    }
    await sleep(50);
    // concurrency pages in the queue + up to one page in the Readable's buffer.
    expect(Math.max(...aheadSeen)).toBeLessThanOrEqual(concurrency + 1);
    expect(server!.requests.length).toBeLessThanOrEqual(1000 / 50 + concurrency + 1);
    expect(server!.requests.length).toBeLessThan(100);
  });

  it('reports page and total events and sends page 0 alone first', async () => {
    await pagedServer(260, {});
    const ctx = testContext();
    const events: [string, unknown][] = [];
    ctx.events.on('total', (e) => events.push(['total', e]));
    ctx.events.on('page', (e) => events.push(['page', e]));
    const src = updatesQuery(client!, { pageSize: 100 }, { events: ctx.events });
    expect((await src.toArray()).length).toBe(260);
    expect(events).toEqual([
      ['total', { endpoint: 'updates.query', total: 260, capped: false }],
      ['page', { endpoint: 'updates.query', records: 100, page: 0 }],
      ['page', { endpoint: 'updates.query', records: 100, page: 1 }],
      ['page', { endpoint: 'updates.query', records: 60, page: 2 }],
    ]);
  });

  it('an empty result ends at once after one request', async () => {
    await pagedServer(0, {});
    const src = updatesQuery(client!, {});
    expect(await src.toArray()).toEqual([]);
    expect(src.total).toBe(0);
    expect(server!.requests).toHaveLength(1);
  });

  it('fails with a DataError when a page contradicts its own total (a total that keeps dropping is re-read first)', async () => {
    await pagedServer(700, {
      tamper: (no, page) => (no === 2 ? { ...page, meta: { ...page.meta, total: 699 } } : page),
    });
    await expect(updatesQuery(client!, { pageSize: 250 }).toArray()).rejects.toMatchObject({
      code: 'source.total_mismatch',
      constructor: DataError,
    });
    await client!.close();
    await server!.close();
    await pagedServer(700, { tamper: (no, page) => (no === 1 ? { ...page, results: page.results.slice(1) } : page) });
    const err = await updatesQuery(client!, { pageSize: 250 })
      .toArray()
      .catch((e) => e);
    expect(err).toBeInstanceOf(DataError);
    expect(err.message).toMatch(
      /page 1 reported total 700 with 249 records where 250 records were expected: the data changed during the extract; run it again/,
    );
  });

  it('aborting the run stops it before the page in flight is answered, and cancels that request', async () => {
    // Pages take 2 s: an abort that waited for the request, or left it running, shows as an answer.
    const state = await pagedServer(5000, { latency: () => 2_000 });
    const ctx = testContext();
    const src = mediaQuery(client!, {}, { events: ctx.events, signal: ctx.signal });
    const done = src.toArray().catch((e) => e);
    await until(() => state.inFlight > 0);
    ctx.controller.abort();
    expect(await done).toBeInstanceOf(AbortedError);
    await until(() => state.cancelled + state.answered === server!.requests.length);
    expect(state.answered).toBe(0);
  });

  it('catalog-categories sends no sorting', async () => {
    await pagedServer(3, {});
    await catalogCategoriesQuery(client!, {}).toArray();
    // A reference table is read in one request without page: one consistent answer (read-window.ts).
    expect(server!.requests[0]!.body).toEqual({});
  });
});

describe('source stages', () => {
  it('registers the sixteen source types, with strict described options', () => {
    const registry = new StageRegistry().register(...sourceStages);
    expect(registry.types('source').sort()).toEqual(
      [
        'active-ingredients.query',
        'atc-categories.query',
        'osp-categories.query',
        'product-families.query',
        'brands.query',
        'catalog-categories.query',
        'colors.query',
        'corrections.query',
        'dietary-restrictions.query',
        'media.query',
        'media.stream',
        'organizations.query',
        'products.query',
        'products.stream',
        'public-categories.query',
        'updates.query',
      ].sort(),
    );
    for (const def of sourceStages) expect(def.kind).toBe('source');
  });

  it('creates a source from pipeline options through ctx.client, and reports bad options with their path', async () => {
    await pagedServer(3, {});
    const registry = new StageRegistry().register(...sourceStages);
    const ctx = testContext();
    ctx.client = client;
    const src = registry.create<NodeJS.ReadableStream>(
      'source',
      { type: 'brands.query', filter: { search: 'x' }, pageSize: 50 },
      ctx,
    );
    const out: unknown[] = [];
    for await (const r of src as AsyncIterable<unknown>) out.push(r);
    expect(out).toHaveLength(3);
    // brands have no createdAt filter: read whole, in one request without page (read-window.ts).
    expect(server!.requests[0]!.body).toEqual({ filter: { search: 'x' }, sorting: { id: 'ASC' } });
    expect(() => registry.create('source', { type: 'media.query', pageSize: 20 }, ctx)).toThrow(/source.pageSize/);
    expect(() => registry.create('source', { type: 'media.query', pagesize: 50 }, ctx)).toThrow(ConfigError);
    expect(() => registry.create('source', { type: 'products.query', filter: { status: 'gone' } }, ctx)).toThrow(
      /source.filter.status: "gone" is not allowed/,
    );
    expect(() => registry.create('source', { type: 'products.query' }, ctx)).toThrow(/source.filter/);
    const bare = testContext();
    expect(() => registry.create('source', { type: 'media.query' }, bare)).toThrow(/needs a CatalogClient/);
  });

  it('the code API validates like the pipeline loader and rejects long lists under or/not', async () => {
    await pagedServer(3, {});
    expect(() => productsQuery(client!, { filter: { status: 'active' }, concurrency: 0 })).toThrow(
      /products.query.concurrency/,
    );
    const many = Array.from({ length: 1001 }, (_, i) => `P${i}`);
    expect(() => productsQuery(client!, { filter: { or: [{ id: many }, { status: 'active' }] } })).toThrow(
      /filter.or\[0\].id: lists 1001 codes inside `or`\/`not`/,
    );
    // Bad codes are reported at their original position, past the first thousand.
    const bad: unknown[] = Array.from({ length: 2500 }, (_, i) => i);
    bad[1700] = 'x';
    expect(() => brandsQuery(client!, { filter: { id: bad as number[] } })).toThrow(/filter.id\[1700\]/);
    void RequestValidationError;
  });
});
