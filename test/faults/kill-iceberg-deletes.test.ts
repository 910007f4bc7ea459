// Kill -9 at the steps of an Iceberg row delta (issue 41), then a good run: the run's
// position-delete file, its positions beside the merge state, the delete manifest and the commit
// of current/. Steps are named (`<operation>:<text>:<n>`, storage/step-hook.ts), not numbered, so
// they stay the same steps whatever else a run writes. The pipeline has no state: every run is a
// full read, which writes its changes as a row delta, and files past the deleted share are
// rewritten as the runs go (the compaction), which a good run's snapshot shows. What is checked
// after each kill and each good run is icebergCheck's (kill-every-step-support.ts): icebird reads
// current/ whole, each run's change rows exactly once, nothing unreferenced left after a good run.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, sandboxEnv, workspace } from '../cli/cli-process.js';
import { readIcebergMetadata } from '../helpers/iceberg-reader.js';
import { icebergCheck, ids, MAX_ROWS, sandbox, SOURCE, useKillFixtures } from './kill-every-step-support.js';

useKillFixtures({ s3: false });

const PIPELINE = `name: kill-iceberg-deletes\n${SOURCE}\nsinks:\n  - { type: table, format: iceberg, keepSnapshots: 3, path: lake/products, key: id, maxRows: ${MAX_ROWS} }\n`;

/** Where each killed run stops: the delete file, the positions, the delete manifest, the pointer of current/. */
const KILLS = [
  'rename:/current/data/deletes-:1',
  'rename:/_table/positions-:1',
  // current/'s manifests: the live data files (m0), then the live delete files (m1) when no data file went.
  'link:/current/metadata/:2',
  'rename:/current/metadata/version-hint.text:1',
];

describe('kill -9 at the steps of an Iceberg row delta, then a good run', () => {
  it('table sink, format: iceberg: delete file, positions, delete manifest, commit', { timeout: 300_000 }, async () => {
    const ws = await workspace('catalog-streams-kill-deletes-');
    try {
      const root = join(ws.dir, 'lake/products');
      const file = join(ws.dir, 'pipeline.yml');
      await writeFile(file, PIPELINE);
      const env = sandboxEnv(sandbox);
      const check = icebergCheck(root);
      let pending = new Set(ids);
      const seen = new Set<string>();
      const settle = async (after: 'kill' | 'good', stderr = '') => {
        const { committed } = await check(after, pending, stderr);
        if (committed.some((r) => !seen.has(r))) pending = new Set();
        for (const r of committed) seen.add(r);
      };
      let round = 0;
      const touch = () => {
        round++;
        const chosen = Array.from({ length: 7 }, (_, i) => ids[(round * 37 + i * 29) % ids.length]!);
        for (const id of sandbox.touch(chosen).products) pending.add(id);
      };
      const run = (extra: NodeJS.ProcessEnv = {}) =>
        runCli(['run', file, '--log-format', 'json'], { cwd: ws.dir, env: { ...env, ...extra } });
      const first = await run();
      expect(first.code, first.stderr).toBe(0);
      await settle('good', first.stderr);
      const rewrites: number[] = [];
      const deleteFiles: number[] = [];
      for (const at of KILLS) {
        touch();
        const killed = await run({ CATALOG_STREAMS_TEST_KILL_AT_STEP: at });
        expect(killed.signal, `the run reached ${at}: ${killed.stderr}`).toBe('SIGKILL');
        await settle('kill').catch((err: Error) => {
          throw new Error(`after a kill at ${at}: ${err.message}`);
        });
        touch();
        const good = await run();
        expect(good.code, `the good run after a kill at ${at}: ${good.stderr}`).toBe(0);
        await settle('good', good.stderr).catch((err: Error) => {
          throw new Error(`after the good run following a kill at ${at}: ${err.message}`);
        });
        const meta = await readIcebergMetadata(join(root, 'current'));
        const snapshots = meta.snapshots as Array<{ summary: Record<string, string>; 'snapshot-id': number }>;
        const s = snapshots.find((x) => x['snapshot-id'] === meta['current-snapshot-id'])!.summary;
        rewrites.push(Number(s['deleted-data-files'] ?? 0));
        deleteFiles.push(Number(s['total-delete-files']));
      }
      // The good runs wrote position deletes, and some rewrote files past the deleted share.
      expect(deleteFiles.some((n) => n > 0)).toBe(true);
      expect(rewrites.some((n) => n > 0)).toBe(true);
    } finally {
      await ws.remove();
    }
  });
});
