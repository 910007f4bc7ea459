// Issue 24 through the CLI: docs/reference-data.md's "products each frontal photo belongs to" pipeline (media
// filter `type`, F1/F3) runs against the live-shaped sandboxes and writes exactly the products of
// the frontal photos; the same pipeline written with the old `kind` still runs, with a warning
// naming `type` (the be/fr/au sandboxes answer `kind` with 400, so it was not sent); a code
// filter holding "0" or "" stops before any request with exit 2, naming the values.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { REPO, cleanEnv, jsonLines, runMain, sandboxEnv, workspace } from './cli-process.js';

/** The yaml block of docs/reference-data.md that follows its "# the products each frontal photo belongs to" line. */
async function readmePipeline(): Promise<string> {
  const readme = await readFile(join(REPO, 'docs/reference-data.md'), 'utf8');
  const at = readme.indexOf('# the products each frontal photo belongs to');
  expect(at, 'docs/reference-data.md keeps the frontal-products pipeline').toBeGreaterThan(0);
  const start = readme.lastIndexOf('```yaml\n', at) + '```yaml\n'.length;
  return readme.slice(start, readme.indexOf('```', at));
}

let ws: { dir: string; remove(): Promise<void> };
beforeAll(async () => {
  ws = await workspace('catalog-streams-live-filters-');
});
afterAll(() => ws?.remove());

describe('the docs frontal-products pipeline (media filter `type`)', () => {
  const sandboxes: TestSandbox[] = [];
  afterAll(async () => {
    for (const sb of sandboxes) await sb.close();
  });

  it('uses `type`, not `kind`', async () => {
    const yaml = await readmePipeline();
    expect(yaml).toContain('filter: { type: frontal }');
    expect(yaml).not.toMatch(/\bkind\b/);
  });

  it.each(['be', 'fr', 'au'] as const)(
    '%s: writes the products of every frontal photo; with `kind` too, warned and sent as `type`',
    async (profile) => {
      const sb = await startTestSandbox({ products: 300, seed: 24, profile });
      sandboxes.push(sb);
      const frontals = (await sb.stream('/v4/media/stream', { filter: { type: 'frontal' } })).lines.map(
        (l) => l.result,
      );
      const want = frontals.flatMap((m) => m.products as string[]).sort();
      expect(want.length).toBeGreaterThan(0);
      const yaml = await readmePipeline();
      for (const variant of ['type', 'kind'] as const) {
        const text = (variant === 'kind' ? yaml.replace('{ type: frontal }', '{ kind: frontal }') : yaml).replace(
          'out/frontal-products.parquet',
          `out/${profile}-${variant}.parquet`,
        );
        const file = join(ws.dir, `${profile}-${variant}.yml`);
        await writeFile(file, text);
        const { code, stderr } = await runMain(['run', file], sandboxEnv(sb));
        expect(code, stderr).toBe(0);
        const warned = jsonLines(stderr).filter((l) => l.event === 'filter.deprecated_name');
        if (variant === 'kind') {
          expect(warned).toEqual([expect.objectContaining({ level: 'warn' })]);
          expect(warned[0]!.message).toMatch(/`kind` \(use `type`\) at filter\.kind is deprecated/);
        } else {
          expect(warned).toEqual([]);
        }
        const { rows } = await duckdbQuery(
          `SELECT id FROM read_parquet(${sqlString(join(ws.dir, 'out', `${profile}-${variant}.parquet`))}) ORDER BY id`,
        );
        expect(rows.map((r) => String(r.id))).toEqual(want);
      }
    },
  );
});

describe('"0" and "" in a code filter', () => {
  it('stop the run before any request, exit 2, naming the values', async () => {
    const file = join(ws.dir, 'zero-codes.yml');
    await writeFile(
      file,
      `name: zero-codes
source: { type: products.stream, filter: { cipOrAcl7: ["3400930", "0", ""] } }
sinks:
  - { type: jsonl, path: out/zero.jsonl }
`,
    );
    const env = cleanEnv({ CATALOG_BASE_URL: 'http://127.0.0.1:9', CATALOG_API_KEY: 'k', CATALOG_API_SECRET: 's' });
    for (const command of ['validate', 'run']) {
      const { code, stderr } = await runMain([command, file, '--log-format', 'pretty'], env);
      expect(code, stderr).toBe(2);
      expect(stderr).toMatch(/source\.filter\.cipOrAcl7: "0", "" are not codes/);
    }
  });
});
