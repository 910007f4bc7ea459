// Watches a response body for a service that stops sending, or sends too slowly
// to ever finish, without limiting how long a healthy body may take: a full AU
// products stream is ~600 MB over 15-25 minutes, so a total request timeout
// (as some SDKs added after night runs hung) would cut healthy extracts. What
// fails instead:
// - idle: no byte for `idleMs` while the consumer was waiting for one;
// - slow: fewer than `minBytesPerSecond` on average over `rateWindowMs` of
//   waiting time (a body trickling a byte every few seconds never goes idle,
//   and before this was stopped only by the run's stall watchdog, 10 minutes
//   later, blamed on "a custom function").
// Time counts only while the consumer has room for more (this stream's
// readable buffer is below its high-water mark): a slow sink pausing the body
// is backpressure, not a slow service.
//
// undici's own bodyTimeout resets on every chunk (so a trickle passes) and
// runs on the wall clock; this runs on an injectable clock so the behaviour is
// tested without real waits.
import { pipeline, type Readable, Transform, type TransformCallback } from 'node:stream';

/** A clock and a repeating timer; tests pass a fake one. */
export interface GuardClock {
  now(): number;
  /** Calls `tick` every `ms` until the returned function is called. */
  every(ms: number, tick: () => void): () => void;
}

export const systemClock: GuardClock = {
  now: () => performance.now(),
  every(ms, tick) {
    const timer = setInterval(tick, ms);
    timer.unref();
    return () => clearInterval(timer);
  },
};

export interface BodyGuardOptions {
  /** Longest gap without a byte while the consumer waits, ms (0: none). */
  idleMs: number;
  /** Least average rate over `rateWindowMs` of waiting, bytes per second (0: none). */
  minBytesPerSecond: number;
  rateWindowMs: number;
  clock?: GuardClock;
  /** The error to fail with; `problem` says which limit was crossed and how (for the message). */
  failure(problem: BodyProblem): Error;
}

export type BodyProblem =
  { kind: 'idle'; idleMs: number } | { kind: 'slow'; bytes: number; windowMs: number; minBytesPerSecond: number };

/** Our codes for a body that went idle or too slow: retried (or resumed) like a cut connection. */
export const BODY_IDLE = 'CATALOG_BODY_IDLE';
export const BODY_TOO_SLOW = 'CATALOG_BODY_TOO_SLOW';

/** The body as a stream that fails when the service stops sending or trickles (see the header). */
export function guardBody(body: Readable, options: BodyGuardOptions): Readable {
  if (options.idleMs <= 0 && (options.minBytesPerSecond <= 0 || options.rateWindowMs <= 0)) return body;
  const guard = new BodyGuard(options);
  pipeline(body, guard, () => {
    // errors reach the consumer through `guard`; destroying it destroys the body (and frees the socket)
  });
  return guard;
}

class BodyGuard extends Transform {
  readonly #options: BodyGuardOptions;
  readonly #clock: GuardClock;
  readonly #stop: () => void;
  #lastTick: number;
  /** Waiting time since the last byte. */
  #idleFor = 0;
  /** Waiting time and bytes in the current rate window. */
  #windowWaited = 0;
  #windowBytes = 0;

  constructor(options: BodyGuardOptions) {
    super({ highWaterMark: 64 * 1024 });
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#lastTick = this.#clock.now();
    const limits = [options.idleMs, options.minBytesPerSecond > 0 ? options.rateWindowMs : 0].filter((ms) => ms > 0);
    this.#stop = this.#clock.every(Math.max(1, Math.min(...limits) / 8), () => this.#tick());
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#idleFor = 0;
    this.#windowBytes += chunk.length;
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    this.#stop();
    callback();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.#stop();
    callback(err);
  }

  #tick(): void {
    const now = this.#clock.now();
    const elapsed = now - this.#lastTick;
    this.#lastTick = now;
    if (this.destroyed || this.writableEnded) return;
    // A consumer whose buffer is full is not waiting for the service.
    if (this.readableLength >= this.readableHighWaterMark) return;
    const o = this.#options;
    this.#idleFor += elapsed;
    this.#windowWaited += elapsed;
    if (o.idleMs > 0 && this.#idleFor >= o.idleMs) {
      return void this.destroy(o.failure({ kind: 'idle', idleMs: o.idleMs }));
    }
    if (o.minBytesPerSecond > 0 && o.rateWindowMs > 0 && this.#windowWaited >= o.rateWindowMs) {
      const needed = (o.minBytesPerSecond * this.#windowWaited) / 1000;
      if (this.#windowBytes < needed) {
        return void this.destroy(
          o.failure({
            kind: 'slow',
            bytes: this.#windowBytes,
            windowMs: this.#windowWaited,
            minBytesPerSecond: o.minBytesPerSecond,
          }),
        );
      }
      this.#windowWaited = 0;
      this.#windowBytes = 0;
    }
  }
}
