import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, DataError } from '../../src/errors.js';
import { originOf, setOrigin } from '../../src/core/origin.js';
import { RecordTransform, customStage, filter, flatMap, map } from '../../src/transforms/index.js';
import { custom } from '../../src/pipeline/code-api.js';
import { context, run } from './support.js';

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'custom-stage-'));
  writeFileSync(
    join(dir, 'my-transform.mjs'),
    `export default (record, ctx) => ({ ...record, tag: ctx.options.tag, stage: ctx.stage, run: ctx.run.name });
export async function slowFilter(record) {
  await new Promise((r) => setTimeout(r, record.wait ?? 0));
  return record.keep;
}
export const perPhoto = (record) => (record.photos ?? []).map((p, i) => ({ id: record.id, i, ...p }));
export const notAFunction = 42;
`,
  );
  writeFileSync(join(dir, 'broken.mjs'), 'export default (;\n');
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const records = () => [
  setOrigin({ id: 1, keep: true, wait: 5, photos: [{ a: 1 }, { a: 2 }] }, { endpoint: 'products.query', index: 0 }),
  setOrigin({ id: 2, keep: false, wait: 0 }, { endpoint: 'products.query', index: 1 }),
  setOrigin({ id: 3, keep: true, wait: 1, photos: [] }, { endpoint: 'products.query', index: 2 }),
];

describe('custom stage (user module)', () => {
  it('loads the module relative to baseDir and calls its default export as a map', async () => {
    const stage = customStage.create(
      customStage.options.parse({ module: './my-transform.mjs', options: { tag: 'x' } }),
      context({ baseDir: dir }),
    );
    const out = await run(records(), stage);
    expect(out.map((r) => [r.id, r.tag, r.stage, r.run])).toEqual([
      [1, 'x', 'custom(./my-transform.mjs)', 'test'],
      [2, 'x', 'custom(./my-transform.mjs)', 'test'],
      [3, 'x', 'custom(./my-transform.mjs)', 'test'],
    ]);
    expect(originOf(out[1])).toEqual({ endpoint: 'products.query', index: 1 });
  });

  it('runs a named async filter in order, and a flat-map', async () => {
    const kept = await run(
      records(),
      custom({ module: './my-transform.mjs', export: 'slowFilter', kind: 'filter' }, context({ baseDir: dir })),
    );
    expect(kept.map((r) => r.id)).toEqual([1, 3]);
    const photos = await run(
      records(),
      custom({ module: join(dir, 'my-transform.mjs'), export: 'perPhoto', kind: 'flat-map' }, context()),
    );
    expect(photos.map((r) => [r.id, r.i, r.a])).toEqual([
      [1, 0, 1],
      [1, 1, 2],
    ]);
    expect(originOf(photos[1])).toEqual({ endpoint: 'products.query', index: 0 });
  });

  it('loads its module inside a fused chain too', async () => {
    const ctx = context({ baseDir: dir });
    const stages = [
      custom({ module: './my-transform.mjs', export: 'slowFilter', kind: 'filter' }, ctx),
      custom({ module: './my-transform.mjs', options: { tag: 'y' } }, ctx),
    ];
    const out = await run(records(), RecordTransform.fuse(stages));
    expect(out.map((r) => [r.id, r.tag])).toEqual([
      [1, 'y'],
      [3, 'y'],
    ]);
    expect(stages.map((s) => s.stats.out)).toEqual([2, 2]);
  });

  it('says clearly when the module or the export is wrong', async () => {
    const missing = await run(records(), custom({ module: './nope.mjs' }, context({ baseDir: dir }))).catch((e) => e);
    expect(missing).toBeInstanceOf(ConfigError);
    expect(missing.message).toBe(
      `custom: module "./nope.mjs" not found (looked for ${join(dir, 'nope.mjs')}, relative to ${dir})`,
    );
    const notFn = await run(
      records(),
      custom({ module: './my-transform.mjs', export: 'notAFunction' }, context({ baseDir: dir })),
    ).catch((e) => e);
    expect(notFn.message).toBe(
      'custom: module "./my-transform.mjs" has no function export "notAFunction" (it is number); its function exports: default, perPhoto, slowFilter',
    );
    const broken = await run(records(), custom({ module: './broken.mjs' }, context({ baseDir: dir }))).catch((e) => e);
    expect(broken.message).toMatch(/^custom: module "\.\/broken\.mjs" failed to load: /);
    // a config error even when no record arrives
    await expect(run([], custom({ module: './nope.mjs' }, context({ baseDir: dir })))).rejects.toThrow(ConfigError);
  });
});

describe('map / filter / flatMap in code', () => {
  it('map: sync and async, null drops, order kept', async () => {
    const out = await run(
      records(),
      map(async (r: any) => (r.keep ? { id: r.id * 10 } : null)),
    );
    expect(out.map((r) => r.id)).toEqual([10, 30]);
    expect(originOf(out[1])).toEqual({ endpoint: 'products.query', index: 2 });
    const sync = map((r: any) => ({ ...r, x: 1 }));
    expect((await run(records(), sync)).map((r) => r.x)).toEqual([1, 1, 1]);
    expect(sync.stats).toMatchObject({ in: 3, out: 3 });
  });

  it('filter and flatMap', async () => {
    expect(
      (
        await run(
          records(),
          filter((r: any) => r.id !== 2),
        )
      ).map((r) => r.id),
    ).toEqual([1, 3]);
    const fm = flatMap(async (r: any) => (r.id === 1 ? [{ n: 1 }, { n: 2 }] : r.id === 2 ? { n: 3 } : null));
    expect((await run(records(), fm)).map((r) => r.n)).toEqual([1, 2, 3]);
    expect(fm.stats).toMatchObject({ in: 3, out: 3, dropped: 1 });
  });

  it('enforces the contract of each kind', async () => {
    const list = await run(records(), map((() => [{}]) as never)).catch((e) => e);
    expect(list).toBeInstanceOf(DataError);
    expect(list.message).toBe(
      'map: the map function must return a record (a plain object), or null to drop it, but returned a list for record 1 (use kind: flat-map to emit several records)',
    );
    const bool = await run(records(), map((() => true) as never)).catch((e) => e);
    expect(bool.message).toMatch(/use kind: filter/);
    const nested = await run(
      records(),
      flatMap(() => [[{}]] as never),
    ).catch((e) => e);
    expect(nested.message).toMatch(
      /^flat-map: the flat-map function must return a list of records \(plain objects\), but returned a list/,
    );
    const thrown = await run(
      records(),
      map(() => {
        throw new Error('user bug');
      }),
    ).catch((e) => e);
    // Wrapped naming the stage and the record (test/pipeline/stage-errors.test.ts); the original is the cause.
    expect(thrown.message).toMatch(/^map threw on record 1: user bug \(at .*custom\.test\.ts:\d+:\d+\)$/);
    expect(thrown.cause.message).toBe('user bug');
  });

  it('has strict options', () => {
    expect(customStage.options.safeParse({ module: './x.js', kind: 'reduce' }).success).toBe(false);
    expect(customStage.options.safeParse({ module: './x.js', exports: 'x' }).success).toBe(false);
  });
});
