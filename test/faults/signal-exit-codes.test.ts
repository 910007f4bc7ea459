// Exit codes around a signal (issue 35 item 8): the exit code never contradicts what was
// committed, whatever moment the signal comes at. The built CLI sends itself SIGTERM at an exact
// step (storage/step-hook.ts, CATALOG_STREAMS_TEST_KILL_SIGNAL): no timing guess.
// - as the process exits after a run that published: exit 0 (Node restores the default action
//   once a signal's last handler goes: the handlers stay until the process exits);
// - during the Iceberg commit (before current/'s metadata file): the commit is waited for and
//   taken back: exit 143, summary aborted with no output, both tables name the earlier run, the
//   cursor unchanged; the next run writes the changes once;
// - while a hive table writes its `_table.json` (its commit point): the same, `_table.json` as before;
// - after the Iceberg commit, while the sink settles: the run published: exit 0, summary
//   succeeded with the table's outputs, the cursor stored.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { beforeNow, servedProductIds, startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { icebergReferences, readIceberg } from '../helpers/iceberg-reader.js';
import { jsonLines, listFiles, runCli, sandboxEnv, summaryRunId, workspace } from '../cli/cli-process.js';

let sandbox: TestSandbox;
let ids: string[];
beforeAll(async () => {
  sandbox = await startTestSandbox({ products: 30, seed: 81 });
  ids = await servedProductIds(sandbox);
});
afterAll(() => sandbox?.close());

const SOURCE = `source: { type: products.query, filter: { createdAt: { from: 0 } }, sorting: { id: ASC } }`;
const ICEBERG = `name: ice
${SOURCE}
sinks:
  - { type: table, format: iceberg, keepSnapshots: 1, path: lake/products, key: id }
state: { path: .state/ice.json }
`;

async function setUp(yaml: string) {
  const ws = await workspace('catalog-streams-signal-exit-');
  const file = join(ws.dir, 'pipeline.yml');
  await writeFile(file, yaml);
  const env = sandboxEnv(sandbox);
  const run = (signalAt?: string) =>
    runCli(['run', file, '--log-format', 'json'], {
      cwd: ws.dir,
      env: signalAt
        ? { ...env, CATALOG_STREAMS_TEST_KILL_AT_STEP: signalAt, CATALOG_STREAMS_TEST_KILL_SIGNAL: 'SIGTERM' }
        : env,
    });
  return { ws, run, root: join(ws.dir, 'lake/products') };
}

const summaryOf = (stderr: string) => jsonLines(stderr).find((l) => l.event === 'summary')!;

/** `<run> <change> <id>` of every row of changes/, sorted. */
async function changeRows(root: string): Promise<string[]> {
  const rows = await readIceberg(join(root, 'changes'));
  return rows.map((r) => `${String(r._run_id)} ${String(r._change)} ${String(r.id)}`).sort();
}

describe('SIGTERM at an exact moment: the exit code says what was committed', () => {
  it('as the process exits after a run that published: exit 0, summary succeeded', async () => {
    const { ws, run } = await setUp(`name: flat\n${SOURCE}\nsinks:\n  - { type: jsonl, path: "out/products.jsonl" }\n`);
    try {
      const r = await run('exit:catalog-streams:1');
      expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 0, signal: null });
      // (Whether the signal's line is written before the process ends is up to the event loop: not asserted.)
      expect(summaryOf(r.stderr)).toMatchObject({ status: 'succeeded' });
      expect((await readFile(join(ws.dir, 'out/products.jsonl'), 'utf8')).trim().split('\n')).toHaveLength(ids.length);
    } finally {
      await ws.remove();
    }
  }, 60_000);

  it('during the Iceberg commit: taken back, exit 143, both tables as before, the cursor unchanged', async () => {
    const { ws, run, root } = await setUp(ICEBERG);
    try {
      const first = await run();
      expect(first.code, first.stderr).toBe(0);
      const run1 = summaryRunId(first.stderr);
      const history = await changeRows(root);
      const state = await readFile(join(ws.dir, '.state/ice.json'), 'utf8');
      const touched = sandbox.touch(ids.slice(0, 4), beforeNow()).products.sort();

      const stopped = await run('link:/current/metadata/v2.metadata.json:1');
      expect({ code: stopped.code, signal: stopped.signal }, stopped.stderr).toEqual({ code: 143, signal: null });
      expect(summaryOf(stopped.stderr)).toMatchObject({ status: 'aborted', outputs: [], cursor: { stored: false } });
      for (const table of ['current', 'changes'])
        expect((await icebergReferences(join(root, table))).currentRunId, table).toBe(run1);
      expect(await changeRows(root)).toEqual(history);
      expect(await readFile(join(ws.dir, '.state/ice.json'), 'utf8')).toBe(state);

      // The next run writes the changes once, from the cursor that did not move.
      const next = await run();
      expect(next.code, next.stderr).toBe(0);
      const run3 = summaryRunId(next.stderr);
      expect(await changeRows(root)).toEqual([...history, ...touched.map((id) => `${run3} update ${id}`)].sort());
    } finally {
      await ws.remove();
    }
  }, 60_000);

  it('while a hive table writes its _table.json: taken back, exit 143, _table.json as before, the cursor unchanged', async () => {
    const { ws, run } = await setUp(
      ICEBERG.replace('format: iceberg, keepSnapshots: 1, ', '').replace('lake/products', 'lake/hive'),
    );
    try {
      const first = await run();
      expect(first.code, first.stderr).toBe(0);
      const manifest = await readFile(join(ws.dir, 'lake/hive/_table.json'), 'utf8');
      const state = await readFile(join(ws.dir, '.state/ice.json'), 'utf8');
      sandbox.touch(ids.slice(10, 12), beforeNow());

      const stopped = await run('rename:/_table.json:1');
      expect({ code: stopped.code, signal: stopped.signal }, stopped.stderr).toEqual({ code: 143, signal: null });
      expect(summaryOf(stopped.stderr)).toMatchObject({ status: 'aborted', outputs: [], cursor: { stored: false } });
      expect(await readFile(join(ws.dir, 'lake/hive/_table.json'), 'utf8')).toBe(manifest);
      expect(await readFile(join(ws.dir, '.state/ice.json'), 'utf8')).toBe(state);
      const runId = summaryRunId(stopped.stderr);
      expect((await listFiles(join(ws.dir, 'lake/hive'))).filter((f) => f.includes(runId))).toEqual([]);
    } finally {
      await ws.remove();
    }
  }, 60_000);

  it('after the Iceberg commit, while the sink settles: the run published, exit 0, the cursor stored', async () => {
    const { ws, run, root } = await setUp(ICEBERG);
    try {
      const first = await run();
      expect(first.code, first.stderr).toBe(0);
      const cursor = JSON.parse(await readFile(join(ws.dir, '.state/ice.json'), 'utf8')).cursor as number;
      const touched = sandbox.touch(ids.slice(5, 8), beforeNow()).products.sort();

      // The settle removes the earlier merge state: the first removal under _table/ is past the commit point.
      const late = await run('remove:/_table/state-:1');
      expect({ code: late.code, signal: late.signal }, late.stderr).toEqual({ code: 0, signal: null });
      const run2 = summaryRunId(late.stderr);
      const summary = summaryOf(late.stderr);
      expect(summary).toMatchObject({ status: 'succeeded', cursor: { stored: true } });
      expect((summary.outputs as Array<{ location: string }>).some((o) => o.location.includes(run2))).toBe(true);
      const after = jsonLines(late.stderr).find((l) => l.event === 'run.after_commit');
      expect(after?.message).toMatch(/received SIGTERM after every output was published: the outputs stay/);
      for (const table of ['current', 'changes'])
        expect((await icebergReferences(join(root, table))).currentRunId, table).toBe(run2);
      expect((await changeRows(root)).filter((r) => r.startsWith(run2))).toEqual(
        touched.map((id) => `${run2} update ${id}`),
      );
      expect(JSON.parse(await readFile(join(ws.dir, '.state/ice.json'), 'utf8')).cursor).toBeGreaterThan(cursor);
    } finally {
      await ws.remove();
    }
  }, 60_000);
});
