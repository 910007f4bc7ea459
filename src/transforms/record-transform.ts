// The base of every transform stage: an object-mode Transform whose subclass
// turns one record into zero, one or several records in `processRecord`
// (synchronously; only user code may return a Promise). The base owns the
// stream mechanics: counting, batching of buffered writes, waiting for a
// stage's pending work (dead-letter backpressure, a failure being committed),
// flushing and aborting. `RecordTransform.fuse` runs several stages inside one
// Transform, so a chain of cheap stages pays the per-record stream cost once.
import { Transform, type TransformCallback } from 'node:stream';
import { CatalogStreamsError, DataError } from '../errors.js';
import type { StageContext } from '../core/stage.js';
import { userFrame } from './user-frame.js';

/** Counts in log lines with thousands separators (1,234,567). */
const count = (n: number) => n.toLocaleString('en-US');

/** What `processRecord` returns: a record, several records, or nothing (null/undefined drops the record). */
export type RecordOutput = object | readonly object[] | null | undefined;

/** Counters of one stage, readable during and after a run (the run summary reads them). */
export interface StageStats {
  /** Records received. */
  in: number;
  /** Records emitted (explode and flat-map may emit several per record). */
  out: number;
  /** Records that produced no output: invalid, filtered out, duplicates, exploded empty lists. */
  dropped: number;
  /** Records rejected as invalid (they are also counted in `dropped`). */
  invalid: number;
  /** Invalid records skipped (`onInvalid: skip`). */
  skipped: number;
  /** Invalid records written to the dead-letter sink (`onInvalid: dead-letter`). */
  deadLettered: number;
}

/** Chunks Node buffered while the stage was busy, handed to `_transform` in one call. */
class Batch {
  constructor(readonly records: ReadonlyArray<{ chunk: unknown }>) {}
}

export abstract class RecordTransform extends Transform {
  /** The stage type name (`validate`, `pick`...), used in messages, events and the summary. */
  readonly stage: string;
  readonly stats: StageStats = { in: 0, out: 0, dropped: 0, invalid: 0, skipped: 0, deadLettered: 0 };
  protected readonly ctx: StageContext;
  /**
   * Where the stage stands in its pipeline (`transforms[2] (nightly.yml:14:5)`), set by whoever
   * planned it (the runner), so an error the stage throws says which of several stages it was.
   */
  placement: string | undefined;

  /** The stages this stream runs, in order: itself, or the stages fused into it. */
  #chain: RecordTransform[];
  /** The stream that carries this stage's records: itself, or the fused transform it runs in. */
  #host: RecordTransform;
  /** This stage's own `prepare()`, started once. */
  #selfPrepared: Promise<void> | undefined;
  /** Every stage of the chain prepared (set on the carrying stream). */
  #chainPrepared: Promise<void> | undefined;
  #ready = false;

  protected constructor(stage: string, ctx: StageContext) {
    super({ objectMode: true, highWaterMark: 64 });
    this.stage = stage;
    this.ctx = ctx;
    this.#chain = [this];
    this.#host = this;
  }

  /**
   * Turns one record into zero, one or several. Throwing fails the run with that error.
   *
   * `owned` is true when the record was made by the stage before this one in the same fused chain
   * (`returnsOwnedRecords`) and nothing else holds it: this stage may then set its top-level keys
   * in place instead of copying it. Nested values may still be shared with the source's record, so
   * they are never changed in place. A record from a stream (another stage, a source, user code)
   * is never owned.
   */
  abstract processRecord(record: object, owned?: boolean): RecordOutput | Promise<RecordOutput>;

  /**
   * True when the stage keeps no reference to the records it returns, and each is either the
   * record it received or a new top-level object. Its new objects then reach the next fused stage
   * as owned, and an owned record it passes on stays owned. Copies cost a key-by-key loop per
   * record (~5 µs on a 70-key product), so a chain of stages that each add or replace columns
   * copies once instead of once per stage. User code may keep what it returns, so it never does.
   */
  protected get returnsOwnedRecords(): boolean {
    return false;
  }

  /** Names the stage in the error its code threw (a custom stage: its module and export). */
  protected get label(): string {
    return this.stage;
  }

  /** Async set-up before the first record (loading a user module). Runs once. */
  protected prepare(): Promise<void> | void {}

  /** Called once at the end of the input, before the stream ends (close a dead-letter sink, check thresholds). */
  protected finish(): Promise<void> | void {}

  /** Called when the stream is destroyed, with the error if any (discard a half-written dead-letter sink). */
  protected abort(_error: Error | null): void {}

  /**
   * Work the stream must wait for before it takes the next record: dead-letter
   * backpressure, or a failure being committed (a rejected promise fails the run).
   */
  protected pending(): Promise<void> | undefined {
    return undefined;
  }

  /** Fails the stream that carries this stage (itself, or the fused transform it runs in). */
  failStream(error: Error): void {
    this.#host.destroy(error);
  }

  /**
   * One Transform running `stages` in order, record by record, with the same
   * output, counters, flush order, dead-letter handling and errors as the same
   * stages joined by `stream.pipeline`, minus the per-stage stream overhead.
   * The stages must be fresh (never written to) and are not used as streams
   * afterwards; their `stats` stay readable.
   */
  static fuse(stages: readonly RecordTransform[]): RecordTransform {
    if (stages.length === 0) throw new TypeError('RecordTransform.fuse needs at least one stage');
    for (const s of stages) {
      if (s.#host !== s || s.#chain.length !== 1 || s.stats.in > 0 || s.writableEnded || s.destroyed) {
        throw new TypeError(`RecordTransform.fuse: stage "${s.stage}" is already fused or in use`);
      }
    }
    if (stages.length === 1) return stages[0]!;
    const fused = new FusedTransform(stages.map((s) => s.stage).join('+'), stages[0]!.ctx);
    fused.#chain = [...stages];
    for (const s of stages) s.#host = fused;
    return fused;
  }

  /** The stages this stream runs (itself unless fused). */
  get stages(): readonly RecordTransform[] {
    return this.#chain;
  }

  override _transform(chunk: unknown, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (!this.#ready) {
      this.#prepare().then(() => this._transform(chunk, _encoding, callback), callback);
      return;
    }
    let work: void | Promise<void>;
    try {
      work = chunk instanceof Batch ? this.#runBatch(chunk.records, 0) : this.#runRecord(chunk);
    } catch (error) {
      callback(error as Error);
      return;
    }
    if (work) work.then(() => this.#afterPending(callback), callback);
    else this.#afterPending(callback);
  }

  // Writes buffered while a record was in flight (backpressure, async user code)
  // arrive together; they go through Transform's own `_write` as one chunk so
  // its readable-side backpressure logic still applies.
  override _writev(
    chunks: Array<{ chunk: unknown; encoding: BufferEncoding }>,
    callback: (error?: Error | null) => void,
  ): void {
    this._write(new Batch(chunks), 'utf8', callback);
  }

  override _flush(callback: TransformCallback): void {
    this.#finishAll().then(() => callback(), callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    for (const s of this.#chain) {
      try {
        s.abort(error);
      } catch {
        // aborting is best effort; the original error is the one to report
      }
    }
    callback(error);
  }

  #prepare(): Promise<void> {
    return (this.#chainPrepared ??= (async () => {
      for (const s of this.#chain) await (s.#selfPrepared ??= Promise.resolve().then(() => s.prepare()));
      this.#ready = true;
    })());
  }

  async #finishAll(): Promise<void> {
    await this.#prepare();
    for (const s of this.#chain) {
      await s.finish();
      const { stats } = s;
      s.ctx.events.emit('info', {
        code: 'transform.stats',
        message: `${s.stage}: ${count(stats.in)} in, ${count(stats.out)} out${stats.invalid ? `, ${count(stats.invalid)} invalid` : ''}${stats.dropped ? `, ${count(stats.dropped)} dropped` : ''}`,
        stage: s.stage,
        stats: { ...stats },
      });
    }
  }

  #runRecord(record: unknown): void | Promise<void> {
    if (typeof record !== 'object' || record === null || Array.isArray(record)) {
      throw new DataError(
        `${this.stage}: expected a record (a plain object) but received ${record === null ? 'null' : Array.isArray(record) ? 'an array' : typeof record}; transforms take the records of a source or of another transform`,
        { code: 'data.not_a_record' },
      );
    }
    return this.#run(0, record);
  }

  /** Runs `record` through the chain from stage `i`; pushes what comes out of the last stage. */
  #run(i: number, record: object): void | Promise<void> {
    const chain = this.#chain;
    let owned = false;
    for (; i < chain.length; i++) {
      const stage = chain[i]!;
      stage.stats.in++;
      let result: RecordOutput | Promise<RecordOutput>;
      try {
        result = stage.processRecord(record, owned);
      } catch (error) {
        throw stage.#stageError(error, record);
      }
      if (result instanceof Promise) {
        const next = i + 1;
        const input = record;
        return result.then(
          (value) => this.#continue(next, RecordTransform.#count(stage.stats, value)),
          (error: unknown) => {
            throw stage.#stageError(error, input);
          },
        );
      }
      if (result === null || result === undefined) {
        stage.stats.dropped++;
        return;
      }
      if (Array.isArray(result))
        return this.#runMany(i + 1, RecordTransform.#count(stage.stats, result) as readonly object[], 0);
      stage.stats.out++;
      owned = stage.returnsOwnedRecords && (result !== record || owned);
      record = result;
    }
    this.push(record);
  }

  #continue(i: number, value: RecordOutput): void | Promise<void> {
    if (value === null || value === undefined) return;
    if (Array.isArray(value)) return this.#runMany(i, value, 0);
    return this.#run(i, value as object);
  }

  #runMany(i: number, records: readonly object[], from: number): void | Promise<void> {
    for (let j = from; j < records.length; j++) {
      const work = this.#run(i, records[j]!);
      if (work) return work.then(() => this.#runMany(i, records, j + 1));
    }
  }

  #runBatch(records: ReadonlyArray<{ chunk: unknown }>, from: number): void | Promise<void> {
    for (let j = from; j < records.length; j++) {
      const work = this.#runRecord(records[j]!.chunk);
      if (work) return work.then(() => this.#afterRecord(records, j + 1));
      const wait = this.#pending();
      if (wait) return wait.then(() => this.#runBatch(records, j + 1));
    }
  }

  #afterRecord(records: ReadonlyArray<{ chunk: unknown }>, next: number): void | Promise<void> {
    const wait = this.#pending();
    return wait ? wait.then(() => this.#runBatch(records, next)) : this.#runBatch(records, next);
  }

  #pending(): Promise<void> | undefined {
    const chain = this.#chain;
    for (let i = 0; i < chain.length; i++) {
      const wait = chain[i]!.pending();
      if (wait) return wait;
    }
    return undefined;
  }

  #afterPending(callback: TransformCallback): void {
    const wait = this.#pending();
    if (wait) wait.then(() => this.#afterPending(callback), callback);
    else callback();
  }

  /**
   * An error this stage's code threw on `record`, as the run reports it. Ours (a CatalogStreamsError)
   * already says what and where; anything else (user code, a bug) alone would read only
   * `error [error]: boom`, so it is wrapped naming the stage's place, its label and the record's id,
   * and the first line of the caller's code in its stack (`data.stage_failed`, the original as cause).
   */
  #stageError(error: unknown, record: object): unknown {
    if (error instanceof CatalogStreamsError) return error;
    // A stop (the run's signal, an AbortError of user code that passed it on) stays a stop, not a failure of the stage.
    if (this.ctx.signal?.aborted || (error as { name?: unknown } | null)?.name === 'AbortError') return error;
    const id = (record as { id?: unknown }).id;
    const message = error instanceof Error ? error.message : String(error);
    const frame = userFrame(error);
    return new DataError(
      `${this.placement ? `${this.placement} ` : ''}${this.label} threw on record ${id === undefined ? '(without an id)' : JSON.stringify(id)}: ${message}` +
        (frame ? ` (at ${frame})` : ''),
      { code: 'data.stage_failed', cause: error },
    );
  }

  static #count(stats: StageStats, value: RecordOutput): RecordOutput {
    if (value === null || value === undefined) stats.dropped++;
    else if (Array.isArray(value)) {
      if (value.length === 0) stats.dropped++;
      else stats.out += value.length;
    } else stats.out++;
    return value;
  }
}

/** The carrier of fused stages; its own `processRecord` is never called. */
class FusedTransform extends RecordTransform {
  constructor(stage: string, ctx: StageContext) {
    super(stage, ctx);
  }

  processRecord(): RecordOutput {
    throw new Error('a fused transform runs its stages, not a record function of its own');
  }
}
