// The run's request budget: one limiter per CatalogClient, shared by every
// source of the run, through which every attempt (retries included) passes.
//
// Algorithm: evenly spaced starts, one every 60_000 / limit ms (plus a 1 %
// safety margin). The service counts requests in a rolling 60 s window; evenly
// spaced starts never put more than `limit` requests into any such window,
// whereas a token bucket would allow a burst that a rolling window punishes
// with 429s. Waiters are served first come, first served by a single timer, so
// the budget is spent fully whenever work is waiting (no idle gaps) and never
// exceeded.
//
// - Lateness: starts stay on the evenly spaced grid, so a start the event
//   loop delayed (a big JSON.parse, a busy sink, a loaded machine) does not
//   lower the rate: the next one keeps its slot. Catching up is bounded: a
//   start later than half the window's slack (windowMs * margin / 2: 300 ms
//   per 60 s window) re-anchors the grid as if that start were exactly that
//   late (a new grid, later than the old one, so spacing only grows). So any
//   `limit + 1` consecutive starts span at least window + window * margin / 2,
//   whatever the stalls, and the other half of the slack absorbs network
//   jitter between our clock and the server's.
// - Idle: after a pause the next start is immediate; spacing resumes from it.
// - 429: `penalize()` doubles the interval (up to maxSlowdown times the base)
//   and pushes the next slot back accordingly; every `recoveryMs` without a new
//   429 halves the slowdown again, down to the base rate.
// - `holdUntil()`: no start before a given time (a 429's wait, which belongs to
//   the key: key-pool.ts); waiters already queued are held too.
// - Aborted waiters leave the queue without using a slot.
// - `perMinute` 0 or Infinity: unlimited (benchmarks, tests).
import { AbortedError } from '../errors.js';

export interface RateLimiterOptions {
  /** Requests per minute; 0 or Infinity means unlimited. */
  perMinute: number;
  /**
   * Length of the server's rolling window in ms (default 60 000, "per minute").
   * Only its slack depends on it; set it for servers with a shorter window
   * (a test sandbox), keeping perMinute as the rate.
   */
  windowMs?: number;
  /** Fraction added to the interval to stay clear of the limit (default 0.01). */
  safetyMargin?: number;
  /** Largest factor a run of 429s may slow the limiter down by (default 8). */
  maxSlowdown?: number;
  /** Time without a 429 after which the slowdown halves (default 30 s). */
  recoveryMs?: number;
  /** Monotonic clock in ms (tests). */
  now?: () => number;
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  /** Times a `first` waiter went ahead of this one. */
  passed: number;
}

/**
 * How often a waiter lets a `first` one go ahead: once. A source whose head request is always
 * asked again before the next slot would otherwise starve every other waiter of the key (the
 * progress display's plan probes, another pipeline sharing the client).
 */
const MAX_PASSED = 1;

const WINDOW_MS = 60_000;

export class RateLimiter {
  readonly perMinute: number;
  readonly #baseInterval: number;
  /** How late a start may be and still keep the grid (half the window's slack). */
  readonly #maxCatchUp: number;
  readonly #maxSlowdown: number;
  readonly #recoveryMs: number;
  readonly #now: () => number;
  readonly #queue: Waiter[] = [];
  #slowdown = 1;
  #lastPenalty = 0;
  /** Scheduled time of the next start. */
  #next = -Infinity;
  #timer: NodeJS.Timeout | undefined;
  #closed: Error | undefined;

  constructor(options: RateLimiterOptions) {
    const { perMinute } = options;
    if (!(perMinute >= 0))
      throw new RangeError(
        `rateLimit must be a number of requests per minute >= 0 (0 or Infinity: unlimited), got ${perMinute}`,
      );
    this.perMinute = perMinute === 0 ? Infinity : perMinute;
    const margin = options.safetyMargin ?? 0.01;
    this.#baseInterval = Number.isFinite(this.perMinute) ? (WINDOW_MS / this.perMinute) * (1 + margin) : 0;
    this.#maxCatchUp = ((options.windowMs ?? WINDOW_MS) * margin) / 2;
    this.#maxSlowdown = options.maxSlowdown ?? 8;
    this.#recoveryMs = options.recoveryMs ?? 30_000;
    this.#now = options.now ?? (() => performance.now());
  }

  get unlimited(): boolean {
    return this.#baseInterval === 0;
  }

  /** Current spacing between starts, in ms (0 when unlimited). */
  get intervalMs(): number {
    if (this.#slowdown > 1) {
      const halvings = Math.floor((this.#now() - this.#lastPenalty) / this.#recoveryMs);
      if (halvings > 0) {
        this.#slowdown = Math.max(1, this.#slowdown / 2 ** halvings);
        this.#lastPenalty += halvings * this.#recoveryMs;
      }
    }
    return this.#baseInterval * this.#slowdown;
  }

  /** Current slowdown factor (1 = the configured rate). */
  get slowdown(): number {
    void this.intervalMs;
    return this.#slowdown;
  }

  /** Requests waiting for a slot. */
  get pending(): number {
    return this.#queue.length;
  }

  /**
   * When a request asked for now would start (`now` from this limiter's clock): after the waiters
   * already queued, each one interval apart. Several keys' limiters are compared by it (key-pool.ts).
   */
  availableAt(now = this.#now()): number {
    if (this.unlimited) return now;
    const interval = this.intervalMs;
    const first = this.#queue.length === 0 && now >= this.#next ? now : Math.max(now, this.#next);
    return first + this.#queue.length * interval;
  }

  /** The limiter's clock, ms (performance.now unless a test gave one). */
  now(): number {
    return this.#now();
  }

  /**
   * Resolves when this request may start; rejects with AbortedError if `signal` aborts first.
   * `first`: ahead of the waiters already queued (a request the consumer is waiting for).
   */
  acquire(signal?: AbortSignal, first = false): Promise<void> {
    if (this.#closed) return Promise.reject(this.#closed);
    if (signal?.aborted) return Promise.reject(abortError(signal));
    if (this.unlimited) return Promise.resolve();
    if (this.#queue.length === 0 && this.#now() >= this.#next) {
      this.#start();
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, signal, onAbort: undefined, passed: 0 };
      if (signal) {
        waiter.onAbort = () => {
          const i = this.#queue.indexOf(waiter);
          if (i >= 0) this.#queue.splice(i, 1);
          if (this.#queue.length === 0) this.#disarm();
          reject(abortError(signal));
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      if (first) this.#jump(waiter);
      else this.#queue.push(waiter);
      this.#arm();
    });
  }

  /** Queues a `first` waiter ahead of those not yet passed over MAX_PASSED times. */
  #jump(waiter: Waiter): void {
    let at = this.#queue.length;
    while (at > 0 && this.#queue[at - 1]!.passed < MAX_PASSED) at--;
    for (let i = at; i < this.#queue.length; i++) this.#queue[i]!.passed++;
    this.#queue.splice(at, 0, waiter);
  }

  /** A 429 came back: slow down (double the interval) and return the new interval in ms. */
  penalize(): number {
    if (this.unlimited) return 0;
    const last = this.#next - this.intervalMs;
    this.#slowdown = Math.min(this.#maxSlowdown, this.#slowdown * 2);
    this.#lastPenalty = this.#now();
    const interval = this.intervalMs;
    if (Number.isFinite(last)) this.#next = Math.max(this.#next, last + interval);
    if (this.#timer) {
      this.#disarm();
      this.#arm();
    }
    return interval;
  }

  /** No start before `time` (this limiter's clock, ms), queued waiters included. */
  holdUntil(time: number): void {
    if (this.unlimited || !(time > this.#next)) return;
    this.#next = time;
    if (this.#timer) {
      this.#disarm();
      this.#arm();
    }
  }

  /** Rejects every waiter and every later acquire (the client was closed). */
  close(reason: Error = new AbortedError('the catalog client was closed')): void {
    this.#closed = reason;
    this.#disarm();
    for (const w of this.#queue.splice(0)) {
      if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
      w.reject(reason);
    }
  }

  /** Books the slot for a start happening now and schedules the one after it. */
  #start(): void {
    const now = this.#now();
    const slot = this.#next;
    // On time, early by a fraction (timers), or a little late: keep the grid.
    // Later than that (a stall, or an idle pause): a new grid on which this
    // start is as late as allowed.
    this.#next = (now - slot <= this.#maxCatchUp ? slot : now - this.#maxCatchUp) + this.intervalMs;
  }

  #arm(): void {
    if (this.#timer || this.#queue.length === 0) return;
    const delay = Math.max(0, this.#next - this.#now());
    this.#timer = setTimeout(() => this.#fire(), delay);
  }

  #disarm(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #fire(): void {
    this.#timer = undefined;
    // setTimeout works in whole milliseconds and may fire a fraction early.
    if (this.#now() + 1 < this.#next) return this.#arm();
    const waiter = this.#queue.shift();
    if (waiter) {
      if (waiter.onAbort) waiter.signal?.removeEventListener('abort', waiter.onAbort);
      this.#start();
      waiter.resolve();
    }
    this.#arm();
  }
}

function abortError(signal: AbortSignal): AbortedError {
  return new AbortedError('the request was aborted while waiting for the rate limiter', { cause: signal.reason });
}
