// The sandbox's reference endpoints agree with the products it serves: every
// public category, dietary restriction and color id on a product is served by
// its endpoint, media/query serves exactly the media of media/stream, and the
// find routes answer each record as the query endpoints serve it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestSandbox, startTestSandbox } from '../helpers/sandbox.js';

describe('sandbox reference endpoints', () => {
  let sb: TestSandbox;
  beforeAll(async () => {
    sb = await startTestSandbox({ products: 900, seed: 17 });
  });
  afterAll(() => sb?.close());

  it.each([
    ['publicCategories', '/v4/public-categories/query'],
    ['dietaryRestrictions', '/v4/dietary-restrictions/query'],
    ['colors', '/v4/colors/query'],
  ] as const)('every %s id on a product is served by %s', async (field, path) => {
    const served = await sb.query<{ id: string | number; name: Record<string, string> }>(path, {});
    const byId = new Map(served.results.map((r) => [r.id, r]));
    let seen = 0;
    for (let i = 0; i < sb.dataset.productCount; i++) {
      for (const ref of (sb.dataset.product(i)[field] as
        { id: string | number; name: Record<string, string> }[] | undefined) ?? []) {
        seen++;
        expect(byId.get(ref.id), `${field} ${ref.id} of ${sb.dataset.productId(i)}`).toBeDefined();
        expect(byId.get(ref.id)!.name).toEqual(ref.name);
      }
    }
    expect(seen).toBeGreaterThan(0);
  });

  it('media/query pages over the same media as media/stream', async () => {
    const stream = await sb.stream<{ id: number }>('/v4/media/stream', { sorting: { id: 'ASC' } });
    const paged: unknown[] = [];
    for (let no = 0; ; no++) {
      const page = await sb.query('/v4/media/query', { sorting: { id: 'ASC' }, page: { no, size: 250 } });
      expect(page.meta.total).toBe(stream.lines.length);
      paged.push(...page.results);
      if (page.results.length < 250) break;
    }
    expect(paged).toEqual(stream.lines.map((l) => l.result));
  });

  it('GET /v4/products/find and /v4/media/find answer one record, 404 when unknown, 400 without id', async () => {
    const product = await sb.post('/v4/products/find?id=P0000007', undefined, { method: 'GET' });
    expect(product.status).toBe(200);
    expect(product.json()).toEqual(sb.dataset.product(6));
    const media = await sb.post('/v4/media/find?id=12', undefined, { method: 'GET' });
    expect(media.json()).toEqual(sb.dataset.mediaRecord(11));
    const missing = await sb.post('/v4/products/find?id=P0099999', undefined, { method: 'GET' });
    expect(missing.status).toBe(404);
    expect(missing.json().error.code).toBe('not_found');
    expect((await sb.post(`/v4/media/find?id=${sb.dataset.mediaCount + 1}`, undefined, { method: 'GET' })).status).toBe(
      404,
    );
    expect((await sb.post('/v4/media/find', undefined, { method: 'GET' })).status).toBe(400);
    expect(
      (await sb.post('/v4/products/find?id=P0000007', undefined, { method: 'GET', authorization: null })).status,
    ).toBe(401);
  });

  it('the taxonomy endpoints refuse a filter the documentation does not show, with a 400 saying so', async () => {
    const answer = await sb.post('/v4/colors/query', { filter: { name: 'Blue' } });
    expect(answer.status).toBe(400);
    expect(answer.json().error.message).toContain('does not show its filters or sortings');
    expect((await sb.query('/v4/colors/query', { filter: {} })).meta.total).toBeGreaterThan(0);
  });
});
