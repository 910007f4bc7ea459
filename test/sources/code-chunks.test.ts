// Splitting code lists over 1000: where a list can be split, how chunks
// combine with the rest of the filter, repeats, several long lists, and the
// de-duplication a multi-valued code filter needs (end to end over HTTP).
import { afterEach, describe, expect, it } from 'vitest';
import { CatalogClient } from '../../src/client/index.js';
import { RequestValidationError } from '../../src/errors.js';
import { RunEvents } from '../../src/events.js';
import { chunkFilter, productsQuery } from '../../src/sources/index.js';
import { type TestServer, sendJson, startTestServer } from '../client/http-test-server.js';

const ids = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `P${String(from + i).padStart(7, '0')}`);

describe('chunkFilter', () => {
  it('leaves filters without long lists alone', () => {
    const filter = { and: [{ status: 'active' }, { id: ids(1000) }] };
    expect(chunkFilter('products.query', filter)).toEqual({
      chunks: [{ filter }],
      dedupe: false,
      split: [],
      renamed: [],
    });
    expect(chunkFilter('brands.query', undefined)).toEqual({
      chunks: [{ filter: undefined }],
      dedupe: false,
      split: [],
      renamed: [],
    });
  });

  it('splits a top-level list into chunks of 1000 in order', () => {
    const plan = chunkFilter('products.query', { id: ids(2500) });
    expect(plan.chunks.map((c) => [c.label, (c.filter as any).id.length, (c.filter as any).id[0]])).toEqual([
      ['id chunk 1/3', 1000, 'P0000000'],
      ['id chunk 2/3', 1000, 'P0001000'],
      ['id chunk 3/3', 500, 'P0002000'],
    ]);
    expect(plan.dedupe).toBe(false);
  });

  it('keeps the rest of the filter in every chunk, flattening nested ands', () => {
    const plan = chunkFilter('products.query', {
      and: [{ status: 'active' }, { and: [{ id: ids(1500) }, { not: { brand: 3 } }] }],
    });
    expect(plan.chunks).toHaveLength(2);
    expect(plan.chunks[1]!.filter).toEqual({
      and: [{ status: 'active' }, { id: ids(500, 1000) }, { not: { brand: 3 } }],
    });
  });

  it('drops repeated codes before splitting', () => {
    const list = [...ids(900), ...ids(300)];
    const plan = chunkFilter('products.query', { id: list });
    expect(plan.chunks).toEqual([{ filter: { id: ids(900) }, label: 'id chunk 1/1' }]);
  });

  it('splits two long lists into every combination, and dedupes when a field can hold several codes', () => {
    const eans = Array.from({ length: 1200 }, (_, i) => 4_000_000_000_000 + i);
    const plan = chunkFilter('products.query', { and: [{ id: ids(1500) }, { ean: eans }] });
    expect(plan.chunks.map((c) => c.label)).toEqual([
      'id chunk 1/2, ean chunk 1/2',
      'id chunk 1/2, ean chunk 2/2',
      'id chunk 2/2, ean chunk 1/2',
      'id chunk 2/2, ean chunk 2/2',
    ]);
    expect(plan.chunks.every((c) => (c.filter as any).and.every((f: any) => (f.id ?? f.ean).length <= 1000))).toBe(
      true,
    );
    expect(plan.dedupe).toBe(true);
    expect(plan.split).toEqual(['id', 'ean']);
  });

  it('rejects a long list under or/not with its path', () => {
    for (const filter of [
      { or: [{ status: 'active' }, { id: ids(1001) }] },
      {
        and: [
          {
            not: {
              ean: Array(1001)
                .fill(1)
                .map((x, i) => x + i),
            },
          },
        ],
      },
    ]) {
      const err = (() => {
        try {
          chunkFilter('products.query', filter);
        } catch (e) {
          return e as RequestValidationError;
        }
      })();
      expect(err).toBeInstanceOf(RequestValidationError);
      expect(err!.path).toMatch(/^filter\.(or\[1\]\.id|and\[0\]\.not\.ean)$/);
    }
  });
});

describe('chunked queries over HTTP', () => {
  let server: TestServer | undefined;
  let client: CatalogClient | undefined;
  afterEach(async () => {
    await client?.close();
    await server?.close();
  });

  it('a product whose two EANs fall in different chunks is delivered once', async () => {
    // Product k has EANs 1000+k and 3000+k: with 2400 EANs asked, P0..P399 match chunk 1 and chunk 3.
    const products = Array.from({ length: 2000 }, (_, k) => ({
      id: `P${k}`,
      ean: [1000 + k, 3000 + k],
      meta: { createdAt: 1_600_000_000 + k, updatedAt: 1_600_000_000 + k },
    }));
    server = await startTestServer((req, res) => {
      // Read by createdAt (createdat-query.ts): the chunk's codes, AND-ed with the createdAt range left and
      // the ids delivered at its first second.
      const parts: any[] = req.body.filter.and ?? [req.body.filter];
      const wanted = new Set<number>(parts.find((f) => f.ean).ean);
      const range = parts.find((f) => f.createdAt)?.createdAt ?? {};
      const excluded = new Set<string>(parts.find((f) => f.not)?.not.id ?? []);
      expect(req.body.sorting).toEqual({ createdAt: 'ASC' });
      const matches = products.filter(
        (p) =>
          p.ean.some((e) => wanted.has(e)) &&
          p.meta.createdAt >= (range.from ?? 0) &&
          p.meta.createdAt <= (range.until ?? Infinity) &&
          !excluded.has(p.id),
      );
      const { no, size } = req.body.page;
      sendJson(res, 200, {
        meta: { total: matches.length, page: { no, offset: no * size, size } },
        results: matches.slice(no * size, (no + 1) * size),
      });
    });
    const events = new RunEvents();
    const infos: any[] = [];
    events.on('info', (e) => infos.push(e));
    client = new CatalogClient({ baseUrl: server.url, apiKey: 'k', apiSecret: 'secret', rateLimit: 0, events });
    const eans = [
      ...Array.from({ length: 2000 }, (_, k) => 1000 + k),
      ...Array.from({ length: 400 }, (_, k) => 3000 + k),
    ];
    const src = productsQuery(client, { filter: { ean: eans } });
    const records = await src.toArray();
    expect(records.map((r) => r.id).sort()).toEqual(products.map((p) => p.id).sort());
    expect(src.total).toBe(2000);
    expect(infos).toEqual([expect.objectContaining({ code: 'source.duplicates_dropped', duplicates: 400 })]);
  });
});
