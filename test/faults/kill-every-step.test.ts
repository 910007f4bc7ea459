// Kill at every step (issue 23): a run of the CLI is stopped with SIGKILL just before its N-th
// visible storage step (storage/step-hook.ts), for N = 1, 2, ... until a run gets through, and a
// good run follows each kill. The catalog changes before every run (products touched), so each
// run has updates to publish.
//
// The oracle is the test's own bookkeeping, not the code under test: the ids the sandbox touched
// since the last version that became visible, and the sandbox's product list. After every kill a
// reader going through the current manifest (`_table.json`, `_manifest.json`) must find a whole
// version: every file it lists present, the snapshot one row per product. After every good run:
// one row per key, each version's change rows exactly the touched ids (or every id for the first),
// and nothing under the dataset that the manifest does not list (no parts renamed before a kill,
// no superseded files, no temp files, no lock) but the runs' journals and what others placed: the
// table tests place foreign files in the table's folders (a Spark part, a README, another tool's
// JSON) and, locally, a symlink beside the table's root to a victim folder outside, before the
// first run; after every run all of it is still there, byte for byte (issue 36).
//
// The S3 layouts are in kill-every-step-s3.test.ts, the machinery in kill-every-step-support.ts.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sandboxEnv, workspace } from '../cli/cli-process.js';
import {
  HIVE_FOREIGN,
  ICEBERG_FOREIGN,
  MAX_ROWS,
  SOURCE,
  icebergCheck,
  killAtEveryStep,
  localStorage,
  placeForeignLocal,
  sandbox,
  tableCheck,
  useKillFixtures,
} from './kill-every-step-support.js';

useKillFixtures({ s3: false });

describe('kill -9 at every storage step, then a good run', () => {
  it('table sink, local folder', { timeout: 600_000 }, async () => {
    const ws = await workspace('catalog-streams-kill-table-');
    try {
      const root = join(ws.dir, 'lake/products');
      const killed = await killAtEveryStep({
        dir: ws.dir,
        pipeline: `name: kill-table\n${SOURCE}\nsinks:\n  - { type: table, path: lake/products, key: id, maxRows: ${MAX_ROWS} }\n`,
        env: sandboxEnv(sandbox),
        check: tableCheck(localStorage(root), Object.keys(HIVE_FOREIGN)),
        untouched: await placeForeignLocal(root, HIVE_FOREIGN),
      });
      expect(killed).toBeGreaterThanOrEqual(8);
    } finally {
      await ws.remove();
    }
  });

  it('table sink, format: iceberg, local folder', { timeout: 600_000 }, async () => {
    const ws = await workspace('catalog-streams-kill-iceberg-');
    try {
      const root = join(ws.dir, 'lake/products');
      const check = icebergCheck(root, Object.keys(ICEBERG_FOREIGN));
      const killed = await killAtEveryStep({
        dir: ws.dir,
        pipeline: `name: kill-iceberg\n${SOURCE}\nsinks:\n  - { type: table, format: iceberg, keepSnapshots: 3, path: lake/products, key: id, maxRows: ${MAX_ROWS} }\n`,
        env: sandboxEnv(sandbox),
        check,
        untouched: await placeForeignLocal(root, ICEBERG_FOREIGN),
      });
      expect(killed).toBeGreaterThanOrEqual(10);
      // The kills between the two tables' commits (before current/'s metadata file and before its
      // version hint, each also before the journal write naming it) left changes/ ahead four
      // times, and the next good run repaired it each time.
      expect(check.seen).toEqual({ ahead: 4, repaired: 4 });
    } finally {
      await ws.remove();
    }
  });
});
