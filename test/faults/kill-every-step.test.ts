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
// The Iceberg layout is in kill-every-step-iceberg.test.ts, the S3 layouts in
// kill-every-step-s3.test.ts (three files, so the suite's two workers share them), the machinery in
// kill-every-step-support.ts.
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
});
