// Issue 13's simulated 20 days: each day random inserts (hidden products revealed), updates
// (touches), status changes and disappearances (hidden), through the sandbox's admin routes;
// incremental days, full days (deletes inferred), one failed run (nothing published, the cursor
// kept: the next day brings its changes), one same-day rerun (the day's snapshot replaced).
// After every run DuckDB checks the snapshot against the model computed from the sandbox's
// records, the change rows against the model's differences, and the history view "as of" every
// version so far (table-harness.ts).
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { seededRandom } from '../helpers/random-records.js';
import { tempDir } from './records.js';
import { FAILED_DAY, FULL_DAYS, RERUN_DAY, dayTime, pipelineYaml, TableDays, twentyDays } from './table-harness.js';

let sandbox: TestSandbox;
beforeAll(async () => {
  sandbox = await startTestSandbox({ products: 700, seed: 31 });
});
afterAll(async () => {
  await sandbox?.close();
});

describe('table sink: 20 days of history', () => {
  it('snapshot, change rows and the history view are exact after every run', async () => {
    const dir = await tempDir('table-days-');
    const days = new TableDays(sandbox, dir, pipelineYaml('lake/products', { maxRatio: 0.05 }));
    await days.write();
    const root = join(dir, 'lake/products');
    const rnd = seededRandom(7);
    // A pool of products not yet in the catalog, revealed later as inserts.
    await sandbox.post('/_sandbox/hide', { count: 80, at: Math.floor(dayTime(-1).getTime() / 1000) });
    days.pending.clear();

    const state = join(dir, '.state/products-table.json');
    await twentyDays(days, rnd, {
      before: async () => ({
        manifest: await readFile(join(root, '_table.json'), 'utf8'),
        state: await readFile(state, 'utf8'),
      }),
      async unchanged(before, at) {
        // Nothing published: the manifest byte for byte, no folder for the day, no temp file, the cursor kept.
        expect(await readFile(join(root, '_table.json'), 'utf8')).toBe(before.manifest);
        expect(await readFile(state, 'utf8')).toBe(before.state);
        const date = at.toISOString().slice(0, 10);
        expect(await readdir(join(root, `snapshot/dt=${date}`)).catch(() => [])).toEqual([]);
        expect(await readdir(join(root, `changes/dt=${date}`)).catch(() => [])).toEqual([]);
        expect((await readdir(join(root, '_table'))).filter((n) => n.endsWith('.tmp'))).toEqual([]);
      },
      async published(summary, at, next, rerunOf) {
        await days.check(root, summary, at, next);
        if (!rerunOf) return;
        // A rerun the same day, after more changes: the day's snapshot is replaced.
        const manifest = JSON.parse(await readFile(join(root, '_table.json'), 'utf8'));
        const first = manifest.versions.find((v: { runId: string }) => v.runId === rerunOf.runId);
        expect(first).toMatchObject({ snapshot: [], replacedBy: summary.runId });
        expect(first.changes.length).toBeGreaterThan(0);
      },
    });
    const manifest = JSON.parse(await readFile(join(root, '_table.json'), 'utf8'));
    expect(manifest.versions.map((v: { mode: string }) => v.mode)).toEqual([
      'first',
      ...Array.from({ length: 19 }, (_, i) => i + 1)
        .filter((d) => d !== FAILED_DAY)
        .flatMap((d) =>
          d === RERUN_DAY ? ['incremental', 'incremental'] : [FULL_DAYS.has(d) ? 'full' : 'incremental'],
        ),
    ]);
    // Full days saw the disappearances as deletes; incremental days never inferred one.
    expect(manifest.versions.filter((v: any) => v.mode === 'full').some((v: any) => v.counts.deleted > 0)).toBe(true);
    expect(
      manifest.versions.filter((v: any) => v.mode === 'incremental').every((v: any) => v.counts.deleted === 0),
    ).toBe(true);
    // Only the current state file is left.
    expect((await readdir(join(root, '_table'))).sort()).toEqual([`state-${manifest.current}.v8.gz`]);
  }, 120_000);
});
