import { describe, expect, it } from 'vitest';
import { dedupe } from '../../src/transforms/index.js';
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
});
