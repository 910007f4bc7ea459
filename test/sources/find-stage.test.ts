// products.find / media.find: ids in (bare, or in a record field), found
// records out in input order, one GET each through the run's client (its rate
// limiter and stats), and the not-found policy: skip with a count, dead-letter,
// or fail, naming the exact ids. Input arrives in random chunk sizes.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FindTransform, findTransform } from '../../src/transforms/index.js';
import { builtinStages, createRegistry } from '../../src/pipeline/builtins.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { testContext } from '../helpers/stage-context.js';
import { runMain, sandboxEnv } from '../cli/cli-process.js';
import { type TestSandbox } from '../helpers/sandbox.js';
import { type SandboxHarness, sandboxHarness } from './sandbox-harness.js';

/** Feeds `items` in chunks of random sizes (1 to 7) with a pause between chunks. */
function chunked<T>(items: readonly T[], seed = 7): Readable {
  let state = seed;
  return Readable.from(
    (async function* () {
      for (let at = 0; at < items.length;) {
        state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
        const size = 1 + (state % 7);
        for (const item of items.slice(at, at + size)) yield item;
        at += size;
        await new Promise((r) => setImmediate(r));
      }
    })(),
    { objectMode: true },
  );
}

async function collect(find: FindTransform, input: Readable): Promise<Record<string, any>[]> {
  const out: Record<string, any>[] = [];
  await pipeline(input, find, async (source: AsyncIterable<Record<string, any>>) => {
    for await (const r of source) out.push(r);
  });
  return out;
}

describe('products.find and media.find', () => {
  let h: SandboxHarness;
  let dir: string;
  beforeAll(async () => {
    h = await sandboxHarness({ products: 300 });
    dir = await mkdtemp(join(tmpdir(), 'catalog-streams-find-'));
  });
  afterAll(async () => {
    await h?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('looks up bare ids in input order, skips and counts the ones not found, one request per id on the client', async () => {
    const ids = ['P0000005', 'P0000001', 'P0009999', 'P0000300', 'P0000042', 'NOPE', 'P0000001'];
    const ctx = testContext();
    const before = h.client.stats.requests;
    const sandboxBefore = h.sandbox.stats.byEndpoint['products.find'] ?? {};
    const find = findTransform('products.find', h.client, ctx);
    const out = await collect(find, chunked(ids));
    expect(out.map((r) => r.id)).toEqual(['P0000005', 'P0000001', 'P0000300', 'P0000042', 'P0000001']);
    expect(out[0]).toEqual(h.sandbox.dataset.product(4));
    expect(find.notFound).toBe(2);
    expect(find.stats).toMatchObject({ in: 7, out: 5, invalid: 2, skipped: 2 });
    expect(h.client.stats.requests - before).toBe(7);
    const after = h.sandbox.stats.byEndpoint['products.find']!;
    expect((after[200] ?? 0) - (sandboxBefore[200] ?? 0)).toBe(5);
    expect((after[404] ?? 0) - (sandboxBefore[404] ?? 0)).toBe(2);
  });

  it('takes the id from idField (a dotted path) and dead-letters ids not found with the reason', async () => {
    const deadLetter = join(dir, 'not-found.jsonl');
    const ctx = testContext({ stages: [...builtinStages] });
    const records = [{ ref: { media: 3 } }, { ref: { media: 999999 } }, { ref: { media: '7' } }, { ref: { media: 1 } }];
    const find = findTransform('media.find', h.client, ctx, {
      idField: 'ref.media',
      onNotFound: 'dead-letter',
      deadLetter: { type: 'jsonl', path: deadLetter },
    });
    const out = await collect(find, chunked(records, 3));
    expect(out.map((r) => r.id)).toEqual([3, 7, 1]);
    expect(out[1]).toEqual(h.sandbox.dataset.mediaRecord(6));
    const letters = (await readFile(deadLetter, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({ id: 999999, stage: 'media.find', record: { id: 999999 } });
    expect(letters[0].issues[0].message).toBe('/v4/media/find?id=999999 answered 404: no such media');
  });

  it('warns when no id at all was found (a base URL without the find path answers 404 too)', async () => {
    const ctx = testContext();
    const warnings: { code: string; message: string }[] = [];
    ctx.events.on('warning', (w) => warnings.push(w));
    const find = findTransform('products.find', h.client, ctx);
    expect(await collect(find, chunked(['P0099991', 'P0099992']))).toEqual([]);
    expect(warnings).toEqual([
      {
        code: 'transform.none_found',
        message: 'products.find: 2 of 2 ids not found (skip); is /v4/products/find served at CATALOG_BASE_URL?',
      },
    ]);
  });

  it('onNotFound: fail stops at the first id not found, naming it', async () => {
    const find = findTransform('products.find', h.client, testContext(), { onNotFound: 'fail' });
    await expect(collect(find, chunked(['P0000002', 'P0000404', 'P0012345', 'P0000003']))).rejects.toThrow(
      /product "P0000404".*answered 404/,
    );
  });

  it('a record without the id field fails the run naming the field', async () => {
    const find = findTransform('products.find', h.client, testContext(), { idField: 'productId' });
    await expect(collect(find, chunked([{ productId: 'P0000002' }, { other: 1 }]))).rejects.toThrow(
      /no field "productId"|field "productId"/,
    );
  });

  it('is registered for pipeline files: media.stream ids enriched into products, read back from Parquet', async () => {
    expect(createRegistry().get('products.find')?.kind).toBe('transform');
    expect(createRegistry().get('media.find')?.kind).toBe('transform');
    const out = join(dir, 'frontal-products.parquet');
    const file = join(dir, 'enrich.yml');
    await writeFile(
      file,
      [
        'name: frontal-products',
        'source: { type: media.stream, filter: { and: [{ kind: frontal }, { id: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20] }] } }',
        'transforms:',
        '  - { type: explode, field: products }',
        '  - { type: products.find, idField: value }',
        'sinks:',
        `  - { type: parquet, path: ${JSON.stringify(out)} }`,
      ].join('\n'),
    );
    const ds = h.sandbox.dataset;
    const expected: string[] = [];
    for (let m = 0; m < 20; m++)
      if (ds.mediaRecord(m).kind === 'frontal') expected.push(...(ds.mediaRecord(m).products as string[]));
    expect(expected.length).toBeGreaterThan(0);
    const { code, stderr } = await runMain(['run', file, '--quiet'], sandboxEnv(h.sandbox as TestSandbox));
    expect(code, stderr).toBe(0);
    const { rows } = await duckdbQuery(`SELECT id FROM read_parquet(${sqlString(out)})`);
    expect(rows.map((r) => r.id)).toEqual(expected);
  });
});
