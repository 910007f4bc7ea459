// Writes every record to several sinks. The slowest sink sets the pace: a write
// completes only when every sink has accepted it (or drained), so nothing is
// buffered beyond each sink's own highWaterMark. It finishes when every sink has
// finished (committed). An error in any sink destroys all of them, so each one
// removes its temporary files or aborts its upload; and a sink that had already
// committed when a sibling failed has its outputs removed again (its `revoke()`,
// or for local files the tee deletes them), so a failed run leaves no outputs.
//
// Sinks that can hold their publication (every built-in sink) are held with their data
// complete but unpublished (temp files not renamed, no manifest) until every sink got there;
// then all publish. A sibling failing before that point only discards temp files and this
// run's own objects: what earlier runs published under the same names is never touched. Once
// every sink published, the tee settles them (each removes what its new version superseded and
// releases its lock) before it finishes; until then a revoke finds the earlier version whole.
// The protocol: ARCHITECTURE.md, "Publication".
import { unlink } from 'node:fs/promises';
import { type Readable, Writable, finished } from 'node:stream';
import { warningEvents } from '../code-warnings.js';
import { ConfigError } from '../errors.js';
import type { OutputRecord, RunEvents } from '../events.js';
import type { HeldPublication, SinkStream } from '../core/stage.js';

function closed(stream: Writable): Promise<void> {
  return stream.closed ? Promise.resolve() : new Promise((resolve) => stream.once('close', () => resolve()));
}

export class TeeSink extends Writable implements SinkStream {
  readonly #sinks: SinkStream[];
  readonly #events: RunEvents | undefined;
  readonly #held: HeldPublication[];
  readonly #ready: Promise<void>[];
  /** Sinks without `revoke` whose local files the tee removed again after a sibling failed. */
  readonly #unlinked = new Set<SinkStream>();
  #revoking: Promise<void> | undefined;
  /**
   * Every sink published: the run's commit point. From here nothing is taken back, whatever stops
   * the run (the settle that follows only removes what the new versions superseded).
   */
  #committed = false;
  #settling: Promise<void> | undefined;

  /** `events` hears a warning about outputs that could not be removed. */
  constructor(sinks: SinkStream[], events?: RunEvents) {
    super({ objectMode: true, highWaterMark: 16 });
    this.#sinks = sinks;
    this.#events = events;
    for (const sink of sinks) {
      sink.on('error', (err) => this.destroy(err));
    }
    // A sink that cannot be held counts as ready once it finished (it committed on its own).
    this.#held = [];
    this.#ready = [];
    if (sinks.length > 1) {
      for (const sink of sinks) {
        const held = sink.holdPublication?.();
        if (held) this.#held.push(held);
        this.#ready.push(
          held
            ? held.ready
            : new Promise<void>((resolve, reject) => finished(sink, (err) => (err ? reject(err) : resolve()))),
        );
      }
      for (const r of this.#ready) r.catch(() => {});
    }
  }

  prepared(): Promise<void> {
    return Promise.all(this.#sinks.map((s) => s.prepared?.())).then(() => undefined);
  }

  /** What the sinks have published and not taken back (a sink that revoked clears its own). */
  get outputs(): readonly OutputRecord[] {
    // Of a sink whose files the tee removed, only the objects it could not remove are left.
    return this.#sinks.flatMap((s) =>
      this.#unlinked.has(s) ? s.outputs.filter((o) => o.kind === 'object') : (s.outputs ?? []),
    );
  }

  /** Every sink published and none was taken back: the run is past its commit point. */
  get published(): boolean {
    return this.#committed;
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
          // Siblings that committed already must not leave their outputs behind.
          this.#revokeFinished().then(
            () => callback(err),
            () => callback(err),
          );
        } else if (--pending === 0) {
          // Every sink published: now what they superseded may go (a settle never fails the run).
          this.#committed = true;
          this.#settling = Promise.all(this.#held.map((h) => h.settle().catch(() => {}))).then(() => undefined);
          this.#settling.then(() => callback());
        }
      });
      sink.end();
    }
    if (this.#held.length > 0) {
      Promise.all(this.#ready).then(
        () => {
          for (const h of this.#held) h.publish();
        },
        // The failing sink errors and the tee is destroyed: the held sinks discard their data.
        () => {},
      );
    }
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    // Destroyed after finishing (autoDestroy): every sink committed, nothing to undo.
    if (this.writableFinished && !err) {
      callback(null);
      return;
    }
    // Stopped past the commit point (while settling): the outputs stand; the settle is waited for.
    if (this.#committed) {
      this.#settling!.then(() => callback(err));
      return;
    }
    for (const sink of this.#sinks) if (!sink.destroyed) sink.destroy(err ?? undefined);
    // The tee closes only once every sink has closed, i.e. finished its own
    // clean-up (temp files removed, uploads aborted): whoever waits for the tee
    // (stream.pipeline, the runner) then finds nothing half-written.
    Promise.all([...this.#sinks.map(closed), this.#revokeFinished()]).then(
      () => callback(err),
      () => callback(err),
    );
  }

  /** Removes what sinks that finished before the failure committed (once). */
  #revokeFinished(): Promise<void> {
    return (this.#revoking ??= this.#revokeAll());
  }

  async #revokeAll(): Promise<void> {
    // A Writable of the caller's (tee() in code) may have no `outputs`: nothing of it to revoke.
    const done = this.#sinks.filter((s) => s.writableFinished && (s.outputs ?? []).length > 0);
    if (done.length === 0) return;
    await Promise.all(
      done.map(async (sink) => {
        if (sink.revoke) return sink.revoke();
        this.#unlinked.add(sink);
        await Promise.all(sink.outputs.filter((o) => o.kind === 'file').map((o) => unlink(o.location).catch(() => {})));
        const left = sink.outputs.filter((o) => o.kind === 'object').map((o) => o.location);
        if (left.length > 0) {
          this.#events?.emit('warning', {
            code: 'sink.revoke',
            message: `a sink failed after another had committed ${left.join(', ')}; that sink cannot remove them: delete them (the run failed and left the state cursor where it was, so the next run writes them again)`,
          });
        }
      }),
    );
  }
}

/**
 * Code API: one stream written to several sinks, `pipeline(source, ..., tee(parquetSink(...),
 * jsonlSink(...)))`, with the runner's fan-out: the slowest sink sets the pace, every sink publishes
 * only once all have their data, and a failure in one removes what the others wrote. Each sink
 * learns the chain piped into the tee, so a Parquet or CSV sink takes its columns from the
 * records' schema as it would piped alone. Its own warnings (an output it could not remove) go to stderr.
 */
export function tee(...sinks: Writable[]): TeeSink {
  if (sinks.length === 0)
    throw new ConfigError('tee() needs at least one sink: tee(parquetSink({...}), jsonlSink({...}))', {
      path: 'tee',
    });
  const fanOut = new TeeSink(sinks as unknown as SinkStream[], warningEvents());
  // What is piped into the tee is what each sink would have had piped into it (core/planned-stage.ts).
  fanOut.once('pipe', (from: Readable) => {
    for (const sink of sinks) sink.emit('pipe', from);
  });
  return fanOut;
}
