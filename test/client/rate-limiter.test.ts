// The limiter's schedule on a fake clock: exact start times, FIFO, idle
// restarts, aborted waiters, 429 slowdown and recovery.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AbortedError } from '../../src/errors.js';
import { RateLimiter } from '../../src/client/rate-limiter.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  vi.setSystemTime(0);
});
afterEach(() => {
  vi.useRealTimers();
});

function limiter(perMinute: number, extra: Partial<ConstructorParameters<typeof RateLimiter>[0]> = {}) {
  return new RateLimiter({ perMinute, safetyMargin: 0, now: () => Date.now(), ...extra });
}

/** Start times of `n` acquires issued at once. */
async function startTimes(l: RateLimiter, n: number, signal?: AbortSignal): Promise<number[]> {
  const times: number[] = [];
  const all = Array.from({ length: n }, () => l.acquire(signal).then(() => times.push(Date.now())));
  await Promise.resolve();
  while (times.length < n) await vi.advanceTimersToNextTimerAsync();
  await Promise.all(all);
  return times;
}

describe('RateLimiter', () => {
  it('spaces starts evenly at 60000/limit ms, first one at once', async () => {
    expect(await startTimes(limiter(600), 5)).toEqual([0, 100, 200, 300, 400]);
  });

  it('adds the safety margin to the interval (1 % by default)', () => {
    expect(new RateLimiter({ perMinute: 100 }).intervalMs).toBeCloseTo(606, 6);
  });

  it('never puts more than `limit` starts in any rolling 60 s window', async () => {
    const times = await startTimes(new RateLimiter({ perMinute: 100, now: () => Date.now() }), 250);
    for (let i = 0; i + 100 < times.length; i++) expect(times[i + 100]! - times[i]!).toBeGreaterThan(60_000);
  });

  it('a start delayed a little keeps the grid (no rate lost); one delayed past half the slack re-anchors it', async () => {
    // 1000 ms window, 10 % margin: interval 110 ms, slack 100 ms, catch-up up to 50 ms.
    let lag = 0;
    const l = new RateLimiter({ perMinute: 600, windowMs: 1_000, safetyMargin: 0.1, now: () => Date.now() + lag });
    const seen: number[] = [];
    /** One acquire whose timer fires `late` ms after its slot (the event loop was busy). */
    const take = async (late = 0) => {
      const n = seen.length;
      void l.acquire().then(() => seen.push(Date.now() + lag));
      await Promise.resolve();
      lag += late;
      while (seen.length === n) await vi.advanceTimersToNextTimerAsync();
    };
    await take(); // 0, after idle: a grid on which it is 50 ms late (slots -50, 60, 170, ...)
    await take(30); // slot 60, started at 90: within the catch-up
    await take(); // back on the grid at 170, not 200
    await take(80); // slot 280, started at 360: too late; the new grid puts it 50 ms late
    await take(); // 420
    await take(); // 530
    expect(seen.map((t) => Math.round(t))).toEqual([0, 90, 170, 360, 420, 530]);
    // Whatever the stalls: any 10 consecutive gaps (11 starts) span more than the window.
    expect(seen[5]! - seen[0]!).toBeGreaterThan(5 * 110 - 50);
  });

  it('starts at once after an idle pause, then resumes spacing from there', async () => {
    const l = limiter(600); // no margin: no catch-up either
    await startTimes(l, 2); // 0, 100
    await vi.advanceTimersByTimeAsync(5_000);
    const t0 = Date.now();
    expect((await startTimes(l, 3)).map((t) => t - t0)).toEqual([0, 100, 200]);
  });

  it('a `first` waiter goes ahead of the queue, but never past a waiter it already passed once', async () => {
    const l = limiter(600);
    await l.acquire(); // takes the slot at 0: the rest wait
    const order: string[] = [];
    const other = l.acquire().then(() => order.push('other'));
    // A head request asked again as soon as the previous one started, as a source's head lane does.
    let heads = 0;
    const head = (): Promise<void> =>
      l.acquire(undefined, true).then(() => {
        order.push(`head${++heads}`);
        if (heads < 4) void head();
      });
    void head();
    while (order.length < 5) await vi.advanceTimersToNextTimerAsync();
    await other;
    expect(order).toEqual(['head1', 'other', 'head2', 'head3', 'head4']);
  });

  it('an aborted waiter leaves the queue without using a slot', async () => {
    const l = limiter(600);
    const times: Record<string, number> = {};
    const ac = new AbortController();
    const a = l.acquire().then(() => (times.a = Date.now()));
    const b = l.acquire(ac.signal).then(
      () => (times.b = Date.now()),
      (e: unknown) => (times.bError = e instanceof AbortedError ? Date.now() : -1),
    );
    const c = l.acquire().then(() => (times.c = Date.now()));
    await vi.advanceTimersByTimeAsync(50);
    ac.abort();
    await vi.advanceTimersByTimeAsync(1_000);
    await Promise.all([a, b, c]);
    expect(times).toEqual({ a: 0, bError: 50, c: 100 });
    expect(l.pending).toBe(0);
  });

  it('penalize() doubles the interval up to maxSlowdown, and it recovers by halves', async () => {
    const l = limiter(600, { maxSlowdown: 4, recoveryMs: 10_000 });
    expect(l.penalize()).toBe(200);
    expect(l.penalize()).toBe(400);
    expect(l.penalize()).toBe(400);
    const t0 = Date.now();
    expect((await startTimes(l, 3)).map((t) => t - t0)).toEqual([0, 400, 800]);
    vi.setSystemTime(10_000);
    expect(l.intervalMs).toBe(200);
    vi.setSystemTime(30_000);
    expect(l.intervalMs).toBe(100);
    expect(l.slowdown).toBe(1);
  });

  it('0 and Infinity mean unlimited', async () => {
    for (const perMinute of [0, Infinity]) {
      const l = limiter(perMinute);
      expect(l.unlimited).toBe(true);
      expect(await startTimes(l, 50)).toEqual(Array(50).fill(0));
    }
  });

  it('close() rejects waiters and later acquires', async () => {
    const l = limiter(60);
    await l.acquire();
    const waiting = l.acquire();
    l.close();
    await expect(waiting).rejects.toBeInstanceOf(AbortedError);
    await expect(l.acquire()).rejects.toBeInstanceOf(AbortedError);
  });

  it('rejects a negative or non-numeric limit', () => {
    expect(() => limiter(-1)).toThrow(RangeError);
    expect(() => limiter(Number.NaN)).toThrow(RangeError);
  });
});

// The schedule the client runs on in test/client/pacing.test.ts and
// test/sources/pacing.test.ts (600/min against a 10 s window, default 1 %
// margin: interval 101 ms, catch-up 50 ms), with requests that take longer than
// the interval. Here the schedule is checked exactly; those tests check over
// the wire only what load cannot change.
describe('RateLimiter with requests slower than the interval', () => {
  const INTERVAL = 101;
  const CATCH_UP = 50;
  const LATENCY = 150;
  const clientLimiter = () => new RateLimiter({ perMinute: 600, windowMs: 10_000, now: () => Date.now() });

  /** Start times of `n` requests run by `workers` loops of acquire, then a request taking `latencyMs`. */
  async function workerStarts(l: RateLimiter, workers: number, latencyMs: number, n: number): Promise<number[]> {
    const starts: number[] = [];
    let left = n;
    const all = Promise.all(
      Array.from({ length: workers }, async () => {
        while (left-- > 0) {
          await l.acquire();
          starts.push(Date.now());
          await new Promise((r) => setTimeout(r, latencyMs));
        }
      }),
    );
    await vi.runAllTimersAsync();
    await all;
    return starts;
  }

  it('3 workers, responses taking 1.5 intervals: every slot is used, on the evenly spaced schedule', async () => {
    const l = clientLimiter();
    expect(l.intervalMs).toBeCloseTo(INTERVAL, 9);
    const starts = await workerStarts(l, 3, LATENCY, 250);
    // After idle the first start counts as CATCH_UP late, so the next slot is INTERVAL - CATCH_UP away;
    // from then on one every INTERVAL: no slot left unused, none early.
    expect(starts).toEqual(starts.map((_, k) => (k === 0 ? 0 : k * INTERVAL - CATCH_UP)));
    // What the server sees of it: starts never closer than INTERVAL - CATCH_UP, and any 101 consecutive
    // ones span more than the 10 s window, so no window holds more than 100.
    for (let k = 1; k < starts.length; k++)
      expect(starts[k]! - starts[k - 1]!).toBeGreaterThanOrEqual(INTERVAL - CATCH_UP);
    for (let k = 0; k + 100 < starts.length; k++) expect(starts[k + 100]! - starts[k]!).toBeGreaterThan(10_000);
  });

  it('one worker cannot fill the budget with responses taking 1.5 intervals: concurrency is what does', async () => {
    const starts = await workerStarts(clientLimiter(), 1, LATENCY, 20);
    expect(starts.slice(1).map((t, k) => t - starts[k]!)).toEqual(Array(19).fill(LATENCY));
  });
});
