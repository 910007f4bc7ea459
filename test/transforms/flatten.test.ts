import { describe, expect, it } from 'vitest';
import { originOf, setOrigin } from '../../src/core/origin.js';
import { flatten } from '../../src/pipeline/code-api.js';
import { context, fixture, run } from './support.js';

describe('flatten', () => {
  it('turns nested objects into a_b columns; lists and nulls stay', async () => {
    const input = fixture<any[]>('products.json').map((p, i) => setOrigin(p, { endpoint: 'products.query', index: i }));
    const [p1, , p3] = await run(input, flatten({}, context()));
    expect(p1).toMatchObject({
      weightWithUnit_value: 120,
      weightWithUnit_unit: 'g',
      meta_createdAt: 1600000000,
      name_en: 'Vitamin C 500 mg',
      cannabisData: null,
    });
    expect(p1).not.toHaveProperty('meta');
    expect(p1.photos).toBe(input[0].photos);
    expect(p3).toMatchObject({ cannabisData_cannabisForm: 'oil', cannabisData_thcPercentage: null });
    expect(p3.cannabisData_terpenes).toEqual([{ name: 'β-Caryophyllene', percentage: 0.3 }]);
    expect(originOf(p3)).toEqual({ endpoint: 'products.query', index: 2 });
  });

  it('flattens only the listed fields, to a depth, with a separator', async () => {
    const [out] = await run(
      [{ id: 1, a: { b: { c: 1 } }, m: { x: 1 } }],
      flatten({ fields: ['a'], maxDepth: 1, separator: '__' }, context()),
    );
    expect(out).toEqual({ id: 1, a__b: { c: 1 }, m: { x: 1 } });
  });
});
