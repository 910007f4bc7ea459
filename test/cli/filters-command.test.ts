// `catalog-streams filters`: every endpoint of the table the sources and the
// request checks use, each filter with its parameter shape (code filters
// marked), and the sortings; --json for scripts; a typo gets a did-you-mean.
import { describe, expect, it } from 'vitest';
import { endpoints } from '../../src/catalog/index.js';
import { cleanEnv, runCli, runMain } from './cli-process.js';

describe('catalog-streams filters', () => {
  it('lists every endpoint, every filter and sorting of its table, with shapes', async () => {
    const { code, stdout, stderr } = await runCli(['filters'], { env: cleanEnv() });
    expect(code, stderr).toBe(0);
    for (const e of Object.values(endpoints)) {
      const at = stdout.indexOf(`${e.name} (POST ${e.path})`);
      expect(at, e.name).toBeGreaterThanOrEqual(0);
      const block = stdout.slice(at, stdout.indexOf('\n\n', at));
      for (const f of Object.keys(e.filters)) expect(block).toMatch(new RegExp(`\\n {4}${f} +\\S`));
      const sortings = /\n {2}sortings: (.*)$/.exec(block)![1]!;
      for (const s of Object.keys(e.sortings)) expect(sortings).toContain(`${s}: `);
    }
    expect(stdout).toContain('products.query (POST /v4/products/query): a filter is required\n');
    expect(stdout).toMatch(/\n {4}status +"active" \| "replaced" \| "inactive", or a list of them\n/);
    expect(stdout).toMatch(/\n {4}id +string, or a list of them {2}\(codes: up to 1000 per query\)\n/);
    expect(stdout).toMatch(
      /\n {4}updatedSince +date \| unix seconds \| \{ from\?: date \| unix seconds, until\?: date \| unix seconds \}\n/,
    );
    expect(stdout).toContain('name: { direction: "ASC" | "DESC", locale: string }');
  });

  it('--json for one endpoint; an unknown endpoint is exit 2 with a did-you-mean', async () => {
    const { code, stdout } = await runMain(['filters', 'brands.query', '--json'], cleanEnv());
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual([
      {
        endpoint: 'brands.query',
        path: '/v4/brands/query',
        filterRequired: false,
        filters: Object.keys(endpoints['brands.query'].filters).map((name) =>
          expect.objectContaining({ name, shape: expect.any(String) }),
        ),
        sortings: Object.keys(endpoints['brands.query'].sortings).map((name) => ({ name, shape: expect.any(String) })),
      },
    ]);
    const typo = await runMain(['filters', 'brand.query', '--log-format', 'pretty'], cleanEnv());
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/^catalog-streams filters: no endpoint "brand\.query"; did you mean "brands\.query"\?/);
  });

  it('--json prints every value of a long enum; text cuts it saying how many more and where to see them', async () => {
    const json = await runCli(['filters', 'products.query', '--json'], { env: cleanEnv() });
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout).not.toContain('…');
    const terpene = (
      JSON.parse(json.stdout) as Array<{ filters: Array<{ name: string; shape: string }> }>
    )[0]!.filters.find((f) => f.name === 'terpene')!;
    const values = terpene.shape.match(/"[^"]+"/g)!;
    expect(values.length).toBeGreaterThan(10);
    const text = await runCli(['filters', 'products.query'], { env: cleanEnv() });
    const line = text.stdout.split('\n').find((l) => /^ {4}terpene /.test(l))!;
    expect(line).toContain(`… (${values.length - 8} more: catalog-streams filters products.query --json)`);
  });
});
