// Iceberg expiry and the repair after a kill (issue 35 item 7). `format: iceberg`,
// `keepSnapshots: 1`: a run killed between the commit of `changes/` and that of `current/` (the
// documented window, storage/step-hook.ts stops the CLI just before current/'s metadata file)
// must not have expired the snapshot `current/` names from `changes/`: the next run rolls
// `changes/` back to it and writes the killed run's changes again. The oracle is the test's own
// bookkeeping (every id inserted by the first run, the ids the sandbox touched since), read back
// by icebird through the version hints.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { beforeNow, servedProductIds, startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { icebergReferences, readIceberg } from '../helpers/iceberg-reader.js';
import { jsonLines, runCli, sandboxEnv, summaryRunId, workspace } from '../cli/cli-process.js';
import { writeFile } from 'node:fs/promises';

let sandbox: TestSandbox;
let ids: string[];
beforeAll(async () => {
  sandbox = await startTestSandbox({ products: 40, seed: 35 });
  ids = await servedProductIds(sandbox);
});
afterAll(() => sandbox?.close());

const PIPELINE = `name: ice
source: { type: products.query, filter: { createdAt: { from: 0 } }, sorting: { id: ASC } }
sinks:
  - { type: table, format: iceberg, keepSnapshots: 1, path: lake/products, key: id }
`;

/** `<run> <change> <id>` of every row of changes/, sorted. */
async function changeRows(root: string): Promise<string[]> {
  const rows = await readIceberg(join(root, 'changes'));
  return rows.map((r) => `${String(r._run_id)} ${String(r._change)} ${String(r.id)}`).sort();
}

describe('format: iceberg, keepSnapshots: 1, a kill between the two commits', () => {
  it('the next run repairs changes/ to the run current/ names and keeps the whole change history', async () => {
    const ws = await workspace('catalog-streams-iceberg-expiry-');
    try {
      const file = join(ws.dir, 'ice.yml');
      await writeFile(file, PIPELINE);
      const root = join(ws.dir, 'lake/products');
      const env = sandboxEnv(sandbox);
      const run = (extra: Record<string, string> = {}) =>
        runCli(['run', file, '--log-format', 'json'], { cwd: ws.dir, env: { ...env, ...extra } });

      const first = await run();
      expect(first.code, first.stderr).toBe(0);
      const run1 = summaryRunId(first.stderr);
      const history = ids.map((id) => `${run1} insert ${id}`);
      expect(await changeRows(root)).toEqual(history.sort());

      // A second run, killed just before current/'s new metadata file: changes/ holds it, current/ does not.
      const touched = sandbox.touch(ids.slice(0, 3), beforeNow()).products.sort();
      const killed = await run({ CATALOG_STREAMS_TEST_KILL_AT_STEP: 'link:/current/metadata/v2.metadata.json:1' });
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
      expect((await icebergReferences(join(root, 'current'))).currentRunId).toBe(run1);
      const ahead = await changeRows(root);
      expect(ahead.filter((r) => r.startsWith(run1))).toEqual(history);
      expect(ahead).toHaveLength(ids.length + touched.length);

      const third = await run();
      expect(third.code, third.stderr).toBe(0);
      const run3 = summaryRunId(third.stderr);
      const repaired = jsonLines(third.stderr).find((l) => l.event === 'table.repaired');
      expect(repaired?.message).toMatch(new RegExp(`rolled back to run ${run1}'s snapshot`));
      // The first run's inserts are still there; the killed run's rows are gone, written again by the third.
      expect(await changeRows(root)).toEqual([...history, ...touched.map((id) => `${run3} update ${id}`)].sort());
      expect((await readIceberg(join(root, 'current'))).map((r) => String(r.id)).sort()).toEqual(ids);

      // Expiry still bounds the history: the newest snapshot and the one before it (until the next commit).
      const fourth = await run();
      expect(fourth.code, fourth.stderr).toBe(0);
      for (const table of ['current', 'changes']) {
        const refs = await icebergReferences(join(root, table));
        expect(refs.snapshots, table).toBe(2);
      }
      expect((await changeRows(root)).filter((r) => r.startsWith(run1))).toEqual(history);
    } finally {
      await ws.remove();
    }
  }, 120_000);
});
