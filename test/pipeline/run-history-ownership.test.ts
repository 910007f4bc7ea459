// The run history touches only its own files: a compaction removes only per-run files it shows
// are this pipeline's runs (name and content), never another file in the folder, never anything
// through a symbolic link; every history file is read bounded, a few at a time, and a FIFO is
// refused rather than waited on. Victims live outside the history root (or are foreign files in
// it) and are compared byte for byte afterwards.
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type HistoryEntry,
  type HistoryFiles,
  compactHistory,
  MAX_RUN_FILES_READ,
  readRuns,
  recordRun,
} from '../../src/pipeline/run-history.js';
import { READ_LIMITS } from '../../src/storage/bounded-read.js';
import { LocalObjectStore, type ObjectStore } from '../../src/storage/object-store.js';

function entry(n: number, pipeline = 'nightly'): HistoryEntry {
  const day = String(n).padStart(2, '0');
  return {
    runId: `202601${day}T000000Z-${String(n).padStart(6, '0')}`,
    pipeline,
    status: 'succeeded',
    startedAt: `2026-01-${day}T00:00:00.000Z`,
    finishedAt: `2026-01-${day}T00:01:00.000Z`,
    durationMs: 60_000,
    read: n,
    written: { parquet: n },
    invalid: 0,
    requests: 1,
    retries: 0,
    throttles: 0,
  };
}

const files = (store: ObjectStore): HistoryFiles => ({
  store,
  file: 'history/nightly.jsonl',
  runs: 'history/nightly/',
  lock: 'history/nightly.jsonl.lock',
});

/** Every file under `dir` with its bytes, for byte-for-byte comparisons. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of (await readdir(dir)).sort()) out[name] = (await readFile(join(dir, name))).toString('base64');
  return out;
}

describe('run history: only its own files, bounded reads', () => {
  let base: string;
  let root: string;
  let outside: string;
  let store: LocalObjectStore;
  beforeEach(async () => {
    base = await mkdtemp(join(tmpdir(), 'history-own-'));
    root = join(base, 'root');
    outside = join(base, 'outside');
    await mkdir(join(root, 'history', 'nightly'), { recursive: true });
    await mkdir(outside);
    store = new LocalObjectStore(root);
  });
  afterEach(() => rm(base, { recursive: true, force: true }));

  it('compaction removes its run files and leaves 19 foreign config-N.json and look-alikes, reported once', async () => {
    const folder = join(root, 'history', 'nightly');
    for (let n = 1; n <= 19; n++) await writeFile(join(folder, `config-${n}.json`), `{"n":${n}}\n`);
    // Named like a run file, but another pipeline's entry, and one that is not an entry at all.
    await writeFile(join(folder, '20250101T000000Z-aaaaaa.json'), `${JSON.stringify(entry(30, 'other'))}\n`);
    await writeFile(join(folder, '20250102T000000Z-bbbbbb.json'), '{"not":"an entry"}\n');
    const before = await snapshot(folder);
    const foreign: string[][] = [];
    for (let n = 1; n <= 20; n++) await recordRun(files(store), entry(n), { compactAfter: Infinity });
    expect(
      await compactHistory(files(store), { runId: 'r', pipeline: 'nightly' }, { onForeign: (l) => foreign.push(l) }),
    ).toBe(true);

    const after = await snapshot(folder);
    expect(after, 'every foreign file is still there, byte for byte').toEqual(before);
    expect((await readRuns(files(store))).entries.map((e) => e.read)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    expect(foreign, 'one report, at the one compaction').toHaveLength(1);
    expect(foreign[0]!.sort()).toEqual(
      Object.keys(before)
        .map((name) => join(folder, name))
        .sort(),
    );
  });

  it('refuses a history folder that is a symbolic link, leaving the 25 files it points at untouched', async () => {
    await rm(join(root, 'history', 'nightly'), { recursive: true });
    // Files outside, some named exactly as run files are.
    for (let n = 1; n <= 25; n++)
      await writeFile(
        join(outside, n <= 5 ? `${entry(n).runId}.json` : `victim-${n}.json`),
        n <= 5 ? `${JSON.stringify(entry(n))}\n` : `victim ${n}\n`,
      );
    const before = await snapshot(outside);
    await symlink(outside, join(root, 'history', 'nightly'));
    const f = files(store);
    await expect(recordRun(f, entry(6), { compactAfter: 1 })).rejects.toMatchObject({
      code: 'storage.symlink',
      message: expect.stringContaining(join(root, 'history', 'nightly')),
    });
    await expect(compactHistory(f, { runId: 'r', pipeline: 'nightly' })).rejects.toMatchObject({
      code: 'storage.symlink',
    });
    await expect(readRuns(f)).rejects.toMatchObject({ code: 'storage.symlink' });
    expect(await snapshot(outside)).toEqual(before);
  });

  it('refuses a history file that is a FIFO instead of hanging on it', async () => {
    execFileSync('mkfifo', [join(root, 'history', 'nightly.jsonl')]);
    await expect(readRuns(files(store))).rejects.toMatchObject({ code: 'storage.not_regular_file' });
    await recordRun(files(store), entry(1), { compactAfter: Infinity });
    await expect(compactHistory(files(store), { runId: 'r', pipeline: 'nightly' })).rejects.toMatchObject({
      code: 'storage.not_regular_file',
    });
  }, 10_000);

  it('refuses a history file over its limit, naming the file and the limit', async () => {
    await writeFile(join(root, 'history', 'nightly.jsonl'), Buffer.alloc(READ_LIMITS.historyFile + 1, 0x20));
    await expect(readRuns(files(store))).rejects.toMatchObject({
      code: 'storage.too_large',
      message: expect.stringContaining(`nightly.jsonl: it is ${READ_LIMITS.historyFile + 1} bytes`),
    });
  });

  it('reads per-run files a few at a time, however many there are', async () => {
    for (let n = 1; n <= 28; n++) await recordRun(files(store), entry(n), { compactAfter: Infinity });
    let open = 0;
    let most = 0;
    const counting = new Proxy(store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (prop !== 'readText') return typeof value === 'function' ? value.bind(target) : value;
        return async (...args: Parameters<ObjectStore['readText']>) => {
          open++;
          most = Math.max(most, open);
          try {
            await new Promise((resolve) => setImmediate(resolve));
            return await target.readText(...args);
          } finally {
            open--;
          }
        };
      },
    });
    expect((await readRuns(files(counting))).entries).toHaveLength(28);
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(16);
  });

  it('a compaction removes the temp files killed writers of its history left, and no other temp', async () => {
    const folder = join(root, 'history');
    const dayAgo = new Date(Date.now() - 2 * 24 * 3600_000);
    // Temps as writeFileAtomic names them: of the history file, of a run file, and of someone
    // else's config in the same folder (not ours: it stays).
    const ours = [
      '.nightly.jsonl.0a1b2c-99999-0a1b2c3d.tmp',
      `nightly/.${entry(9).runId}.json.0a1b2c-99999-1a1b2c3d.tmp`,
    ];
    const theirs = ['.other.json.0a1b2c-99999-2a1b2c3d.tmp', 'nightly/.config.json.0a1b2c-99999-3a1b2c3d.tmp'];
    for (const name of [...ours, ...theirs]) {
      await writeFile(join(folder, name), 'partial');
      await utimes(join(folder, name), dayAgo, dayAgo);
    }
    await recordRun(files(store), entry(1), { compactAfter: Infinity });
    expect(await compactHistory(files(store), { runId: 'r', pipeline: 'nightly' })).toBe(true);
    for (const name of ours) await expect(readFile(join(folder, name)), name).rejects.toMatchObject({ code: 'ENOENT' });
    for (const name of theirs) expect((await readFile(join(folder, name))).toString(), name).toBe('partial');
  });

  it('folds at most MAX_RUN_FILES_READ run files per compaction, the oldest first, and reads the newest', async () => {
    const extra = 3;
    const f = files(store);
    const runs = join(root, 'history', 'nightly');
    const all: HistoryEntry[] = [];
    for (let n = 0; n < MAX_RUN_FILES_READ + extra; n++) {
      const e = { ...entry(1), runId: `20260101T${String(n).padStart(6, '0')}Z-000000`, read: n };
      all.push(e);
      await writeFile(join(runs, `${e.runId}.json`), `${JSON.stringify(e)}\n`);
    }
    const newest = (await readRuns(f)).entries.map((e) => e.read);
    expect(newest, 'the newest run files, when more wait than one read takes').toHaveLength(MAX_RUN_FILES_READ);
    expect(newest.at(-1)).toBe(MAX_RUN_FILES_READ + extra - 1);
    expect(await compactHistory(f, { runId: 'r', pipeline: 'nightly' })).toBe(true);
    expect((await readdir(runs)).sort(), 'the newest ones wait for the next compaction').toEqual(
      all.slice(-extra).map((e) => `${e.runId}.json`),
    );
    expect(await compactHistory(f, { runId: 'r', pipeline: 'nightly' })).toBe(true);
    expect(await readdir(runs)).toEqual([]);
  });
});
