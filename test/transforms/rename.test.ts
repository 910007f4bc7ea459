import { describe, expect, it } from 'vitest';
import { originOf, setOrigin } from '../../src/core/origin.js';
import { renameStage } from '../../src/transforms/index.js';
import { rename } from '../../src/pipeline/code-api.js';
import { context, plain, run } from './support.js';

describe('rename', () => {
  it('renames fields where they stand; a renamed field replaces one of the same name', async () => {
    const input = setOrigin(
      { id: 'P1', name_en: 'Vitamin C', title: 'old', status: 'active' },
      { endpoint: 'products.query', index: 0 },
    );
    const [out] = await run([input], rename({ fields: { name_en: 'title', id: 'productId' } }, context()));
    expect(plain(out)).toEqual({ productId: 'P1', title: 'Vitamin C', status: 'active' });
    expect(Object.keys(out)).toEqual(['productId', 'title', 'status']);
    expect(originOf(out)).toBeDefined();
    // without the source field, the target stays
    const [kept] = await run([{ id: 'P2', title: 'kept' }], rename({ fields: { name_en: 'title' } }, context()));
    expect(kept).toEqual({ id: 'P2', title: 'kept' });
  });

  it('swaps names', async () => {
    const [out] = await run([{ a: 1, b: 2 }], rename({ fields: { a: 'b', b: 'a' } }, context()));
    expect(out).toEqual({ b: 1, a: 2 });
  });

  it('refuses two fields renamed to one name, and an empty list', () => {
    expect(() => rename({ fields: { a: 'x', b: 'x' } }, context())).toThrow(/both renamed to "x"/);
    expect(renameStage.options.safeParse({ fields: {} }).success).toBe(false);
  });
});
