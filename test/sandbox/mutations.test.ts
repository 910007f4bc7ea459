// The admin routes that change the catalog the way the live service does between two runs:
// reveal (hidden products appear, updated at `at`: inserts), status (status and deleted flag
// change, updated at `at`), hide (products disappear from every result, with no event),
// invalidate (a new version, updated at `at`, that fails the schema until the product changes again).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Product } from '../../src/catalog/index.js';
import { GENERATION_EPOCH } from '../../src/sandbox/index.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let sb: TestSandbox;
beforeAll(async () => {
  sb = await startTestSandbox({ products: 300, seed: 17 });
});
afterAll(() => sb.close());

const all = async () =>
  (await sb.stream('/v4/products/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } })).lines.map(
    (l) => l.result,
  );
const ids = async (filter: unknown) =>
  (await sb.stream('/v4/products/stream', { filter, sorting: { id: 'ASC' } })).lines.map((l) => l.result.id as string);

describe('sandbox mutation routes', () => {
  it('hide takes products out of every result; reveal brings them back updated at `at`', async () => {
    const hidden = (await sb.post('/_sandbox/hide', { ids: ['P0000005', 'P0000200'], count: 3 })).json();
    expect(hidden.products).toHaveLength(5);
    expect(hidden.products).toEqual(expect.arrayContaining(['P0000005', 'P0000200']));
    const visible = await all();
    expect(visible).toHaveLength(295);
    expect(visible.map((p) => p.id)).not.toContain('P0000005');
    const page = await sb.query('/v4/products/query', {
      filter: { id: ['P0000005', 'P0000006'] },
      sorting: { id: 'ASC' },
      page: { no: 0, size: 10 },
    });
    expect(page.meta.total).toBe(1);
    expect((await sb.post('/_sandbox/hide', { ids: ['P0000005'] })).status).toBe(400);

    const at = GENERATION_EPOCH + 5000;
    const revealed = (await sb.post('/_sandbox/reveal', { ids: ['P0000005'], count: 2, at })).json();
    expect(revealed.products).toHaveLength(3);
    expect(revealed.products).toContain('P0000005');
    expect(await ids({ updatedSince: { from: at, until: at } })).toEqual(revealed.products);
    expect(await all()).toHaveLength(298);
    expect((await sb.post('/_sandbox/reveal', { ids: ['P0000007'] })).json().error.message).toContain('is not hidden');
  });

  it('status sets status and deleted, moves updatedAt; the status filter follows; replacement only when replaced', async () => {
    const at = GENERATION_EPOCH + 9000;
    const changed = (
      await sb.post('/_sandbox/status', { ids: ['P0000010', 'P0000011'], status: 'inactive', deleted: true, at })
    ).json();
    expect(changed).toEqual({ products: ['P0000010', 'P0000011'], at });
    const after = (await all()).filter((p) => changed.products.includes(p.id));
    expect(after.map((p) => [p.id, p.status, p.deleted, p.meta.updatedAt, p.replacement])).toEqual([
      ['P0000010', 'inactive', true, at, undefined],
      ['P0000011', 'inactive', true, at, undefined],
    ]);
    expect(await ids({ and: [{ status: 'inactive' }, { updatedSince: { from: at, until: at } }] })).toEqual([
      'P0000010',
      'P0000011',
    ]);
    await sb.post('/_sandbox/status', { ids: ['P0000010'], status: 'replaced', at: at + 1 });
    const replaced = (await all()).find((p) => p.id === 'P0000010');
    expect(replaced.status).toBe('replaced');
    expect(typeof replaced.replacement).toBe('string');
    expect((await sb.post('/_sandbox/status', { ids: ['P0000010'], status: 'gone' })).status).toBe(400);
  });

  it('invalidate serves a new version that fails the schema, in every answer, until the product changes again', async () => {
    const at = GENERATION_EPOCH + 12000;
    const bad = (await sb.post('/_sandbox/invalidate', { ids: ['P0000020', 'P0000021'], count: 1, at })).json();
    expect(bad.products).toHaveLength(3);
    expect(bad.at).toBe(at);
    const byId = new Map((await all()).map((p) => [p.id as string, p]));
    for (const [id, p] of byId) {
      expect(Product.safeParse(p).success, id).toBe(!bad.products.includes(id));
      if (bad.products.includes(id)) expect(p.meta.updatedAt).toBe(at);
    }
    const page = await sb.query('/v4/products/query', {
      filter: { id: bad.products },
      sorting: { id: 'ASC' },
      page: { no: 0, size: 10 },
    });
    expect(page.results.map((p) => Product.safeParse(p).success)).toEqual([false, false, false]);
    // Touched again: valid again.
    sb.touch(['P0000020'], at + 1);
    const again = (await all()).filter((p) => bad.products.includes(p.id));
    expect(again.map((p) => [p.id, Product.safeParse(p).success])).toEqual(
      bad.products.map((id: string) => [id, id === 'P0000020']),
    );
  });

  it('{count} draws are deterministic for a seed and a sequence of calls', async () => {
    const a = await startTestSandbox({ products: 300, seed: 99 });
    const b = await startTestSandbox({ products: 300, seed: 99 });
    try {
      for (const s of [a, b]) await s.post('/_sandbox/hide', { count: 4 });
      const draw = async (s: TestSandbox) =>
        (await s.post('/_sandbox/status', { count: 6, status: 'inactive', at: GENERATION_EPOCH + 1 })).json().products;
      expect(await draw(a)).toEqual(await draw(b));
    } finally {
      await a.close();
      await b.close();
    }
  });
});
