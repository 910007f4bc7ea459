// What the sharded-table tests share (iceberg-shards.test.ts, iceberg-shards-faults.test.ts): two
// regions' sandboxes (BE and FR profiles), a run of one region in this process with the table
// option `shard`, the keys each region lists (the oracle: each sandbox's own stream), and a hook
// that makes the next commits collide.
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, vi } from 'vitest';
import { RunEvents } from '../../../src/events.js';
import { createRegistry } from '../../../src/pipeline/builtins.js';
import { parsePipelines } from '../../../src/pipeline/loader.js';
import { runPipeline, type RunSummary } from '../../../src/pipeline/runner.js';
import { FilesCatalog } from '../../../src/sinks/table/iceberg/files-catalog.js';
import type { IcebergCatalog } from '../../../src/sinks/table/iceberg/iceberg-catalog.js';
import { startTestSandbox, type TestSandbox } from '../../helpers/sandbox.js';
import { listedIds } from '../../regions/region-ids.js';

export type Region = 'be' | 'fr';
const registry = createRegistry();
export const sandboxes = {} as Record<Region, TestSandbox>;
let ids: Record<string, string[]> = {};

/** Starts the two regions' sandboxes for the file's tests (and restores what a test mocked). */
export function useRegionSandboxes(): void {
  beforeAll(async () => {
    [sandboxes.be, sandboxes.fr] = await Promise.all([
      startTestSandbox({ products: 24, seed: 40, profile: 'be' }),
      startTestSandbox({ products: 18, seed: 41, profile: 'fr' }),
    ]);
    ids = await listedIds(sandboxes);
  });
  afterAll(async () => {
    await Promise.all([sandboxes.be?.close(), sandboxes.fr?.close()]);
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });
}

/** A REST catalog the runs commit through (undefined: the files-only catalog). */
let restUri: string | undefined;

/** Later runs commit through the REST catalog at `uri` (undefined: the files-only catalog). */
export function useRestCatalog(uri: string | undefined): void {
  restUri = uri;
}

function yaml(region: Region, table: string, format = 'iceberg', shard: string = region): string {
  const catalog = restUri ? `, catalog: { type: rest, uri: "${restUri}", namespace: [lake, eu] }` : '';
  return [
    `name: ${region}-products`,
    'connection:',
    '  regions:',
    `    - { region: ${region}, baseUrl: "${sandboxes[region].url}" }`,
    'source: { type: products.query, filter: { status: [active, inactive] } }',
    'sinks:',
    `  - { type: table, path: "${table}", format: ${format}, key: "region,id", shard: ${shard}, keepSnapshots: 5${catalog} }`,
    '',
  ].join('\n');
}

const env = (): NodeJS.ProcessEnv => ({
  CATALOG_BE_API_KEY: sandboxes.be.credentials.apiKey,
  CATALOG_BE_API_SECRET: sandboxes.be.credentials.apiSecret,
  CATALOG_FR_API_KEY: sandboxes.fr.credentials.apiKey,
  CATALOG_FR_API_SECRET: sandboxes.fr.credentials.apiSecret,
  CATALOG_RATE_LIMIT: '0',
});

/** One process's run of its region, in this process (each run its own clients, lock and sink). */
export async function runRegion(
  dir: string,
  region: Region,
  events = new RunEvents(),
  format = 'iceberg',
  shard: string = region,
): Promise<RunSummary> {
  const [loaded] = parsePipelines(yaml(region, join(dir, 'lake'), format, shard), registry, {
    file: join(dir, `${region}.yml`),
  });
  return runPipeline(loaded!, { registry, env: env(), events });
}

type Commit = IcebergCatalog['commit'];

/**
 * The next `parties` calls of the catalog's commit wait for each other: each was built on the
 * versions its run loaded before any of them committed, so all but one lose the race.
 */
export function collideNext(
  parties: number,
  delay: () => number,
  on: { prototype: { commit: Commit } } = FilesCatalog,
): void {
  const original = on.prototype.commit;
  let arrived = 0;
  let release!: () => void;
  const all = new Promise<void>((resolve) => (release = resolve));
  vi.spyOn(on.prototype, 'commit').mockImplementation(async function (
    this: IcebergCatalog,
    ...args: Parameters<Commit>
  ) {
    if (arrived < parties) {
      if (++arrived === parties) release();
      await all;
      await new Promise((resolve) => setTimeout(resolve, delay()));
    }
    return original.apply(this, args);
  });
}

export type Summary = Record<string, string>;
export interface Meta {
  'current-snapshot-id': number;
  snapshots: Array<{ 'snapshot-id': number; summary: Summary }>;
}

export const keysOf = (rows: Array<Record<string, unknown>>) =>
  rows.map((r) => `${String(r.region)}:${String(r.id)}`).sort();
export const expectedKeys = () => [...ids.be!.map((id) => `be:${id}`), ...ids.fr!.map((id) => `fr:${id}`)].sort();
