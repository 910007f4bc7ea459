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
import { tempDir } from './records.js';
import { dayTime, pipelineYaml, TableDays } from './table-harness.js';

let sandbox: TestSandbox;
beforeAll(async () => {
  sandbox = await startTestSandbox({ products: 700, seed: 31 });
});
afterAll(async () => {
  await sandbox?.close();
});

/** A small deterministic generator (mulberry32) for the day's choices. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FULL_DAYS = new Set([4, 9, 14, 19]);
const FAILED_DAY = 7;
const RERUN_DAY = 12;

describe('table sink: 20 days of history', () => {
  it('snapshot, change rows and the history view are exact after every run', async () => {
    const dir = await tempDir('table-days-');
    const days = new TableDays(sandbox, dir, pipelineYaml('lake/products', { maxRatio: 0.05 }));
    await days.write();
    const root = join(dir, 'lake/products');
    const rnd = random(7);
    // A pool of products not yet in the catalog, revealed later as inserts.
    await sandbox.post('/_sandbox/hide', { count: 80, at: Math.floor(dayTime(-1).getTime() / 1000) });
    days.pending.clear();

    const mutateDay = async (d: number, hour: number) => {
      const at = Math.floor(dayTime(d, hour).getTime() / 1000);
      await days.mutate('touch', { count: 1 + Math.floor(rnd() * 6), at });
      await days.mutate('reveal', { count: Math.floor(rnd() * 5), at });
      const statuses = ['active', 'inactive', 'replaced', 'no_selection'];
      await days.mutate('status', {
        count: Math.floor(rnd() * 4),
        status: statuses[Math.floor(rnd() * 4)],
        ...(rnd() < 0.3 ? { deleted: true } : {}),
        at,
      });
      await days.mutate('hide', { count: Math.floor(rnd() * 4), at });
    };

    for (let d = 0; d < 20; d++) {
      if (d > 0) await mutateDay(d, 1);
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
        await mutateDay(d, 4);
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
