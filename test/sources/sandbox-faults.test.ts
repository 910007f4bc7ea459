// Sources against the sandbox over loopback with its fault injection on: each
// test asserts the exact ids delivered (no loss, no duplicates, in order).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { StreamProtocolError } from '../../src/client/index.js';
import { mediaStream, productsQuery, productsStream } from '../../src/sources/index.js';
import {
  type SandboxHarness,
  expectCreatedAtRead,
  expectSameSequence,
  productIdsWithStatus,
  sandboxHarness,
} from './sandbox-harness.js';

let h: SandboxHarness;
let active: string[];
beforeAll(async () => {
  h = await sandboxHarness({ products: 3000, seed: 5 });
  active = productIdsWithStatus(h.sandbox, 'active');
});
afterAll(() => h.close());
beforeEach(() => {
  h.sandbox.setFaults({});
  h.sandbox.resetStats();
  h.seen.length = 0;
});

const ids = (records: any[]) => records.map((r) => r.id);
const count = (name: string) => h.seen.filter((e) => e.name === name).length;

describe('products.query under faults', () => {
  it('baseline: exactly the active products, in createdAt order', async () => {
    expect(active.length).toBeGreaterThan(1000);
    const records = await productsQuery(h.client, { filter: { status: 'active' } }).toArray();
    expectCreatedAtRead(records, active);
    expect(count('retry')).toBe(0);
  });

  it('a 429 burst: throttled, retried, nothing lost or repeated', async () => {
    h.sandbox.setFaults({ tooManyRequests: { after: 2, count: 4 } });
    const records = await productsQuery(h.client, { filter: { status: 'active' }, concurrency: 3 }).toArray();
    expectCreatedAtRead(records, active);
    expect(h.sandbox.stats.faults.tooManyRequests).toBe(4);
    expect(count('throttle')).toBe(4);
  });

  it('503s: retried, exact ids', async () => {
    h.sandbox.setFaults({ errorRate: 0.3, errorStatuses: [503] });
    const records = await productsQuery(h.client, { filter: { status: 'active' }, pageSize: 100 }).toArray();
    expectCreatedAtRead(records, active);
    expect(h.sandbox.stats.faults.errors).toBeGreaterThan(0);
    expect(count('retry')).toBe(h.sandbox.stats.faults.errors);
  });

  it('added latency with jitter: pages come back out of order, records do not', async () => {
    h.sandbox.setFaults({ latencyMs: 5, latencyJitterMs: 60 });
    const records = await productsQuery(h.client, {
      filter: { status: 'active' },
      pageSize: 50,
      concurrency: 4,
    }).toArray();
    expectCreatedAtRead(records, active);
  });

  it('reset connections: retried, exact ids', async () => {
    h.sandbox.setFaults({ resetRate: 0.25 });
    const records = await productsQuery(h.client, { filter: { status: 'active' }, pageSize: 100 }).toArray();
    expectCreatedAtRead(records, active);
    expect(h.sandbox.stats.faults.resets).toBeGreaterThan(0);
  });
});

describe('streams under faults', () => {
  const mediaIds = () => Array.from({ length: h.sandbox.dataset.mediaCount }, (_, i) => i + 1);

  it('media.stream cut mid-way is resumed: every media once, in order', async () => {
    h.sandbox.setFaults({ streamCut: { afterLines: 1234, times: 2 } });
    const src = mediaStream(h.client, {});
    const records = await src.toArray();
    expectSameSequence(ids(records), mediaIds());
    expect(src.resumes).toBe(2);
    expect(h.sandbox.stats.faults.streamCuts).toBe(2);
    expect(h.seen.filter((e) => e.name === 'info' && e.payload.code === 'source.stream_resumed')).toHaveLength(2);
  });

  it('products.stream cut mid-way, with a 429 before it: exact ids', async () => {
    h.sandbox.setFaults({ streamCut: { afterLines: 700 }, tooManyRequests: { after: 0, count: 1 } });
    const records = await productsStream(h.client, { filter: { status: 'active' } }).toArray();
    expectSameSequence(ids(records), active);
  });

  it('a malformed line: StreamProtocolError with the index, after exactly the lines before it', async () => {
    h.sandbox.setFaults({ malformedLine: { atIndex: 500 } });
    const got: number[] = [];
    const src = mediaStream(h.client, {});
    src.on('data', (r) => got.push(r.id));
    const err: any = await new Promise((resolve) => src.on('error', resolve).on('end', () => resolve(undefined)));
    expect(err).toBeInstanceOf(StreamProtocolError);
    expect(err.code).toBe('stream.malformed_line');
    expect(err.index).toBe(500);
    expectSameSequence(got, mediaIds().slice(0, 500));
  });

  it('an error line: a typed error with the service message', async () => {
    h.sandbox.setFaults({ errorLine: { atIndex: 300 } });
    const err: any = await mediaStream(h.client, {})
      .toArray()
      .catch((e) => e);
    expect(err).toBeInstanceOf(StreamProtocolError);
    expect(err.code).toBe('stream.error_line');
    expect(err.index).toBe(300);
    expect(err.apiError).toMatchObject({ status: 500, apiCode: 'internal_error' });
  });

  it('a stream short on every request (clean end before total): resumed, then an error naming the index', async () => {
    h.sandbox.setFaults({ shortStream: { dropLast: 3, times: Infinity } });
    const total = h.sandbox.dataset.mediaCount;
    const err: any = await mediaStream(h.client, { maxResumes: 1 })
      .toArray()
      .catch((e) => e);
    expect(err).toBeInstanceOf(StreamProtocolError);
    expect(err.code).toBe('stream.short');
    expect(err.index).toBe(total - 3);
  });

  it('no match: 204, an empty stream', async () => {
    const src = productsStream(h.client, { filter: { id: 'P9999999' } });
    expect(await src.toArray()).toEqual([]);
    expect(src.total).toBe(0);
  });
});

describe('chunked streams', () => {
  it('products.stream with 1,500 ids: one stream per chunk, exactly those ids', async () => {
    const wanted = active.slice(0, 1500);
    const src = productsStream(h.client, { filter: { and: [{ status: 'active' }, { id: wanted }] } });
    const metas: unknown[] = [];
    src.on('meta', (m) => metas.push(m));
    const records = await src.toArray();
    expectSameSequence(ids(records), wanted);
    expect(h.sandbox.stats.byEndpoint['products.stream']).toEqual({ 200: 2 });
    expect(metas).toEqual([{ total: 1500 }]);
  });
});
