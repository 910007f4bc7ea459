// format: iceberg, position deletes (issue 41): an incremental run writes its new rows (inserted
// and updated keys) as new data files and names the rows they replace, and the deleted keys' rows,
// in one position-delete file; the earlier data files stay. Over a first run, incrementals with
// few changes and deletes, and a full run: icebird (which applies position deletes) reads current/
// as the sandbox's model (computed from the sandbox, not from the sink's files) after every run,
// every earlier snapshot still reads as its day's model (time travel), delete files exist and are
// listed in a delete manifest, and the full run rewrites every row and drops the deletes.
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parquetReadObjects } from 'hyparquet';
import { readFile } from 'node:fs/promises';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { readIceberg, readIcebergMetadata } from '../helpers/iceberg-reader.js';
import { seededRandom } from '../helpers/random-records.js';
import { tempDir } from './records.js';
import { dayTime, pipelineYaml, TableDays, type Model } from './table-harness.js';

let sandbox: TestSandbox;
beforeAll(async () => {
  sandbox = await startTestSandbox({ products: 300, seed: 43 });
});
afterAll(async () => {
  await sandbox?.close();
});

const FILE_ROWS = 50;

function rowOf(r: Record<string, unknown>): string {
  const u = r.meta_updatedAt instanceof Date ? r.meta_updatedAt.getTime() / 1000 : Number(r.meta_updatedAt) / 1e6;
  return `${String(r.id)} ${String(r.status)} ${String(r.deleted)} ${Number(r.publicPrice)} ${u}`;
}

function modelRows(model: Model): string[] {
  return [...model.values()].map((m) => `${m.id} ${m.status} ${m.deleted} ${m.publicPrice} ${m.u}`).sort();
}

/** current/ as icebird reads it (deletes applied), in key order: a row delta's files are not. */
async function readRows(current: string, metadataFileName?: string): Promise<string[]> {
  const rows = await readIceberg(current, metadataFileName ? { metadataFileName } : {});
  return rows.map(rowOf).sort();
}

type Summary = Record<string, string>;

async function currentSnapshot(current: string): Promise<Summary> {
  const meta = await readIcebergMetadata(current);
  const snapshots = meta.snapshots as Array<{ summary: Summary; 'snapshot-id': number }>;
  return snapshots.find((s) => s['snapshot-id'] === meta['current-snapshot-id'])!.summary;
}

describe('table sink, format: iceberg: position deletes', () => {
  it('writes changed rows and position deletes; icebird reads every version exactly', async () => {
    const dir = await tempDir('table-iceberg-deletes-');
    const yaml = pipelineYaml('lake/products', { maxRatio: 0.2 }).replace(
      '    path: "lake/products"\n',
      `    path: "lake/products"\n    format: iceberg\n    fileRows: ${FILE_ROWS}\n`,
    );
    const days = new TableDays(sandbox, dir, yaml);
    await days.write();
    const current = join(dir, 'lake/products/current');
    const rnd = seededRandom(7);
    const versions: Array<{ metadata: string; model: Model }> = [];
    await sandbox.post('/_sandbox/hide', { count: 20, at: Math.floor(dayTime(-1).getTime() / 1000) });
    const seen = { deleteFiles: 0, positionDeletes: 0 };
    for (let d = 0; d < 6; d++) {
      if (d > 0) await days.mutateDay(d, 1, rnd);
      // Products gone by an incremental (a deleted flag) and by the full run (hidden: inferred deletes).
      if (d === 2 || d === 4) await days.mutate('hide', { count: 5, at: Math.floor(dayTime(d, 1).getTime() / 1000) });
      if (d === 1) await days.mutate('reveal', { count: 4, at: Math.floor(dayTime(d, 1).getTime() / 1000) });
      const full = d === 0 || d === 4;
      // Day 2 reads everything without a refresh (the cursor gone, as after fullReadEvery): the
      // keys it no longer finds are deleted, as position deletes.
      if (d === 2) await rm(join(dir, '.state/products-table.json'));
      const next = await days.expectedAfter(d === 0 ? 'first' : full || d === 2 ? 'full' : 'incremental');
      const summary = await days.run(dayTime(d), { full });
      expect(summary.status).toBe('succeeded');
      expect(await readRows(current)).toEqual(modelRows(next));
      const s = await currentSnapshot(current);
      const changed = ['inserted', 'updated', 'deleted'].reduce((n, c) => n + Number(s[`catalog-streams.${c}`]), 0);
      if (full) {
        // Every row written again, no delete file left.
        expect(Number(s['added-records'])).toBe(next.size);
        expect(s['total-delete-files']).toBe('0');
        expect(s['total-position-deletes']).toBe('0');
      } else {
        expect(changed).toBeGreaterThan(0);
        // Only the changed keys' rows are written: no earlier file is rewritten.
        expect(Number(s['added-records'])).toBe(
          Number(s['catalog-streams.inserted']) + Number(s['catalog-streams.updated']),
        );
        expect(s['deleted-data-files'] ?? '0').toBe('0');
        const replaced = Number(s['catalog-streams.updated']) + Number(s['catalog-streams.deleted']);
        expect(Number(s['added-position-deletes'] ?? 0)).toBe(replaced);
        if (replaced > 0) expect(s['added-delete-files']).toBe('1');
        seen.deleteFiles = Math.max(seen.deleteFiles, Number(s['total-delete-files']));
        seen.positionDeletes += Number(s['added-position-deletes'] ?? 0);
        if (d === 2) expect(Number(s['catalog-streams.deleted'])).toBeGreaterThan(0);
      }
      const hint = (await readFile(join(current, 'metadata/version-hint.text'), 'utf8')).trim();
      versions.push({ metadata: `v${hint}.metadata.json`, model: next });
      days.model = next;
      days.pending.clear();
      // Time travel: every earlier snapshot reads as its run's model, deletes applied as they were.
      for (const v of versions) expect(await readRows(current, v.metadata)).toEqual(modelRows(v.model));
    }
    expect(seen.deleteFiles).toBeGreaterThanOrEqual(2);
    expect(seen.positionDeletes).toBeGreaterThan(0);
    // A delete file as the spec has it: file_path and pos, sorted by both, naming live data files.
    const deletes = (await readdir(join(current, 'data'))).filter((n) => n.startsWith('deletes-'));
    expect(deletes.length).toBeGreaterThan(0);
    const rows = await parquetReadObjects({ file: (await readFile(join(current, 'data', deletes[0]!))).buffer });
    expect(rows.length).toBeGreaterThan(0);
    const keys = rows.map((r) => `${String(r.file_path)} ${String(r.pos).padStart(8, '0')}`);
    expect(keys).toEqual([...keys].sort());
    expect(String(rows[0]!.file_path)).toMatch(/^file:\/\/.*\/current\/data\/part-/);
  }, 120_000);
});
