// Issue 24, fact 14: one GTIN on several products (pack-level GTIN-14s, duplicate listings). Over
// the live-shaped sandbox (loopback, port 0): keyed by `id` (the default) every product survives
// dedupe and the table; keyed by a code, dedupe and the table drop the other product, and each
// says so: a warning event with a code and a count, never silently.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunEvents } from '../../src/events.js';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { runPipeline } from '../../src/pipeline/runner.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { tempDir } from '../sinks/records.js';

type Rec = Record<string, any>;

describe('one GTIN-14 on several products (live profile be)', () => {
  let sandbox: TestSandbox;
  let products: Rec[];
  /** GTIN-14s of two products (and no product with a list of them), in code order. */
  let shared: string[];
  beforeAll(async () => {
    sandbox = await startTestSandbox({ products: 3000, seed: 3, profile: 'be' });
    products = (
      await sandbox.stream<Rec>('/v4/products/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } })
    ).lines.map((l) => l.result);
    const byCode = new Map<string, Rec[]>();
    for (const p of products)
      if (typeof p.eanGtin14 === 'string') byCode.set(p.eanGtin14, [...(byCode.get(p.eanGtin14) ?? []), p]);
    shared = [...byCode].filter(([, ps]) => ps.length > 1).map(([code]) => code);
  });
  afterAll(() => sandbox?.close());

  async function run(transforms: string, sink: string) {
    const dir = await tempDir('shared-codes-');
    const yaml = `name: shared
source:
  type: products.query
  filter: { eanGtin14: [${shared.map((c) => `"${c}"`).join(', ')}] }
  sorting: { id: ASC }
transforms:
  - { type: validate, onInvalid: fail }
  - { type: normalize-codes }
${transforms}
sinks:
${sink}
`;
    const registry = createRegistry();
    const [loaded] = parsePipelines(yaml, registry, { file: join(dir, 'shared.yml') });
    const events = new RunEvents();
    const warnings: { code: string; message: string }[] = [];
    events.on('warning', (w) => warnings.push(w));
    const connection = {
      baseUrl: sandbox.url,
      apiKey: sandbox.credentials.apiKey,
      apiSecret: sandbox.credentials.apiSecret,
    };
    const summary = await runPipeline(loaded!, { registry, connection, events });
    return { dir, summary, warnings };
  }

  it('the profile has shared GTIN-14s, and a query by them returns every product', async () => {
    expect(shared.length).toBeGreaterThan(0);
    const { dir } = await run('', '  - { type: parquet, path: out.parquet }');
    const { rows } = await duckdbQuery(
      `SELECT id, eanGtin14 FROM read_parquet(${sqlString(join(dir, 'out.parquet'))}) ORDER BY id`,
    );
    const want = products
      .filter((p) => shared.includes(p.eanGtin14))
      .map((p) => ({ id: p.id, eanGtin14: p.eanGtin14 }));
    expect(want.length).toBeGreaterThanOrEqual(2 * shared.length);
    expect(rows).toEqual(want);
  });

  it('dedupe by id (the default) keeps every product and warns of nothing', async () => {
    const { dir, warnings } = await run('  - { type: dedupe }', '  - { type: jsonl, path: out.jsonl }');
    const ids = (await readFile(join(dir, 'out.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).id);
    // Read by createdAt: the same products, in createdAt order.
    expect([...ids].sort()).toEqual(
      products
        .filter((p) => shared.includes(p.eanGtin14))
        .map((p) => p.id)
        .sort(),
    );
    expect(warnings.filter((w) => w.code === 'dedupe.shared_key')).toEqual([]);
  });

  it('dedupe by eanGtin14 warns with dedupe.shared_key, naming both products, and counts them', async () => {
    const { warnings, summary } = await run(
      '  - { type: dedupe, key: eanGtin14 }',
      '  - { type: jsonl, path: out.jsonl }',
    );
    const dropped = products.filter((p) => shared.includes(p.eanGtin14)).length - shared.length;
    const codes = warnings.filter((w) => w.code === 'dedupe.shared_key');
    expect(codes.length).toBe(dropped > 1 ? 2 : 1);
    const first = products.filter((p) => p.eanGtin14 === shared.find((c) => codes[0]!.message.includes(c)));
    expect(codes[0]!.message).toContain(`records "${first[0]!.id}" and "${first[1]!.id}" share the key eanGtin14`);
    if (dropped > 1) expect(codes[1]!.message).toContain(`${dropped} records were dropped`);
    expect(summary.records.written.jsonl).toBe(shared.length);
  });

  it('a table keyed by eanGtin14 warns with table.shared_key and counts them in _table.json; keyed by id it keeps both', async () => {
    const byCode = await run('', '  - { type: table, path: table, key: eanGtin14 }');
    const dropped = products.filter((p) => shared.includes(p.eanGtin14)).length - shared.length;
    expect(byCode.warnings.filter((w) => w.code === 'table.shared_key')).toHaveLength(1);
    const manifest = JSON.parse(await readFile(join(byCode.dir, 'table/_table.json'), 'utf8'));
    expect(manifest.versions.map((v: Rec) => [v.rows, v.sharedKeys])).toEqual([[shared.length, dropped]]);
    const byId = await run('', '  - { type: table, path: table }');
    expect(byId.warnings.filter((w) => w.code === 'table.shared_key')).toEqual([]);
    const kept = JSON.parse(await readFile(join(byId.dir, 'table/_table.json'), 'utf8'));
    expect(kept.versions.map((v: Rec) => [v.rows, v.sharedKeys])).toEqual([[shared.length + dropped, undefined]]);
  });
});
