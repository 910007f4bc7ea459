// Kill at every step (issue 23): a run of the CLI is stopped with SIGKILL just before its N-th
// visible storage step (storage/step-hook.ts), for N = 1, 2, ... until a run gets through, and a
// good run follows each kill (in-process: only the killed runs need a process of their own). The catalog changes before every run (products touched), so each
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
// The hive table sink has two layouts, a local folder (this file) and S3
// (kill-every-step-s3.test.ts), over the same steps (lock, journal, state, parts, journal,
// _table.json, removals, unlock, history): they take turns, this file killing before the even
// steps, the S3 file before the odd ones, so each step is killed once across the two with half the
// runs (issue 38 item 8). The Iceberg layout is in kill-every-step-iceberg*.test.ts (steps 1-17,
// 18 on), the s3 sink in kill-every-step-s3-sink.test.ts (files the suite's two workers share), the
// machinery in kill-every-step-support.ts.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sandboxEnv, workspace } from '../cli/cli-process.js';
import {
  HIVE_FOREIGN,
  MAX_ROWS,
  SOURCE,
  killAtEveryStep,
  localStorage,
  placeForeignLocal,
  sandbox,
  tableCheck,
  useKillFixtures,
} from './kill-every-step-support.js';

useKillFixtures({ s3: false });

describe('kill -9 at every storage step, then a good run', () => {
  it('table sink, local folder: the even steps', { timeout: 600_000 }, async () => {
    const ws = await workspace('catalog-streams-kill-table-');
    try {
      const root = join(ws.dir, 'lake/products');
      const killed = await killAtEveryStep({
        dir: ws.dir,
        pipeline: `name: kill-table\n${SOURCE}\nsinks:\n  - { type: table, path: lake/products, key: id, maxRows: ${MAX_ROWS} }\n`,
        env: sandboxEnv(sandbox),
        check: tableCheck(localStorage(root), Object.keys(HIVE_FOREIGN)),
        untouched: await placeForeignLocal(root, HIVE_FOREIGN),
        fromStep: 2,
        every: 2,
      });
      // An incremental run has 19 steps here: the kills before steps 2 to 18 (the odd ones are
      // killed on S3, kill-every-step-s3.test.ts).
      expect(killed).toBeGreaterThanOrEqual(8);
    } finally {
      await ws.remove();
    }
  });
});
