// Issue 40, "Several processes, one table": two runs, one per region (the BE and FR sandbox
// profiles), each with the table option `shard: <region>`, commit the same Iceberg table at the
// same time, 20 rounds. Their commits are forced to collide: the files-only catalog's commit waits
// until both runs reached theirs, so both built on the same version and one must lose, reload and
// rebase. After every round icebird (an independent reader) reads each region's listed products
// exactly once (the oracle: each sandbox's own stream), current/ names both rounds' runs, and
// changes/ holds a snapshot of each run: no commit lost. Then: a sharded run whose files of
// current/ another writer changed fails with iceberg.shard_conflict, and the hive layout refuses
// a shard.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { RunEvents } from '../../../src/events.js';
import { createRegistry } from '../../../src/pipeline/builtins.js';
import { parsePipelines } from '../../../src/pipeline/loader.js';
import { runPipeline, type RunSummary } from '../../../src/pipeline/runner.js';
import { FilesCatalog } from '../../../src/sinks/table/iceberg/files-catalog.js';
import { rollbackTo } from '../../../src/sinks/table/iceberg/iceberg-commit.js';
import { RestCatalog } from '../../../src/sinks/table/iceberg/rest-catalog.js';
import type { IcebergCatalog } from '../../../src/sinks/table/iceberg/iceberg-catalog.js';
import { startIcebergRestServer, type IcebergRestServer } from '../../helpers/iceberg-rest-server.js';
import { localTable } from './iceberg-helpers.js';
import { readIceberg, readIcebergMetadata } from '../../helpers/iceberg-reader.js';
import { seededRandom } from '../../helpers/random-records.js';
import { startTestSandbox, type TestSandbox } from '../../helpers/sandbox.js';
import { listedIds } from '../../regions/region-ids.js';
import { tempDir } from '../records.js';

type Region = 'be' | 'fr';
const registry = createRegistry();
const sandboxes = {} as Record<Region, TestSandbox>;
let ids: Record<string, string[]> = {};

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

/** A REST catalog the runs commit through (undefined: the files-only catalog). */
let restUri: string | undefined;

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
async function runRegion(
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
function collideNext(parties: number, delay: () => number, on: { prototype: { commit: Commit } } = FilesCatalog): void {
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

type Summary = Record<string, string>;
interface Meta {
  'current-snapshot-id': number;
  snapshots: Array<{ 'snapshot-id': number; summary: Summary }>;
}

const keysOf = (rows: Array<Record<string, unknown>>) => rows.map((r) => `${String(r.region)}:${String(r.id)}`).sort();
const expectedKeys = () => [...ids.be!.map((id) => `be:${id}`), ...ids.fr!.map((id) => `fr:${id}`)].sort();

describe('several processes, one Iceberg table (table option shard)', () => {
  it('20 rounds of two region runs whose commits collide: both regions once each, no commit lost', async () => {
    const dir = await tempDir('iceberg-shards-');
    const rnd = seededRandom(40);
    let retries = 0;
    for (let round = 0; round < 20; round++) {
      collideNext(2, () => Math.floor(rnd() * 15));
      const retried: string[] = [];
      const events = () => {
        const e = new RunEvents();
        e.on('info', (i) => {
          if (i.code === 'iceberg.commit_retried') retried.push(i.message);
        });
        return e;
      };
      // Random start delays: the runs read and merge at different times, and still commit together.
      const start = (region: Region) =>
        new Promise((r) => setTimeout(r, Math.floor(rnd() * 20))).then(() => runRegion(dir, region, events()));
      const [be, fr] = await Promise.all([start('be'), start('fr')]);
      expect([be.status, fr.status]).toEqual(['succeeded', 'succeeded']);
      // Both built on the same versions: one lost at least once, reloaded and committed again.
      expect(retried.length).toBeGreaterThan(0);
      retries += retried.length;
      vi.restoreAllMocks();

      const current = join(dir, 'lake/current');
      expect(keysOf(await readIceberg(current))).toEqual(expectedKeys());
      const meta = (await readIcebergMetadata(current)) as unknown as Meta;
      const head = meta.snapshots.find((s) => s['snapshot-id'] === meta['current-snapshot-id'])!.summary;
      expect(head['catalog-streams.shards']).toBe('be,fr');
      expect(head['catalog-streams.shard.be.run-id']).toBe(be.runId);
      expect(head['catalog-streams.shard.fr.run-id']).toBe(fr.runId);
      const changes = (await readIcebergMetadata(join(dir, 'lake/changes'))) as unknown as Meta;
      const runs = changes.snapshots.map((s) => s.summary['catalog-streams.run-id']);
      expect(runs).toContain(be.runId);
      expect(runs).toContain(fr.runId);
      if (round === 0) {
        // The first round inserted every product of both regions: each change row once.
        const rows = keysOf(await readIceberg(join(dir, 'lake/changes')));
        expect(rows).toEqual(expectedKeys());
      }
    }
    expect(retries).toBeGreaterThanOrEqual(20);
    // Each shard's files are in its own folder; no file of an earlier round is live twice.
    expect((await readdir(join(dir, 'lake/current/data'))).sort()).toEqual(['shard=be', 'shard=fr']);
  }, 120_000);

  it("fails with iceberg.shard_conflict when another writer changed the shard's files of current/ before its commit", async () => {
    const dir = await tempDir('iceberg-shards-overlap-');
    const current = localTable(join(dir, 'lake'), 'current');
    const catalog = new FilesCatalog();
    const headId = async () => (await catalog.load(current))!.metadata['current-snapshot-id']!;
    for (const region of ['be', 'fr', 'be'] as const) expect((await runRegion(dir, region)).status).toBe('succeeded');
    // BE's files of the second BE run replaced its first ones; the snapshot before holds the first.
    const meta = (await catalog.load(current))!.metadata;
    const second = meta.snapshots!.find((s) => s['snapshot-id'] === meta['current-snapshot-id'])!;
    const before = second['parent-snapshot-id']!;
    // Another writer (a run of the same shard without its lock) puts BE's first files back
    // between this run's read and its commit: the rebase would drop rows this run never merged.
    const original = FilesCatalog.prototype.commit;
    let interfered = false;
    vi.spyOn(FilesCatalog.prototype, 'commit').mockImplementation(async function (this: FilesCatalog, ...args) {
      if (!interfered) {
        interfered = true;
        await original.call(catalog, [rollbackTo(current, (await catalog.load(current))!, before)]);
      }
      return original.apply(this, args);
    });
    const failed = await runRegion(dir, 'be').then(
      () => undefined,
      (err: unknown) => err as { code?: string; message?: string },
    );
    expect(interfered).toBe(true);
    expect(failed?.code).toBe('iceberg.shard_conflict');
    expect(failed?.message).toMatch(/another writer changed this shard's files/);
    // Nothing of the failed run reached current/: it is at the other writer's snapshot.
    expect(await headId()).toBe(before);
  }, 60_000);

  it("a shard's run stopped between its two commits is repaired by its next run, the other shard's rows kept", async () => {
    const dir = await tempDir('iceberg-shards-repair-');
    expect((await runRegion(dir, 'fr')).status).toBe('succeeded');
    // BE's first run commits changes/ (every BE product an insert) and stops before current/.
    const original = FilesCatalog.prototype.commit;
    vi.spyOn(FilesCatalog.prototype, 'commit').mockImplementation(async function (this: FilesCatalog, changes, fence) {
      await original.call(this, changes.slice(0, 1), fence);
      throw new Error('killed between the two commits');
    });
    await expect(runRegion(dir, 'be')).rejects.toThrow(/killed between/);
    vi.restoreAllMocks();
    const repaired: string[] = [];
    const events = new RunEvents();
    events.on('info', (i) => {
      if (i.code === 'table.repaired') repaired.push(i.message);
    });
    expect((await runRegion(dir, 'be', events)).status).toBe('succeeded');
    expect(repaired).toHaveLength(1);
    expect(repaired[0]).toMatch(/1 snapshot\(s\) of shard be/);
    // Every insert once: the stopped run's change rows went, FR's stayed.
    expect(keysOf(await readIceberg(join(dir, 'lake/changes')))).toEqual(expectedKeys());
    expect(keysOf(await readIceberg(join(dir, 'lake/current')))).toEqual(expectedKeys());
  }, 60_000);

  it("refuses a record of another region than the shard's, before anything is committed", async () => {
    const dir = await tempDir('iceberg-shards-region-');
    const failed = await runRegion(dir, 'be', new RunEvents(), 'iceberg', 'fr').then(
      () => undefined,
      (err: unknown) => err as { code?: string; message?: string },
    );
    expect(failed?.code).toBe('iceberg.shard_conflict');
    expect(failed?.message).toMatch(/region "be", this run writes shard fr/);
    await expect(readdir(join(dir, 'lake/current/metadata'))).rejects.toThrow(/ENOENT/);
  });

  it('refuses shard: with the hive layout, naming Iceberg', async () => {
    const dir = await tempDir('iceberg-shards-hive-');
    const failed = await runRegion(dir, 'be', new RunEvents(), 'hive').then(
      () => undefined,
      (err: unknown) => err as { code?: string; message?: string },
    );
    expect(failed?.code).toBe('config.invalid');
    expect(failed?.message).toMatch(/shard: .*format: iceberg/);
  });
});

describe('several processes, one Iceberg table, through a REST catalog', () => {
  let server: IcebergRestServer;
  beforeAll(async () => {
    server = await startIcebergRestServer({ clients: { 'lake-writer': 'writer-secret-1234' } });
    restUri = server.url;
    // The catalog's credential is read from the process's environment (iceberg-catalog-option.ts).
    process.env.ICEBERG_REST_CREDENTIAL = 'lake-writer:writer-secret-1234';
  });
  afterAll(async () => {
    delete process.env.ICEBERG_REST_CREDENTIAL;
    restUri = undefined;
    await server?.close();
  });

  it('two region runs whose transactions collide, 4 rounds: both regions once each, every run committed', async () => {
    const dir = await tempDir('iceberg-shards-rest-');
    const rnd = seededRandom(41);
    const read = (name: string, folder: string) =>
      readIceberg(join(dir, 'lake', folder), {
        metadataFileName: server.table(['lake', 'eu'], name)!.metadataLocation.split('/').at(-1)!,
      });
    // The tables created first, one run after the other: the test server answers two concurrent
    // creates of a table with a 500 (its metadata file exists), where a catalog answers 409.
    expect((await runRegion(dir, 'be')).status).toBe('succeeded');
    for (let round = 0; round < 4; round++) {
      collideNext(2, () => Math.floor(rnd() * 10), RestCatalog);
      const retried: string[] = [];
      const events = new RunEvents();
      events.on('info', (i) => {
        if (i.code === 'iceberg.commit_retried') retried.push(i.message);
      });
      const [be, fr] = await Promise.all([runRegion(dir, 'be', events), runRegion(dir, 'fr', events)]);
      vi.restoreAllMocks();
      expect([be.status, fr.status]).toEqual(['succeeded', 'succeeded']);
      expect(retried.length).toBeGreaterThan(0);
      expect(keysOf(await read('lake', 'current'))).toEqual(expectedKeys());
      const changes = await read('lake_changes', 'changes');
      // The first runs inserted every product once; later rounds changed nothing.
      expect(keysOf(changes)).toEqual(expectedKeys());
      const head = server.table(['lake', 'eu'], 'lake')!.metadata;
      const snapshots = head.snapshots as unknown as Array<{ 'snapshot-id': number; summary: Summary }>;
      const summary = snapshots.find((x) => x['snapshot-id'] === head['current-snapshot-id'])!.summary;
      expect([summary['catalog-streams.shard.be.run-id'], summary['catalog-streams.shard.fr.run-id']]).toEqual([
        be.runId,
        fr.runId,
      ]);
    }
  }, 90_000);
});
