// The media mirror read incrementally (issue 39, "Resumable and incremental"): a media source with
// `state:` reads only the media changed since the cursor (updatedSince from the stored second,
// inclusive), the mirror downloads only what is new and updates those rows, and a periodic full
// re-list (fullRelistDays) or --full-refresh finds the items that left the `available` set with
// no timestamp moving. Downloads are counted by the sandbox's asset host, never by the mirror.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CatalogClient } from '../../src/client/index.js';
import { RunEvents } from '../../src/events.js';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { runPipeline } from '../../src/pipeline/runner.js';
import { planReport } from '../../src/cli/plan-output.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { listFiles, workspace, type Workspace } from '../faults/support.js';

const PIPELINE = `name: media-incr
source: { type: media.stream, filter: { available: true } }
state: { path: state.json, overlapSeconds: 0 }
sinks:
  - type: media-mirror
    path: out/media
    retries: 0
    removeAfterDays: 0
`;

let sandbox: TestSandbox;
let ws: Workspace;
beforeAll(async () => {
  sandbox = await startTestSandbox({ products: 30, rateLimit: 0, assetHost: true, profile: 'be' });
});
afterAll(() => sandbox?.close());
beforeEach(async () => {
  ws = await workspace('catalog-streams-media-incr-');
  await ws.write('media-incr.yml', PIPELINE);
  sandbox.assets!.resetStats();
});
afterEach(() => ws?.remove());

interface Run {
  infos: Array<{ code: string; [k: string]: any }>;
  summary: any;
}

/** One run of the pipeline in this process (`fullRefresh` as `run --full-refresh`). */
async function run(fullRefresh = false): Promise<Run> {
  const file = ws.path('media-incr.yml');
  const [loaded] = parsePipelines(await readFile(file, 'utf8'), createRegistry(), { file });
  const events = new RunEvents();
  const infos: Run['infos'] = [];
  events.on('info', (p: any) => infos.push(p));
  const client = new CatalogClient({ baseUrl: sandbox.url, ...sandbox.credentials, rateLimit: 0, events });
  try {
    await runPipeline(loaded!, { registry: createRegistry(), client, events, fullRefresh });
  } finally {
    await client.close();
  }
  return { infos, summary: infos.find((i) => i.code === 'media.summary') };
}

/** `run --dry-run` of the pipeline, in this process. */
async function dryRun() {
  const file = ws.path('media-incr.yml');
  const [loaded] = parsePipelines(await readFile(file, 'utf8'), createRegistry(), { file });
  return planReport([loaded!], { baseUrl: sandbox.url, credentials: [sandbox.credentials], rateLimit: 0 });
}

const readState = async () => JSON.parse(await ws.read('state.json'));
const mirrorState = async (): Promise<Record<string, { url: string; mediaId: string | null; lastSeen: number }>> =>
  JSON.parse(await ws.read('out/media/_mirror/state.json')).files;
const stored = async () => (await listFiles(ws.path('out/media/files'))).map((p) => `/${p}`).sort();
const pathOf = (url: string) => new URL(url).pathname;

/** `n` media ids the mirror stored (each naming one file), in id order. */
async function storedMediaIds(n: number): Promise<number[]> {
  const ids = [...new Set(Object.values(await mirrorState()).map((f) => Number(f.mediaId)))];
  return ids
    .filter((id) => Number.isInteger(id) && id > 0)
    .sort((a, b) => a - b)
    .slice(0, n);
}

/** The URL paths the media record of `id` makes the mirror fetch, as the API serves it now. */
function filesOf(id: number): string[] {
  const r = sandbox.dataset.mediaRecord(id - 1) as any;
  if (r.kind === 'link') return [pathOf(r.url)];
  const url = ['largeWebp', 'large', 'largeJpg'].map((k) => r.formats?.[k]).find((u) => u);
  return url ? [pathOf(url)] : [];
}

describe('media-mirror, incremental', () => {
  it.each(['media.stream', 'media.query'])(
    '%s: reads from the stored second on, downloads only the replaced media (ties at the cursor second too), and updates their rows',
    async (source) => {
      await ws.write('media-incr.yml', PIPELINE.replace('type: media.stream', `type: ${source}`));
      const assets = sandbox.assets!;
      const [x, y, z, untouched] = await (async () => {
        const first = await run();
        expect(first.summary.fetched).toBeGreaterThan(10);
        return storedMediaIds(4);
      })();
      expect(untouched).toBeDefined();
      // The cursor is the newest updatedAt the run read (overlap 0): make it a second X was read at.
      const tie = Math.floor(Date.now() / 1000) - 5;
      sandbox.touch({ replaceMedia: [x!] }, tie);
      const second = await run();
      const cursor = (await readState()).cursor as number;
      expect(cursor).toBe(tie);
      expect(second.summary).toMatchObject({ fetched: 1, failed: 0 });
      assets.resetStats();
      const before = await mirrorState();

      // Y replaced at the cursor second itself after the run read it: a `>` resume would lose it.
      // Z only touched (same URL): read again, asked for nothing. X is read again (same second): deduplicated.
      sandbox.touch({ replaceMedia: [y!] }, cursor);
      sandbox.touch({ media: [z!] }, cursor);
      const third = await run();
      const incremental = third.infos.find((i) => i.code === 'incremental');
      expect(incremental?.message).toContain(`unix ${cursor}..`);
      const newY = filesOf(y!);
      expect(newY.length).toBe(1);
      expect(assets.requests.map((r) => r.path)).toEqual(newY);
      expect(assets.downloads(newY[0])).toBe(1);
      for (const p of filesOf(x!)) expect(assets.downloads(p), p).toBe(0);
      expect(third.summary).toMatchObject({ files: 3, fetched: 1, unchanged: 2, removed: 0 });
      expect(await stored()).toContain(newY[0]);

      // Only the rows of the media read again moved; the others keep the last_seen of their run.
      const after = await mirrorState();
      const rel = (p: string) => `files${p}`;
      expect(after[rel(newY[0]!)]!.mediaId).toBe(String(y));
      for (const id of [x!, z!])
        for (const p of filesOf(id)) expect(after[rel(p)]!.lastSeen).toBeGreaterThan(before[rel(p)]!.lastSeen);
      for (const p of filesOf(untouched!)) expect(after[rel(p)]!.lastSeen).toBe(before[rel(p)]!.lastSeen);
      const { rows } = await duckdbQuery(
        `SELECT source_url FROM read_parquet(${sqlString(join(ws.path('out/media'), 'media.parquet'))}) WHERE media_id = '${y}'`,
      );
      // The replaced file's old row stays (an incremental run cannot tell it is gone), the new one is added.
      expect(rows.length).toBe(2);
    },
  );

  it('finds an item that left `available` (no timestamp moved) on the periodic full re-list (fullRelistDays), not on the incremental runs between', async () => {
    await run();
    const [gone, goneLater] = await storedMediaIds(2);
    const goneFiles = filesOf(gone!);
    const laterFiles = filesOf(goneLater!);
    sandbox.touch({ expireMedia: [gone!, goneLater!] });
    try {
      // Incremental: the expired items are not in the window, so nothing tells them gone.
      const incremental = await run();
      expect(incremental.infos.some((i) => i.code === 'incremental')).toBe(true);
      expect(incremental.summary.removed).toBe(0);
      for (const p of [...goneFiles, ...laterFiles]) expect(await stored()).toContain(p);

      // The last full run was 8 days ago: this run reads the whole available set (fullRelistDays 7).
      const state = await readState();
      const lastFull = new Date(Date.now() - 8 * 86_400_000).toISOString();
      await writeFile(ws.path('state.json'), JSON.stringify({ ...state, lastFullRunAt: lastFull }));
      // The dry run says so too, from the same state.
      const [plan] = (await dryRun()).pipelines;
      expect(plan).toMatchObject({ mode: 'full', fullReadDue: true });
      expect(plan!.updatedSince).toBeUndefined();
      sandbox.assets!.resetStats();
      const relist = await run();
      expect(relist.infos.some((i) => i.code === 'full_read_due')).toBe(true);
      expect(relist.infos.some((i) => i.code === 'incremental')).toBe(false);
      expect(relist.summary.removed).toBe(goneFiles.length + laterFiles.length);
      const after = await stored();
      for (const p of [...goneFiles, ...laterFiles]) expect(after).not.toContain(p);
      expect(after.length).toBeGreaterThan(10);
      expect(sandbox.assets!.downloads()).toBe(0);
      expect(Date.parse((await readState()).lastFullRunAt)).toBeGreaterThan(Date.parse(lastFull));

      // Within fullRelistDays again: the next run is incremental.
      const next = await run();
      expect(next.infos.some((i) => i.code === 'incremental')).toBe(true);
    } finally {
      sandbox.dataset.expiredMedia.clear();
    }
  });

  it('a product source (the shipped pipeline): a replaced frontal or photo moves its products, and only its new file is downloaded', async () => {
    await ws.write(
      'media-incr.yml',
      PIPELINE.replace(
        '{ type: media.stream, filter: { available: true } }',
        '{ type: products.query, filter: { status: active } }',
      ),
    );
    await run();
    const [replaced] = await storedMediaIds(1);
    const old = filesOf(replaced!);
    // A second ago: a run reads up to the second before it started.
    sandbox.touch({ replaceMedia: [replaced!] }, Math.floor(Date.now() / 1000) - 1);
    sandbox.assets!.resetStats();
    const second = await run();
    expect(second.infos.some((i) => i.code === 'incremental')).toBe(true);
    const now = filesOf(replaced!);
    expect(now).not.toEqual(old);
    expect(sandbox.assets!.requests.map((r) => r.path)).toEqual(now);
    expect(second.summary).toMatchObject({ fetched: 1, removed: 0 });
  });

  it('--full-refresh re-lists at once', async () => {
    await run();
    const [gone] = await storedMediaIds(1);
    sandbox.touch({ expireMedia: [gone!] });
    try {
      const full = await run(true);
      expect(full.infos.some((i) => i.code === 'incremental')).toBe(false);
      expect(full.summary.removed).toBe(filesOf(gone!).length);
      for (const p of filesOf(gone!)) expect(await stored()).not.toContain(p);
    } finally {
      sandbox.dataset.expiredMedia.clear();
    }
  });
});
