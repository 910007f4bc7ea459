// K keys give a createdAt read K times one key's request rate (issue 40, the budget as the
// bench's yardstick). Every answer takes LATENCY_MS at the sandbox, several times one key's
// interval, so the rate is reached only with requests on their way at once from several lanes:
// the lanes after the head used to wait, full, behind it, which left one request in flight and
// every key at a fraction of its budget. Checked on the sandbox's recorded arrival times per key
// (their median spacing against the key's interval: load stretches a few gaps, not the median),
// not on the run's duration; and never past the budget (no 429, no key over its window).
import { afterEach, describe, expect, it } from 'vitest';
import { CatalogClient } from '../../src/client/index.js';
import { RunEvents } from '../../src/events.js';
import { productsQuery } from '../../src/sources/index.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { startTestSandbox } from '../helpers/sandbox.js';
import { expectCreatedAtRead, productIdsWithStatus } from './sandbox-harness.js';

const KEYS = Array.from({ length: 4 }, (_, i) => ({ apiKey: `rate-key-${i + 1}`, apiSecret: `rate-secret-${i + 1}` }));
/** Each key's budget at the sandbox: 20 per 2 s window (600/min, one start every ~100 ms). */
const PER_WINDOW = 20;
const WINDOW_MS = 2_000;
/**
 * The client runs one request per window under the sandbox's budget. Its limiter keeps 1 % of the
 * window as slack for the jitter between its starts and the server's arrivals: 300 ms of a live
 * 60 s window, but 10 ms of this 2 s one, less than a busy test process's scheduling delay (a 429
 * here then says the test machine stalled, not that the client overspent).
 */
const PER_MINUTE = ((PER_WINDOW - 1) * 60_000) / WINDOW_MS;
const INTERVAL_MS = 60_000 / PER_MINUTE;
/** Each answer's delay at the sandbox: three intervals, so one request at a time gets a third of one key. */
const LATENCY_MS = 300;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe('several keys reading by createdAt', () => {
  let sandbox: Sandbox | undefined;
  let client: CatalogClient | undefined;
  afterEach(async () => {
    await client?.close();
    await sandbox?.close();
    client = sandbox = undefined;
  });

  it('4 keys: each key spaced at its own interval at the same time, 4 x one key`s rate, no 429', async () => {
    sandbox = await startKeysSandbox();
    client = new CatalogClient({
      baseUrl: sandbox.url,
      credentials: KEYS,
      rateLimit: PER_MINUTE,
      rateLimitWindowMs: WINDOW_MS,
      connections: 16,
    });
    const expected = productIdsWithStatus(sandbox, 'active');
    // 4 keys x 10 requests/s x 0.3 s: 12 requests on their way keep every key busy.
    const records = await productsQuery(client, {
      filter: { status: 'active' },
      pageSize: 10,
      concurrency: 16,
    }).toArray();
    expectCreatedAtRead(records, expected);
    expectEveryKeyAtItsBudget(sandbox);
  }, 60_000);

  it('4 keys, concurrency 4 and the default sockets: the source keeps what the budget needs on its way', async () => {
    // Concurrency 4 is one request per key; at 3 intervals per answer that is a third of the
    // budget. The source raises it to rate x latency (budget-in-flight.ts), the client's sockets
    // follow the keys (16 for 4), and each key is spaced at its interval as with concurrency 16.
    sandbox = await startKeysSandbox();
    const events = new RunEvents();
    const exchanges: [number, number][] = [];
    events.on('request', (e) => exchanges.push([performance.now() - e.durationMs, performance.now()]));
    client = new CatalogClient({
      baseUrl: sandbox.url,
      credentials: KEYS,
      rateLimit: PER_MINUTE,
      rateLimitWindowMs: WINDOW_MS,
      events,
    });
    expect(client.connections).toBe(16);
    const expected = productIdsWithStatus(sandbox, 'active');
    const records = await productsQuery(client, {
      filter: { status: 'active' },
      pageSize: 10,
      concurrency: 4,
    }).toArray();
    expectCreatedAtRead(records, expected);
    // More than `concurrency` on the wire at once (at 4 the keys got a third of their budget).
    expect(mostAtOnce(exchanges)).toBeGreaterThanOrEqual(8);
    // Each key's median spacing within 4 intervals: loose, as load on a 2-core test machine
    // stretches this run more than the one above (the lanes are shorter: `concurrency` 4 bounds the
    // pages held, so a stall of the head holds more back); at 4 on the wire it was 6.5 under load.
    expectEveryKeyAtItsBudget(sandbox, 4);
  }, 60_000);
});

/** The most exchanges [start, end] that overlapped at one time. */
function mostAtOnce(exchanges: [number, number][]): number {
  const edges = exchanges.flatMap(([a, b]) => [
    [a, 1],
    [b, -1],
  ]);
  edges.sort((x, y) => x[0]! - y[0]! || x[1]! - y[1]!);
  let now = 0;
  let most = 0;
  for (const [, d] of edges) most = Math.max(most, (now += d!));
  return most;
}

/** The sandbox both cases read: 4 keys, each at PER_WINDOW a window, answers after LATENCY_MS. */
function startKeysSandbox(): Promise<Sandbox> {
  return startTestSandbox({
    products: 2_000,
    seed: 7,
    credentials: KEYS[0],
    extraCredentials: KEYS.slice(1),
    rateLimit: PER_WINDOW,
    rateLimitWindowMs: WINDOW_MS,
    recordRequestTimes: true,
    faults: { latencyMs: LATENCY_MS },
  });
}

function expectEveryKeyAtItsBudget(sandbox: Sandbox, medianIntervals = 1.5): void {
  expect(sandbox.stats.rateLimited).toBe(0);

  const times = sandbox.requestTimes();
  const counts = times.map((t) => t.length);
  // Spread over the keys evenly: within 2 of each other (of 30+ each; the pool picks the key whose
  // next slot comes first, and a head request going ahead can tip one pick).
  expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(2);
  expect(Math.min(...counts)).toBeGreaterThan(30);
  for (const t of times) {
    const gaps = t.slice(1).map((at, i) => at - t[i]!);
    // At its budget: half of its starts within 1.5 intervals (by default) of the one before. One
    // request at a time over 4 keys spaces each key's by 4 x LATENCY_MS (12 intervals).
    expect(median(gaps)).toBeLessThan(medianIntervals * INTERVAL_MS);
    // Politeness: any PER_WINDOW + 1 of its arrivals span more than the window (arrivals may
    // bunch after a stall; the budget is per window).
    for (let i = 0; i + PER_WINDOW < t.length; i++) expect(t[i + PER_WINDOW]! - t[i]!).toBeGreaterThan(WINDOW_MS);
  }
  // At the same time: each key's first and last start inside the others' span, give or take a few intervals.
  const firsts = times.map((t) => t[0]!);
  const lasts = times.map((t) => t.at(-1)!);
  expect(Math.max(...firsts) - Math.min(...firsts)).toBeLessThan(10 * INTERVAL_MS);
  expect(Math.max(...lasts) - Math.min(...lasts)).toBeLessThan(10 * INTERVAL_MS + LATENCY_MS);
}
