// The Writable behind every sink type. A sink = a record format (JSONL lines or
// Parquet rows) + a path/key template + a kind of destination (local file, S3
// object, stdout); this class wires them to the stream contract:
//
// - objectMode Writable with a small highWaterMark: `_write` calls back only once
//   the destination accepted the bytes, so a slow disk/upload slows the pipeline
//   (and, in a tee, the slowest sink sets the pace). Nothing buffers a whole extract.
// - `_final` flushes held records and closes every part (data complete, not yet
//   published); held by a tee (`holdPublication`) it waits there until every sink of
//   the run got that far; then it commits every part (renames), runs `afterCommit`
//   (the S3 manifest), removes what this run replaces (`supersede`), releases the
//   dataset lock and lists everything in `outputs` (docs/publication.md).
// - destroyed with an error, destroyed before finishing, or ctx.signal aborted:
//   every uncommitted part is removed (temp files, multipart uploads) and parts
//   committed earlier in the run are revoked.
import { Writable } from 'node:stream';
import { AbortedError, CatalogStreamsError, SinkError } from '../../errors.js';
import type { OutputRecord } from '../../events.js';
import { fences, type Fence } from '../../core/lock.js';
import type { HeldPublication, SinkStream, StageContext } from '../../core/stage.js';
import type { ByteDestination } from './byte-destination.js';
import { isPlainObject } from '../../values.js';
import type { PartEncoder } from './part-encoder.js';
import type { PathTemplate } from './path-template.js';
import { PublicationHold } from './publication.js';
import { PartitionedParts, type RotationOptions } from './rotation.js';

export const SINK_HIGH_WATER_MARK = 64;

export type EmitItem<Item> = (record: Record<string, unknown>, item: Item) => void | Promise<void>;

/** How one sink turns records into items and bytes (jsonl/jsonl-encoding.ts, parquet/parquet-encoding.ts); made by its OutputFormat. */
export interface RecordEncoding<Item> {
  /** Takes one record and emits it (or holds it back: Parquet keeps its inference sample). */
  accept(record: Record<string, unknown>, ordinal: number, emit: EmitItem<Item>): void | Promise<void>;
  /** End of input: emits what was held back. */
  flush(emit: EmitItem<Item>): Promise<void>;
  createEncoder(destination: ByteDestination): PartEncoder<Item>;
  /** Whether an output with no records can be written (Parquet: only with a known schema). */
  canWriteEmpty(): boolean;
  /** Schema for manifests (Parquet columns), or null. */
  describeSchema(): unknown;
  /** Success: ends side outputs (the dead-letter sink). */
  close(): Promise<void>;
  /** Failure: destroys side outputs. */
  abort(reason: Error): Promise<void>;
  /** A sibling failed after this sink finished: removes what side outputs committed (the dead-letter sink). */
  revoke?(): Promise<void>;
}

export interface CommittedOutput {
  output: OutputRecord;
  /** The data destination (absent for side objects such as the manifest). */
  destination?: ByteDestination;
  /** Removes a side object again (the manifest, when the sink is stopped while writing it). */
  revoke?(): Promise<void>;
}

export interface RecordSinkSpec<Item> {
  sinkType: string;
  ctx: StageContext;
  format: RecordEncoding<Item>;
  /** undefined: the single fixed output `-` (stdout). */
  template: PathTemplate | undefined;
  templateOption: string;
  locate(rendered: string): string;
  openDestination(location: string): ByteDestination | Promise<ByteDestination>;
  rotation: RotationOptions;
  commitOnClose: boolean;
  /** Write one empty output when no record arrived (a fixed, unpartitioned path). */
  writeEmpty: boolean;
  /**
   * Runs after the hold, before the first output is committed, with every location this run
   * writes: a local dataset records them, so a run killed while renaming leaves no file that no
   * record claims (local-dataset.ts).
   */
  beforePublish?(written: ReadonlySet<string>): Promise<void>;
  /** Runs once every data output is committed (S3: writes the manifest); may add outputs. */
  afterCommit?(committed: readonly CommittedOutput[]): Promise<CommittedOutput[]>;
  /** Runs once before the first record (loads the S3 SDK, takes the dataset lock); a failure fails the sink. */
  prepare?(): Promise<void>;
  /**
   * The dataset lock `prepare` took, if any: asserted with the run's (`ctx.fence`) right before
   * each commit write (the dataset record and renames, the manifest) and before the clean-up.
   */
  lock?(): Fence | undefined;
  /**
   * Runs after the outputs and the manifest are published, with every location this run wrote:
   * removes the outputs of earlier runs that this run replaces (see docs/publication.md's
   * protocol). A failure is a `sink.cleanup` warning: this run's data is published.
   */
  supersede?(written: ReadonlySet<string>): Promise<void>;
  /** Runs when the stream closes, after success or failure, before dispose (releases the dataset lock). */
  release?(): Promise<void>;
  /** Runs when the stream closes, after success or failure (closes the S3 client). */
  dispose?(): void;
}

/** `record id=P123` or, for a record without an id, `record #42` (1-based position). */
export function describeRecord(record: Record<string, unknown>, ordinal: number): string {
  const id = record.id;
  return typeof id === 'string' || typeof id === 'number' || typeof id === 'bigint'
    ? `record id=${String(id)}`
    : `record #${ordinal}`;
}

export class RecordSink<Item> extends Writable implements SinkStream {
  readonly #spec: RecordSinkSpec<Item>;
  readonly #parts: PartitionedParts<Item>;
  readonly #committed: CommittedOutput[] = [];
  readonly #emit: EmitItem<Item>;
  #ordinal = 0;
  #finished = false;
  #revoked = false;
  /** Set when the sink is being destroyed: `_final`, still running, must not publish anything more. */
  #destroying = false;
  /** `_final` writing the side objects (the manifest); the destroy waits for it before disposing. */
  #writingExtras: Promise<unknown> | undefined;
  readonly #onAbort: () => void;
  #formatClosed = false;
  #releasing: Promise<void> | undefined;
  #settling: Promise<void> | undefined;
  #hold: PublicationHold | undefined;
  readonly #prepared: Promise<void>;
  #settlePrepared!: (err?: Error) => void;

  constructor(spec: RecordSinkSpec<Item>) {
    super({ objectMode: true, highWaterMark: SINK_HIGH_WATER_MARK });
    this.#spec = spec;
    this.#prepared = new Promise<void>((resolve, reject) => {
      this.#settlePrepared = (err) => (err ? reject(err) : resolve());
    });
    this.#prepared.catch(() => {});
    const { ctx, template } = spec;
    this.#parts = new PartitionedParts<Item>({
      sinkType: spec.sinkType,
      template,
      templateOption: spec.templateOption,
      locate: spec.locate,
      rotation: spec.rotation,
      commitOnClose: spec.commitOnClose,
      factory: { openDestination: spec.openDestination, createEncoder: (d) => spec.format.createEncoder(d) },
      onCommit: (output, destination) => {
        this.#committed.push({ output, destination });
        ctx.events.emit('output', output);
      },
    });
    // Partition values only for templates with {field} placeholders; the describer is made once, not per record.
    const describe = (record: Record<string, unknown>) => describeRecord(record, this.#ordinal);
    const noPartition: string[] = [];
    this.#emit =
      template && template.fields.length > 0
        ? (record, item) => this.#parts.write(template.partitionValues(record, describe), item)
        : (_record, item) => this.#parts.write(noPartition, item);
    this.#onAbort = () =>
      this.destroy(
        new AbortedError(`the run was aborted; ${spec.sinkType} sink output discarded`, { cause: ctx.signal.reason }),
      );
    if (ctx.signal.aborted) process.nextTick(this.#onAbort);
    else ctx.signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  /**
   * Makes `_final` wait, with its data complete, until `publish()`, and leaves the removal of
   * what it superseded and the lock to `settle()` (the tee calls both for every sink).
   */
  holdPublication(): HeldPublication {
    this.#hold = new PublicationHold();
    return this.#hold.handle(() => this.#settle());
  }

  /** Every output committed under its final name (files, objects, the manifest), with rows and bytes. */
  get outputs(): readonly OutputRecord[] {
    return this.#committed.map((c) => c.output);
  }

  /** Finished (its manifest written) and not taken back: past its commit point. */
  get published(): boolean {
    return this.#finished && !this.#revoked;
  }

  #writeOne(record: unknown): void | Promise<void> {
    if (!isPlainObject(record)) {
      throw new SinkError(
        `${this.#spec.sinkType} sink expects plain object records, received ${record === null ? 'null' : Array.isArray(record) ? 'an array' : typeof record}`,
        { code: 'sink.record' },
      );
    }
    return this.#spec.format.accept(record, ++this.#ordinal, this.#emit);
  }

  override _write(record: unknown, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    let pending: void | Promise<void>;
    try {
      pending = this.#writeOne(record);
    } catch (err) {
      callback(this.#wrap(err));
      return;
    }
    if (pending)
      pending.then(
        () => callback(),
        (err: unknown) => callback(this.#wrap(err)),
      );
    else callback();
  }

  override _writev(chunks: Array<{ chunk: unknown }>, callback: (error?: Error | null) => void): void {
    const run = async () => {
      for (const { chunk } of chunks) {
        const pending = this.#writeOne(chunk);
        if (pending) await pending;
      }
    };
    run().then(
      () => callback(),
      (err: unknown) => callback(this.#wrap(err)),
    );
  }

  override _final(callback: (error?: Error | null) => void): void {
    const { format, afterCommit } = this.#spec;
    (async () => {
      await format.flush(this.#emit);
      if (this.#ordinal === 0 && this.#spec.writeEmpty) {
        if (format.canWriteEmpty()) await this.#parts.openEmpty();
        else {
          this.#spec.ctx.events.emit('warning', {
            code: 'sink.empty',
            message: `${this.#spec.sinkType} sink received no records and has no declared columns, so it wrote no file`,
          });
        }
      }
      await this.#parts.closeAll();
      await format.close();
      this.#formatClosed = true;
      if (this.#hold) await this.#hold.waitForPublish();
      if (this.#destroying) return;
      // A run that lost its lock (paused past it, another run took over) publishes nothing.
      await this.#assertHeld();
      await this.#spec.beforePublish?.(this.#parts.locations);
      if (this.#destroying) return;
      // The renames publish a local dataset: checked again after its record was written.
      if (this.#spec.beforePublish) await this.#assertHeld();
      await this.#parts.commitAll();
      if (this.#destroying) return;
      if (afterCommit) {
        const writing = (async () => {
          // The manifest is the commit point: checked again right before it.
          await this.#assertHeld();
          const written = await afterCommit(this.#committed);
          if (!this.#destroying) return written;
          // Stopped while the manifest was being written: the destroy removed the data
          // objects, so the manifest must not stay behind, listing them.
          await Promise.all(
            written.map((e) => e.revoke?.().catch((err: unknown) => this.#cleanupWarning(err as Error))),
          );
          return undefined;
        })();
        this.#writingExtras = writing;
        const extras = await writing;
        if (!extras) return;
        for (const extra of extras) {
          this.#committed.push(extra);
          this.#spec.ctx.events.emit('output', extra.output);
        }
      }
      this.#finished = true;
      // Held: a sibling may still fail and revoke this version, so what it superseded stays until
      // the tee settles every sink. Alone: settled before `finish`, so whoever waits for the sink
      // finds the earlier files gone and the dataset unlocked.
      if (!this.#hold) await this.#settle();
    })().then(
      () => callback(),
      (err: unknown) => {
        this.#hold?.fail(this.#wrap(err));
        callback(this.#wrap(err));
      },
    );
  }

  /** Removes what this run's version superseded, then releases the lock (once). */
  #settle(): Promise<void> {
    return (this.#settling ??= (async () => {
      if (this.#spec.supersede) {
        // Removing earlier runs' files only under the lock: after a takeover they may be the newer run's.
        await this.#assertHeld()
          .then(() => this.#spec.supersede!(this.#parts.locations))
          .catch((err: unknown) => this.#cleanupWarning(err instanceof Error ? err : new Error(String(err))));
      }
      await this.#release();
      // What the clean-up reopened (the S3 client) is released again.
      if (this.closed) this.#spec.dispose?.();
    })());
  }

  /** The fence of this sink's commit points: the run's lock and the dataset's (core/lock.ts, Fencing). */
  #assertHeld(): Promise<void> {
    return fences(this.#spec.ctx.fence, this.#spec.lock?.()).assertHeld();
  }

  /** Finished and held, not yet settled or revoked: the lock and the superseded files wait for the tee. */
  #awaitingTee(): boolean {
    return this.#finished && !!this.#hold && !this.#hold.settled && this.#settling === undefined;
  }

  override _construct(callback: (error?: Error | null) => void): void {
    const prepare = this.#spec.prepare;
    if (!prepare) {
      this.#settlePrepared();
      return callback();
    }
    prepare.call(this.#spec).then(
      () => {
        this.#settlePrepared();
        callback();
      },
      (err: unknown) => {
        const wrapped = this.#wrap(err);
        this.#settlePrepared(wrapped);
        callback(wrapped);
      },
    );
  }

  /** Resolves once `prepare` ran (dataset lock taken, stale temps removed); rejects with what failed it. */
  prepared(): Promise<void> {
    return this.#prepared;
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#spec.ctx.signal.removeEventListener('abort', this.#onAbort);
    this.#destroying = true;
    const reason =
      error ??
      new SinkError(`${this.#spec.sinkType} sink was destroyed before it finished; its output was discarded`, {
        code: 'sink.aborted',
      });
    this.#hold?.fail(reason);
    const release = () => this.#release();
    if (this.#finished) {
      // Destroyed after finishing (autoDestroy): a held sink keeps its lock until the tee settles or revokes it.
      // Stopped while it settled alone: the settle finishes (the outputs stand), then the lock goes.
      const settled = this.#settling?.catch(() => {}) ?? Promise.resolve();
      (this.#awaitingTee() && !error ? Promise.resolve() : settled.then(release)).finally(() => {
        this.#spec.dispose?.();
        callback(error);
      });
      return;
    }
    (async () => {
      await this.#spec.format.abort(reason).catch(() => {});
      // Held back after its side outputs (dead letters) were committed: those go too.
      if (this.#formatClosed)
        await this.#spec.format.revoke?.().catch((err: unknown) => this.#cleanupWarning(err as Error));
      const failures = await this.#parts.abort(reason);
      for (const failure of failures) this.#cleanupWarning(failure);
      this.#committed.length = 0;
      // A manifest being written when the stop came is removed by `_final` itself, with the client still open.
      await this.#writingExtras?.catch(() => {});
      await release();
    })().finally(() => {
      this.#spec.dispose?.();
      callback(error);
    });
  }

  /**
   * Removes what this sink committed, after it finished, because a sibling sink of the run
   * failed later (the tee calls it): side objects first (the S3 manifest, so readers stop
   * trusting the objects it lists), then the data outputs (S3 objects deleted, files removed).
   * What cannot be removed becomes a `sink.cleanup` warning naming it.
   */
  async revoke(): Promise<void> {
    this.#revoked = true;
    const committed = this.#committed.splice(0);
    const remove = (c: CommittedOutput) =>
      (c.revoke ? c.revoke() : (c.destination?.revoke?.() ?? Promise.resolve())).catch((err: unknown) =>
        this.#cleanupWarning(err instanceof Error ? err : new Error(String(err))),
      );
    await Promise.all(committed.filter((c) => !c.destination).map(remove));
    await Promise.all(committed.filter((c) => c.destination).map(remove));
    await this.#spec.format
      .revoke?.()
      .catch((err: unknown) => this.#cleanupWarning(err instanceof Error ? err : new Error(String(err))));
    // Nothing was superseded yet (that waits for the settle), so the earlier version is whole again.
    this.#settling ??= Promise.resolve();
    await this.#release();
    // What the removal reopened (the S3 client) is released again.
    this.#spec.dispose?.();
  }

  #release(): Promise<void> {
    return (this.#releasing ??= (this.#spec.release?.() ?? Promise.resolve()).catch((err: unknown) =>
      this.#cleanupWarning(err instanceof Error ? err : new Error(String(err))),
    ));
  }

  #cleanupWarning(failure: Error): void {
    this.#spec.ctx.events.emit('warning', {
      code: 'sink.cleanup',
      message: `${this.#spec.sinkType} sink could not remove a partial output: ${failure.message}`,
    });
  }

  #wrap(err: unknown): Error {
    if (err instanceof CatalogStreamsError) return err;
    const message = err instanceof Error ? err.message : String(err);
    return new SinkError(`${this.#spec.sinkType} sink failed: ${message}`, { cause: err });
  }
}
