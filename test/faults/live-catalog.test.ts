// Fault matrix: a catalog that changes while it is read (issue 15, items 6
// and 7). Products are touched (meta.updatedAt moves to now, the record
// changes) while the pipeline pages through them: every second request of the
// run, a few products chosen over the whole id range. Incremental runs must
// complete and lose nothing: every product whose updatedAt (at the end of the
// run) lies in the run's window [from, until] arrives in that run, exactly once;
// what was touched during a run arrives in the next one; and after the last
// run, the union of the outputs holds the latest version of every product.
// Covered: a paged extract, the createdAt-sliced one (a result window of 500
// here, the API's 10000 cap in production), and `sorting: {touchedAt: ASC}`,
// whose order itself changes with each touch (refused without a bounded window).
import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { PRODUCT_STATUSES } from '../../src/sandbox/index.js';
import {
  faultFixture,
  jsonlLines,
  leftBehind,
  runInProcess,
  type InProcessRun,
  type PipelineWorkspace,
} from './support.js';

const WINDOW = 500;
const STATUSES = ['active', 'inactive', 'replaced'];

function pipeline(sorting: string, state = true): string {
  return `name: live
source:
  type: products.query
  filter: { status: [${STATUSES.join(', ')}] }
  sorting: ${sorting}
  pageSize: 50
sinks:
  - { type: jsonl, path: "out/products-{run}.jsonl" }
${state ? 'state: { path: .state/live.json }\n' : ''}`;
}

const f = faultFixture('live', pipeline('{ id: ASC }'), { products: 3000, seed: 7, resultWindow: WINDOW });

interface Delivered {
  id: string;
  updatedAt: number;
}

/** One run with `touchEvery`-th request touching `perTouch` products; what it wrote and the window it asked for. */
async function runWhileTouching(ws: PipelineWorkspace, touchEvery: number, perTouch: number) {
  const touched = new Set<string>();
  let requests = 0;
  const before = new Set(await outputFiles(ws));
  // Touches ride on the client's request events: deterministic in how they interleave with pages.
  const run = await runInProcess(ws, f.sandbox, { resultWindow: WINDOW }, undefined, (name) => {
    if (name !== 'request' || touchEvery === 0 || ++requests % touchEvery !== 0) return;
    for (const id of f.sandbox.touch({ count: perTouch }).products) touched.add(id);
  });
  const files = (await outputFiles(ws)).filter((file) => !before.has(file));
  const delivered: Delivered[] = [];
  for (const file of files)
    for (const line of await jsonlLines(ws.path(`out/${file}`)))
      delivered.push({ id: line.id, updatedAt: line.meta.updatedAt });
  return { run, touched, delivered, window: windowOf(run) };
}

async function outputFiles(ws: PipelineWorkspace): Promise<string[]> {
  return (await readdir(ws.path('out')).catch(() => [] as string[])).filter((name) => name.endsWith('.jsonl')).sort();
}

/** The updatedSince window the run sent: `{from, until}` (from 0 when absent). */
function windowOf(run: InProcessRun): { from: number; until?: number } {
  const filter = run.summary.sourceFilter as { and?: Array<Record<string, any>> };
  const since = filter.and?.find((f) => 'updatedSince' in f)?.updatedSince;
  return { from: since?.from ?? 0, until: since?.until };
}

/** Product ids the filter selects whose updatedAt lies in [from, until] now. */
function inWindow(from: number, until: number): string[] {
  const ds = f.sandbox.dataset;
  const wanted = new Set(STATUSES.map((s) => PRODUCT_STATUSES.indexOf(s as (typeof PRODUCT_STATUSES)[number])));
  const out: string[] = [];
  for (let i = 0; i < ds.productCount; i++) {
    const u = ds.updatedAt[i]!;
    if (wanted.has(ds.status[i]!) && u >= from && u <= until) out.push(ds.productId(i));
  }
  return out;
}

/** The run succeeded, wrote each id once, everything its window holds now, and nothing else but products touched during it. */
function expectWindowDelivered(result: Awaited<ReturnType<typeof runWhileTouching>>) {
  const { run, delivered, touched, window } = result;
  expect(run.ok, run.ok ? '' : `${run.error.code}: ${run.error.message}`).toBe(true);
  expect(window.until, JSON.stringify(run.summary.sourceFilter)).toEqual(expect.any(Number));
  const ids = delivered.map((d) => d.id);
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  expect(
    [...counts].filter(([, n]) => n > 1).map(([id]) => id),
    'ids written more than once',
  ).toEqual([]);
  const must = inWindow(window.from, window.until!);
  expect(
    must.filter((id) => !counts.has(id)),
    'ids of the window missing',
  ).toEqual([]);
  const allowed = new Set([...must, ...touched]);
  expect(
    ids.filter((id) => !allowed.has(id)),
    'ids outside the window',
  ).toEqual([]);
}

/** For every product the filter selects: the newest updatedAt across the outputs is its current one. */
function expectLatestVersions(all: Delivered[]) {
  const newest = new Map<string, number>();
  for (const d of all) newest.set(d.id, Math.max(newest.get(d.id) ?? 0, d.updatedAt));
  const stale: string[] = [];
  for (const id of inWindow(0, Number.MAX_SAFE_INTEGER)) {
    const i = f.sandbox.dataset.productIndex(id);
    if (newest.get(id) !== f.sandbox.dataset.updatedAt[i])
      stale.push(`${id}: ${newest.get(id)} != ${f.sandbox.dataset.updatedAt[i]}`);
  }
  expect(stale.slice(0, 10), 'products whose latest version never arrived').toEqual([]);
}

/**
 * Waits for the next second: a run's window ends the second before it starts, so what was
 * touched in the same second as the start belongs to the run after it.
 */
async function nextSecond() {
  const now = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 1000 - (now % 1000) + 20));
}

/**
 * Changes `count` products between two runs, stamped the second before now: inside the next
 * run's window, which ends the second before that run starts. The previous run touched products
 * up to the second it ended; two second boundaries later the stamp is past every one of those, so
 * no product's updatedAt moves back (a catalog never dates a change before the one it replaces,
 * and an earlier stamp made the latest version look older than one already delivered).
 */
async function touchBetweenRuns(count: number) {
  await nextSecond();
  await nextSecond();
  f.sandbox.touch({ count }, Math.floor(Date.now() / 1000) - 1);
}

describe('a catalog that changes during the extract', () => {
  it('incremental products.query (paged): three runs complete, each window whole, every change in the next', async () => {
    const runs = [await runWhileTouching(f.ws, 2, 3)];
    expectWindowDelivered(runs[0]!);
    await touchBetweenRuns(300);
    runs.push(await runWhileTouching(f.ws, 2, 3));
    expectWindowDelivered(runs[1]!);
    expect(runs[1]!.touched.size).toBeGreaterThan(0);
    await nextSecond();
    runs.push(await runWhileTouching(f.ws, 0, 0));
    expectWindowDelivered(runs[2]!);
    // Windows chain without a gap: each starts at or before the second after the previous one ends.
    expect(runs[1]!.window.from).toBeLessThanOrEqual(runs[0]!.window.until! + 1);
    expect(runs[2]!.window.from).toBeLessThanOrEqual(runs[1]!.window.until! + 1);
    const selected = new Set(inWindow(0, Number.MAX_SAFE_INTEGER));
    expect(
      [...runs[1]!.touched].filter((id) => selected.has(id) && !runs[2]!.delivered.some((d) => d.id === id)),
    ).toEqual([]);
    expectLatestVersions(runs.flatMap((r) => r.delivered));
    expect(await leftBehind(f.ws.path('out'))).toMatchObject({ temp: [] });
  });

  it('incremental products.query past the result window with touches: complete, nothing lost', async () => {
    // Each run is checked at once: the window is judged by the updatedAt values at its end.
    const runs = [await runWhileTouching(f.ws, 2, 3)];
    expectWindowDelivered(runs[0]!);
    await touchBetweenRuns(1200);
    runs.push(await runWhileTouching(f.ws, 2, 4));
    expectWindowDelivered(runs[1]!);
    // Read by createdAt, page 0 of what is left: past the window without slicing, nothing to read again.
    expect(runs[1]!.run.events.some((e) => e.name === 'info' && e.payload.code === 'source.reread')).toBe(false);
    await nextSecond();
    runs.push(await runWhileTouching(f.ws, 0, 0));
    expectWindowDelivered(runs[2]!);
    expectLatestVersions(runs.flatMap((r) => r.delivered));
  });

  it('sorting {touchedAt: ASC} with 50 products touched during the run: nothing lost or repeated, the next run brings the changes', async () => {
    await f.ws.write(f.ws.file, pipeline('{ touchedAt: ASC }'));
    await touchBetweenRuns(400);
    const runs = [await runWhileTouching(f.ws, 1, 2)];
    expectWindowDelivered(runs[0]!);
    expect(runs[0]!.touched.size).toBeGreaterThanOrEqual(50);
    await nextSecond();
    runs.push(await runWhileTouching(f.ws, 0, 0));
    expectWindowDelivered(runs[1]!);
    expectLatestVersions(runs.flatMap((r) => r.delivered));
  });

  it('sorting {touchedAt: ASC} without state: the source bounds updatedSince itself; untouched products exactly once, touched ones at most once', async () => {
    await f.ws.write(f.ws.file, pipeline('{ touchedAt: ASC }', false));
    const result = await runWhileTouching(f.ws, 1, 2);
    const { run, delivered, touched } = result;
    expect(run.ok, run.ok ? '' : `${run.error.code}: ${run.error.message}`).toBe(true);
    expect(touched.size).toBeGreaterThanOrEqual(20);
    const ids = delivered.map((d) => d.id);
    expect(ids.length, 'ids written more than once').toBe(new Set(ids).size);
    const selected = inWindow(0, Number.MAX_SAFE_INTEGER);
    const got = new Set(ids);
    expect(
      selected.filter((id) => !touched.has(id) && !got.has(id)),
      'untouched products missing',
    ).toEqual([]);
    expect(
      ids.filter((id) => !selected.includes(id)),
      'products the filter does not select',
    ).toEqual([]);
  });
});
