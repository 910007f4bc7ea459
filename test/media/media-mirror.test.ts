// The media mirror against the sandbox's asset host (issue 39): every referenced file stored once
// with the host's bytes, no credentials sent, a rerun fetching nothing, failed runs losing no good
// copy, the grace period and ownership of removals, and the media table read by DuckDB.
import { createHash } from 'node:crypto';
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { faultFixture, leftBehind, listFiles, productIdsWithStatus, runInProcess } from '../faults/support.js';

const pipeline = (options = '') => `name: mirror
source: { type: products.query, filter: { status: active } }
sinks:
  - type: media-mirror
    path: out/media
    retries: 0
    retryDelay: 5ms
${options}`;

const f = faultFixture('mirror', pipeline(), { products: 40, rateLimit: 0, assetHost: true });

/** The files the active products reference, worked out here: first frontal (largeWebp, large, largeJpg), else first photo; every brochure. */
function expectedPaths(): Set<string> {
  const ds = f.sandbox.dataset;
  const paths = new Set<string>();
  const formats = ['largeWebp', 'large', 'largeJpg'];
  const pick = (items: any[]) =>
    [...items]
      .sort((a, b) => (a.displayOrder ?? 1e9) - (b.displayOrder ?? 1e9))
      .map((i) => formats.map((k) => i.formats?.[k]).find((u) => u))
      .find((u) => u);
  for (const id of productIdsWithStatus(f.sandbox, 'active')) {
    const p = JSON.parse(ds.productJson(ds.productIndex(id)));
    const image = pick(p.frontals ?? []) ?? pick(p.photos ?? []);
    if (image) paths.add(new URL(image).pathname);
    for (const l of p.links ?? []) if (l.linkType === 'brochure') paths.add(new URL(l.url).pathname);
  }
  return paths;
}

const out = () => f.ws.path('out/media');
const sha = async (file: string) =>
  createHash('sha256')
    .update(await readFile(file))
    .digest('hex');
const storedFiles = async () => (await listFiles(join(out(), 'files'))).map((p) => `/${p}`).sort();

async function expectAllStored(paths: Set<string>): Promise<void> {
  expect(await storedFiles()).toEqual([...paths].sort());
  for (const p of paths) expect(await sha(join(out(), 'files', p)), p).toBe(f.sandbox.assets!.sha256(p));
}

function summaryOf(run: { events: Array<{ name: string; payload: any }> }): any {
  return run.events.find((e) => e.name === 'info' && e.payload.code === 'media.summary')?.payload;
}

describe('media-mirror sink', () => {
  it('stores every referenced file once with the host bytes, sends no credentials, and a rerun fetches nothing', async () => {
    const assets = f.sandbox.assets!;
    assets.resetStats();
    const paths = expectedPaths();
    expect(paths.size).toBeGreaterThan(10);
    expect([...paths].some((p) => p.endsWith('.pdf'))).toBe(true);
    const first = await runInProcess(f.ws, f.sandbox);
    expect(first.ok, first.ok ? '' : first.error.message).toBe(true);
    await expectAllStored(paths);
    for (const p of paths) expect(assets.downloads(p), p).toBe(1);
    expect(assets.requests.length).toBe(paths.size);
    expect(assets.credentialed).toBe(0);
    expect(summaryOf(first)).toMatchObject({ files: paths.size, fetched: paths.size, failed: 0 });

    // The table, read by DuckDB, lists exactly the stored files with their bytes.
    const { rows } = await duckdbQuery(
      `SELECT stored_path, sha256, bytes, content_type, source_url, last_status, product_ids FROM read_parquet(${sqlString(join(out(), 'media.parquet'))})`,
    );
    expect(rows.map((r) => String(r.stored_path)).sort()).toEqual(
      [...paths].map((p) => join(out(), 'files', p)).sort(),
    );
    for (const r of rows) {
      const file = String(r.stored_path);
      expect(r.sha256).toBe(await sha(file));
      expect(Number(r.bytes)).toBe((await readFile(file)).length);
      expect(String(r.content_type)).toMatch(file.endsWith('.pdf') ? /^application\/pdf$/ : /^image\//);
      expect((r.product_ids as string[]).length).toBeGreaterThan(0);
    }

    assets.resetStats();
    const again = await runInProcess(f.ws, f.sandbox);
    expect(again.ok).toBe(true);
    expect(assets.requests.length).toBe(0);
    expect(summaryOf(again)).toMatchObject({ files: paths.size, fetched: 0, unchanged: paths.size });

    // Revalidating every file: conditional GETs, all answered 304, nothing downloaded.
    await writeFile(f.ws.path(f.ws.file), pipeline('    revalidate: always\n'));
    const revalidated = await runInProcess(f.ws, f.sandbox);
    expect(revalidated.ok).toBe(true);
    expect(assets.requests.length).toBe(paths.size);
    expect(assets.downloads()).toBe(0);
    expect(assets.requests.every((r) => r.status === 304)).toBe(true);
  });

  it('loses no good copy across failed runs, keeps no partial file, and completes on the next good run', async () => {
    const assets = f.sandbox.assets!;
    const paths = expectedPaths();
    try {
      assets.faults = { unavailableRate: 0.2, htmlRate: 0.2, truncateRate: 0.2, redirectRate: 0.3 };
      const faulty = await runInProcess(f.ws, f.sandbox);
      expect(faulty.ok).toBe(false);
      if (faulty.ok) return;
      expect(faulty.error.code).toBe('media.download_failed');
      expect(faulty.exitCode).toBe(1);
      const s = summaryOf(faulty);
      expect(s.failed).toBeGreaterThan(0);
      expect(s.fetched).toBeGreaterThan(0);
      // What is there is whole and right; nothing half-written is left.
      const stored = await storedFiles();
      expect(stored.length).toBe(s.fetched);
      for (const p of stored) expect(await sha(join(out(), 'files', p))).toBe(assets.sha256(p));
      expect((await leftBehind(out())).temp).toEqual([]);
      expect(assets.credentialed).toBe(0);

      assets.faults = {};
      assets.resetStats();
      // At once after the failures: retryFailed skips their backoff (media-mirror-backoff.test.ts).
      await writeFile(f.ws.path(f.ws.file), pipeline('    retryFailed: true\n'));
      const good = await runInProcess(f.ws, f.sandbox);
      expect(good.ok).toBe(true);
      await expectAllStored(paths);
      // Only the files that failed were fetched again.
      for (const p of stored) expect(assets.downloads(p)).toBe(0);
      expect(assets.downloads()).toBe(paths.size - stored.length);

      // A maintenance window while revalidating everything: every request fails, every copy stays.
      assets.faults = { unavailable: true };
      await writeFile(f.ws.path(f.ws.file), pipeline('    revalidate: always\n'));
      const down = await runInProcess(f.ws, f.sandbox);
      expect(down.ok).toBe(false);
      await expectAllStored(paths);
      const { rows } = await duckdbQuery(
        `SELECT count(*) AS n FROM read_parquet(${sqlString(join(out(), 'media.parquet'))}) WHERE stored_path IS NOT NULL AND last_status = 'failed'`,
      );
      expect(Number(rows[0]!.n)).toBe(paths.size);
    } finally {
      assets.faults = {};
    }
  });

  it('removes an unreferenced file only after the grace period, and never a file it did not write', async () => {
    const first = await runInProcess(f.ws, f.sandbox);
    expect(first.ok).toBe(true);
    const pdfs = (await storedFiles()).filter((p) => p.endsWith('.pdf'));
    expect(pdfs.length).toBeGreaterThan(0);
    const foreign = join(out(), 'files/media/brochures/0123456789abcdef0123.pdf');
    await mkdir(join(out(), 'files/media/brochures'), { recursive: true });
    await writeFile(foreign, 'not ours');
    // Brochures no longer wanted: within the default 7 days they stay.
    await writeFile(f.ws.path(f.ws.file), pipeline('    brochures: false\n'));
    expect((await runInProcess(f.ws, f.sandbox)).ok).toBe(true);
    expect((await storedFiles()).filter((p) => p.endsWith('.pdf')).length).toBe(pdfs.length + 1);
    // With no grace period they go, the foreign file stays.
    await writeFile(f.ws.path(f.ws.file), pipeline('    brochures: false\n    removeAfterDays: 0\n'));
    const removing = await runInProcess(f.ws, f.sandbox);
    expect(removing.ok).toBe(true);
    expect(summaryOf(removing).removed).toBe(pdfs.length);
    expect((await storedFiles()).filter((p) => p.endsWith('.pdf'))).toEqual([
      '/media/brochures/0123456789abcdef0123.pdf',
    ]);
    expect(await readFile(foreign, 'utf8')).toBe('not ours');
  });

  it('a failure share under maxFailedShare passes; a removed item (404) fails without touching others', async () => {
    const assets = f.sandbox.assets!;
    const paths = [...expectedPaths()];
    const gone = paths.find((p) => p.endsWith('.pdf'))!;
    assets.remove(gone);
    await writeFile(f.ws.path(f.ws.file), pipeline('    maxFailedShare: 0.5\n'));
    const run = await runInProcess(f.ws, f.sandbox);
    expect(run.ok).toBe(true);
    expect(summaryOf(run)).toMatchObject({ failed: 1 });
    expect((await storedFiles()).length).toBe(paths.length - 1);
  });
});
