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
import { RunFailedError } from '../../src/pipeline/runner.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { seededRandom } from '../helpers/random-records.js';
import { tempDir } from './records.js';
import { dayTime, pipelineYaml, TableDays } from './table-harness.js';

let sandbox: TestSandbox;
beforeAll(async () => {
  sandbox = await startTestSandbox({ products: 700, seed: 31 });
});
afterAll(async () => {
  await sandbox?.close();
});

const FULL_DAYS = new Set([4, 9, 14, 19]);
const FAILED_DAY = 7;
const RERUN_DAY = 12;

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

    for (let d = 0; d < 20; d++) {
      if (d > 0) await days.mutateDay(d, 1, rnd);
      const at = dayTime(d);
      if (d === FAILED_DAY) {
        const before = await readFile(join(root, '_table.json'), 'utf8');
        const state = await readFile(join(dir, '.state/products-table.json'), 'utf8');
        // A full run in which one record in 40 is served schema-invalid: validate fails it part-way through.
        await sandbox.post('/_sandbox/faults', { invalidRecordRate: 0.025 });
        const failed = await days.run(at, { full: true }).then(
          () => undefined,
          (err: unknown) => err,
        );
        await sandbox.post('/_sandbox/faults', {});
        expect(failed).toBeInstanceOf(RunFailedError);
        expect((failed as RunFailedError).exitCode).toBe(1);
        expect((failed as RunFailedError).code).toBe('data.invalid');
        // Nothing published: the manifest byte for byte, no folder for the day, no temp file, the cursor kept.
        expect(await readFile(join(root, '_table.json'), 'utf8')).toBe(before);
        expect(await readFile(join(dir, '.state/products-table.json'), 'utf8')).toBe(state);
        const date = at.toISOString().slice(0, 10);
        expect(await readdir(join(root, `snapshot/dt=${date}`)).catch(() => [])).toEqual([]);
        expect(await readdir(join(root, `changes/dt=${date}`)).catch(() => [])).toEqual([]);
        expect((await readdir(join(root, '_table'))).filter((n) => n.endsWith('.tmp'))).toEqual([]);
        continue;
      }
      const full = FULL_DAYS.has(d);
      const mode = d === 0 ? 'first' : full ? 'full' : 'incremental';
      const next = await days.expectedAfter(mode);
      const summary = await days.run(at, { full });
      await days.check(root, summary, at, next);
      if (d === RERUN_DAY) {
        // A rerun the same day, after more changes: the day's snapshot is replaced.
        await days.mutateDay(d, 4, rnd);
        const later = dayTime(d, 5);
        const expected = await days.expectedAfter('incremental');
        const rerun = await days.run(later);
        await days.check(root, rerun, later, expected);
        const manifest = JSON.parse(await readFile(join(root, '_table.json'), 'utf8'));
        const first = manifest.versions.find((v: { runId: string }) => v.runId === summary.runId);
        expect(first).toMatchObject({ snapshot: [], replacedBy: rerun.runId });
        expect(first.changes.length).toBeGreaterThan(0);
      }
    }
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
