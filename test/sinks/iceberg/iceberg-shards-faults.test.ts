// Issue 40, "Several processes, one table", beside iceberg-shards.test.ts: a sharded run whose
// files of current/ another writer changed fails with iceberg.shard_conflict and commits nothing;
// a shard's run stopped between its two commits is repaired by its next run without touching the
// other shard's rows; a record of another region and the hive layout are refused; and two region
// runs commit one table through a REST catalog with their transactions forced to collide.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RunEvents } from '../../../src/events.js';
import { FilesCatalog } from '../../../src/sinks/table/iceberg/files-catalog.js';
import { rollbackTo } from '../../../src/sinks/table/iceberg/iceberg-commit.js';
import { RestCatalog } from '../../../src/sinks/table/iceberg/rest-catalog.js';
import { startIcebergRestServer, type IcebergRestServer } from '../../helpers/iceberg-rest-server.js';
import { readIceberg } from '../../helpers/iceberg-reader.js';
import { seededRandom } from '../../helpers/random-records.js';
import { tempDir } from '../records.js';
import { localTable } from './iceberg-helpers.js';
import {
  collideNext,
  expectedKeys,
  keysOf,
  runRegion,
  useRegionSandboxes,
  useRestCatalog,
  type Summary,
} from './shard-runs.js';

useRegionSandboxes();

describe('several processes, one Iceberg table: what a shard refuses and repairs', () => {
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
    useRestCatalog(server.url);
    // The catalog's credential is read from the process's environment (iceberg-catalog-option.ts).
    process.env.ICEBERG_REST_CREDENTIAL = 'lake-writer:writer-secret-1234';
  });
  afterAll(async () => {
    delete process.env.ICEBERG_REST_CREDENTIAL;
    useRestCatalog(undefined);
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
