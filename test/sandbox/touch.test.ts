// Records change while the sandbox runs: touch (in-process and over the admin
// route) moves meta.updatedAt, updatedSince then finds exactly the touched
// records, the change shows in the record, and cached query results from
// before the touch are not served after it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GENERATION_EPOCH } from '../../src/sandbox/index.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let sb: TestSandbox;
beforeAll(async () => {
  sb = await startTestSandbox({ products: 500, seed: 13 });
});
afterAll(() => sb.close());

const since = async (from: number | { from: number; until: number }) =>
  (await sb.stream('/v4/products/stream', { filter: { updatedSince: from }, sorting: { id: 'ASC' } })).lines.map(
    (l) => l.result,
  );

describe('touch', () => {
  it('moves updatedAt of the given products to now; updatedSince finds exactly them', async () => {
    expect(await since(GENERATION_EPOCH)).toEqual([]);
    const before = (
      await sb.query('/v4/products/query', {
        filter: { id: ['P0000010', 'P0000300'] },
        sorting: { id: 'ASC' },
        page: { no: 0, size: 10 },
      })
    ).results;
    // Warm the query cache with the sorting the touch will change.
    const orderBefore = (
      await sb.query('/v4/products/query', {
        filter: { createdAt: 0 },
        sorting: { touchedAt: 'DESC' },
        page: { no: 0, size: 10 },
      })
    ).results.map((p: any) => p.id);
    const now = Math.floor(Date.now() / 1000);
    const result = sb.touch(['P0000300', 'P0000010']);
    expect(result.products).toEqual(['P0000010', 'P0000300']);
    expect(result.at).toBeGreaterThanOrEqual(now);
    const touched = await since(result.at);
    expect(touched.map((p) => p.id)).toEqual(['P0000010', 'P0000300']);
    expect(touched.every((p) => p.meta.updatedAt === result.at)).toBe(true);
    // The record changed (price), not only its timestamp.
    expect(touched[0].publicPrice).toBe(before[0].publicPrice + 10);
    const orderAfter = (
      await sb.query('/v4/products/query', {
        filter: { createdAt: 0 },
        sorting: { touchedAt: 'DESC' },
        page: { no: 0, size: 10 },
      })
    ).results.map((p: any) => p.id);
    expect(orderAfter.slice(0, 2)).toEqual(['P0000010', 'P0000300']);
    expect(orderAfter).not.toEqual(orderBefore);
  });

  it('takes an explicit time, and {count} picks that many distinct products', async () => {
    const at = GENERATION_EPOCH + 1000;
    const result = sb.touch({ count: 7 }, at);
    expect(new Set(result.products).size).toBe(7);
    const found = await sb.stream('/v4/products/stream', {
      filter: { updatedSince: { from: at, until: at } },
      sorting: { id: 'ASC' },
    });
    expect(found.lines.map((l) => l.result.id)).toEqual(result.products);
  });

  it('works over the admin route, for products and media', async () => {
    const at = GENERATION_EPOCH + 5000;
    const answer = await sb.post('/_sandbox/touch', { ids: ['P0000001'], media: [3, 4], at });
    expect(answer.status).toBe(200);
    expect(answer.json()).toEqual({ products: ['P0000001'], media: [3, 4], at });
    const media = await sb.stream('/v4/media/stream', { filter: { updatedSince: at } });
    expect(media.lines.map((l) => l.result.id)).toEqual([3, 4]);
    expect((await since({ from: at, until: at })).map((p) => p.id)).toEqual(['P0000001']);
    expect((await sb.post('/_sandbox/touch', { ids: ['P9999999'] })).status).toBe(400);
    expect((await sb.post('/_sandbox/touch', { ids: 'P0000001' })).json().error.message).toContain('ids');
    expect(sb.touch(['P0000005', 'P0000005'], at).products).toEqual(['P0000005']);
    expect((await sb.post('/_sandbox/touch', { ids: ['P0000001'] }, { authorization: null })).status).toBe(401);
  });
});
