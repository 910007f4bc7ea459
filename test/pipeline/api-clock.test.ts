// The API's clock, not this machine's, hands a run over to the next (docs/changing-catalog.md,
// "The API's clock"): against a server written from the spec alone whose clock runs 5 s behind or
// ahead of ours, a product updated during an incremental run, after that run read it, is read by
// the next run. Overlap 0, so nothing but the clock protects it.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { CatalogClient } from '../../src/client/catalog-client.js';
import { ServerClock } from '../../src/client/server-clock.js';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { runPipeline } from '../../src/pipeline/runner.js';
import { type AdversarialApi, startAdversarialApi } from '../helpers/adversarial-api.js';

describe('ServerClock', () => {
  it('keeps the closest lower bound of the offset the Date headers show, and ignores what is not a date', () => {
    const clock = new ServerClock();
    const local = Date.parse('2026-11-27T10:00:00.700Z');
    expect(clock.toServer(new Date(local))).toEqual(new Date(local));
    // Made in second :00 and received at :00.700: the API is at least 0.7 s behind.
    clock.observe('Fri, 27 Nov 2026 10:00:00 GMT', local);
    expect(clock.offsetMs).toBe(-700);
    clock.observe('Fri, 27 Nov 2026 09:59:50 GMT', local + 100);
    expect(clock.offsetMs).toBe(-700);
    clock.observe('Fri, 27 Nov 2026 10:00:01 GMT', local + 400);
    expect(clock.offsetMs).toBe(-100);
    clock.observe('not a date', local);
    clock.observe(undefined, local);
    expect(clock.toServer(new Date(local)).getTime()).toBe(local - 100);
  });
});

let api: AdversarialApi | undefined;
let dir: string | undefined;
afterEach(async () => {
  await api?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  api = undefined;
  dir = undefined;
});

describe.each([
  ['5 s behind', -5_000],
  ['5 s ahead', 5_000],
])('an incremental pipeline against an API whose clock is %s', (_, offset) => {
  it('reads on the next run a product updated during this one, after it was read', async () => {
    let touched: string | undefined;
    let touchedAt: number | undefined;
    api = await startAdversarialApi({
      seed: 7,
      catalog: { products: 400, sameSecond: 2 },
      clockOffsetMs: offset,
      beforeAnswer: ({ n, state }) => {
        const byAge = () => [...state.visible()].sort((a, b) => a.createdAt - b.createdAt);
        // Before the run's second answer: the oldest product, which its first answer held, is updated.
        if (n === 1 && !touched) {
          touched = state.touch([byAge()[0]!.id])[0];
          touchedAt = state.nowSec();
        }
        // A second later the newest one, not read yet, is updated too: the run delivers that version,
        // so the newest updatedAt it saw no longer keeps the cursor early.
        if (n === 3 && touchedAt !== undefined) {
          while (state.nowSec() <= touchedAt) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
          state.touch([byAge().at(-1)!.id]);
        }
      },
    });
    dir = await mkdtemp(join(tmpdir(), 'api-clock-'));
    const registry = createRegistry();
    const text = `name: clock
source: { type: products.query, filter: { status: [active, inactive, replaced] }, pageSize: 50, concurrency: 1 }
state: { path: state.json, overlapSeconds: 0 }
sinks:
  - { type: jsonl, path: "out/clock-{run}.jsonl" }
`;
    const run = async () => {
      const client = new CatalogClient({ baseUrl: api!.url, ...api!.credentials, rateLimit: 0 });
      try {
        const [plan] = parsePipelines(text, registry, { env: {}, file: join(dir!, 'clock.yml') });
        return await runPipeline(plan!, { registry, client, env: {} });
      } finally {
        await client.close();
      }
    };
    const ids = async (runId: string) =>
      (await readFile(join(dir!, `out/clock-${runId}.jsonl`), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { id: string; meta: { updatedAt: number } });

    const first = await run();
    expect(first.status).toBe('succeeded');
    expect(touched).toBeDefined();
    const firstRecords = await ids(first.runId);
    expect(firstRecords.find((r) => r.id === touched)!.meta.updatedAt).toBeLessThan(touchedAt!);
    const { cursor } = JSON.parse(await readFile(join(dir, 'state.json'), 'utf8')) as { cursor: number };
    // The cursor is never later than the API's time when the run began.
    expect(cursor).toBeLessThanOrEqual(touchedAt!);

    // The window ends at this machine's second before the run: with the API ahead, an update made at
    // the API's later time is read once this machine's clock has passed it (a window that ends early
    // delays a record by a run, never loses it).
    while (Math.floor(Date.now() / 1000) <= touchedAt! + 1) await sleep(200);
    const second = await run();
    expect(second.status).toBe('succeeded');
    const again = (await ids(second.runId)).find((r) => r.id === touched);
    expect(again?.meta.updatedAt).toBe(touchedAt);
  });
});
