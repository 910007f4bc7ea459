import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { originOf, setOrigin } from '../../src/core/origin.js';
import { pickStage } from '../../src/transforms/index.js';
import { pick } from '../../src/pipeline/code-api.js';
import { context, fixture, plain, run } from './support.js';

describe('pick', () => {
  it('keeps the listed fields in the listed order, missing ones as null', async () => {
    const input = fixture<any[]>('products.json').map((p, i) =>
      setOrigin(p, { endpoint: 'products.query', page: 0, index: i }),
    );
    const out = await run(input, pick({ fields: ['eanGtin13', 'id', 'cannabisData', 'meta.updatedAt'] }, context()));
    expect(plain(out[1])).toEqual({
      eanGtin13: null,
      id: 'P0000002',
      cannabisData: null,
      meta: { updatedAt: 1700000100 },
    });
    expect(Object.keys(out[0])).toEqual(['eanGtin13', 'id', 'cannabisData', 'meta']);
    expect(out[2].cannabisData).toBe(input[2].cannabisData);
    expect(originOf(out[3])).toEqual({ endpoint: 'products.query', page: 0, index: 3 });
  });

  it('leaves missing fields out with missing: omit', async () => {
    const [, p2] = await run(
      fixture<any[]>('products.json'),
      pick({ fields: ['id', 'eanGtin13', 'weightWithUnit.value'], missing: 'omit' }, context()),
    );
    expect(p2).toEqual({ id: 'P0000002' });
  });

  it('refuses list paths and overlapping fields', () => {
    expect(() => pick({ fields: ['brands[].id'] }, context())).toThrow(/extract pulls values out of lists/);
    expect(() => pick({ fields: ['meta', 'meta.createdAt'] }, context())).toThrow(ConfigError);
    expect(pickStage.options.safeParse({ fields: [] }).success).toBe(false);
  });
});
