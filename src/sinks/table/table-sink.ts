// The `table` sink: the catalog as a table with history, merged in flat memory and published through
// _table.json (why: ARCHITECTURE.md, "The table sink"; the contract: README "Snapshots and change history").
// This file is the stream; its options, columns, delete check, merge, files (parts, merge state) and
// the lifecycle every publishing sink shares (shared/publishing-sink.ts) are the modules beside it.
import { AbortedError, SinkError } from '../../errors.js';
import type { OutputRecord } from '../../events.js';
import { RunLock } from '../../core/lock.js';
import type { PartialStageContext } from '../../core/default-context.js';
import { defineStage, type SinkStream, type StageContext } from '../../core/stage.js';
import { stageFactory } from '../../core/stage-factory.js';
import { isPlainObject } from '../../values.js';
import { PublishingSink } from '../shared/publishing-sink.js';
import { RecordShaper, type ColumnSchema } from '../shared/column-schema.js';
import { checkCompression } from '../parquet/parquet-encoder.js';
import type { TableStore } from './table-store.js';
import type { PreviousVersion, TableLayout, TableMode } from './table-layout.js';
import {
  tableSinkOptions,
  withTimestamps,
  type ResolvedConfig,
  type TableSinkConfig,
  type TableSinkOptions,
} from './table-options.js';
import { checkPreviousColumns, ignoredColumns, recordShaper, tableColumns } from './table-columns.js';
import { openTableLocation } from './table-location.js';
import { isKey, keyError, keyOf, keyPaths, sharedKeyCheck, type SharedKeys } from './table-key.js';
import { StateWriter } from './merge-state.js';
import { refuseDeletes, reportCheck, type DeleteCheck } from './delete-check.js';
import { mergeTable, type MergeOutputs, type MergeResult } from './table-merge.js';
import { TableParts } from './table-parts.js';
import { TableLineage } from './table-lineage.js';
import { TableInputs } from './table-inputs.js';
import { TablePublication } from './table-publication.js';

export { TABLE_MANIFEST, type TableFile, type TableManifest, type TableVersion } from './hive-layout.js';
export { tableSinkOptions, type TableSinkConfig, type TableSinkOptions } from './table-options.js';

/** A table sink another sink feeds in-process (the media mirror's `table:` option). */
export interface TableFeed {
  /**
   * The records are the whole table each run (the media mirror's state), and the run is full: a key
   * they miss is a delete decided by the feeder, so no key is looked up by id and no share of
   * deletes is refused.
   */
  complete: boolean;
}

/** Interval of the merge's progress events (table.merge). */
const MERGE_PROGRESS_MS = 15_000;

export class TableSink extends PublishingSink {
  readonly #config: ResolvedConfig;
  readonly #store: TableStore;
  readonly #layout: TableLayout;
  readonly #keySteps: string[][];
  /** With `shard`: whether the key has `region`, whose value must then be the shard. */
  readonly #shardByRegion: boolean;
  readonly #schema: ColumnSchema;
  readonly #shaper: RecordShaper;
  readonly #previousShaper: RecordShaper;
  readonly #ignored: number[];
  readonly #lineage: TableLineage;
  #lock: RunLock | undefined;
  readonly #inputs: TableInputs;
  #state: StateWriter | undefined;
  #progressAt = performance.now();
  #previous: PreviousVersion | undefined;
  readonly #publication: TablePublication;
  readonly #complete: boolean;

  constructor(options: TableSinkConfig, ctx: StageContext, feed?: TableFeed) {
    const config = withTimestamps(options);
    // Checked before the Writable exists: its _construct (which takes the lock) must not run for a sink that fails here.
    checkCompression(config.compression);
    const schema = tableColumns(config, ctx);
    const ignored = ignoredColumns(config, schema);
    const { store, layout } = openTableLocation(config, ctx);
    super('table', ctx);
    this.#config = config;
    this.#complete = feed?.complete ?? false;
    this.#store = store;
    this.#layout = layout;
    this.#keySteps = keyPaths(config.key);
    this.#shardByRegion = this.#keySteps.some((steps) => steps.join('.') === 'region');
    this.#schema = schema;
    // The incoming records' shaper warns of fields it puts in _extra; the previous records' is silent.
    this.#shaper = recordShaper(schema, ctx.events);
    this.#previousShaper = new RecordShaper(schema);
    this.#ignored = ignored;
    this.#lineage = new TableLineage(schema, ctx.run);
    this.#inputs = new TableInputs({
      config,
      store,
      ctx,
      checkStopped: () => this.#checkStopped(),
      progress: (what, detail) => this.#progress(what, detail),
    });
    this.#publication = new TablePublication({
      store,
      layout,
      ctx,
      fence: () => this.fence(this.#lock),
      stopped: () => this.destroyed,
      cleanupWarning: (failure) => this.cleanupWarning(failure),
    });
    this.listenForAbort();
  }

  get outputs(): readonly OutputRecord[] {
    return this.#publication.outputs;
  }

  /** This run's version is the table's and stays so: past its commit point, not taken back. */
  get published(): boolean {
    return this.#publication.published;
  }

  protected get discarded(): string {
    return 'nothing was published';
  }

  override _construct(callback: (error?: Error | null) => void): void {
    this.#open().then(
      () => callback(),
      (err: unknown) => callback(this.wrap(err)),
    );
  }

  async #open(): Promise<void> {
    const { ctx } = this;
    // One run publishes into a table at a time: a second would merge into the same previous
    // version and its _table.json would drop the first one's.
    this.#lock = await RunLock.acquire(
      this.#store.lockBackend(),
      { runId: ctx.run.id, pipeline: ctx.run.name },
      { what: `table ${this.#where}`, code: 'publish.locked', onLost: (err) => this.destroy(err) },
    );
    const where = { commitPoint: this.#layout.commitPoint, location: this.#where, events: ctx.events };
    this.#previous = await this.#publication.open((previous) =>
      checkPreviousColumns(previous, this.#schema, this.#config, where),
    );
    await this.#inputs.open();
  }

  override _write(record: unknown, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (!isPlainObject(record)) {
      callback(
        new SinkError(`table sink expects plain object records, received ${record === null ? 'null' : typeof record}`, {
          code: 'sink.record',
        }),
      );
      return;
    }
    const key = keyOf(record, this.#keySteps);
    if (!isKey(key)) return callback(keyError(`record #${this.#inputs.count + 1}`, this.#config.key, key));
    const shard = this.#config.shard;
    // A shard keyed by region holds its region's rows only: another's would be in two shards' files.
    if (shard !== undefined && this.#shardByRegion && record.region !== shard)
      return callback(
        new SinkError(
          `table: record #${this.#inputs.count + 1} is of region ${JSON.stringify(record.region)}, this run writes shard ${shard} of a table keyed by region; set shard: to the region this process reads (one process per region)`,
          { code: 'iceberg.shard_conflict' },
        ),
      );
    this.#inputs.add(key, record).then(
      () => callback(),
      (err: unknown) => callback(this.wrap(err)),
    );
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.finalizeWith(() => this.#finalize(), callback);
  }

  async #finalize(): Promise<void> {
    const { ctx } = this;
    const previous = this.#previous;
    const mode = !previous ? 'first' : ctx.mode.incremental && !this.#complete ? 'incremental' : 'full';
    // Before any output is staged: the candidates' lookups are requests, which may take a while.
    const check = mode === 'full' && !this.#complete ? await this.#inputs.checkDeletes(previous!.state) : undefined;
    const parts = new TableParts({
      // A full refresh writes every row again and drops the deletes (docs/iceberg.md, Costs); a
      // full read (no cursor, fullReadEvery) writes its changes and deletes as any other run.
      previousDelta: ctx.mode.fullRefresh ? undefined : previous?.delta,
      config: this.#config,
      schema: this.#schema,
      layout: this.#layout,
      run: ctx.run,
      first: mode === 'first',
      lineage: this.#lineage,
      stage: (rel) => {
        this.#checkStopped();
        return this.#publication.stage(rel);
      },
    });
    const stateRel = `_table/state-${ctx.run.id}.v8.gz`;
    const stateFile = await this.#publication.stage(stateRel);
    const state = (this.#state = new StateWriter(stateFile));
    const shared = sharedKeyCheck(this.#config.key, this.#where, ctx.events);
    const result = await this.#merge(mode, check, shared, {
      current: (row, origin) => parts.current(row, origin),
      change: (row, kind) => parts.change(row, kind),
      state: (body) => state.write(body),
    });
    if (check) reportCheck(ctx.events, this.#where, check, result);
    if (mode === 'full' && !this.#complete)
      refuseDeletes(result, check, { ...this.#config.deletes, allow: this.ctx.mode.allowDeletes, where: this.#where });
    await parts.end(this.#layout.positionDeletes ? `_table/positions-${ctx.run.id}.bin.gz` : undefined);
    await state.end();
    await this.#publication.finishFiles();
    await this.waitForPublish();
    this.#checkStopped();
    await this.#publication.publish(
      () => ({
        runId: ctx.run.id,
        runName: ctx.run.name,
        date: ctx.run.startedAt.toISOString().slice(0, 10),
        mode,
        startedAt: ctx.run.startedAt,
        schema: this.#schema,
        rows: result.rows,
        counts: result.counts,
        ...(shared.count() > 0 ? { sharedKeys: shared.count() } : {}),
        snapshot: parts.snapshotEntries(),
        currentFiles: parts.currentFiles(),
        changes: parts.changeEntries(),
        state: stateRel,
      }),
      stateFile,
    );
    // Held: a sibling may still fail and revoke this version to the earlier `_table.json`, whose
    // files must then be there; the tee settles every sink once all published.
    await this.settleIfAlone();
  }

  /** The merge (table-merge.ts) of the previous state and this run's records into `out`. */
  #merge(mode: TableMode, check: DeleteCheck | undefined, shared: SharedKeys, out: MergeOutputs): Promise<MergeResult> {
    const previous = this.#inputs.previous(this.#previous?.state);
    return mergeTable(previous, this.#inputs.incoming(shared.onReplaced, check), out, {
      mode,
      shaper: this.#shaper,
      previousShaper: this.#previousShaper,
      ignored: this.#ignored,
      lineage: this.#lineage,
      // A candidate the check found invalid now exists: its last valid row stays.
      keptInvalid: (p) =>
        check?.invalid.has((this.#config.key === 'id' ? p.key : p.record.id) as string | number) ?? false,
      onKey: (keys, rows, counts) => {
        this.#checkStopped();
        if (keys % 1024 === 0) this.#progress(`merging: ${keys} keys`, { keys, rows, ...counts });
      },
    });
  }

  protected supersede(): Promise<void> {
    return this.#publication.settle();
  }

  protected async releaseLock(): Promise<void> {
    const lock = this.#lock;
    this.#lock = undefined;
    await lock?.release();
  }

  protected override releaseWarning(failure: Error): void {
    this.ctx.events.emit('warning', {
      code: 'sink.unlock',
      message: `table sink could not remove its lock: ${failure.message}`,
    });
  }

  protected async dispose(): Promise<void> {
    await this.#store.objects.close();
    await this.#layout.close();
  }

  protected takeBack(): Promise<void> {
    return this.#publication.revoke();
  }

  protected async stop(error: Error | null): Promise<void> {
    // Destroyed after publishing (autoDestroy) while held: the lock waits for the tee's settle or revoke.
    const awaitingTee = this.awaitingTee(this.#publication.landed);
    // Destroyed before `_final` finished (a stop, a failure, a sibling's): not published.
    const stopped = error !== null || !this.writableFinished;
    await this.#publication.stop(stopped, this.settling);
    this.#state?.destroy();
    await this.#inputs.close();
    if (!awaitingTee || stopped) await this.release();
    await this.dispose();
  }

  /**
   * An info event at most every MERGE_PROGRESS_MS while the merge works: the run's stall watchdog
   * counts them as progress (a merge of a million keys runs for minutes after the last record and
   * before the first output), and the log shows how far it is.
   */
  #progress(what: string, detail: Record<string, number>): void {
    const now = performance.now();
    if (now - this.#progressAt < MERGE_PROGRESS_MS) return;
    this.#progressAt = now;
    this.ctx.events.emit('info', { code: 'table.merge', message: `table ${this.#where}: ${what}`, ...detail });
  }

  #checkStopped(): void {
    if (this.destroyed) throw new AbortedError('the table sink was stopped; nothing was published');
  }

  get #where(): string {
    return this.#store.location('');
  }
}

export const tableSinkStage = defineStage({
  kind: 'sink',
  type: 'table',
  description:
    'Keeps the catalog as a table with history: per run a full snapshot (one row per key) and the change rows (insert/update/delete), as Parquet folders with _table.json or as two Iceberg tables (format: iceberg), locally or on S3; full runs infer deletes',
  options: tableSinkOptions,
  create: (options, ctx): SinkStream => new TableSink(options, ctx),
});

/** The table sink for code: `await pipeline(source, tableSink({path: 'out/lake/products'}, ctx))`. */
export const tableSink: (options: TableSinkOptions, ctx?: PartialStageContext) => SinkStream =
  stageFactory(tableSinkStage);
