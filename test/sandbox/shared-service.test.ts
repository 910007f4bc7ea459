// The sandbox as a shared service (issue 24): hostile requests cannot make it fail or grow.
// - its query cache is bounded by entries and bytes (LRU): distinct large filters that matched
//   nothing used to stay forever (80 of 1 MB left 85 MB behind after GC);
// - a deeply nested filter answers 422 with the API's error body (it overflowed the stack: 500);
// - the request body is bounded (413), told by Content-Length or counted as it arrives.
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { QueryCache, type Collection } from '../../src/sandbox/query-engine.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let sb: TestSandbox | undefined;
afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

const page = { no: 0, size: 10 };

describe('query cache', () => {
  it('distinct large filters that match nothing do not pile up: bounded by bytes and entries', async () => {
    sb = await startTestSandbox({ products: 200, queryCache: { maxEntries: 50, maxBytes: 1024 * 1024 } });
    for (let n = 0; n < 30; n++) {
      // ~200 KB of ids that match nothing
      const ids = Array.from({ length: 1000 }, (_, i) => `P${String(n).padStart(3, '0')}-${i}-${'x'.repeat(190)}`);
      const answer = await sb.post('/v4/products/query', { filter: { id: ids }, sorting: { id: 'ASC' }, page });
      expect(answer.status, answer.text).toBe(200);
      expect(answer.json().meta.total).toBe(0);
      expect(sb.stats.cache.bytes).toBeLessThanOrEqual(1024 * 1024);
    }
    expect(sb.stats.cache.entries).toBeLessThanOrEqual(3);
  });

  it('LRU: the most recent queries stay, by entries and by bytes (keys counted)', () => {
    const collection: Collection = {
      name: 'c',
      size: () => 100,
      version: () => 0,
      leaf: (_name, value) => (i) => i < Number(String(value).length % 7),
      sortKey: () => ({ kind: 'number', key: (i) => i }),
      json: () => '{}',
    };
    let evaluated = 0;
    const counting: Collection = {
      ...collection,
      leaf: (...args) => {
        evaluated++;
        return collection.leaf(...args);
      },
    };
    const cache = new QueryCache({ maxEntries: 3, maxBytes: 10_000 });
    const ask = (v: string) => cache.get(counting, { filter: { name: v } });
    for (const v of ['a', 'b', 'c', 'd']) ask(v);
    expect(cache.size.entries).toBe(3);
    evaluated = 0;
    ask('d');
    ask('b');
    expect(evaluated).toBe(0); // hits
    ask('a'); // evicted earlier
    expect(evaluated).toBe(1);
    // one key of 6,000 characters (12,000 bytes) is over the budget: answered, not kept
    ask('y'.repeat(6000));
    expect(cache.size.entries).toBe(3);
    ask('z'.repeat(2000)); // 4,000 bytes: the older entries make room
    expect(cache.size.bytes).toBeLessThanOrEqual(10_000);
    expect(cache.size.entries).toBeLessThanOrEqual(3);
  });
});

describe('deeply nested filters', () => {
  const nested = (depth: number) =>
    `{"filter":${'{"not":'.repeat(depth)}{"status":"active"}${'}'.repeat(depth)},"sorting":{"id":"ASC"},"page":{"no":0,"size":10}}`;

  it.each([70, 50_000])('%i levels of "not": 422 validation_failed with the API error body, not 500', async (depth) => {
    sb = await startTestSandbox({ products: 50 });
    const answer = await sb.post('/v4/products/query', undefined, { rawBody: nested(depth) });
    expect(answer.status, answer.text.slice(0, 300)).toBe(422);
    expect(answer.json()).toEqual({
      error: {
        status: 422,
        code: 'validation_failed',
        message: 'filter: nested more than 64 levels deep (filters nest a few levels)',
        violations: [{ path: 'filter', message: 'nested more than 64 levels deep (filters nest a few levels)' }],
      },
    });
    // the sandbox still answers
    expect(
      (await sb.query('/v4/products/query', { filter: { status: 'active' }, sorting: { id: 'ASC' }, page })).meta.total,
    ).toBeGreaterThan(0);
  });

  it('a stream request too', async () => {
    sb = await startTestSandbox({ products: 50 });
    const answer = await sb.post('/v4/products/stream', undefined, {
      rawBody: nested(1000).replace(/,"page":[^}]*}/, ''),
    });
    expect(answer.status).toBe(422);
    expect(answer.json().error.code).toBe('validation_failed');
  });

  it('a filter nested within the bound is answered', async () => {
    sb = await startTestSandbox({ products: 50 });
    const answer = await sb.post('/v4/products/query', undefined, { rawBody: nested(20) });
    expect(answer.status, answer.text).toBe(200);
  });
});

describe('request body size', () => {
  it('past maxBodyBytes: 413 with the API error body, by Content-Length or as it arrives', async () => {
    sb = await startTestSandbox({ products: 50, maxBodyBytes: 10_000 });
    const big = JSON.stringify({ filter: { id: ['x'.repeat(20_000)] }, sorting: { id: 'ASC' }, page });
    const told = await sb.post('/v4/products/query', undefined, { rawBody: big });
    expect(told.status).toBe(413);
    expect(told.json().error).toMatchObject({ status: 413, code: 'payload_too_large' });
    // chunked: no Content-Length, counted while reading
    const res = await request(`${sb.url}/v4/products/query`, {
      method: 'POST',
      headers: { authorization: sb.authorization, 'content-type': 'application/json' },
      body: Readable.from(Array.from({ length: 20 }, () => Buffer.alloc(1000, 0x20))),
    });
    expect(res.statusCode).toBe(413);
    expect((await res.body.json()) as unknown).toMatchObject({ error: { status: 413, code: 'payload_too_large' } });
  });

  it('defaults to 1 MiB', async () => {
    sb = await startTestSandbox({ products: 50 });
    const answer = await sb.post('/v4/products/query', undefined, { rawBody: ' '.repeat(1024 * 1024 + 1) });
    expect(answer.status).toBe(413);
  });
});
