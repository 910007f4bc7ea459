// Issue 40, "Several processes, one table": two runs, one per region (the BE and FR sandbox
// profiles), each with the table option `shard: <region>`, commit the same Iceberg table at the
// same time, 20 rounds. Their commits are forced to collide: the files-only catalog's commit waits
// until both runs reached theirs, so both built on the same version and one must lose, reload and
// rebase. After every round icebird (an independent reader) reads each region's listed products
// exactly once (the oracle: each sandbox's own stream), current/ names both rounds' runs, and
// changes/ holds a snapshot of each run: no commit lost. The failures and the REST catalog:
// iceberg-shards-faults.test.ts.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { RunEvents } from '../../../src/events.js';
import { readIceberg, readIcebergMetadata } from '../../helpers/iceberg-reader.js';
import { seededRandom } from '../../helpers/random-records.js';
import { tempDir } from '../records.js';
import {
  collideNext,
  expectedKeys,
  keysOf,
  runRegion,
  useRegionSandboxes,
  type Meta,
  type Region,
} from './shard-runs.js';

useRegionSandboxes();

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
});
