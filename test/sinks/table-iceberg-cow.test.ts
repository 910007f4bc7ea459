// format: iceberg, copy-on-write per file (issue 41): current/ is key-range files of `fileRows`
// rows, and a run rewrites only the files whose keys changed. Over a first run, incrementals with
// a few changes and a full run that infers deletes: icebird reads current/ as the sandbox's model
// (computed from the sandbox, not from the sink's files) after every run, each snapshot's summary
// shows few files added and deleted and a file of the first run still in the table, and every
// earlier snapshot still reads as its day's model (time travel).
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { readIceberg, readIcebergMetadata } from '../helpers/iceberg-reader.js';
import { seededRandom } from '../helpers/random-records.js';
import { tempDir } from './records.js';
import { dayTime, pipelineYaml, TableDays, type Model } from './table-harness.js';

let sandbox: TestSandbox;
beforeAll(async () => {
  sandbox = await startTestSandbox({ products: 400, seed: 41 });
});
afterAll(async () => {
  await sandbox?.close();
});

const FILE_ROWS = 6;

function rowOf(r: Record<string, unknown>): string {
  const u = r.meta_updatedAt instanceof Date ? r.meta_updatedAt.getTime() / 1000 : Number(r.meta_updatedAt) / 1e6;
  return `${String(r.id)} ${String(r.status)} ${String(r.deleted)} ${Number(r.publicPrice)} ${u}`;
}

function modelRows(model: Model): string[] {
  return [...model.values()]
    .sort((a, b) => (a.id < b.id ? -1 : 1))
    .map((m) => `${m.id} ${m.status} ${m.deleted} ${m.publicPrice} ${m.u}`);
}

type Summary = Record<string, string>;

async function currentSnapshot(current: string): Promise<Summary> {
  const meta = await readIcebergMetadata(current);
  const snapshots = meta.snapshots as Array<{ summary: Summary; 'snapshot-id': number }>;
  return snapshots.find((s) => s['snapshot-id'] === meta['current-snapshot-id'])!.summary;
}

describe('table sink, format: iceberg: copy-on-write per file', () => {
  it('rewrites only the files of changed keys; icebird reads every version exactly', async () => {
    const dir = await tempDir('table-iceberg-cow-');
    const yaml = pipelineYaml('lake/products', { maxRatio: 0.2 }).replace(
      '    path: "lake/products"\n',
      `    path: "lake/products"\n    format: iceberg\n    fileRows: ${FILE_ROWS}\n`,
    );
    const days = new TableDays(sandbox, dir, yaml);
    await days.write();
    const current = join(dir, 'lake/products/current');
    const rnd = seededRandom(5);
    const versions: Array<{ metadata: string; model: Model }> = [];
    let firstRun = '';
    // Hidden before the first run: revealed later, they are inserts.
    await sandbox.post('/_sandbox/hide', { count: 30, at: Math.floor(dayTime(-1).getTime() / 1000) });
    const counts = { inserted: 0, deleted: 0 };
    for (let d = 0; d < 6; d++) {
      if (d > 0) await days.mutateDay(d, 1, rnd);
      // Gone before the full run: it infers their deletes.
      if (d === 4) await days.mutate('hide', { count: 6, at: Math.floor(dayTime(d, 1).getTime() / 1000) });
      if (d === 1) await days.mutate('reveal', { count: 4, at: Math.floor(dayTime(d, 1).getTime() / 1000) });
      const full = d === 0 || d === 4;
      const next = await days.expectedAfter(d === 0 ? 'first' : full ? 'full' : 'incremental');
      const summary = await days.run(dayTime(d), { full });
      expect(summary.status).toBe('succeeded');
      firstRun ||= summary.runId;
      // current/: the model, in key order (one manifest lists the files in key order).
      expect((await readIceberg(current)).map(rowOf)).toEqual(modelRows(next));
      const s = await currentSnapshot(current);
      const total = Number(s['total-data-files']);
      expect(total).toBeGreaterThanOrEqual(Math.floor(next.size / (2 * FILE_ROWS)));
      const changed = ['inserted', 'updated', 'deleted'].reduce((n, c) => n + Number(s[`catalog-streams.${c}`]), 0);
      if (d > 0) for (const c of ['inserted', 'deleted'] as const) counts[c] += Number(s[`catalog-streams.${c}`]);
      if (d === 0) expect(Number(s['added-data-files'])).toBe(Math.ceil(next.size / FILE_ROWS));
      else {
        // Each changed key is in one key range: at most that many files replaced, the rest kept.
        expect(changed).toBeGreaterThan(0);
        expect(Number(s['added-data-files'])).toBeLessThanOrEqual(changed);
        expect(Number(s['deleted-data-files'])).toBeLessThanOrEqual(changed);
        expect(Number(s['added-data-files'])).toBeLessThan(total / 2);
        expect(Number(s['added-files-size'])).toBeLessThan(Number(s['total-files-size']) / 2);
      }
      const hint = (await readFile(join(current, 'metadata/version-hint.text'), 'utf8')).trim();
      versions.push({ metadata: `v${hint}.metadata.json`, model: next });
      days.model = next;
      days.pending.clear();
      // Time travel: every earlier snapshot reads as its run's model.
      for (const v of versions)
        expect((await readIceberg(current, { metadataFileName: v.metadata })).map(rowOf)).toEqual(modelRows(v.model));
    }
    expect(counts.inserted).toBeGreaterThan(0);
    expect(counts.deleted).toBeGreaterThan(0);
    // Files nothing changed since the first run are still the first run's.
    const manifests = await readIcebergMetadata(current);
    expect(JSON.stringify(manifests)).toContain(firstRun);
    expect((await readdir(join(current, 'data'))).some((name) => name.endsWith(`-${firstRun}.parquet`))).toBe(true);
  }, 120_000);
});
