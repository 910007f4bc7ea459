// Writes every record to several sinks. The slowest sink sets the pace: a write
// completes only when every sink has accepted it (or drained), so nothing is
// buffered beyond each sink's own highWaterMark. It finishes when every sink has
// finished (committed); an error in any sink destroys all of them, so each one
// removes its temporary files or aborts its upload.
import { Writable, finished } from 'node:stream';
import type { OutputRecord } from '../events.js';
import type { SinkStream } from './stage.js';

export class TeeSink extends Writable implements SinkStream {
  readonly #sinks: SinkStream[];

  constructor(sinks: SinkStream[]) {
    super({ objectMode: true, highWaterMark: 16 });
    this.#sinks = sinks;
    for (const sink of sinks) {
      sink.on('error', (err) => this.destroy(err));
    }
  }

  get outputs(): readonly OutputRecord[] {
    return this.#sinks.flatMap((s) => s.outputs);
  }

  override _write(chunk: unknown, _enc: BufferEncoding, callback: (err?: Error | null) => void): void {
    let waiting = 0;
    let done = false;
    const release = () => {
      if (--waiting === 0 && !done) {
        done = true;
        callback();
      }
    };
    for (const sink of this.#sinks) {
      if (!sink.write(chunk)) {
        waiting++;
        sink.once('drain', release);
      }
    }
    if (waiting === 0) callback();
  }

  override _final(callback: (err?: Error | null) => void): void {
    let pending = this.#sinks.length;
    let failed = false;
    for (const sink of this.#sinks) {
      finished(sink, (err) => {
        if (failed) return;
        if (err) {
          failed = true;
          callback(err);
        } else if (--pending === 0) callback();
      });
      sink.end();
    }
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    for (const sink of this.#sinks) if (!sink.destroyed) sink.destroy(err ?? undefined);
    callback(err);
  }
}
