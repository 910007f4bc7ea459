import { describe, expect, it } from 'vitest';
import { dedupe } from '../../src/pipeline/code-api.js';
import { context, run } from './support.js';

describe('dedupe', () => {
  it('keeps the first record of each key and counts the dropped copies', async () => {
    const input = [
      { id: 'A', v: 1 },
      { id: 'B', v: 1 },
      { id: 'A', v: 2 },
      { v: 3 },
      { id: null, v: 4 },
      { id: 'B', v: 3 },
      { id: 1, v: 5 },
      { id: '1', v: 6 },
    ];
    const stage = dedupe({}, context());
    const out = await run(input, stage);
    expect(out.map((r) => r.v)).toEqual([1, 1, 3, 4, 5, 6]);
    expect(out[0]).toBe(input[0]);
    expect(stage.stats).toMatchObject({ in: 8, out: 6, dropped: 2, duplicates: 2, withoutKey: 2 });
  });

  it('takes composite keys and paths', async () => {
    const input = [
      { id: 'A', meta: { updatedAt: 1 } },
      { id: 'A', meta: { updatedAt: 2 } },
      { id: 'A', meta: { updatedAt: 1 } },
      { id: 'A|1', meta: { updatedAt: '' } },
    ];
    const out = await run(input, dedupe({ key: ['id', 'meta.updatedAt'] }, context()));
    expect(out).toEqual([input[0], input[1], input[3]]);
  });

  it('refuses a key path into a list, and counts an object value as no key (it would never match)', async () => {
    expect(() => dedupe({ key: 'brands[].id' }, context())).toThrow('dedupe: key: "brands[].id" reaches into a list');
    expect(() => dedupe({ key: ['id', 'photos[].url'] }, context())).toThrow(
      'dedupe: key[1]: "photos[].url" reaches into a list',
    );
    const input = [{ meta: { a: 1 } }, { meta: { a: 1 } }, { id: 'A', meta: { a: 1 } }];
    const single = dedupe({ key: 'meta' }, context());
    expect(await run(input, single)).toEqual(input);
    expect(single.stats).toMatchObject({ duplicates: 0, withoutKey: 3 });
    const composite = dedupe({ key: ['id', 'meta'] }, context());
    expect(await run(input, composite)).toEqual(input);
    expect(composite.stats).toMatchObject({ duplicates: 0, withoutKey: 3 });
  });
});
