import { describe, expect, it } from 'vitest';
import { originOf, setOrigin } from '../../src/core/origin.js';
import { explode } from '../../src/pipeline/code-api.js';
import { context, fixture, run } from './support.js';

describe('explode', () => {
  it('gives one row per photo carrying the parent id; products without photos give none', async () => {
    const input = fixture<any[]>('products.json').map((p, i) =>
      setOrigin(p, { endpoint: 'products.query', page: 2, index: i }),
    );
    const stage = explode({ field: 'photos', indexColumn: 'position', carry: { status: 'status' } }, context());
    const rows = await run(input, stage);
    expect(rows.map((r) => [r.productId, r.position, r.displayOrder ?? null])).toEqual([
      ['P0000001', 0, 2],
      ['P0000001', 1, 1],
      ['P0000003', 0, 1],
      ['P0000004', 0, null],
      ['P0000004', 1, 3],
    ]);
    expect(rows[0]).toMatchObject({
      status: 'active',
      photoType: 'packshot',
      formats: { largeWebp: 'https://img/p1/2-large.webp' },
    });
    expect(Object.keys(rows[0]).slice(0, 3)).toEqual(['productId', 'status', 'position']);
    expect(originOf(rows[4])).toEqual({ endpoint: 'products.query', page: 2, index: 3 });
    expect(stage.stats).toMatchObject({ in: 4, out: 5, dropped: 1 });
  });

  it('puts non-object elements in a value column and keeps empty parents on request', async () => {
    const rows = await run(
      fixture<any[]>('products.json').slice(0, 2),
      explode({ field: 'ean', keepEmpty: true, parentIdColumn: 'pid', valueColumn: 'code' }, context()),
    );
    expect(rows).toEqual([
      { pid: 'P0000001', code: 12345678905 },
      { pid: 'P0000001', code: 5412345678908 },
      { pid: 'P0000001', code: 12345678901231 },
      { pid: 'P0000002' },
    ]);
  });

  it('names the id column after the resource, and the parent id wins over an element field', async () => {
    const rows = await run(
      [{ id: 5, content: [{ id: 1, text: 'a' }] }],
      explode({ field: 'content' }, context({ source: { type: 'updates.query', resource: 'news-item' } })),
    );
    expect(rows).toEqual([{ newsItemId: 5, id: 1, text: 'a' }]);
    const nested = await run(
      [{ id: 'P', cannabisData: { terpenes: [{ name: 'Linalool' }] } }],
      explode({ field: 'cannabisData.terpenes', parentIdColumn: 'id' }, context()),
    );
    expect(nested).toEqual([{ id: 'P', name: 'Linalool' }]);
  });
});
