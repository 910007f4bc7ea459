// The 20 simulated days of table-history.test.ts with format: iceberg: incremental and full days,
// a failed run, a same-day rerun, deletes. After every run icebird (an independent Iceberg
// reader) reads current/ and changes/ and finds exactly the model's rows (computed from the
// sandbox's records, not from the sink's files), one snapshot per successful run, and every
// earlier version of current/ still reads as its day's model (time travel). Expiry
// (keepSnapshots) and the removal of what only expired snapshots referenced are held by the
// kill-every-step test and test/sinks/iceberg.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunSummary } from '../../src/pipeline/runner.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { icebergReferences, readIceberg, readIcebergMetadata } from '../helpers/iceberg-reader.js';
import { seededRandom } from '../helpers/random-records.js';
import { tempDir } from './records.js';
import { dayTime, pipelineYaml, TableDays, twentyDays, type Model } from './table-harness.js';

let sandbox: TestSandbox;
beforeAll(async () => {
  sandbox = await startTestSandbox({ products: 500, seed: 37 });
});
afterAll(async () => {
  await sandbox?.close();
});

/** The sink's default keepSnapshots: every run of the 20 days stays. */
const KEEP = 30;

const text = (root: string, rel: string) => readFile(join(root, rel), 'utf8');

/** A row of current/ or changes/ as the model compares it. */
function rowOf(r: Record<string, unknown>): string {
  const u = r.meta_updatedAt instanceof Date ? r.meta_updatedAt.getTime() / 1000 : Number(r.meta_updatedAt) / 1e6;
  return `${String(r.id)} ${String(r.status)} ${String(r.deleted)} ${Number(r.publicPrice)} ${u}`;
}

function modelRows(model: Model): string[] {
  return [...model.values()]
    .sort((a, b) => (a.id < b.id ? -1 : 1))
    .map((m) => `${m.id} ${m.status} ${m.deleted} ${m.publicPrice} ${m.u}`);
}

class IcebergDays {
  /** Each successful run: its id, the model after it, and current/'s metadata file for it. */
  readonly runs: Array<{ runId: string; model: Model; metadata: string }> = [];
  previous: Model = new Map();
  /** `<run> <id> <change>` of every successful run. */
  readonly allChanges: string[] = [];

  constructor(
    readonly days: TableDays,
    readonly root: string,
  ) {}

  async check(summary: RunSummary, at: Date, next: Model): Promise<void> {
    expect(summary.status).toBe('succeeded');
    const current = join(this.root, 'current');
    const changes = join(this.root, 'changes');
    // current/: exactly the model, one row per key, in key order (written sorted).
    const rows = await readIceberg(current);
    // Sorted: a row delta's new rows are in files of their own, after the rows they replace.
    expect(rows.map(rowOf).sort()).toEqual(modelRows(next).sort());
    // changes/: this run's rows are exactly the differences against the previous version.
    const expected: string[] = [];
    for (const [id, row] of next) {
      const before = this.previous.get(id);
      if (!before) expected.push(`${id} insert`);
      else if (JSON.stringify(before) !== JSON.stringify(row)) expected.push(`${id} update`);
    }
    for (const id of this.previous.keys()) if (!next.has(id)) expected.push(`${id} delete`);
    const changed = (await readIceberg(changes)).filter((r) => r._run_id === summary.runId);
    expect(changed.map((r) => `${String(r.id)} ${String(r._change)}`).sort()).toEqual(expected.sort());
    for (const r of changed) {
      const at_ = r._changed_at instanceof Date ? r._changed_at.getTime() : Number(r._changed_at) / 1000;
      expect(at_).toBe(at.getTime());
      const known = r._change === 'delete' ? this.previous.get(String(r.id))! : next.get(String(r.id))!;
      expect([r.status, Number(r.publicPrice)]).toEqual([known.status, known.publicPrice]);
    }
    // The whole changes/ table: every run's rows once, none lost, none twice.
    this.allChanges.push(...expected.map((e) => `${summary.runId} ${e}`));
    const all = await readIceberg(changes);
    expect(all.map((r) => `${String(r._run_id)} ${String(r.id)} ${String(r._change)}`).sort()).toEqual(
      [...this.allChanges].sort(),
    );

    const metadata = `v${(await text(current, 'metadata/version-hint.text')).trim()}.metadata.json`;
    this.runs.push({ runId: summary.runId, model: next, metadata });
    this.previous = next;
    this.days.model = next;
    this.days.pending.clear();

    // One snapshot per successful run, the last KEEP kept; the current one is this run's.
    for (const table of [current, changes]) {
      const meta = await readIcebergMetadata(table);
      const snapshots = meta.snapshots as Array<{ summary: Record<string, string>; 'snapshot-id': number }>;
      expect(snapshots.map((s) => s.summary['catalog-streams.run-id'])).toEqual(
        this.runs.slice(-KEEP).map((r) => r.runId),
      );
      expect(meta['current-snapshot-id']).toBe(snapshots.at(-1)!['snapshot-id']);
    }
    // Time travel: every kept version of current/ reads as its run's model.
    for (const run of this.runs.slice(-KEEP)) {
      const then = await readIceberg(current, { metadataFileName: run.metadata });
      expect(then.map(rowOf).sort(), `as of ${run.runId}`).toEqual(modelRows(run.model).sort());
    }
    // current/data holds the files of the kept snapshots only (data and position deletes, some
    // of them written by earlier runs); changes/data every run's.
    const referenced = (await icebergReferences(current)).files.filter((f) => f.startsWith('data/'));
    expect((await readdir(join(current, 'data'))).map((n) => `data/${n}`).sort()).toEqual(referenced);
    expect((await readdir(join(this.root, '_table'))).sort()).toEqual([
      `positions-${summary.runId}.bin.gz`,
      `state-${summary.runId}.v8.gz`,
    ]);
  }
}

describe('table sink, format: iceberg: 20 days of history', () => {
  it('current/ and changes/ read by icebird are exact after every run, with time travel', async () => {
    const dir = await tempDir('table-iceberg-days-');
    const yaml = pipelineYaml('lake/products', { maxRatio: 0.05 }).replace(
      '    path: "lake/products"\n',
      `    path: "lake/products"\n    format: iceberg\n`,
    );
    expect(yaml).toContain('format: iceberg');
    const days = new TableDays(sandbox, dir, yaml);
    await days.write();
    const root = join(dir, 'lake/products');
    const ice = new IcebergDays(days, root);
    const rnd = seededRandom(11);
    await sandbox.post('/_sandbox/hide', { count: 60, at: Math.floor(dayTime(-1).getTime() / 1000) });
    days.pending.clear();

    const tables = ['current', 'changes'];
    const hints = () => Promise.all(tables.map((t) => text(root, `${t}/metadata/version-hint.text`)));
    const dataFiles = () => Promise.all(tables.map((t) => readdir(join(root, t, 'data'))));
    await twentyDays(days, rnd, {
      before: async () => ({ hints: await hints(), files: await dataFiles() }),
      async unchanged(before) {
        // Nothing committed, no data file left behind.
        expect(await hints()).toEqual(before.hints);
        expect(await dataFiles()).toEqual(before.files);
      },
      published: (summary, at, next) => ice.check(summary, at, next),
    });
    // 19 days and a rerun succeeded; full days saw disappearances as deletes.
    expect(ice.runs).toHaveLength(20);
    expect(ice.allChanges.some((c) => c.endsWith(' delete'))).toBe(true);
    const current = await readIcebergMetadata(join(root, 'current'));
    const summaries = (current.snapshots as Array<{ summary: Record<string, string> }>).map((s) => s.summary);
    expect(summaries.at(-1)!['catalog-streams.mode']).toBe('full');
  }, 180_000);
});
