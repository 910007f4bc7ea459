// Per-credential request budget (spec §8: 100 requests per minute) read
// strictly: a rolling window, not a fixed clock minute. A request is allowed
// when fewer than `limit` requests were allowed in the last `windowMs`; a
// refused request (429) does not use budget, so a client that backs off
// recovers as soon as the oldest allowed request leaves the window.

export interface RateLimitDecision {
  allowed: boolean;
  /** Milliseconds until a request would be allowed again (0 when allowed). */
  retryAfterMs: number;
}

export class RollingWindowLimiter {
  /** Allowed request times per credential, oldest first (a queue with a moving head). */
  readonly #allowedAt = new Map<string, { times: number[]; head: number }>();

  constructor(
    /** Requests per window; 0 or Infinity switches the limit off. */
    readonly limit: number,
    readonly windowMs = 60_000,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get enabled(): boolean {
    return this.limit > 0 && Number.isFinite(this.limit);
  }

  take(credential: string): RateLimitDecision {
    if (!this.enabled) return { allowed: true, retryAfterMs: 0 };
    const now = this.now();
    let q = this.#allowedAt.get(credential);
    if (!q) this.#allowedAt.set(credential, (q = { times: [], head: 0 }));
    while (q.head < q.times.length && q.times[q.head]! <= now - this.windowMs) q.head++;
    if (q.head > 1024 && q.head * 2 > q.times.length) {
      q.times = q.times.slice(q.head);
      q.head = 0;
    }
    if (q.times.length - q.head < this.limit) {
      q.times.push(now);
      return { allowed: true, retryAfterMs: 0 };
    }
    return { allowed: false, retryAfterMs: Math.max(0, q.times[q.head]! + this.windowMs - now) };
  }
}
