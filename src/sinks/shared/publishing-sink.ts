// One sink lifecycle (ARCHITECTURE.md, "Publication"): what every sink that publishes shares, the
// record sinks (record-sink.ts: local files, S3) and the table (table/table-sink.ts) alike. A run's
// abort destroys it; a tee may hold it before it publishes (publication.ts) and later settles it
// (removes what its version superseded, then releases its lock, once) or revokes it (takes its
// outputs back, then releases the lock). The subclass says what its steps are; the order and the
// once-only rules live here.
import { Writable } from 'node:stream';
import { AbortedError, CatalogStreamsError, SinkError } from '../../errors.js';
import type { OutputRecord } from '../../events.js';
import { fences, type Fence } from '../../core/lock.js';
import type { HeldPublication, SinkStream, StageContext } from '../../core/stage.js';
import { PublicationHold } from './publication.js';

export const SINK_HIGH_WATER_MARK = 64;

export abstract class PublishingSink extends Writable implements SinkStream {
  protected readonly ctx: StageContext;
  protected readonly sinkType: string;
  readonly #onAbort: () => void;
  #hold: PublicationHold | undefined;
  #settling: Promise<void> | undefined;
  #releasing: Promise<void> | undefined;

  constructor(sinkType: string, ctx: StageContext) {
    super({ objectMode: true, highWaterMark: SINK_HIGH_WATER_MARK });
    this.sinkType = sinkType;
    this.ctx = ctx;
    this.#onAbort = () =>
      this.destroy(
        new AbortedError(`the run was aborted; ${sinkType} sink output discarded`, { cause: ctx.signal.reason }),
      );
  }

  /** The run's abort destroys the sink; called last in the subclass's constructor, once nothing there can throw. */
  protected listenForAbort(): void {
    const { signal } = this.ctx;
    if (signal.aborted) process.nextTick(this.#onAbort);
    else signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** Every output published under its final name, with rows and bytes. */
  abstract get outputs(): readonly OutputRecord[];

  /** This run's version is published and not taken back: past the sink's commit point. */
  abstract get published(): boolean;

  /**
   * Makes `_final` wait, with its data complete, until `publish()`, and leaves the removal of
   * what it superseded and the lock to `settle()` (the tee calls both for every sink).
   */
  holdPublication(): HeldPublication {
    this.#hold = new PublicationHold();
    return this.#hold.handle(() => this.settle());
  }

  /** Held by a tee: its data complete, the sink waits here for the word to publish (a stop rejects). */
  protected async waitForPublish(): Promise<void> {
    if (this.#hold) await this.#hold.waitForPublish();
  }

  protected get held(): boolean {
    return this.#hold !== undefined;
  }

  /** `_final`'s steps: a failure is told to the tee (a sibling waiting to publish stops) and fails the stream. */
  protected finalizeWith(steps: () => Promise<void>, callback: (error?: Error | null) => void): void {
    steps().then(
      () => callback(),
      (err: unknown) => {
        const e = this.wrap(err);
        this.#hold?.fail(e);
        callback(e);
      },
    );
  }

  /** Published alone (no tee): settled before `finish`, so whoever waits finds the dataset settled and unlocked. */
  protected async settleIfAlone(): Promise<void> {
    if (!this.#hold) await this.settle();
  }

  /** Removes what this run's version superseded, then releases the lock, once. */
  protected settle(): Promise<void> {
    return (this.#settling ??= (async () => {
      await this.supersede();
      await this.release();
      // What the clean-up reopened (the S3 client) is released again.
      if (this.closed) await this.dispose();
    })());
  }

  /** The settle started (by the tee or alone), or a revoke stands in for it. */
  protected get settling(): Promise<void> | undefined {
    return this.#settling;
  }

  /** Finished and held, not yet settled or revoked: the lock and the superseded outputs wait for the tee. */
  protected awaitingTee(finished: boolean): boolean {
    return finished && !!this.#hold && !this.#hold.settled && this.#settling === undefined;
  }

  /** Removes what the new version superseded (run under the locks). */
  protected abstract supersede(): Promise<void>;

  /** Releases the dataset lock (a failure is a warning: `releaseWarning`). */
  protected abstract releaseLock(): Promise<void>;

  /** Closes what the sink opened (stores, clients); may run more than once. */
  protected abstract dispose(): Promise<void>;

  /** Takes back what the sink published (a sibling failed after it did). */
  protected abstract takeBack(): Promise<void>;

  /** Stops the sink: removes what it staged (or takes back what it published), releases the lock, disposes. */
  protected abstract stop(error: Error | null, reason: Error): Promise<void>;

  /** What a sink destroyed before it finished left, for the tee's reason. */
  protected abstract get discarded(): string;

  /** The fence of this sink's commit points: the run's lock and the dataset's (core/lock.ts, Fencing). */
  protected fence(lock: Fence | undefined): Fence {
    return fences(this.ctx.fence, lock);
  }

  /** Releases the lock once; what fails is a warning. */
  protected release(): Promise<void> {
    return (this.#releasing ??= this.releaseLock().catch((err: unknown) =>
      this.releaseWarning(err instanceof Error ? err : new Error(String(err))),
    ));
  }

  protected releaseWarning(failure: Error): void {
    this.cleanupWarning(failure);
  }

  /**
   * Removes what this sink published, after it finished, because a sibling sink of the run failed
   * later (the tee calls it). Nothing was superseded yet (that waits for the settle), so the
   * earlier version is whole again; then the lock goes.
   */
  async revoke(): Promise<void> {
    await this.takeBack();
    this.#settling ??= Promise.resolve();
    await this.release();
    // What the removal reopened (the S3 client) is released again.
    await this.dispose();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.ctx.signal.removeEventListener('abort', this.#onAbort);
    const reason =
      error ??
      new SinkError(`${this.sinkType} sink was destroyed before it finished; ${this.discarded}`, {
        code: 'sink.aborted',
      });
    this.#hold?.fail(reason);
    void this.stop(error, reason).finally(() => callback(error));
  }

  protected cleanupWarning(failure: Error): void {
    this.ctx.events.emit('warning', {
      code: 'sink.cleanup',
      message: `${this.sinkType} sink could not remove a partial output: ${failure.message}`,
    });
  }

  protected wrap(err: unknown): Error {
    if (err instanceof CatalogStreamsError) return err;
    const message = err instanceof Error ? err.message : String(err);
    return new SinkError(`${this.sinkType} sink failed: ${message}`, { cause: err });
  }
}
