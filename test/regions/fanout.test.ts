// Issue 40, the fan-out over regions: one pipeline file reads BE and FR (their sandbox profiles,
// small catalogs whose ids overlap), each with its own credentials (CATALOG_<REGION>_API_KEY and
// _SECRET) and state cursor, into one Parquet dataset partitioned by region= and a hive and an
// Iceberg table keyed (region, id). Every product of each region lands once with its region; a
// run whose FR key is refused (401) still publishes BE's records and cursor, keeps FR's table rows
// and cursor, and says so per region in the summary, with the exit code of the 401 alone.
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, cleanEnv, jsonLines, readJson, runMain, workspace } from '../cli/cli-process.js';
import { formatSummaryText } from '../../src/cli/summary.js';
import type { RunSummary } from '../../src/pipeline/runner.js';
import { readIceberg } from '../helpers/iceberg-reader.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { listedIds } from './region-ids.js';

type Rec = Record<string, any>;

const PIPELINE = [
  'name: eu-products',
  'connection:',
  '  regions:',
  '    - { region: be, baseUrl: "${BE_URL}" }',
  '    - { region: fr, baseUrl: "${FR_URL}" }',
  'source: { type: products.query, filter: { status: [active, inactive] } }',
  'sinks:',
  '  - { type: parquet, path: "lake/products/region={region}/part-{run}-{part}.parquet" }',
  '  - { type: table, path: tables/products, key: "region,id" }',
  '  - { type: table, path: tables/ice, format: iceberg, key: "region,id" }',
  'state: { path: state/eu-products.json }',
  '',
].join('\n');

let ws: { dir: string; remove(): Promise<void> };
let be: TestSandbox;
let fr: TestSandbox;
const ids: Record<string, string[]> = {};

beforeAll(async () => {
  ws = await workspace('catalog-streams-fanout-');
  [be, fr] = await Promise.all([
    startTestSandbox({ products: 60, seed: 40, profile: 'be' }),
    startTestSandbox({ products: 45, seed: 41, profile: 'fr' }),
  ]);
  Object.assign(ids, await listedIds({ be, fr }));
  await writeFile(join(ws.dir, 'eu.yml'), PIPELINE);
});
afterAll(async () => {
  await Promise.all([be?.close(), fr?.close()]);
  await ws?.remove();
});

function env(frSecret?: string): NodeJS.ProcessEnv {
  return cleanEnv({
    BE_URL: be.url,
    FR_URL: fr.url,
    CATALOG_BE_API_KEY: be.credentials.apiKey,
    CATALOG_BE_API_SECRET: be.credentials.apiSecret,
    CATALOG_FR_API_KEY: fr.credentials.apiKey,
    CATALOG_FR_API_SECRET: frSecret ?? fr.credentials.apiSecret,
    CATALOG_RATE_LIMIT: '0',
  });
}

async function run(args: string[], given: NodeJS.ProcessEnv) {
  const summaryFile = join(ws.dir, `summary-${Date.now()}-${Math.random()}.json`);
  const result = await runMain(['run', join(ws.dir, 'eu.yml'), '--summary-file', summaryFile, ...args], given);
  if (result.code === 2) throw new Error(result.stderr);
  const summary = (await readJson(summaryFile)).pipelines[0] as Rec;
  return { ...result, summary };
}

async function parquetRows(files: string[]): Promise<Rec[]> {
  const rows: Rec[] = [];
  for (const f of files) rows.push(...(await parquetReadObjects({ file: await asyncBufferFromFile(f) })));
  return rows;
}

/** The dataset's files by region folder. */
async function datasetFiles(): Promise<Record<string, string[]>> {
  const root = join(ws.dir, 'lake/products');
  const out: Record<string, string[]> = {};
  for (const folder of await readdir(root)) {
    if (!folder.startsWith('region=')) continue;
    const files = (await readdir(join(root, folder))).filter((f) => f.endsWith('.parquet'));
    out[folder] = files.map((f) => join(root, folder, f));
  }
  return out;
}

/** The hive table's current rows (the snapshot files its _table.json lists for the current run). */
async function tableRows(): Promise<Rec[]> {
  const root = join(ws.dir, 'tables/products');
  const manifest = await readJson(join(root, '_table.json'));
  expect(manifest.key).toBe('region,id');
  const current = manifest.versions.find((v: Rec) => v.runId === manifest.current);
  return parquetRows(current.snapshot.map((f: Rec) => join(root, f.path)));
}

const keysOf = (rows: Rec[]) => rows.map((r) => `${r.region}:${r.id}`).sort();
const expectedKeys = () => [...ids.be!.map((id) => `be:${id}`), ...ids.fr!.map((id) => `fr:${id}`)].sort();

describe('a fan-out over BE and FR', () => {
  let firstCursors: Record<string, Rec>;

  it('writes every product of each region once, with its region, and one cursor per region', async () => {
    // The two catalogs share ids: only (region, id) tells their products apart.
    expect(ids.be!.filter((id) => ids.fr!.includes(id)).length).toBeGreaterThan(0);
    const { code, stderr, summary } = await run([], env());
    expect(code, stderr).toBe(0);
    expect(summary.status).toBe('succeeded');
    expect(summary.regions.map((r: Rec) => [r.region, r.status, r.records])).toEqual([
      ['be', 'succeeded', ids.be!.length],
      ['fr', 'succeeded', ids.fr!.length],
    ]);

    const files = await datasetFiles();
    expect(Object.keys(files).sort()).toEqual(['region=be', 'region=fr']);
    for (const region of ['be', 'fr']) {
      const rows = await parquetRows(files[`region=${region}`]!);
      // The partition column is the folder; each row is one product of that region, once.
      expect(rows.map((r) => r.id as string).sort()).toEqual(ids[region]);
    }
    const table = await tableRows();
    expect(keysOf(table)).toEqual(expectedKeys());
    expect(keysOf(await readIceberg(join(ws.dir, 'tables/ice/current')))).toEqual(expectedKeys());

    firstCursors = {};
    for (const region of ['be', 'fr']) {
      const state = await readJson(join(ws.dir, `state/eu-products.${region}.json`));
      const sb = region === 'be' ? be : fr;
      expect(state.host).toBe(new URL(sb.url).host);
      expect(state.lastRun.records).toBe(ids[region]!.length);
      firstCursors[region] = state;
    }
    expect(summary.regions[0].cursor.location).toContain('eu-products.be.json');
  });

  it('a region whose key is refused leaves the other published and named in the summary', async () => {
    be.resetStats();
    const { code, stderr, summary } = await run(['--full-refresh'], env('not-the-secret'));
    // The exit code of the 401 alone (a run error: 1), with the refused region's error code.
    expect(code, stderr).toBe(1);
    expect(summary.status).toBe('failed');
    expect(summary.error.code).toBe('auth.unauthorized');
    expect(summary.error.message).toMatch(/^region fr failed: the catalog API at .* rejected the credentials \(401/);
    expect(summary.error.message).toContain(`published: be (${ids.be!.length} records)`);
    expect(summary.error.message).toContain('CATALOG_FR_API_KEY');
    expect(summary.error.message).not.toContain('not-the-secret');
    const [beOutcome, frOutcome] = summary.regions;
    expect(beOutcome).toMatchObject({ region: 'be', status: 'succeeded', records: ids.be!.length });
    expect(beOutcome.cursor.stored).toBe(true);
    expect(frOutcome).toMatchObject({ region: 'fr', status: 'failed', error: { code: 'auth.unauthorized' } });
    expect(frOutcome.cursor.stored).toBe(false);
    const warnings = jsonLines(stderr).filter((l) => l.event === 'region.failed');
    expect(warnings).toHaveLength(1);
    // The pretty summary says it per region.
    const text = formatSummaryText(summary as RunSummary);
    expect(text).toContain(`region be published: ${ids.be!.length} records, cursor ${beOutcome.cursor.next} saved to`);
    // A full refresh reads no cursor: the FR state file is left as it was (checked below).
    expect(text).toMatch(
      /region fr failed \[auth\.unauthorized\]: 0 records, state left as it was in .*eu-products\.fr\.json/,
    );
    expect(summary.outputs.length).toBeGreaterThan(0);

    // BE: this run's part was published beside the first run's; its cursor moved. FR: nothing new,
    // its cursor is the first run's.
    const files = await datasetFiles();
    expect(files['region=be']).toHaveLength(2);
    expect(files['region=fr']).toHaveLength(1);
    const newest = files['region=be']!.find((f) => f.includes(summary.runId))!;
    expect((await parquetRows([newest])).map((r) => r.id as string).sort()).toEqual(ids.be);
    const beState = await readJson(join(ws.dir, 'state/eu-products.be.json'));
    expect(beState.lastRun.runId).toBe(summary.runId);
    expect(await readFile(join(ws.dir, 'state/eu-products.fr.json'), 'utf8')).toBe(
      `${JSON.stringify(firstCursors.fr, null, 2)}\n`,
    );
    // The table is this run's version, and FR's rows stay: a failed region's products are not deletes.
    const manifest = await readJson(join(ws.dir, 'tables/products/_table.json'));
    expect(manifest.current).toBe(summary.runId);
    expect(keysOf(await tableRows())).toEqual(expectedKeys());
    expect(keysOf(await readIceberg(join(ws.dir, 'tables/ice/current')))).toEqual(expectedKeys());
  });

  it('the next run reads each region from its own cursor', async () => {
    const { code, stderr, summary } = await run([], env());
    expect(code, stderr).toBe(0);
    const windows = jsonLines(stderr).filter((l) => l.event === 'incremental');
    expect(windows.map((l) => /^region (\w+): incremental run/.exec(l.message)?.[1]).sort()).toEqual(['be', 'fr']);
    for (const [i, region] of ['be', 'fr'].entries()) {
      const outcome = summary.regions[i];
      expect(outcome).toMatchObject({ region, status: 'succeeded', cursor: { stored: true } });
      // FR's window starts at the first run's cursor, which the refused run left.
      if (region === 'fr') expect(outcome.cursor.previous).toBe(firstCursors.fr!.cursor);
    }
    expect(keysOf(await tableRows())).toEqual(expectedKeys());
  });

  it('when every region fails the run publishes nothing', async () => {
    const before = await readFile(join(ws.dir, 'tables/products/_table.json'), 'utf8');
    const given = { ...env('not-the-secret'), CATALOG_BE_API_SECRET: 'not-this-one-either' };
    const { code, summary } = await run(['--full-refresh'], given);
    expect(code).toBe(1);
    expect(summary.error.code).toBe('auth.unauthorized');
    expect(summary.outputs).toEqual([]);
    expect(summary.regions.map((r: Rec) => r.status)).toEqual(['failed', 'failed']);
    expect(await readFile(join(ws.dir, 'tables/products/_table.json'), 'utf8')).toBe(before);
  });

  it('a table keyed by id alone is refused before any request', async () => {
    const file = join(ws.dir, 'by-id.yml');
    await writeFile(file, PIPELINE.replace('key: "region,id"', 'key: id'));
    be.resetStats();
    const { code, stderr } = await runMain(['run', file], env());
    expect(code, stderr).toBe(2);
    const [error] = jsonLines(stderr).filter((l) => l.event === 'error');
    expect(error).toMatchObject({ code: 'config.region', path: 'sinks[1].key' });
    expect(error!.message).toContain('key: region,id');
    expect(be.stats.requests).toBe(0);
  });

  it('--sandbox serves each region of a fan-out from a sandbox of its own profile', async () => {
    const file = join(ws.dir, 'sandboxed.yml');
    const yaml = PIPELINE.replace('name: eu-products', 'name: eu-sandboxed')
      .replace('{ region: be, baseUrl: "${BE_URL}" }', 'be')
      .replace('{ region: fr, baseUrl: "${FR_URL}" }', 'fr')
      .replaceAll('lake/products', 'lake/sandboxed')
      .replace('tables/products', 'tables/sandboxed')
      .replace('tables/ice', 'tables/ice-sandboxed')
      .replace('state/eu-products', 'state/eu-sandboxed');
    await writeFile(file, yaml);
    const summaryFile = join(ws.dir, 'sandboxed-summary.json');
    const args = ['run', file, '--sandbox', '--sandbox-products', '30', '--summary-file', summaryFile];
    // No region credentials in the environment: each sandbox's own are used.
    const { code, stderr } = await runMain(args, cleanEnv({ CATALOG_RATE_LIMIT: '0' }));
    expect(code, stderr).toBe(0);
    const [summary] = (await readJson(summaryFile)).pipelines;
    expect(summary.regions.map((r: Rec) => r.region)).toEqual(['be', 'fr']);
    for (const region of ['be', 'fr']) {
      const state = await readJson(join(ws.dir, `state/eu-sandboxed.${region}.json`));
      expect(state.host).toBe('sandbox');
      const folder = join(ws.dir, 'lake/sandboxed', `region=${region}`);
      const rows = await parquetRows((await readdir(folder)).map((f) => join(folder, f)));
      expect(rows.length).toBe(summary.regions.find((r: Rec) => r.region === region).records);
      // Each profile's national code: cnk in BE, cip13 in FR.
      const code = region === 'be' ? 'cnk' : 'cip13';
      expect(rows.some((r) => typeof r[code] === 'string')).toBe(true);
    }
  });

  it('the example of docs/live-service.md is a valid pipeline file', async () => {
    const doc = await readFile(join(REPO, 'docs/live-service.md'), 'utf8');
    const section = doc.slice(doc.indexOf('### Several regions in one run'));
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section)![1]!;
    expect(yaml).toContain('regions:');
    const file = join(ws.dir, 'documented.yml');
    await writeFile(file, yaml);
    const { code, stderr } = await runMain(['validate', file], env());
    expect(code, stderr).toBe(0);
  });
});
