// Fails a run whose chain stops moving (ARCHITECTURE.md "Run phases").
import type { Readable } from 'node:stream';
import { CatalogStreamsError } from '../errors.js';
import type { RunEvents } from '../events.js';

/** A run with no request, record, page or output for this long has stopped making progress. */
export const DEFAULT_STALL_TIMEOUT_MS = 10 * 60_000;

/**
 * Fails a run whose chain stops moving: no request, retry, page, record from the
 * source or committed output for `timeoutMs`. Its interval timer is ref'd on
 * purpose: while the chain runs it keeps the process alive, so a chain stuck on
 * a Promise that never settles (user code) cannot let the event loop empty and
 * the process exit 0 with nothing committed and no summary.
 */
export class StallWatchdog {
  readonly #timer: NodeJS.Timeout;
  readonly #off: () => void;
  #last = performance.now();

  constructor(timeoutMs: number, events: RunEvents, source: Readable, onStall: (err: CatalogStreamsError) => void) {
    const touch = () => {
      this.#last = performance.now();
    };
    const names = ['request', 'retry', 'page', 'output', 'total', 'info'] as const;
    for (const n of names) events.on(n, touch);
    source.on('data', touch);
    this.#off = () => {
      for (const n of names) events.off(n, touch);
      source.off('data', touch);
    };
    this.#timer = setInterval(
      () => {
        if (performance.now() - this.#last < timeoutMs) return;
        this.stop();
        const seconds = Math.round(timeoutMs / 100) / 10;
        onStall(
          new CatalogStreamsError(
            'run.stalled',
            `the run made no progress for ${seconds} s (no request, record or output): a stage is stuck, e.g. a custom function whose Promise never settles; ` +
              'outputs were discarded and the state cursor was left as it was (raise stallTimeout if a step legitimately takes longer)',
          ),
        );
      },
      Math.min(1000, Math.max(20, timeoutMs / 10)),
    );
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#off();
  }
}
