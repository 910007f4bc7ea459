import { describe, expect, it } from 'vitest';
import { originOf, setOrigin } from '../../src/core/origin.js';
import { drop } from '../../src/pipeline/code-api.js';
import { context, fixture, run } from './support.js';

describe('drop', () => {
  it('removes top-level and nested fields without touching the input', async () => {
    const input = fixture<any[]>('products.json').map((p, i) => setOrigin(p, { endpoint: 'products.query', index: i }));
    const out = await run(
      input,
      drop({ fields: ['embedUrl', 'meta.createdAt', 'photos[].organizations', 'brands[].meta', 'ean[]'] }, context()),
    );
    expect(out[0]).not.toHaveProperty('ean');
    expect(out[0].meta).toEqual({ updatedAt: 1700000000 });
    expect(out[0].photos[0]).not.toHaveProperty('organizations');
    expect(out[0].photos[0].formats).toBe(input[0].photos[0].formats);
    expect(out[0].brands[0]).toEqual({ id: 11, name: { en: 'Acme', nl: 'Acme NL' } });
    expect(input[0].photos[0].organizations).toHaveLength(1);
    expect(input[0].meta.createdAt).toBe(1600000000);
    expect(out[1]).not.toHaveProperty('photos');
    expect(originOf(out[1])).toEqual({ endpoint: 'products.query', index: 1 });
  });
});
