#!/usr/bin/env node
// `npm run demo`: runs pipelines/demo.yml against the embedded sandbox (started
// in-process by `--sandbox`), then reads a few rows back from the Parquet file
// with DuckDB's Node API, so a newcomer sees what they got. The sandbox is run at 600
// requests per minute (the client paces to the same) to keep the demo short;
// against the real API the budget is 100 per minute.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'dist/src/cli/main.js');
if (!existsSync(cli)) {
  console.log('building (npm run build)...');
  const build = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}

// DEMO_PRODUCTS shrinks the catalog (tests); CATALOG_SANDBOX_PROFILE picks the sandbox's shapes (default be).
const args = [
  'run',
  'pipelines/demo.yml',
  '--sandbox',
  '--sandbox-rate-limit',
  '600',
  ...(process.env.DEMO_PRODUCTS ? ['--sandbox-products', process.env.DEMO_PRODUCTS] : []),
];
console.log(
  `$ catalog-streams ${args.join(' ')}${process.env.CATALOG_SANDBOX_PROFILE ? ` (profile ${process.env.CATALOG_SANDBOX_PROFILE})` : ''}\n`,
);
const run = spawnSync(process.execPath, [cli, ...args], { cwd: root, stdio: 'inherit' });
if (run.status !== 0) process.exit(run.status ?? 1);

const { DuckDBInstance } = await import('@duckdb/node-api');
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const glob = join(root, 'out/demo/products/*/products.parquet').replaceAll("'", "''");
// This is DuckDB's Node API in this process, not the duckdb command: say so, so nobody looks for a
// duckdb binary they do not have. The query is shown as a DuckDB shell would take it.
const show = async (title, sql) => {
  const reader = await con.runAndReadAll(sql);
  console.log(
    `\n${title}\nSQL run by DuckDB (its Node API, @duckdb/node-api):\n  ${sql.replace(glob, 'out/demo/products/*/products.parquet')}`,
  );
  console.table(reader.getRowObjectsJson());
};
await show(
  'What the Parquet file holds (DuckDB reads it directly):',
  `SELECT count(*) AS products, count(DISTINCT status) AS statuses, count(photo_url) AS with_photo, sum(CASE WHEN ean_gtin13 LIKE '00%' THEN 1 ELSE 0 END) AS ean13_leading_zeros FROM read_parquet('${glob}')`,
);
await show(
  'A few rows:',
  `SELECT id, status, name, ean_gtin13, photo_format, meta_updated_at FROM read_parquet('${glob}') ORDER BY id LIMIT 5`,
);
con.closeSync?.();
console.log('\nOutputs are under out/demo/. Next: README.md and docs/ (pipeline files, nightly runs, S3).');
