import { describe, expect, it } from 'vitest';
import { originOf, setOrigin } from '../../src/core/origin.js';
import { extractStage } from '../../src/transforms/index.js';
import { extract } from '../../src/pipeline/code-api.js';
import { context, fixture, run } from './support.js';

describe('extract', () => {
  it('adds columns by path: values, lists, selections, first values', async () => {
    const input = fixture<any[]>('products.json').map((p, i) => setOrigin(p, { endpoint: 'products.query', index: i }));
    const out = await run(
      input,
      extract(
        {
          columns: {
            brand_ids: 'brands[].id',
            supplier: { path: 'organizations[type=supplier].name.nl', first: true },
            supplier_names: 'organizations[type=supplier].name.nl',
            updated: 'meta.updatedAt',
            first_photo_type: 'photos[0].photoType',
          },
        },
        context(),
      ),
    );
    expect(out[0]).toMatchObject({
      brand_ids: [11],
      supplier: 'Leverancier BV',
      supplier_names: ['Leverancier BV'],
      updated: 1700000000,
      first_photo_type: 'packshot',
    });
    expect(out[1]).toMatchObject({ brand_ids: [], supplier: null, supplier_names: [], first_photo_type: null });
    expect(out[3].brand_ids).toEqual([12, 13]);
    // the record keeps its fields
    expect(out[0].brands).toBe(input[0].brands);
    expect(originOf(out[2])).toEqual({ endpoint: 'products.query', index: 2 });
  });

  it('says so, once per column, when a column replaces a field the record already had', async () => {
    const ctx = context();
    const warnings: any[] = [];
    ctx.events.on('warning', (w) => warnings.push(w));
    const input = [
      { id: 'A', brand: 'own', brands: [{ id: 1 }] },
      { id: 'B', brand: 'mine', brands: [] },
      { id: 'C', brands: [{ id: 3 }] },
    ];
    const out = await run(
      input,
      extract({ columns: { brand: { path: 'brands[].id', first: true }, other: 'id' } }, ctx),
    );
    expect(out.map((r) => r.brand)).toEqual([1, null, 3]);
    expect(warnings).toEqual([
      {
        code: 'extract.replaces_field',
        message:
          'extract: column "brand" replaces the record\'s own field "brand" (first on record "A"); name the column differently to keep both',
      },
    ]);
  });

  it('omits missing values with missing: omit, and checks paths early', async () => {
    const [p2] = await run(
      [fixture<any[]>('products.json')[1]],
      extract({ columns: { w: 'weightWithUnit.value' }, missing: 'omit' }, context()),
    );
    expect(p2).not.toHaveProperty('w');
    expect(() => extract({ columns: { x: 'brands[' } }, context())).toThrow(
      /columns\.x: invalid field path "brands\["/,
    );
    expect(extractStage.options.safeParse({ columns: { x: { path: 'a', frist: true } } }).success).toBe(false);
  });
});
