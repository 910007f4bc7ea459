// Every JavaScript block of the README and docs/ (```js, ```mjs) runs as a user runs it: from the
// packed package installed in an empty project, with only `catalog-streams` and Node to import,
// against the sandbox on loopback (CATALOG_BASE_URL, CATALOG_API_KEY, CATALOG_API_SECRET set as
// the blocks say). So does the example in csvSink's JSDoc, read from the installed .d.ts (what an
// editor shows on hover). Each block runs in a folder of its own; its outputs are read back:
// Parquet and CSV with DuckDB, JSONL line by line. A ```ts block is refused: the docs keep to
// what runs with node alone.
//
// Until a Parquet or CSV sink composed in code reads the record schema from the stream it is piped
// from (issue 25, "The schema travels in code"), the README's example and the JSDoc one fail with
// config.schema_unknown: they are written as a user writes them, with no `columns` or `schemaHint`.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { cleanEnv } from '../cli/cli-process.js';
import { packedProject, type PackedProject } from '../helpers/packed-project.js';
import { allBlocks, at, type DocBlock } from './doc-blocks.js';

const run = promisify(execFile);
const JS = new Set(['js', 'mjs', 'javascript']);

const blocks = allBlocks();
const jsBlocks = blocks.filter((b) => JS.has(b.lang));

/**
 * Columns an output must have, beyond having rows: what the block's stages declare. The main
 * example's map makes exactly these four; a product CSV carries the product contract's columns.
 */
const EXPECTED_COLUMNS: Record<string, string[]> = {
  'out/cannabis.parquet': ['id', 'name', 'ean13', 'thc'],
  'out/products.csv': ['id', 'status'],
};
/** A product CSV has the product contract's columns (dozens), not `id` and `_extra` alone. */
const MIN_COLUMNS: Record<string, number> = { 'out/products.csv': 20 };

/** The output files a block names (`path: '...'`), relative to the folder it runs in. */
function outputsOf(code: string): string[] {
  return [...code.matchAll(/path:\s*'([^']+)'/g)].map((m) => m[1]!);
}

describe('JavaScript of the README and docs/, from the installed package', () => {
  let packed: PackedProject;
  let project: string;
  let sandbox: TestSandbox;
  let runs = 0;

  beforeAll(async () => {
    // A copy of the suite's one install of the packed package (a default install, as a user types
    // it: no AWS SDK, these examples write local files); dist/ is current (tsc built it before vitest).
    [sandbox, packed] = await Promise.all([
      startTestSandbox({ products: 1500 }),
      packedProject('catalog-streams-doc-code-', { name: 'doc-examples', type: 'module' }),
    ]);
    project = packed.project;
  }, 300_000);
  afterAll(async () => {
    await Promise.all([sandbox?.close(), packed?.remove()]);
  });

  /** Writes `code` into the project, runs it with node in a folder of its own, checks what it wrote. */
  async function runExample(where: string, code: string): Promise<void> {
    const n = runs++;
    const file = join(project, `example-${n}.mjs`);
    const cwd = join(project, `run-${n}`);
    await mkdir(cwd);
    await writeFile(file, code);
    const env = cleanEnv({
      CATALOG_BASE_URL: sandbox.url,
      CATALOG_API_KEY: sandbox.credentials.apiKey,
      CATALOG_API_SECRET: sandbox.credentials.apiSecret,
      CATALOG_RATE_LIMIT: '0',
    });
    const result = await run(process.execPath, [file], { cwd, env, timeout: 120_000 }).then(
      (r) => ({ code: 0, stderr: r.stderr }),
      (e: { code?: number; stderr?: string; message: string }) => ({
        code: e.code ?? 1,
        stderr: e.stderr ?? e.message,
      }),
    );
    expect(result.code, `${where} failed:\n${result.stderr}`).toBe(0);
    const outputs = outputsOf(code);
    for (const output of outputs) {
      const path = join(cwd, output);
      expect(existsSync(path), `${where}: no ${output}`).toBe(true);
      if (output.endsWith('.jsonl')) {
        const lines = (await readFile(path, 'utf8')).split('\n').filter(Boolean);
        expect(lines.length, `${where}: ${output} is empty`).toBeGreaterThan(0);
        for (const line of lines) expect(JSON.parse(line)).toHaveProperty('id');
        continue;
      }
      const reader = output.endsWith('.csv')
        ? `read_csv(${sqlString(path)}, header = true, all_varchar = true)`
        : `read_parquet(${sqlString(path)})`;
      const { rows } = await duckdbQuery(`SELECT count(*)::INTEGER AS n FROM ${reader}`);
      expect(rows[0]!.n, `${where}: ${output} has no rows`).toBeGreaterThan(0);
      const described = await duckdbQuery(`DESCRIBE SELECT * FROM ${reader}`);
      const columns = described.rows.map((r) => String(r.column_name));
      for (const column of EXPECTED_COLUMNS[output] ?? ['id'])
        expect(columns, `${where}: ${output} lacks the column ${column}`).toContain(column);
      expect(columns.length, `${where}: ${output} columns ${columns.join(', ')}`).toBeGreaterThanOrEqual(
        MIN_COLUMNS[output] ?? 1,
      );
    }
  }

  it('the docs hold JavaScript, and no TypeScript that node could not run as it stands', () => {
    expect(jsBlocks.length).toBeGreaterThanOrEqual(3);
    expect(blocks.filter((b) => b.lang === 'ts' || b.lang === 'typescript').map(at)).toEqual([]);
    for (const b of jsBlocks) expect(b.body, at(b)).toMatch(/from 'catalog-streams'/);
  });

  // Identical blocks (the README's example is also on its page) run once, named by every place.
  const unique = new Map<string, DocBlock[]>();
  for (const b of jsBlocks) unique.set(b.body, [...(unique.get(b.body) ?? []), b]);
  it.each([...unique.values()].map((same) => [same.map(at).join(', '), same[0]!] as const))(
    '%s runs against the sandbox and writes what it says',
    async (where, block) => runExample(where, block.body),
    180_000,
  );

  it("csvSink's JSDoc example runs as written, with a products.query source", async () => {
    const dts = await readFile(join(project, 'node_modules/catalog-streams/dist/src/sinks/index.d.ts'), 'utf8');
    const doc = /\/\*\*[^*]*A CSV sink for code: `([^`]+)`/.exec(dts);
    expect(doc, 'the csvSink JSDoc keeps its example').not.toBeNull();
    const example = doc![1]!;
    expect(example).toMatch(/^await pipeline\(source, csvSink\(\{path: '[^']+'\}\)\)$/);
    // The JSDoc's `source` is whatever a user pipes from: here the products of the sandbox.
    const code = [
      "import { pipeline } from 'node:stream/promises';",
      "import { CatalogClient, productsQuery, csvSink } from 'catalog-streams';",
      '',
      'const client = CatalogClient.fromEnv();',
      "const source = productsQuery(client, { filter: { status: 'active' } });",
      `${example};`,
      'await client.close();',
      '',
    ].join('\n');
    await runExample('the csvSink JSDoc (dist/src/sinks/index.d.ts)', code);
  }, 180_000);
});
