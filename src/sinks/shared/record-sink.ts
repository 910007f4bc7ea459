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
// The hold, settle, revoke and lock release are every publishing sink's (publishing-sink.ts).
import { SinkError } from '../../errors.js';
import type { OutputRecord } from '../../events.js';
import type { Fence } from '../../core/lock.js';
import type { StageContext } from '../../core/stage.js';
import type { ByteDestination } from './byte-destination.js';
import { reportWithheld } from './failed-regions.js';
import { isPlainObject } from '../../values.js';
import type { PartEncoder } from './part-encoder.js';
import type { PathTemplate } from './path-template.js';
import { PublishingSink } from './publishing-sink.js';
import { PartitionedParts, type RotationOptions } from './rotation.js';

export { SINK_HIGH_WATER_MARK } from './publishing-sink.js';

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
  /**
   * The schema (`{hash, columns}`, as describeSchema gives it) that an earlier output of this
   * format at `file` records in its own bytes (a Parquet footer, a CSV header line), to say when
   * this run's columns differ (shared/schema-change.ts); undefined when the file does not tell
   * (another tool's, unreadable, over a size limit). Never throws. Absent when the format records
   * no columns (JSON Lines).
   */
  readPublishedSchema?(file: string): Promise<unknown>;
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
  /**
   * Right before publishing (after the hold): which written locations not to publish, if any (a
   * failed fan-out region's files of a dataset each run replaces: shared/failed-regions.ts). Only
   * for outputs committed at the end (`commitOnClose: false`).
   */
  withhold?(): ((location: string) => boolean) | undefined;
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

export class RecordSink<Item> extends PublishingSink {
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
  #formatClosed = false;
  readonly #prepared: Promise<void>;
  #settlePrepared!: (err?: Error) => void;

  constructor(spec: RecordSinkSpec<Item>) {
    super(spec.sinkType, spec.ctx);
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
    this.listenForAbort();
  }

  /** Every output committed under its final name (files, objects, the manifest), with rows and bytes. */
  get outputs(): readonly OutputRecord[] {
    return this.#committed.map((c) => c.output);
  }

  /** Finished (its manifest written) and not taken back: past its commit point. */
  get published(): boolean {
    return this.#finished && !this.#revoked;
  }

  protected get discarded(): string {
    return 'its output was discarded';
  }

  #writeOne(record: unknown): void | Promise<void> {
    if (!isPlainObject(record)) {
      throw new SinkError(
        `${this.sinkType} sink expects plain object records, received ${record === null ? 'null' : Array.isArray(record) ? 'an array' : typeof record}`,
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
      callback(this.wrap(err));
      return;
    }
    if (pending)
      pending.then(
        () => callback(),
        (err: unknown) => callback(this.wrap(err)),
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
      (err: unknown) => callback(this.wrap(err)),
    );
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.finalizeWith(() => this.#finalize(), callback);
  }

  async #finalize(): Promise<void> {
    const { format } = this.#spec;
    await format.flush(this.#emit);
    if (this.#ordinal === 0 && this.#spec.writeEmpty) await this.#writeEmpty();
    await this.#parts.closeAll();
    await format.close();
    this.#formatClosed = true;
    await this.waitForPublish();
    if (this.#destroying) return;
    // A run that lost its lock (paused past it, another run took over) publishes nothing.
    await this.#assertHeld();
    await this.#withhold();
    await this.#spec.beforePublish?.(this.#parts.locations);
    if (this.#destroying) return;
    // The renames publish a local dataset: checked again after its record was written.
    if (this.#spec.beforePublish) await this.#assertHeld();
    await this.#parts.commitAll();
    if (this.#destroying) return;
    if (this.#spec.afterCommit && !(await this.#commitExtras(this.#spec.afterCommit))) return;
    this.#finished = true;
    // Held: a sibling may still fail and revoke this version, so what it superseded stays until
    // the tee settles every sink. Alone: settled before `finish`, so whoever waits for the sink
    // finds the earlier files gone and the dataset unlocked.
    await this.settleIfAlone();
  }

  /** Drops the parts `withhold` names before they are published, and says so. */
  async #withhold(): Promise<void> {
    const drop = this.#spec.withhold?.();
    if (drop) reportWithheld(this.ctx, this.sinkType, await this.#parts.discard(drop));
  }

  /** No record arrived at a fixed path: an empty output when the format can write one, else a warning. */
  async #writeEmpty(): Promise<void> {
    if (this.#spec.format.canWriteEmpty()) await this.#parts.openEmpty();
    else {
      this.ctx.events.emit('warning', {
        code: 'sink.empty',
        message: `${this.sinkType} sink received no records and has no declared columns, so it wrote no file`,
      });
    }
  }

  /** Writes the side objects (the manifest, the commit point); false when a stop came meanwhile. */
  async #commitExtras(afterCommit: NonNullable<RecordSinkSpec<Item>['afterCommit']>): Promise<boolean> {
    const writing = (async () => {
      // The manifest is the commit point: checked again right before it.
      await this.#assertHeld();
      const written = await afterCommit(this.#committed);
      if (!this.#destroying) return written;
      // Stopped while the manifest was being written: the destroy removed the data
      // objects, so the manifest must not stay behind, listing them.
      await Promise.all(written.map((e) => e.revoke?.().catch((err: unknown) => this.cleanupWarning(err as Error))));
      return undefined;
    })();
    this.#writingExtras = writing;
    const extras = await writing;
    if (!extras) return false;
    for (const extra of extras) {
      this.#committed.push(extra);
      this.ctx.events.emit('output', extra.output);
    }
    return true;
  }

  /** Removes what this run's version superseded (earlier runs' outputs), only under the lock. */
  protected async supersede(): Promise<void> {
    const { supersede } = this.#spec;
    if (!supersede) return;
    // Removing earlier runs' files only under the lock: after a takeover they may be the newer run's.
    await this.#assertHeld()
      .then(() => supersede.call(this.#spec, this.#parts.locations))
      .catch((err: unknown) => this.cleanupWarning(err instanceof Error ? err : new Error(String(err))));
  }

  /** The fence of this sink's commit points: the run's lock and the dataset's (core/lock.ts, Fencing). */
  #assertHeld(): Promise<void> {
    return this.fence(this.#spec.lock?.()).assertHeld();
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
        const wrapped = this.wrap(err);
        this.#settlePrepared(wrapped);
        callback(wrapped);
      },
    );
  }

  /** Resolves once `prepare` ran (dataset lock taken, stale temps removed); rejects with what failed it. */
  prepared(): Promise<void> {
    return this.#prepared;
  }

  protected async stop(error: Error | null, reason: Error): Promise<void> {
    this.#destroying = true;
    try {
      if (this.#finished) {
        // Destroyed after finishing (autoDestroy): a held sink keeps its lock until the tee settles or revokes it.
        // Stopped while it settled alone: the settle finishes (the outputs stand), then the lock goes.
        const settled = this.settling?.catch(() => {}) ?? Promise.resolve();
        if (!(this.awaitingTee(true) && !error)) await settled.then(() => this.release());
        return;
      }
      await this.#spec.format.abort(reason).catch(() => {});
      // Held back after its side outputs (dead letters) were committed: those go too.
      if (this.#formatClosed)
        await this.#spec.format.revoke?.().catch((err: unknown) => this.cleanupWarning(err as Error));
      const failures = await this.#parts.abort(reason);
      for (const failure of failures) this.cleanupWarning(failure);
      this.#committed.length = 0;
      // A manifest being written when the stop came is removed by `_final` itself, with the client still open.
      await this.#writingExtras?.catch(() => {});
      await this.release();
    } finally {
      this.#spec.dispose?.();
    }
  }

  /**
   * Removes what this sink committed, after it finished, because a sibling sink of the run
   * failed later (the tee calls it): side objects first (the S3 manifest, so readers stop
   * trusting the objects it lists), then the data outputs (S3 objects deleted, files removed).
   * What cannot be removed becomes a `sink.cleanup` warning naming it.
   */
  protected async takeBack(): Promise<void> {
    this.#revoked = true;
    const committed = this.#committed.splice(0);
    const remove = (c: CommittedOutput) =>
      (c.revoke ? c.revoke() : (c.destination?.revoke?.() ?? Promise.resolve())).catch((err: unknown) =>
        this.cleanupWarning(err instanceof Error ? err : new Error(String(err))),
      );
    await Promise.all(committed.filter((c) => !c.destination).map(remove));
    await Promise.all(committed.filter((c) => c.destination).map(remove));
    await this.#spec.format
      .revoke?.()
      .catch((err: unknown) => this.cleanupWarning(err instanceof Error ? err : new Error(String(err))));
  }

  protected async releaseLock(): Promise<void> {
    await this.#spec.release?.();
  }

  protected async dispose(): Promise<void> {
    this.#spec.dispose?.();
  }
}
