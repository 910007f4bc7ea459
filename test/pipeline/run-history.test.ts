// The run history under concurrency, with the interleavings forced rather than hoped for: a store
// that holds chosen operations at a gate until the test lets them through. Two runs finishing at
// once both keep their line (the old "read, add a line, rewrite" lost one under the same
// interleaving, shown below on the same store); a run finishing during a compaction keeps its
// line; two compactions at once leave nothing lost; a crash between folding and removing shows
// each run once.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type HistoryEntry,
  type HistoryFiles,
  compactHistory,
  readRuns,
  recordRun,
} from '../../src/pipeline/run-history.js';
import { LocalObjectStore, type ObjectStore } from '../../src/storage/object-store.js';

function entry(n: number): HistoryEntry {
  return {
    runId: `2026010${n}T000000Z-00000${n}`,
    pipeline: 'nightly',
    status: 'succeeded',
    startedAt: `2026-01-0${n}T00:00:00.000Z`,
    finishedAt: `2026-01-0${n}T00:01:00.000Z`,
    durationMs: 60_000,
    read: 100 * n,
    written: { parquet: 100 * n },
    invalid: 0,
    requests: n,
    retries: 0,
    throttles: 0,
  };
}

/** A promise the test resolves, and a count of who is waiting on it. */
class Gate {
  waiting = 0;
  #open!: () => void;
  readonly #opened = new Promise<void>((resolve) => (this.#open = resolve));
  #arrived: Array<() => void> = [];
  async pass(): Promise<void> {
    this.waiting++;
    for (const notify of this.#arrived.splice(0)) notify();
    await this.#opened;
  }
  /** Resolves once `n` callers wait at the gate. */
  async until(n: number): Promise<void> {
    while (this.waiting < n) await new Promise<void>((resolve) => this.#arrived.push(resolve));
  }
  open(): void {
    this.#open();
  }
}

/** `store` with the operations `hold` picks waiting at `gate` first. */
function gated(store: ObjectStore, gate: Gate, hold: (op: string, rel: string) => boolean): ObjectStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const call = () => (value as (...a: unknown[]) => unknown).apply(target, args);
        // Only held operations become async: list() stays an async iterable, location() a string.
        return hold(String(prop), String(args[0])) ? gate.pass().then(call) : call();
      };
    },
  });
}

const files = (store: ObjectStore): HistoryFiles => ({
  store,
  file: 'history/nightly.jsonl',
  runs: 'history/nightly/',
  lock: 'history/nightly.jsonl.lock',
});

/** What the history did before: read the file, add a line, rewrite it whole. */
async function appendByRewrite(f: HistoryFiles, e: HistoryEntry): Promise<void> {
  const previous = (await f.store.readText(f.file)) ?? '';
  await f.store.write(f.file, `${previous}${JSON.stringify(e)}\n`);
}

describe('run history under concurrent runs', () => {
  let dir: string;
  let local: LocalObjectStore;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'run-history-'));
    local = new LocalObjectStore(dir);
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('keeps both lines of two runs that finish together, where rewriting the file lost one', async () => {
    // Both runs reach their first write before either writes: each has read whatever it reads.
    const writes = (op: string) => op === 'write' || op === 'putIfAbsent';

    const before = new Gate();
    const oldWay = files(gated(local, before, writes));
    const racing = Promise.all([appendByRewrite(oldWay, entry(1)), appendByRewrite(oldWay, entry(2))]);
    await before.until(2);
    before.open();
    await racing;
    expect(
      (await readRuns(files(local))).entries,
      'the interleaving loses a line when the file is rewritten',
    ).toHaveLength(1);
    await rm(join(dir, 'history'), { recursive: true });

    const gate = new Gate();
    const f = files(gated(local, gate, writes));
    const both = Promise.all([recordRun(f, entry(1)), recordRun(f, entry(2))]);
    await gate.until(2);
    gate.open();
    await both;
    const { entries, skipped } = await readRuns(files(local));
    expect(entries).toEqual([entry(1), entry(2)]);
    expect(skipped).toBe(0);
  });

  it('keeps the line of a run that finishes while another run compacts', async () => {
    const f = files(local);
    for (const n of [1, 2, 3]) await recordRun(f, entry(n), { compactAfter: Infinity });
    // The compaction has listed and read runs 1-3 and is about to write the history file.
    const gate = new Gate();
    const compacting = compactHistory(
      files(gated(local, gate, (op, rel) => op === 'write' && rel.endsWith('.jsonl'))),
      entry(3),
    );
    await gate.until(1);
    await recordRun(f, entry(4), { compactAfter: Infinity });
    gate.open();
    expect(await compacting).toBe(true);

    expect((await readRuns(f)).entries).toEqual([1, 2, 3, 4].map(entry));
    // Runs 1-3 were folded into the history file and their files removed; run 4's file stays.
    expect(
      (await local.readText(f.file))!
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).runId),
    ).toEqual([1, 2, 3].map((n) => entry(n).runId));
    const left: string[] = [];
    for await (const o of local.list(f.runs)) left.push(o.rel);
    expect(left).toEqual([`history/nightly/${entry(4).runId}.json`]);
  });

  it('lets one of two compactions at once run, and loses nothing', async () => {
    const f = files(local);
    for (const n of [1, 2, 3]) await recordRun(f, entry(n), { compactAfter: Infinity });
    const gate = new Gate();
    const first = compactHistory(
      files(gated(local, gate, (op, rel) => op === 'write' && rel.endsWith('.jsonl'))),
      entry(1),
    );
    await gate.until(1);
    // The first holds the lock: the second leaves the files for later.
    expect(await compactHistory(f, entry(2))).toBe(false);
    gate.open();
    expect(await first).toBe(true);
    expect((await readRuns(f)).entries).toEqual([1, 2, 3].map(entry));
    expect(await local.readText(f.lock)).toBeUndefined();
  });

  it('compacts once COMPACT_AFTER_RUNS files wait, and shows a run folded but not yet removed once', async () => {
    const f = files(local);
    await recordRun(f, entry(1), { compactAfter: 2 });
    expect(await local.readText(f.file)).toBeUndefined();
    await recordRun(f, entry(2), { compactAfter: 2 });
    expect((await local.readText(f.file))!.trim().split('\n')).toHaveLength(2);

    // As if a compaction died after writing the history file, before removing run 2's file.
    await local.putIfAbsent(`${f.runs}${entry(2).runId}.json`, `${JSON.stringify(entry(2))}\n`);
    expect((await readRuns(f)).entries).toEqual([entry(1), entry(2)]);
  });
});
