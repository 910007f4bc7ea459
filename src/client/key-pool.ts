// The run's keys and their budgets (ARCHITECTURE.md, Several keys): one RateLimiter per key, and
// every attempt (pages, slices, lookups, finds, stream resumes, retries) asks the pool for a key.
//
// Which key: a key free now, the one that has started fewest requests (ties in turn, so a run
// below its budget still spreads evenly); when none is free, the key whose limiter frees first,
// its queue counted. The request then waits in that key's limiter. Each limiter spaces its own
// starts, so no key goes past its budget however the others fare, and with equal budgets the
// keys take turns: their counts stay within one of each other.
//
// A 429 is one key's: its limiter slows down, and the retry's wait (Retry-After, or the backoff)
// holds that key only (`hold`); the request itself is asked again at once, on whichever key frees
// first. Requests already queued on the held key wait for it (its limiter is held too) rather than
// move: a 429 only follows pacing that was wrong, and the service sends no Retry-After, so the
// hold is a backoff of a second or so.
import { AbortedError } from '../errors.js';
import type { ApiCredential } from './credentials.js';
import { RateLimiter, type RateLimiterOptions } from './rate-limiter.js';

/** One key of the pool, as a request holds it for one attempt. */
export interface PooledKey {
  /** 0-based position in the list the keys were given in. */
  readonly index: number;
  readonly limiter: RateLimiter;
  /** `Basic <base64 of key:secret>`. */
  readonly authorization: string;
}

interface KeyState extends PooledKey {
  started: number;
  heldUntil: number;
}

export class KeyPool {
  readonly #keys: KeyState[];
  /** Where the next tie starts looking: keys take turns. */
  #turn = 0;

  /** `limiter`: the settings of every key's limiter (each key has the same budget). */
  constructor(credentials: readonly ApiCredential[], limiter: RateLimiterOptions) {
    if (credentials.length === 0) throw new RangeError('a key pool needs at least one key');
    this.#keys = credentials.map((c, index) => ({
      index,
      limiter: new RateLimiter(limiter),
      authorization: `Basic ${Buffer.from(`${c.apiKey}:${c.apiSecret}`).toString('base64')}`,
      started: 0,
      heldUntil: -Infinity,
    }));
  }

  get size(): number {
    return this.#keys.length;
  }

  /** Each key's limiter, in the order the keys were given. */
  get limiters(): RateLimiter[] {
    return this.#keys.map((k) => k.limiter);
  }

  /** Requests started with each key, or waiting for it (every attempt counts), in key order. */
  get started(): number[] {
    return this.#keys.map((k) => k.started);
  }

  /** Resolves with the key this attempt uses, once its budget allows a start (`first`: ahead of its queue). */
  async acquire(signal?: AbortSignal, first = false): Promise<PooledKey> {
    const key = this.#choose();
    // Counted when chosen, not when started: requests chosen in the same tick see each other.
    key.started++;
    try {
      const now = key.limiter.now();
      if (key.heldUntil > now) {
        await delay(key.heldUntil - now, signal);
      }
      await key.limiter.acquire(signal, first);
    } catch (err) {
      key.started--;
      throw err;
    }
    return key;
  }

  /** A 429 on `key`: its limiter slows down and it starts nothing for `ms` (the retry's wait). */
  hold(key: PooledKey, ms: number): void {
    const state = this.#keys[key.index]!;
    state.limiter.penalize();
    state.heldUntil = Math.max(state.heldUntil, state.limiter.now() + ms);
    state.limiter.holdUntil(state.heldUntil);
  }

  close(reason?: Error): void {
    for (const k of this.#keys) k.limiter.close(reason);
  }

  #choose(): KeyState {
    if (this.#keys.length === 1) return this.#keys[0]!;
    const now = this.#keys[0]!.limiter.now();
    const n = this.#keys.length;
    let best: KeyState | undefined;
    let bestAt = Infinity;
    for (let j = 0; j < n; j++) {
      const k = this.#keys[(this.#turn + j) % n]!;
      const at = Math.max(k.limiter.availableAt(now), k.heldUntil);
      const free = at <= now;
      if (!best) {
        best = k;
        bestAt = at;
        continue;
      }
      const bestFree = bestAt <= now;
      // Free keys: fewest started first. Otherwise: earliest free, then fewest started.
      const better = free
        ? !bestFree || k.started < best.started
        : !bestFree && (at < bestAt || (at === bestAt && k.started < best.started));
      if (better) {
        best = k;
        bestAt = at;
      }
    }
    this.#turn = (best!.index + 1) % n;
    return best!;
  }
}

/** Resolves after `ms` (the global timers, which a test's fake clock drives); rejects when `signal` aborts. */
function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = () =>
      new AbortedError('the request was aborted while its API key was held back after a 429', {
        cause: signal?.reason,
      });
    if (signal?.aborted) return reject(failed());
    const onAbort = () => {
      clearTimeout(timer);
      reject(failed());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
