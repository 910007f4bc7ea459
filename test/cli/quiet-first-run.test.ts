// Issue 37 items 6-9, through the built CLI (run `npx tsc -p tsconfig.json` first): the demo's
// first run says nothing but its result and writes every EAN-13 to its column; a warning is said
// once; a table's metadata files are summarized with their real sizes; `| head` reads as a stop,
// not as "✗ aborted".
import { spawn } from 'node:child_process';
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { CLI, cleanEnv, jsonLines, runCli, workspace } from './cli-process.js';

const SANDBOX = ['--sandbox', '--sandbox-products', '600', '--sandbox-rate-limit', '60000'];

describe('a quiet, true first run (issue 37)', { timeout: 120_000 }, () => {
  let ws: { dir: string; remove(): Promise<void> };
  beforeAll(async () => {
    ws = await workspace('catalog-streams-quiet-');
  });
  afterAll(async () => ws?.remove());

  it('the demo: no warning, no per-transform counts, every EAN-13 in its column (none in _extra)', async () => {
    const r = await runCli(['run', 'pipelines/demo.yml', ...SANDBOX], { cwd: ws.dir, env: cleanEnv() });
    expect(r.code, r.stderr).toBe(0);
    const lines = jsonLines(r.stderr);
    expect(lines.filter((l) => l.level !== 'info').map((l) => l.message)).toEqual([]);
    const events = new Set(lines.map((l) => l.event));
    for (const quiet of ['transform.stats', 'sink.parquet.schema', 'sink.parquet.extra_fields'])
      expect(events.has(quiet), quiet).toBe(false);
    const summary = lines.find((l) => l.event === 'summary' && l.pipeline === 'demo-products')!;
    // warnings are counted by code in the JSON summary line (each was its own warn line)
    expect(summary.warningCounts).toEqual({});

    const glob = sqlString(join(ws.dir, 'out/demo/products/*/products.parquet'));
    const first = await duckdbQuery(`SELECT id, ean_gtin13 FROM read_parquet(${glob}) ORDER BY id LIMIT 5`);
    expect(first.rows.map((row) => row.ean_gtin13)).not.toContain(null);
    const { rows } = await duckdbQuery(
      `SELECT count(*) AS n, count(ean_gtin13) AS ean13, count(ean_gtin13_list) AS lists,
              count(*) FILTER (WHERE _extra IS NOT NULL) AS extra,
              count(*) FILTER (WHERE ean_gtin13_list[1] <> ean_gtin13) AS first_differs,
              count(*) FILTER (WHERE len(ean_gtin13) <> 13) AS not_13
       FROM read_parquet(${glob})`,
    );
    // drop names seoName as flatten-locales left it: no seo_name column remains (the demo writes snake_case)
    const described = await duckdbQuery(`DESCRIBE SELECT * FROM read_parquet(${glob})`);
    expect(described.rows.map((row) => String(row.column_name)).filter((n) => /^seo_?name/i.test(n))).toEqual([]);
    const c = Object.fromEntries(Object.entries(rows[0]!).map(([k, v]) => [k, Number(v)]));
    // The sandbox's live shape sends some EAN-13s as lists: they fill the column and the list beside it.
    expect(c.lists).toBeGreaterThan(0);
    expect(c).toMatchObject({ extra: 0, first_differs: 0, not_13: 0 });
    expect(c.ean13).toBeGreaterThan(c.n! * 0.8);
  });

  it('a warning is said once: as it happens, then counted by the text summary', async () => {
    const file = join(ws.dir, 'typo.yml');
    await writeFile(
      file,
      `name: typo
source: { type: products.query, filter: { status: [active] } }
transforms:
  - { type: flatten-locales, locales: [en] }
  - { type: drop, fields: [seoName] }
sinks: [{ type: jsonl, path: out/typo.jsonl }]
`,
    );
    const r = await runCli(['run', file, ...SANDBOX, '--log-format', 'pretty'], { cwd: ws.dir, env: cleanEnv() });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.match(/"seoName" was in none of the run's/g), r.stderr).toHaveLength(1);
    expect(r.stderr).toMatch(/nearest field seen: "seoName_en"/);
    expect(r.stderr).toMatch(/^ {2}! 1 warning \(written above\)$/m);
    // nothing but the result and the warning: no per-transform counts, no "every output committed"
    expect(r.stderr).not.toMatch(/transform\.stats|outputs_committed|sink\.jsonl/);
  });

  it("a table's summary states the real size of _table.json and of the merge state", async () => {
    const file = join(ws.dir, 'table.yml');
    await writeFile(
      file,
      `name: sized
source: { type: brands.query }
sinks: [{ type: table, path: out/brands-table, key: id }]
`,
    );
    const r = await runCli(['run', file, ...SANDBOX, '--log-format', 'pretty'], { cwd: ws.dir, env: cleanEnv() });
    expect(r.code, r.stderr).toBe(0);
    const manifest = join(ws.dir, 'out/brands-table/_table.json');
    const bytes = (await stat(manifest)).size;
    const fmt = new Intl.NumberFormat('en-US').format(bytes);
    expect(r.stderr).toContain(`wrote ${manifest} (table metadata, ${fmt} bytes)`);
    expect(r.stderr).toMatch(/wrote \S+ \(table state, [\d,]+ bytes\)/);
    expect(r.stderr).not.toMatch(/0 rows, 0 bytes/);
  });

  it('`run ... | head` exiting 0 is not "✗ aborted" and has no error line', async () => {
    const file = join(ws.dir, 'stdout.yml');
    await writeFile(
      file,
      `name: tostdout
source: { type: products.query, filter: { status: [active] }, pageSize: 50 }
sinks: [{ type: jsonl, path: "-" }]
`,
    );
    const child = spawn(process.execPath, [CLI, 'run', file, ...SANDBOX, '--log-format', 'pretty'], {
      cwd: ws.dir,
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) child.stdout.destroy();
    });
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code, err).toBe(0);
    expect(err).toMatch(/^✓ tostdout stopped when its reader closed stdout in /m);
    expect(err).not.toMatch(/aborted|✗|error \[/);
  });
});
