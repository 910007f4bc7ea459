// Several API keys, one budget each (ARCHITECTURE.md, Several keys). The schedule is checked on a
// fake clock (exact start times per key); at the sandbox, which keeps a rolling-window budget per
// key, only what the machine's load cannot change is checked: every product once, no 429, the
// keys' counts within one of each other, and per key no more than its budget in any window of
// the recorded arrival times (relative times only: load can slow the run, never speed it up).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AuthError, CatalogClient } from '../../src/client/index.js';
import { pairCredentialLists } from '../../src/client/credentials.js';
import { KeyPool } from '../../src/client/key-pool.js';
import { ConfigError } from '../../src/errors.js';
import { productsQuery } from '../../src/sources/index.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { startTestSandbox } from '../helpers/sandbox.js';
import { expectCreatedAtRead, productIdsWithStatus } from '../sources/sandbox-harness.js';

const KEYS = [
  { apiKey: 'multi-key-one', apiSecret: 'multi-secret-one' },
  { apiKey: 'multi-key-two', apiSecret: 'multi-secret-two' },
  { apiKey: 'multi-key-three', apiSecret: 'multi-secret-three' },
];

describe('KeyPool on a fake clock', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    vi.setSystemTime(0);
  });
  afterEach(() => vi.useRealTimers());

  const pool = (perMinute: number) => new KeyPool(KEYS, { perMinute, safetyMargin: 0, now: () => Date.now() });

  /** Start time and key of `n` acquires issued at once. */
  async function starts(p: KeyPool, n: number): Promise<{ at: number; key: number }[]> {
    const seen: { at: number; key: number }[] = [];
    const all = Array.from({ length: n }, () => p.acquire().then((k) => seen.push({ at: Date.now(), key: k.index })));
    await Promise.resolve();
    while (seen.length < n) await vi.advanceTimersToNextTimerAsync();
    await Promise.all(all);
    return seen;
  }

  it('three keys at 600/min: the keys take turns, each spaced at its own interval, three times one key`s rate', async () => {
    const seen = await starts(pool(600), 300);
    const perKey = [0, 1, 2].map((k) => seen.filter((s) => s.key === k).map((s) => s.at));
    expect(perKey.map((t) => t.length)).toEqual([100, 100, 100]);
    // Each key on its own grid (no margin, so no catch-up): one start every 100 ms.
    for (const times of perKey) expect(times).toEqual(Array.from({ length: 100 }, (_, i) => i * 100));
    // Any prefix of the schedule: the counts stay within one of each other.
    const counts = [0, 0, 0];
    for (const s of seen) {
      counts[s.key]!++;
      expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    }
  });

  it('below the budget (requests one at a time) the keys still take turns', async () => {
    const p = pool(600);
    const keys: number[] = [];
    for (let i = 0; i < 9; i++) {
      keys.push((await p.acquire()).index);
      await vi.advanceTimersByTimeAsync(1_000);
    }
    expect(keys).toEqual([0, 1, 2, 0, 1, 2, 0, 1, 2]);
  });

  it('a 429 holds that key only: the next requests go to the others until its wait is over', async () => {
    const p = pool(600);
    const first = await p.acquire();
    await vi.advanceTimersByTimeAsync(1_000);
    p.hold(first, 5_000);
    const keys: number[] = [];
    for (let i = 0; i < 4; i++) {
      keys.push((await p.acquire()).index);
      await vi.advanceTimersByTimeAsync(1_000);
    }
    expect(keys).not.toContain(first.index);
    // Its own limiter slowed down (doubled interval); the others did not.
    expect(p.limiters.map((l) => l.slowdown)).toEqual([2, 1, 1]);
    await vi.advanceTimersByTimeAsync(5_000);
    const after = await starts(p, 3);
    expect(after.map((s) => s.key).sort()).toEqual([0, 1, 2]);
  });

  it('requests already waiting in a held key`s limiter wait for the hold too', async () => {
    const p = new KeyPool([KEYS[0]!], { perMinute: 600, safetyMargin: 0, now: () => Date.now() });
    const first = await p.acquire();
    const waiting: number[] = [];
    const queued = [p.acquire(), p.acquire()].map((a) => a.then(() => waiting.push(Date.now())));
    p.hold(first, 2_000);
    await vi.advanceTimersByTimeAsync(5_000);
    await Promise.all(queued);
    // Held until 2000, then the limiter's slowed-down grid (interval 200 ms after the 429).
    expect(waiting).toEqual([2_000, 2_200]);
  });

  it('with a single key a 429 waits on it, as before', async () => {
    const p = new KeyPool([KEYS[0]!], { perMinute: 600, safetyMargin: 0, now: () => Date.now() });
    const k = await p.acquire();
    p.hold(k, 3_000);
    const seen = await starts(p, 1);
    expect(seen).toEqual([{ at: 3_000, key: 0 }]);
  });
});

describe('credential lists', () => {
  it('pairs keys and secrets by position; blanks around commas are dropped', () => {
    expect(pairCredentialLists('a, b ,c', 'x,y,z', { keys: 'K', secrets: 'S' })).toEqual([
      { apiKey: 'a', apiSecret: 'x' },
      { apiKey: 'b', apiSecret: 'y' },
      { apiKey: 'c', apiSecret: 'z' },
    ]);
    expect(pairCredentialLists('only', 'one', { keys: 'K', secrets: 'S' })).toEqual([
      { apiKey: 'only', apiSecret: 'one' },
    ]);
  });

  it('a count mismatch, an empty entry or a repeated key is a config error naming counts and positions, never values', () => {
    const from = { keys: 'CATALOG_API_KEY', secrets: 'CATALOG_API_SECRET' };
    const error = (k: string, s: string) => {
      try {
        pairCredentialLists(k, s, from);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        expect((err as ConfigError).code).toBe('config.credentials');
        return (err as Error).message;
      }
      throw new Error('no error');
    };
    expect(error('k1-value,k2-value,k3-value', 's1-value,s2-value')).toBe(
      'CATALOG_API_KEY lists 3 keys but CATALOG_API_SECRET lists 2 secrets: give one secret per key, comma-separated in the same order',
    );
    expect(error('k1-value,,k3-value', 's1-value,s2-value,s3-value')).toBe(
      'CATALOG_API_KEY: entry 2 of 3 is empty: remove the extra comma, or fill it in',
    );
    const repeated = error('k1-value,k2-value,k1-value', 's1-value,s2-value,s3-value');
    expect(repeated).toBe(
      'CATALOG_API_KEY: key 3 of 3 is the same API key as key 1: each key has one budget at the service, so list it once',
    );
  });

  it('a client takes either apiKey/apiSecret or credentials', () => {
    expect(
      () => new CatalogClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k', apiSecret: 's', credentials: KEYS }),
    ).toThrow(/either apiKey and apiSecret or credentials/);
    const c = new CatalogClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'a,b', apiSecret: 'x,y', rateLimit: 120 });
    expect([c.keyCount, c.rateLimit, c.budgetPerMinute]).toEqual([2, 120, 240]);
    void c.close();
  });
});

describe('several keys against the sandbox, one budget each', () => {
  let sandbox: Sandbox | undefined;
  let client: CatalogClient | undefined;
  afterEach(async () => {
    await client?.close();
    await sandbox?.close();
    client = sandbox = undefined;
  });

  // The scale of test/client/pacing.test.ts, shortened: each key 1,200/min told a 5 s window (100
  // per window); the sandbox allows 100 per rolling 4.5 s per key (the half second absorbs arrival
  // jitter: a 429 means a key went past its budget, never that the machine was slow).
  const PER_KEY = 1_200;
  const WINDOW = 5_000;
  const SERVER_WINDOW = 4_500;
  /** Requests per key the client's schedule allows in one of its windows, and the sandbox in one of its. */
  const PER_WINDOW = (PER_KEY * WINDOW) / 60_000;

  it('a paged extract over three keys: every product once, no 429, even use, no key past its budget in any window', async () => {
    sandbox = await startTestSandbox({
      products: 4_000,
      seed: 11,
      credentials: KEYS[0],
      extraCredentials: KEYS.slice(1),
      rateLimit: PER_WINDOW,
      rateLimitWindowMs: SERVER_WINDOW,
      recordRequestTimes: true,
    });
    client = new CatalogClient({
      baseUrl: sandbox.url,
      credentials: KEYS,
      rateLimit: PER_KEY,
      rateLimitWindowMs: WINDOW,
      retry: { minTimeout: 2, maxTimeout: 20 },
    });
    const expected = productIdsWithStatus(sandbox, 'active');
    const records = await productsQuery(client, {
      filter: { status: 'active' },
      pageSize: 10,
      concurrency: 6,
    }).toArray();
    expectCreatedAtRead(records, expected);
    expect(sandbox.stats.rateLimited).toBe(0);
    expect(client.stats.throttles).toBe(0);

    const admitted = sandbox.stats.byCredential.map((c) => c.admitted);
    expect(admitted.reduce((a, b) => a + b, 0)).toBe(client.stats.requests);
    // More requests than one window holds per key, so each key's budget was really in play.
    expect(Math.min(...admitted)).toBeGreaterThan(PER_WINDOW);
    expect(Math.max(...admitted) - Math.min(...admitted)).toBeLessThanOrEqual(1);
    expect(client.requestsByKey).toEqual(admitted);

    // Per key, against its schedule: any PER_WINDOW + 1 consecutive arrivals span more than the
    // server's window (the sandbox's own verdict agrees: no 429 above).
    for (const times of sandbox.requestTimes()) {
      expect(times.length).toBeGreaterThan(PER_WINDOW);
      for (let i = 0; i + PER_WINDOW < times.length; i++)
        expect(times[i + PER_WINDOW]! - times[i]!).toBeGreaterThan(SERVER_WINDOW);
    }
  }, 60_000);

  it('a key the service refuses (401) fails the request, named by position, never by value', async () => {
    // The sandbox knows keys one and three; key two is not valid there.
    sandbox = await startTestSandbox({
      products: 600,
      credentials: KEYS[0],
      extraCredentials: [KEYS[2]!],
      rateLimit: 0,
    });
    client = new CatalogClient({
      baseUrl: sandbox.url,
      credentials: [KEYS[0]!, { apiKey: 'multi-key-revoked', apiSecret: 'multi-secret-revoked' }, KEYS[2]!],
      credentialSource: 'CATALOG_API_KEY and CATALOG_API_SECRET in the environment',
      rateLimit: 0,
    });
    const err = await productsQuery(client, { filter: { status: 'active' }, pageSize: 10, concurrency: 3 })
      .toArray()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(AuthError);
    const auth = err as AuthError;
    expect([auth.code, auth.status, auth.keyNumber, auth.keyCount]).toEqual(['auth.unauthorized', 401, 2, 3]);
    expect(auth.message).toContain(`rejected key 2 of 3 (401`);
    expect(auth.message).toContain('check entry 2 of CATALOG_API_KEY and CATALOG_API_SECRET in the environment');
    expect(auth.message).toContain('a run fails when any of its keys is refused');
    expect(auth.message).not.toMatch(/multi-(key|secret)/);
    // Never retried: the one attempt made with key two.
    expect(client.stats.byStatus[401]).toBe(1);
  });
});
