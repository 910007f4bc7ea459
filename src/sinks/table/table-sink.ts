// The `table` sink: the catalog as a table with history, merged in flat memory and published
// through _table.json. Its layout, its merge and why it is built this way: ARCHITECTURE.md,
// "The table sink"; the user's contract: README "Snapshots and change history".
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import { deserialize, serialize } from 'node:v8';
import { createGunzip, createGzip } from 'node:zlib';
import { z } from 'zod';
import { AbortedError, CatalogStreamsError, ConfigError, DataError, SinkError } from '../../errors.js';
import type { OutputRecord } from '../../events.js';
import type { WithOptionDocs } from '../../generated/stage-option-docs.js';
import { fences, RunLock, type Fence } from '../../core/lock.js';
import type { PartialStageContext } from '../../core/default-context.js';
import {
  defineStage,
  type HeldPublication,
  type RecordLookup,
  type SinkStream,
  type StageContext,
} from '../../core/stage.js';
import { PublicationHold } from '../shared/publication.js';
import { stageFactory } from '../../core/stage-factory.js';
import { isPlainObject } from '../../values.js';
import { EXTRA_COLUMN, RecordShaper, type ColumnSchema } from '../shared/column-schema.js';
import { columnNamer, snakeCase } from '../shared/column-names.js';
import { byteSize } from '../shared/option-schemas.js';
import {
  columnSchemaFor,
  parquetFormatOptions,
  SCHEMA_HASH_METADATA_KEY,
  SCHEMA_METADATA_KEY,
} from '../parquet/parquet-encoding.js';
import {
  checkCompression,
  ChunkCopyEncoder,
  CompressionRatio,
  ParquetEncoder,
  type ParquetColumn,
  type ParquetRow,
  type RowGroupListener,
} from '../parquet/parquet-encoder.js';
import { createS3Client } from '../../storage/s3-client.js';
import { sinkRecordSchema } from '../../core/zod-column-hints.js';
import {
  compareKeys,
  ExternalSort,
  frameBody,
  keyOfBody,
  mergeSorted,
  FrameLimitError,
  readFrameBodies,
  type Key,
} from './sorted-records.js';
import { LocalObjectStore } from '../../storage/object-store.js';
import { S3ObjectStore } from '../../storage/s3-object-store.js';
import { isCommitPoint, TableStore, type StagedFile } from './table-store.js';
import { HiveLayout, TABLE_MANIFEST } from './hive-layout.js';
import { IcebergLayout } from './iceberg-layout.js';
import { icebergCatalog, icebergCatalogOption } from './iceberg-catalog-option.js';
import type { ObjectStore } from '../../storage/object-store.js';
import type { NewVersion, PreviousVersion, PublishedFile, TableLayout, TableMode } from './table-layout.js';
import { TableLineage, type StoredLineage } from './table-lineage.js';

export { TABLE_MANIFEST, type TableFile, type TableManifest, type TableVersion } from './hive-layout.js';

/**
 * Row-group budget of the snapshot and changes files: half the Parquet sinks' default. What the
 * merge keeps alive is mostly the open row group, and V8 lets the heap grow to about four times
 * what survives a collection; 8 MiB groups make files ~7 % larger than 16 MiB ones (more
 * dictionary pages and chunk headers).
 */
export const TABLE_ROW_GROUP_BYTES = 8 * 1024 * 1024;
/** Interval of the merge's progress events (table.merge). */
const MERGE_PROGRESS_MS = 15_000;

export const tableSinkOptions = z.strictObject({
  path: z
    .string()
    .min(1)
    .describe(
      "The table's folder (relative to the pipeline file's folder) or s3://bucket/prefix; snapshot/, changes/ and _table.json (format: hive) or the Iceberg tables current/ and changes/ (format: iceberg) go under it",
    ),
  format: z
    .enum(['hive', 'iceberg'])
    .default('hive')
    .describe(
      'hive: snapshot/ and changes/ folders of Parquet by dt= and _table.json, the commit point; iceberg: two Iceberg format-version 2 tables, current/ (one row per key, a snapshot per run) and changes/ (append-only change rows), that Athena, Trino, Spark, Snowflake, BigQuery, DuckDB and S3 Tables open',
    ),
  keepSnapshots: z
    .number()
    .int()
    .min(1)
    .default(30)
    .describe(
      'format: iceberg: the snapshots each table keeps (time travel reaches back this many runs), plus the one before the newest run until the next run commits (what a repair or a rollback needs); files that only older snapshots reference are removed',
    ),
  catalog: icebergCatalogOption.optional(),
  key: z
    .string()
    .min(1)
    .default('id')
    .describe(
      'The field (dotted path) that identifies a record; one snapshot row per key. Keep id for products: a code (eanGtin14) can be on several products, and records of another id sharing a key are warned about (table.shared_key) and counted',
    ),
  deletes: z
    .strictObject({
      maxRatio: z
        .number()
        .min(0)
        .max(1)
        .default(0.05)
        .describe(
          'Full runs: refuse (exit 1, nothing published) to delete more than this share of the previous snapshot (counting only keys the API no longer returns), unless run with --allow-deletes',
        ),
    })
    .default({ maxRatio: 0.05 })
    .describe(
      'Deletes inferred by full runs: keys of the previous snapshot missing from the extract that the API, asked by id, no longer returns',
    ),
  ignoreFields: z
    .array(z.string().min(1))
    .default([])
    .describe(
      'Columns (as written, e.g. meta_updatedAt, or meta_updated_at with columnNames: snake_case) whose change alone is not a change: the snapshot keeps the earlier row',
    ),
  maxRows: z
    .number()
    .int()
    .positive()
    .default(1_000_000)
    .describe('Rows per snapshot or changes file; past it the next part-NNNNN begins'),
  sortBufferBytes: byteSize()
    .default(32 * 1024 * 1024)
    .describe(
      'Incoming records held (serialized) before a sorted run is spilled to the temp folder; bounds the merge memory',
    ),
  ...parquetFormatOptions,
  timestamps: z
    .enum(['millis', 'micros', 'raw'])
    .optional()
    .describe(
      'Timestamp columns: TIMESTAMP (UTC) in millisecond or microsecond precision, or raw: keep the integers as given (INT64); default millis, and micros with format: iceberg (Iceberg timestamps are microseconds)',
    ),
  rowGroupBytes: byteSize()
    .default(TABLE_ROW_GROUP_BYTES)
    .describe(
      'A row group is written once its values take about this much memory (number or "8MiB"); default 8 MiB, half a Parquet sink\'s: the merge\'s memory is mostly its open row groups',
    ),
  endpoint: z.url().optional().describe('s3:// paths: S3-compatible endpoint URL; default: env S3_ENDPOINT, else AWS'),
  region: z
    .string()
    .min(1)
    .optional()
    .describe('s3:// paths: region; default: the AWS SDK chain, or us-east-1 with a custom endpoint'),
  forcePathStyle: z.boolean().optional().describe('s3:// paths: path-style URLs; default: true with a custom endpoint'),
  checksums: z
    .enum(['when-supported', 'when-required'])
    .optional()
    .describe('s3:// paths: checksum mode; default: when-required with a custom endpoint'),
  maxAttempts: z.number().int().min(1).max(10).default(3).describe('s3:// paths: attempts per S3 request'),
});

export type TableSinkOptions = WithOptionDocs<'table', z.input<typeof tableSinkOptions>>;
export type TableSinkConfig = z.output<typeof tableSinkOptions>;

type Mode = TableMode;

/** Splits `s3://bucket/prefix` (prefix ends with `/` unless empty); undefined for a local path. */
function s3Path(p: string): { bucket: string; prefix: string } | undefined {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(p);
  if (!m) return undefined;
  const prefix = m[2]!.replace(/\/+$/, '');
  return { bucket: m[1]!, prefix: prefix ? `${prefix}/` : '' };
}

function keyOf(record: Record<string, unknown>, steps: readonly string[]): unknown {
  let value: unknown = record;
  for (const step of steps) value = isPlainObject(value) ? value[step] : undefined;
  return value;
}

/** Rotating Parquet parts under one folder, named with the run id. */
class ParquetParts {
  readonly files: Array<{ staged: StagedFile; encoder: ParquetEncoder }> = [];
  #current: { staged: StagedFile; encoder: ParquetEncoder } | undefined;
  readonly #open: (part: number) => Promise<{ staged: StagedFile; encoder: ParquetEncoder }>;
  readonly #maxRows: number;

  constructor(open: (part: number) => Promise<{ staged: StagedFile; encoder: ParquetEncoder }>, maxRows: number) {
    this.#open = open;
    this.#maxRows = maxRows;
  }

  async write(row: ParquetRow): Promise<void> {
    if (!this.#current || this.#current.encoder.rows >= this.#maxRows) {
      if (this.#current) await this.#current.encoder.end();
      this.#current = await this.#open(this.files.length);
      this.files.push(this.#current);
    }
    const pending = this.#current.encoder.write(row);
    if (pending) await pending;
  }

  /** Ends the open part; with `atLeastOne`, writes an empty file (its schema) when no row came. */
  async end(atLeastOne: boolean): Promise<void> {
    if (!this.#current && atLeastOne) {
      this.#current = await this.#open(0);
      this.files.push(this.#current);
    }
    await this.#current?.encoder.end();
  }
}

/**
 * The changes files of a first run: every row is an insert, so each changes part is its snapshot
 * part's row groups with `_change`, `_changed_at` and `_run_id` added (ChunkCopyEncoder): the
 * rows are encoded once. A part is opened at its snapshot part's first row group, so an empty
 * snapshot (a run without records) has no changes file, as before.
 */
class FirstRunChanges {
  readonly files: Array<{ staged: StagedFile; encoder: ChunkCopyEncoder }> = [];
  readonly #open: (part: number) => Promise<{ staged: StagedFile; encoder: ChunkCopyEncoder }>;

  constructor(open: (part: number) => Promise<{ staged: StagedFile; encoder: ChunkCopyEncoder }>) {
    this.#open = open;
  }

  /** What the snapshot part numbered `part` tells of its row groups. */
  listener(part: number): RowGroupListener {
    let current: { staged: StagedFile; encoder: ChunkCopyEncoder } | undefined;
    return {
      rowGroup: async (group) => {
        if (!current) {
          current = await this.#open(part);
          this.files.push(current);
        }
        await current.encoder.rowGroup(group);
      },
      end: async () => {
        await current?.encoder.end();
      },
    };
  }
}

export class TableSink extends Writable implements SinkStream {
  readonly #config: ResolvedConfig;
  readonly #ctx: StageContext;
  readonly #store: TableStore;
  readonly #keySteps: string[];
  readonly #schema: ColumnSchema;
  readonly #shaper: RecordShaper;
  readonly #previousShaper: RecordShaper;
  readonly #ignored: number[];
  readonly #lineage: TableLineage;
  #tempDir: string | undefined;
  #lock: RunLock | undefined;
  #sort: ExternalSort | undefined;
  /** A local copy of the previous state read from S3, when it is read twice (a full run checking deletes). */
  #stateCopy: string | undefined;
  #state: StateWriter | undefined;
  #progressAt = performance.now();
  readonly #layout: TableLayout;
  #previous: PreviousVersion | undefined;
  readonly #staged: StagedFile[] = [];
  /** The data files are under their final names (this run's, removed again unless the version stays). */
  #filesCommitted = false;
  /** The layout's commit, once started: a stop while it runs waits for it, then takes it back. */
  #publication: Promise<PublishedFile[]> | undefined;
  /** The commit point passed: readers see this run's version (until a revoke takes it back). */
  #landed = false;
  #revoked = false;
  readonly #outputs: OutputRecord[] = [];
  readonly #onAbort: () => void;
  #hold: PublicationHold | undefined;
  #settling: Promise<void> | undefined;

  constructor(options: TableSinkConfig, ctx: StageContext) {
    const config = withTimestamps(options);
    // Checked before the Writable exists: its _construct (which takes the lock) must not run for a sink that fails here.
    checkCompression(config.compression);
    const schema = tableColumns(config, ctx);
    const names = schema.columns.map((c) => c.name);
    const rename = columnNamer(config.columnNames);
    // A column as written, or its record name (meta_updatedAt) under columnNames: snake_case.
    const ignored = config.ignoreFields.map((f) => {
      const i = names.includes(f) ? names.indexOf(f) : names.indexOf(rename(f));
      if (i < 0)
        throw new ConfigError(`table: ignoreFields names "${f}", which is not a column; columns: ${names.join(', ')}`, {
          path: 'ignoreFields',
        });
      return i;
    });
    super({ objectMode: true, highWaterMark: 64 });
    this.#config = config;
    this.#ctx = ctx;
    const s3 = s3Path(config.path);
    // The table's root, and for an Iceberg layout each table's root (Iceberg locations are per table).
    const storeAt = (sub: string): ObjectStore =>
      s3
        ? new S3ObjectStore({
            bucket: s3.bucket,
            prefix: `${s3.prefix}${sub ? `${sub}/` : ''}`,
            client: () => createS3Client(config, process.env, 's3-table'),
            feature: 's3-table',
          })
        : // `current/` and `changes/` are the table's folders: a link there is refused like one below them.
          new LocalObjectStore(path.resolve(ctx.baseDir, config.path, sub), {
            checkedFrom: path.resolve(ctx.baseDir, config.path),
          });
    this.#store = new TableStore(storeAt(''));
    this.#layout =
      config.format === 'iceberg'
        ? new IcebergLayout(this.#store, {
            key: config.key,
            keepSnapshots: config.keepSnapshots,
            catalog: icebergCatalog(config, ctx),
            // Their writes (data files aside: staged by the sink) are journaled in the table's root.
            stores: {
              current: this.#store.journaled(storeAt('current'), 'current/'),
              changes: this.#store.journaled(storeAt('changes'), 'changes/'),
            },
          })
        : new HiveLayout(this.#store, config.key);
    this.#keySteps = config.key.split('.');
    this.#schema = schema;
    this.#shaper = new RecordShaper(schema);
    this.#shaper.onNewExtraField = (field, value) => {
      ctx.events.emit('warning', {
        code: 'sink.parquet.extra',
        message: `table: field "${field}" (${typeof value}) is not in the Parquet schema or does not fit its column; kept in the ${EXTRA_COLUMN} JSON column`,
      });
    };
    this.#previousShaper = new RecordShaper(schema);
    this.#ignored = ignored;
    this.#lineage = new TableLineage(schema, ctx.run);
    this.#onAbort = () =>
      this.destroy(new AbortedError('the run was aborted; table sink output discarded', { cause: ctx.signal.reason }));
    if (ctx.signal.aborted) process.nextTick(this.#onAbort);
    else ctx.signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  /**
   * A table keeps one naming: its snapshots are read together (`dt=*`), and a column renamed
   * from one version to the next would read as NULL from the older files. So a `columnNames`
   * that differs from the one the current version was written with fails before anything is read.
   */
  #checkColumnNames(previous: PreviousVersion): void {
    const stored = previous.columnNames;
    if (!stored) return;
    const names = this.#schema.columns.map((c) => c.name);
    const renamed = stored.flatMap((was) => {
      if (names.includes(was)) return [];
      const now = names.find((n) => snakeCase(n) === snakeCase(was));
      return now === undefined ? [] : [`${was} -> ${now}`];
    });
    const wrote = stored.every((n) => snakeCase(n) === n) ? 'snake_case' : 'as-is';
    // Names that differ otherwise (a field the schema renamed) are not a change of naming.
    if (renamed.length === 0 || wrote === this.#config.columnNames) return;
    throw new SinkError(
      `table: ${this.#layout.commitPoint} was written with columnNames: ${wrote}, this sink has columnNames: ${this.#config.columnNames} ` +
        `(${renamed.slice(0, 3).join(', ')}${renamed.length > 3 ? `, and ${renamed.length - 3} more` : ''}); ` +
        `set columnNames: ${wrote} to keep writing this table, or point path at a new folder to start a table with columnNames: ${this.#config.columnNames}`,
      { code: 'table.column_names_changed' },
    );
  }

  get outputs(): readonly OutputRecord[] {
    return this.#outputs;
  }

  /** This run's version is the table's and stays so: past its commit point, not taken back. */
  get published(): boolean {
    return this.#landed && !this.#revoked;
  }

  /** Held by the tee: publishes on its word, and removes what it superseded only once settled (sinks/shared/publication.ts). */
  holdPublication(): HeldPublication {
    this.#hold = new PublicationHold();
    return this.#hold.handle(() => this.#settle());
  }

  override _construct(callback: (error?: Error | null) => void): void {
    (async () => {
      // One run publishes into a table at a time: a second would merge into the same previous
      // version and its _table.json would drop the first one's.
      this.#lock = await RunLock.acquire(
        this.#store.lockBackend(),
        { runId: this.#ctx.run.id, pipeline: this.#ctx.run.name },
        { what: `table ${this.#store.location('')}`, code: 'publish.locked', onLost: (err) => this.destroy(err) },
      );
      // Before anything is written: every file of this run is named in its journal first.
      await this.#store.openJournal(this.#ctx.run.id);
      const { previous, removed, repaired, foreign } = await this.#layout.open();
      if (foreign && foreign.length > 0) this.#reportForeign(foreign);
      if (repaired) this.#ctx.events.emit('info', { code: 'table.repaired', message: `table: ${repaired}` });
      if (previous) this.#checkColumnNames(previous);
      this.#previous = previous;
      if (!previous && this.#ctx.mode.incremental) {
        throw new SinkError(
          `table: ${this.#store.location('')} has no ${this.#layout.name === 'hive' ? TABLE_MANIFEST : `Iceberg version (${this.#layout.commitPoint})`}, but this run is incremental (a state cursor): its snapshot would hold only the records changed since the cursor; ` +
            'run once with --full-refresh to build the table (or point path at the table the state belongs to)',
          { code: 'table.needs_full' },
        );
      }
      if (removed.length > 0) {
        this.#ctx.events.emit('info', {
          code: 'stale_temp_removed',
          message: `removed ${removed.length} file(s) that killed runs left: ${removed.join(', ')}`,
        });
      }
      this.#tempDir = await mkdtemp(path.join(tmpdir(), 'catalog-streams-sort-'));
      this.#sort = new ExternalSort(this.#tempDir, this.#config.sortBufferBytes, (written) =>
        this.#progress(`sorting the received records: ${written} written by merge passes`, { written }),
      );
    })().then(
      () => callback(),
      (err: unknown) => callback(this.#wrap(err)),
    );
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
    if (typeof key !== 'string' && typeof key !== 'number' && typeof key !== 'bigint') {
      callback(
        new DataError(
          `table: record #${this.#sort!.count + 1} has no usable key at "${this.#config.key}" (got ${key === undefined ? 'nothing' : JSON.stringify(key)}); every record needs a string or number key`,
          { code: 'table.key' },
        ),
      );
      return;
    }
    this.#sort!.add(key, record).then(
      () => callback(),
      (err: unknown) => callback(this.#wrap(err)),
    );
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.#finalize().then(
      () => callback(),
      (err: unknown) => {
        const e = this.#wrap(err);
        this.#hold?.fail(e);
        callback(e);
      },
    );
  }

  async #finalize(): Promise<void> {
    const ctx = this.#ctx;
    const runId = ctx.run.id;
    const startedAt = ctx.run.startedAt;
    const date = startedAt.toISOString().slice(0, 10);
    const previous = this.#previous;
    const mode: Mode = !previous ? 'first' : ctx.mode.incremental ? 'incremental' : 'full';
    // Before any output is staged: the candidates' lookups are requests, which may take a while.
    const verification = mode === 'full' ? await this.#checkDeleteCandidates(previous!.state) : undefined;

    // Iceberg has only microsecond timestamps, whatever the record columns keep (timestamps: raw).
    const timestampKind =
      this.#config.timestamps === 'micros' || this.#config.format === 'iceberg'
        ? 'timestamp-micros'
        : 'timestamp-millis';
    const changedAt = BigInt(startedAt.getTime()) * (timestampKind === 'timestamp-micros' ? 1000n : 1n);
    const planned = this.#schema.parquetColumns();
    const extraAt = planned.length - 1;
    const lineage = this.#lineage;
    // With lineage the row's own `_run_id` column is the change's: the run that saw the change.
    const changeTypes = { _change: 'string', _changed_at: timestampKind, _run_id: 'string' } as const;
    const changeValue = (name: keyof typeof changeTypes, change: string) =>
      name === '_change' ? change : name === '_changed_at' ? changedAt : runId;
    const { snapshot: columns, changes: changeColumns } = this.#layout.columns({
      snapshot: planned,
      changes: [
        ...planned.slice(0, extraAt),
        ...lineage.changeColumns().map((name) => ({ name, type: { kind: changeTypes[name] } })),
        planned[extraAt]!,
      ],
    });
    const ratio = new CompressionRatio();
    const encoderOptions = (cols: readonly ParquetColumn[], rowGroupListener?: RowGroupListener) => ({
      rowGroupListener,
      compression: this.#config.compression,
      rowGroupRows: this.#config.rowGroupRows,
      rowGroupBytes: this.#config.rowGroupBytes,
      compressionRatio: ratio,
      metadata: {
        'catalog-streams.run': runId,
        'catalog-streams.name': ctx.run.name,
        [SCHEMA_HASH_METADATA_KEY]: this.#schema.hash,
        [SCHEMA_METADATA_KEY]: JSON.stringify(
          cols === columns ? this.#schema.describe() : changeColumnsDescription(this.#schema, lineage),
        ),
        ...this.#layout.fileMetadata(cols === columns ? 'snapshot' : 'changes'),
      },
    });
    const stage = (folder: 'snapshot' | 'changes', part: number) => {
      this.#checkStopped();
      return this.#stage(this.#layout.dataFile(folder, date, part, runId));
    };
    const copiedChanges =
      mode === 'first'
        ? new FirstRunChanges(async (part) => {
            const staged = await stage('changes', part);
            const constants = lineage
              .changeColumns()
              .map((name, i) => ({ column: changeColumns[extraAt + i]!, value: changeValue(name, 'insert') }));
            return {
              staged,
              encoder: new ChunkCopyEncoder(staged.file, changeColumns, constants, encoderOptions(changeColumns)),
            };
          })
        : undefined;
    const opener = (folder: 'snapshot' | 'changes', cols: readonly ParquetColumn[]) => async (part: number) => {
      const staged = await stage(folder, part);
      const listener = folder === 'snapshot' ? copiedChanges?.listener(part) : undefined;
      return { staged, encoder: new ParquetEncoder(staged.file, cols, encoderOptions(cols, listener)) };
    };
    const snapshot = new ParquetParts(opener('snapshot', columns), this.#config.maxRows);
    const changes = new ParquetParts(opener('changes', changeColumns), this.#config.maxRows);
    const stateRel = `_table/state-${runId}.v8.gz`;
    const stateFile = await this.#stage(stateRel);
    const state = (this.#state = new StateWriter(stateFile));

    const changeRow = (row: ParquetRow, change: string): ParquetRow => {
      const values = row.values.slice(0, extraAt);
      for (const name of lineage.changeColumns()) values.push(changeValue(name, change));
      values.push(row.values[extraAt]);
      return { values, bytes: row.bytes + 48 };
    };
    const compareIgnored = [...this.#ignored, ...lineage.compareIgnored];
    const comparable = (row: ParquetRow): Buffer => {
      if (compareIgnored.length === 0) return serialize(row.values);
      const values = row.values.slice();
      for (const i of compareIgnored) values[i] = null;
      return serialize(values);
    };

    const counts = { inserted: 0, updated: 0, deleted: 0, unchanged: 0 };
    let rows = 0;
    let previousRows = 0;
    const prevIt = (previous ? this.#readState(previous.state) : emptyState())[Symbol.asyncIterator]();
    // The records found by the check join this run's as later arrivals: current versions read after the extract.
    const shared = this.#sharedKeyCheck();
    const nextIt = mergeSorted(this.#sort!.sorted(shared.onReplaced), verification?.found?.sorted())[
      Symbol.asyncIterator
    ]();
    let p = await prevIt.next();
    let n = await nextIt.next();
    let keys = 0;
    /** Keys missing from the extract that the check found: updated or unchanged, not deleted. */
    let kept = 0;
    /** Of those, the ones whose current version a transform rejected as invalid: their previous row stays. */
    let keptInvalid = 0;
    while (!p.done || !n.done) {
      this.#checkStopped();
      if (++keys % 1024 === 0) this.#progress(`merging: ${keys} keys`, { keys, rows, ...counts });
      const order = p.done ? 1 : n.done ? -1 : compareKeys(p.value.key, n.value.next.key);
      if (order < 0) {
        const { body, record } = p.value!;
        previousRows++;
        const row = this.#previousShaper.shape(record);
        // A candidate the check found invalid now exists: its last valid row stays, as in an incremental run.
        const invalidNow = verification?.invalid.has(this.#config.key === 'id' ? p.value.key : record.id) ?? false;
        if (mode === 'incremental' || invalidNow) {
          await snapshot.write(lineage.stamp(row, p.value.lineage));
          await state.write(body);
          rows++;
          counts.unchanged++;
          if (invalidNow) {
            kept++;
            keptInvalid++;
          }
        } else {
          await changes.write(changeRow(row, 'delete'));
          counts.deleted++;
        }
        p = await prevIt.next();
      } else if (order > 0) {
        const next = n.value!.next;
        const row = this.#shaper.shape(next.record);
        await snapshot.write(row);
        // A first run's change rows are its snapshot's (FirstRunChanges).
        if (!copiedChanges) await changes.write(changeRow(row, 'insert'));
        await state.write(lineage.changedBody(next));
        rows++;
        counts.inserted++;
        n = await nextIt.next();
      } else {
        previousRows++;
        const { body, record: before, lineage: last } = p.value!;
        const next = n.value!.next;
        if (n.value!.from === 'b') kept++;
        if (Buffer.compare(TableLineage.recordBody(p.value), next.body) === 0) {
          // The same key and record serialized to the same bytes: the same row, unchanged. Shaped
          // by this run's shaper, which warns of fields it puts in _extra, as for any incoming record.
          await snapshot.write(lineage.stamp(this.#shaper.shape(before), last));
          await state.write(body);
          counts.unchanged++;
        } else {
          const old = this.#previousShaper.shape(before);
          const row = this.#shaper.shape(next.record);
          if (comparable(old).equals(comparable(row))) {
            await snapshot.write(lineage.stamp(old, last));
            // The same row from other bytes (fields in another order, a number or string held in
            // another representation, as a state written by an earlier version holds them). With
            // ignoreFields the earlier record stays (the snapshot keeps its row); without, the
            // records are equal in every column, and the incoming bytes let the next run compare
            // this key as bytes.
            await state.write(this.#ignored.length === 0 ? lineage.keptBody(next, last) : body);
            counts.unchanged++;
          } else {
            await snapshot.write(row);
            await changes.write(changeRow(row, 'update'));
            await state.write(lineage.changedBody(next));
            counts.updated++;
          }
        }
        rows++;
        p = await prevIt.next();
        n = await nextIt.next();
      }
    }
    if (verification) this.#reportCheck(verification, kept, keptInvalid, counts.deleted);
    if (
      mode === 'full' &&
      previousRows > 0 &&
      counts.deleted / previousRows > this.#config.deletes.maxRatio &&
      !ctx.mode.allowDeletes
    ) {
      const share = ((100 * counts.deleted) / previousRows).toFixed(1);
      throw new SinkError(
        `table: this full run would delete ${counts.deleted} of ${previousRows} keys (${share} %) of ${this.#store.location('')}, above deletes.maxRatio ${this.#config.deletes.maxRatio}` +
          `${verification?.endpoint && verification.checked > 0 ? ` (keys missing from the extract that ${verification.endpoint} no longer returns)` : ''}; ` +
          'nothing was published and the state cursor was left as it was. If the deletions are real, run again with --allow-deletes (or raise deletes.maxRatio); ' +
          'if the extract was partial (a narrower filter, a source that stopped early), fix that first',
        { code: 'table.deletes_refused' },
      );
    }
    await snapshot.end(true);
    await changes.end(false);
    await state.end();
    for (const staged of this.#staged) await staged.finish();
    if (this.#hold) await this.#hold.waitForPublish();
    this.#checkStopped();

    // Publication: data files under their final names, then the manifest (the commit point),
    // then what it no longer lists (a same-day rerun's replaced snapshot, the older state).
    // Only while this run holds its locks: a run paused past them publishes nothing.
    await this.#fence().assertHeld();
    this.#filesCommitted = true;
    for (const staged of this.#staged) await staged.commit();
    const fileEntry = (staged: StagedFile, encoder: { rows: number }) => ({
      path: staged.rel,
      rows: encoder.rows,
      bytes: staged.file.bytes,
    });
    const version: NewVersion = {
      runId,
      runName: ctx.run.name,
      date,
      mode,
      startedAt,
      schema: this.#schema,
      rows,
      counts,
      ...(shared.count() > 0 ? { sharedKeys: shared.count() } : {}),
      snapshot: snapshot.files.map((f) => fileEntry(f.staged, f.encoder)),
      changes: (copiedChanges ?? changes).files.map((f) => fileEntry(f.staged, f.encoder)),
      state: stateRel,
    };
    this.#checkStopped();
    this.#publication = this.#layout.publish(version, this.#fence());
    const metadata = await this.#publication;
    this.#landed = true;
    // Stopped while the commit ran: the destroy takes the version back (it waited for this commit).
    this.#checkStopped();
    const sink = 'table';
    const kind = this.#store.kind;
    for (const f of [...version.snapshot, ...version.changes])
      this.#emitOutput({ kind, location: this.#store.location(f.path), rows: f.rows, bytes: f.bytes, sink });
    this.#emitOutput({ kind, location: stateFile.location, rows: 0, bytes: stateFile.file.bytes, sink, role: 'state' });
    for (const m of metadata)
      this.#emitOutput({ kind, location: m.location, rows: 0, bytes: m.bytes ?? 0, sink, role: 'metadata' });
    ctx.events.emit('info', {
      code: 'table.version',
      message: `table ${this.#store.location('')}: ${mode} run ${runId} for ${date}: ${rows} rows; ${counts.inserted} inserted, ${counts.updated} updated, ${counts.deleted} deleted, ${counts.unchanged} unchanged`,
      mode,
      counts,
      rows,
    });
    // Held: a sibling may still fail and revoke this version to the earlier `_table.json`, whose
    // files must then be there; the tee settles every sink once all published.
    if (!this.#hold) await this.#settle();
  }

  /** Removes what the published `_table.json` no longer lists, then releases the lock (once). */
  #settle(): Promise<void> {
    return (this.#settling ??= (async () => {
      const ctx = this.#ctx;
      // A run that lost its lock removes nothing: what its version superseded may be the newer run's now.
      if (await this.#stillHeld('sink.cleanup'))
        await this.#layout.settle((code, message) => ctx.events.emit('warning', { code, message }));
      await this.#release();
      if (this.closed) await this.#closeStores();
    })());
  }

  /** The fence of the table's commit points: the run's lock and the table's (core/lock.ts, Fencing). */
  #fence(): Fence {
    return fences(this.#ctx.fence, this.#lock);
  }

  /** Whether the locks are still held; when not, a warning (`code`) says what was left alone. */
  async #stillHeld(code: 'sink.cleanup' | 'sink.revoke'): Promise<boolean> {
    return this.#fence()
      .assertHeld()
      .then(
        () => true,
        (err: unknown) => {
          this.#ctx.events.emit('warning', {
            code,
            message: `table ${this.#store.location('')}: left as it is (${(err as Error).message})`,
          });
          return false;
        },
      );
  }

  async #closeStores(): Promise<void> {
    await this.#store.objects.close();
    await this.#layout.close();
  }

  async #release(): Promise<void> {
    const lock = this.#lock;
    this.#lock = undefined;
    await lock?.release().catch((err: unknown) =>
      this.#ctx.events.emit('warning', {
        code: 'sink.unlock',
        message: `table sink could not remove its lock: ${(err as Error).message}`,
      }),
    );
  }

  /** Files in the table's folders the table did not write: left as they are, said once per run. */
  #reportForeign(foreign: readonly string[]): void {
    const shown = foreign.slice(0, 10).join(', ');
    this.#ctx.events.emit('info', {
      code: 'table.foreign_files',
      message: `table ${this.#store.location('')}: left ${foreign.length} file(s) no run of this table wrote (no journal of it names them): ${shown}${foreign.length > 10 ? ', ...' : ''}`,
    });
  }

  /** A staged file the destroy will discard; one opened while the sink was being destroyed goes at once. */
  async #stage(rel: string): Promise<StagedFile> {
    const staged = await this.#store.stage(rel);
    if (this.destroyed) {
      await staged.discard();
      this.#checkStopped();
    }
    this.#staged.push(staged);
    return staged;
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
    this.#ctx.events.emit('info', {
      code: 'table.merge',
      message: `table ${this.#store.location('')}: ${what}`,
      ...detail,
    });
  }

  #emitOutput(output: OutputRecord): void {
    this.#outputs.push(output);
    this.#ctx.events.emit('output', output);
  }

  #checkStopped(): void {
    if (this.destroyed) throw new AbortedError('the table sink was stopped; nothing was published');
  }

  /**
   * Keyed by anything but `id`, two records of one key may be two products: one GTIN-14 is on
   * several products in the live catalog (pack-level GTIN-14s, duplicate listings). The snapshot
   * keeps the last, so each record of another id it replaced is counted and the first warned
   * about (`table.shared_key`): keyed by `id`, the default, every product keeps its row.
   */
  #sharedKeyCheck(): { onReplaced?: (earlier: Uint8Array, later: Uint8Array) => void; count: () => number } {
    let count = 0;
    if (this.#config.key === 'id') return { count: () => count };
    const onReplaced = (earlier: Uint8Array, later: Uint8Array) => {
      const [key, a] = deserialize(earlier) as [Key, Record<string, unknown>];
      const b = (deserialize(later) as [Key, Record<string, unknown>])[1];
      if (a.id === undefined || b.id === undefined || a.id === b.id) return;
      if (count++ > 0) return;
      this.#ctx.events.emit('warning', {
        code: 'table.shared_key',
        message: `table ${this.#store.location('')}: records ${JSON.stringify(a.id)} and ${JSON.stringify(b.id)} share the key ${this.#config.key} = ${JSON.stringify(key)}; the snapshot keeps only ${JSON.stringify(b.id)}. A code can belong to several products: key the table by id (the default) to keep every product. Further ones are counted in _table.json (sharedKeys)`,
      });
    };
    return { onReplaced, count: () => count };
  }

  /** The previous version's state file, gunzipped, as frame bodies (`v8.serialize([key, record])`), not decoded. */
  async *#stateBodies(rel: string): AsyncGenerator<Buffer> {
    const gunzip = createGunzip();
    let piping: Promise<void> | undefined;
    try {
      const bytes = this.#stateCopy ? createReadStream(this.#stateCopy) : await this.#store.objects.readStream(rel);
      piping = pipeline(Readable.from(bytes), gunzip);
      piping.catch(() => {});
      yield* readFrameBodies(gunzip);
    } catch (err) {
      gunzip.destroy();
      // A frame over the limit has a code of its own: the file is damaged or planted, not cut short.
      const code = err instanceof FrameLimitError ? err.code : 'table.state';
      throw new SinkError(
        `table: cannot read the previous version's state ${this.#store.location(rel)} (${(err as Error).message}); restore it, or move the table away and start a new one`,
        { code, cause: err },
      );
    }
    await piping;
  }

  /** The previous version's state: each frame's body (copied as it is when the record stays) and what it holds. */
  async *#readState(rel: string): AsyncGenerator<PreviousRecord> {
    for await (const body of this.#stateBodies(rel)) {
      const decoded = deserialize(body) as [Key, Record<string, unknown>, ...unknown[]];
      yield { body, key: decoded[0], record: decoded[1], lineage: TableLineage.read(decoded) };
    }
  }

  /**
   * A full run's delete candidates (keys of the previous state missing from the extract) asked for
   * again by the `id` of their previous record, in lookups of at most 1000 ids (`products.query`:
   * pages of 250, so 1 to 4 requests each). What the API still returns is a current version:
   * it joins this run's records, so the merge writes it as an update or unchanged, not a delete.
   *
   * A first pass over the keys finds the candidates before any row is written; it decodes only
   * the keys, and the records of the candidates. The candidates' ids go to a temp file and the
   * found records to a sort of their own, so many candidates (a narrowed filter, a mass delete)
   * cost disk and requests, not memory.
   */
  async #checkDeleteCandidates(stateRel: string): Promise<DeleteCheck> {
    const lookup: RecordLookup = this.#ctx.recordLookup ?? {
      available: false,
      reason: 'the stage context has no record lookup (ctx.recordLookup, which the runner sets)',
    };
    const invalid = new Set<string | number>();
    if (!lookup.available) return { unavailable: lookup.reason, checked: 0, unverifiable: 0, requests: 0, invalid };
    const dir = this.#tempDir!;
    if (this.#store.kind === 'object') {
      // Read twice: fetched once.
      const copy = path.join(dir, 'previous-state.v8.gz');
      await pipeline(await this.#store.objects.readStream(stateRel), createWriteStream(copy));
      this.#stateCopy = copy;
    }

    const candidatesFile = path.join(dir, 'delete-candidates.v8');
    const out = createWriteStream(candidatesFile);
    const written = new Promise<void>((resolve, reject) => {
      out.once('finish', resolve);
      out.once('error', reject);
    });
    written.catch(() => {});
    let checked = 0;
    let unverifiable = 0;
    const nextIt = this.#sort!.sorted()[Symbol.asyncIterator]();
    try {
      const prevIt = this.#stateBodies(stateRel)[Symbol.asyncIterator]();
      let p = await prevIt.next();
      let n = await nextIt.next();
      let keys = 0;
      while (!p.done) {
        this.#checkStopped();
        if (++keys % 1024 === 0)
          this.#progress(`finding delete candidates: ${keys} keys`, { keys, candidates: checked });
        const key = keyOfBody(p.value);
        const order = n.done ? -1 : compareKeys(key, n.value.key);
        if (order > 0) {
          n = await nextIt.next();
          continue;
        }
        if (order < 0) {
          const id = this.#config.key === 'id' ? key : (deserialize(p.value) as [Key, Record<string, unknown>])[1].id;
          if (typeof id === 'string' || typeof id === 'number') {
            checked++;
            if (!out.write(frameBody(serialize(id)))) await once(out, 'drain');
          } else unverifiable++;
        } else n = await nextIt.next();
        p = await prevIt.next();
      }
    } finally {
      out.end();
      // The extract's keys past the last previous one are not needed: close the sort's run files.
      await nextIt.return(undefined);
    }
    await written;
    if (checked === 0) return { endpoint: lookup.endpoint, checked, unverifiable, requests: 0, invalid };

    const foundDir = path.join(dir, 'found');
    await mkdir(foundDir);
    const found = new ExternalSort(foundDir, this.#config.sortBufferBytes);
    this.#ctx.events.emit('info', {
      code: 'table.deletes_checking',
      message: `table ${this.#store.location('')}: ${checked} key(s) of the previous version are missing from this full run's extract; asking ${lookup.endpoint} whether they still exist`,
      candidates: checked,
    });
    let requests = 0;
    const batch = new Set<string | number>();
    const flush = async () => {
      const ids = [...batch];
      batch.clear();
      try {
        const answer = await lookup.read(ids, (record) => {
          this.#checkStopped();
          const key = keyOf(record, this.#keySteps);
          if (typeof key !== 'string' && typeof key !== 'number' && typeof key !== 'bigint') {
            throw new DataError(
              `table: a record ${lookup.endpoint} returned for a delete candidate (id ${JSON.stringify(record.id)}) has no usable key at "${this.#config.key}" (got ${key === undefined ? 'nothing' : JSON.stringify(key)}); every record needs a string or number key`,
              { code: 'table.key' },
            );
          }
          return found.add(key, record);
        });
        requests += answer.requests;
        for (const id of answer.rejected ?? []) invalid.add(id);
      } catch (err) {
        if (err instanceof AbortedError || (err as Error).name === 'AbortError' || this.#ctx.signal.aborted) throw err;
        // An invalid record with onInvalid: fail fails the run as it would in the extract (a retry does not help).
        if (err instanceof DataError && (err.code === 'table.key' || err.code === 'data.invalid')) throw err;
        const code = err instanceof CatalogStreamsError && err.code ? ` (${err.code})` : '';
        throw new SinkError(
          `table: checking ${checked} delete candidate(s) of ${this.#store.location('')} against ${lookup.endpoint} failed${code}: ${(err as Error).message}; ` +
            'nothing was published and the state cursor was left as it was. Run again: a full run tells a deleted key from one updated while it read only by asking for it',
          { code: 'table.deletes_check_failed', cause: err },
        );
      }
    };
    for await (const body of readFrameBodies(createReadStream(candidatesFile))) {
      batch.add(deserialize(body) as string | number);
      if (batch.size >= lookup.maxIds) await flush();
    }
    if (batch.size > 0) await flush();
    return { endpoint: lookup.endpoint, checked, unverifiable, requests, found, invalid };
  }

  /** What the check did, or why it could not: an info event, and a warning for deletes nobody checked. */
  #reportCheck(check: DeleteCheck, kept: number, invalid: number, deleted: number): void {
    const where = this.#store.location('');
    if (check.unavailable !== undefined) {
      if (deleted > 0)
        this.#ctx.events.emit('warning', {
          code: 'table.deletes_unchecked',
          message: `table ${where}: ${deleted} delete(s) were not checked against the API (${check.unavailable}); a record updated while the run read shows as deleted, and a later run inserts it again`,
        });
      return;
    }
    if (check.unverifiable > 0)
      this.#ctx.events.emit('warning', {
        code: 'table.deletes_unchecked',
        message: `table ${where}: ${check.unverifiable} delete candidate(s) have no string or number \`id\` in their previous record (a transform dropped or renamed it), so they were not checked and are deleted`,
      });
    this.#ctx.events.emit('info', {
      code: 'table.deletes_checked',
      message:
        `table ${where}: ${check.checked} delete candidate(s) checked against ${check.endpoint} (${check.requests} request(s)): ${kept} still exist and stay, ${deleted} deleted` +
        (invalid > 0
          ? `; ${invalid} of those that stay fail validation now and keep their last valid row (the extract rejected their current version)`
          : ''),
      checked: check.checked,
      kept,
      invalid,
      deleted,
      requests: check.requests,
    });
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#ctx.signal.removeEventListener('abort', this.#onAbort);
    const reason =
      error ??
      new SinkError('table sink was destroyed before it finished; nothing was published', { code: 'sink.aborted' });
    this.#hold?.fail(reason);
    // Destroyed after publishing (autoDestroy) while held: the lock waits for the tee's settle or revoke.
    const awaitingTee = this.#landed && !!this.#hold && !this.#hold.settled && this.#settling === undefined;
    // Destroyed before `_final` finished (a stop, a failure, a sibling's): not published.
    const stopped = error !== null || !this.writableFinished;
    (async () => {
      if (stopped) await this.#stopPublication();
      if (!this.#filesCommitted) await this.#discardStaged();
      if (stopped && !this.published) await this.#dropJournal();
      this.#state?.destroy();
      if (this.#tempDir) await rm(this.#tempDir, { recursive: true, force: true });
      if (!awaitingTee || stopped) await this.#release();
      await this.#closeStores();
    })().finally(() => callback(error));
  }

  /**
   * A sibling sink failed after this one published: the earlier `_table.json` comes back (or goes,
   * on a first run) before this run's files are removed, so the manifest never lists a missing file.
   * Nothing it listed was removed yet (that waits for the settle), so the earlier version is whole.
   */
  async revoke(): Promise<void> {
    await this.#takeBack();
    if (this.#revoked) await this.#dropJournal();
    this.#settling ??= Promise.resolve();
    await this.#release();
    await this.#closeStores();
  }

  /**
   * Destroyed by a stop or a failure before the run's commit point. A layout commit under way is
   * waited for (it cannot be interrupted half-way: a REST transaction, or two tables one after the
   * other), and a version that landed is taken back, so the run's outcome ("outputs discarded")
   * is what the table shows. Once this sink settled (alone, past its own commit point) the
   * version stands: the settle is waited for and nothing is undone.
   */
  async #stopPublication(): Promise<void> {
    const landed = await this.#publication?.then(
      () => true,
      () => false,
    );
    if (this.#settling) {
      await this.#settling.catch(() => {});
      return;
    }
    if (landed) this.#landed = true;
    if (this.#landed) await this.#takeBack();
    else if (this.#filesCommitted) await this.#discardStaged();
  }

  /**
   * The earlier version comes back (or none, on a first run), then this run's files go. When the
   * layout cannot restore it, this run's version stays published: its files and outputs stay,
   * and the run's summary lists them.
   */
  async #takeBack(): Promise<void> {
    if (!this.#landed || this.#revoked) return;
    // Restoring the earlier version after a takeover would drop the newer run's.
    if (!(await this.#stillHeld('sink.revoke'))) return;
    const restored = await this.#layout.revoke((code, message) => this.#ctx.events.emit('warning', { code, message }));
    if (!restored) {
      this.#ctx.events.emit('warning', {
        code: 'sink.revoke',
        message: `table ${this.#store.location('')}: run ${this.#ctx.run.id} stays published (${this.#layout.commitPoint} could not be restored to the earlier version); its files are kept and listed as the run's outputs`,
      });
      return;
    }
    this.#revoked = true;
    await this.#discardStaged();
    this.#outputs.length = 0;
  }

  /** A run that published nothing and removed its files leaves no journal either (else the next run sweeps it). */
  async #dropJournal(): Promise<void> {
    await this.#store.journal?.dropIfGone(isCommitPoint).catch((err: unknown) => this.#cleanupWarning(err));
  }

  async #discardStaged(): Promise<void> {
    for (const staged of this.#staged) await staged.discard().catch((err: unknown) => this.#cleanupWarning(err));
  }

  #cleanupWarning(err: unknown): void {
    this.#ctx.events.emit('warning', {
      code: 'sink.cleanup',
      message: `table sink could not remove a partial output: ${(err as Error).message}`,
    });
  }

  #wrap(err: unknown): Error {
    if (err instanceof CatalogStreamsError) return err;
    return new SinkError(`table sink failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

type ResolvedConfig = TableSinkConfig & { timestamps: 'millis' | 'micros' | 'raw' };

/** The timestamps option resolved: Iceberg has only microsecond timestamps. */
function withTimestamps(config: TableSinkConfig): ResolvedConfig {
  if (config.catalog && config.format !== 'iceberg') {
    throw new ConfigError('table: catalog: is an option of format: iceberg; add format: iceberg or remove catalog:', {
      path: 'catalog',
    });
  }
  if (config.format === 'iceberg' && config.timestamps === 'millis') {
    throw new ConfigError(
      'table: format: iceberg writes timestamps in microseconds (Iceberg has no millisecond timestamp); remove timestamps: millis, or set micros or raw',
      { path: 'timestamps' },
      { code: 'config.invalid' },
    );
  }
  return { ...config, timestamps: config.timestamps ?? (config.format === 'iceberg' ? 'micros' : 'millis') };
}

/** The snapshot's columns: the records' schema (resource through the transforms) with the sink's `columns:`. */
function tableColumns(config: ResolvedConfig, ctx: StageContext): ColumnSchema {
  const recordSchema = sinkRecordSchema(ctx);
  if (!recordSchema && !config.columns) {
    throw new ConfigError(
      "table: the records' schema is unknown (the source names no resource); declare the columns (columns: {id: string, ...})",
      { path: 'columns' },
      { code: 'config.schema_unknown' },
    );
  }
  const micros = config.format === 'iceberg' || config.timestamps === 'micros';
  const schema = columnSchemaFor(recordSchema ?? { fields: [] }, config, new Set(), ctx.run, micros);
  for (const name of new TableLineage(schema, ctx.run).changeColumns()) {
    if (schema.columns.some((c) => c.name === name)) {
      throw new ConfigError(
        `table: the records have a column named ${name}, which the change rows use; rename or drop it`,
        { path: 'columns' },
      );
    }
  }
  return schema;
}

function changeColumnsDescription(schema: ColumnSchema, lineage: TableLineage): Array<{ name: string; type: string }> {
  const columns = schema.describe();
  const extra = columns.pop()!;
  const types = { _change: 'VARCHAR', _changed_at: 'TIMESTAMP WITH TIME ZONE', _run_id: 'VARCHAR' };
  return [...columns, ...lineage.changeColumns().map((name) => ({ name, type: types[name] })), extra];
}

/** A record of the previous version's state file: the frame's body, `v8.serialize([key, record])`, and its values. */
interface PreviousRecord {
  body: Uint8Array;
  key: Key;
  record: Record<string, unknown>;
  /** The run that last changed the key, when the state keeps it (lineage: true, table-lineage.ts). */
  lineage: StoredLineage | null;
}

async function* emptyState(): AsyncGenerator<PreviousRecord> {}

/** What a full run's check of its delete candidates did (TableSink.#checkDeleteCandidates). */
interface DeleteCheck {
  /** The endpoint asked; absent when no lookup was possible. */
  endpoint?: string;
  /** Why no lookup was possible. */
  unavailable?: string;
  /** Candidates asked for (those with an id). */
  checked: number;
  /** Candidates whose previous record has no id: deleted unchecked. */
  unverifiable: number;
  requests: number;
  /** The records the lookups returned, by key. */
  found?: ExternalSort;
  /**
   * Ids of candidates that exist but whose current version a transform rejected (invalid, in the
   * extract's dead letters): kept in their last valid row, not deleted. Few (the extract's
   * maxInvalid bounds them), so held in memory.
   */
  invalid: Set<string | number>;
}

/** Bytes of frames gathered before zlib takes them. */
const STATE_BATCH = 1 << 20;

/**
 * The merge state: [key, record] frames in key order, one gzip stream (level 1). zlib compresses
 * on the thread pool, beside the merge; two batch buffers, reused, take turns (one filled while
 * zlib reads the other), so the state allocates no buffer per batch.
 */
class StateWriter {
  readonly #gzip = createGzip({ level: 1 });
  readonly #copying: Promise<void>;
  #batch = Buffer.allocUnsafe(STATE_BATCH);
  #spare = Buffer.allocUnsafe(STATE_BATCH);
  #used = 0;
  /** zlib has consumed the spare batch (it may be filled again). */
  #consumed: Promise<void> = Promise.resolve();

  constructor(staged: StagedFile) {
    this.#copying = (async () => {
      for await (const chunk of this.#gzip as AsyncIterable<Buffer>) {
        const pending = staged.file.write(chunk);
        if (pending) await pending;
      }
    })();
    this.#copying.catch(() => {});
  }

  /** Appends a record's frame; `body` is `v8.serialize([key, record])`. */
  async write(body: Uint8Array): Promise<void> {
    const size = 4 + body.length;
    if (this.#used + size > this.#batch.length) {
      await this.#flush();
      // A record larger than a batch goes alone.
      if (size > this.#batch.length) return this.#send(frameBody(body));
    }
    this.#batch.writeUInt32LE(body.length, this.#used);
    this.#batch.set(body, this.#used + 4);
    this.#used += size;
  }

  async #flush(): Promise<void> {
    if (this.#used === 0) return;
    const full = this.#batch.subarray(0, this.#used);
    await this.#consumed;
    [this.#batch, this.#spare] = [this.#spare, this.#batch];
    this.#used = 0;
    this.#consumed = this.#send(full);
    this.#consumed.catch(() => {});
  }

  #send(bytes: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#gzip.write(bytes, (err) => (err ? reject(err) : resolve()));
      // A failed file write ends the copy, and zlib would wait for a reader forever.
      this.#copying.catch(reject);
    });
  }

  /** Writes what is left and ends the gzip stream (an empty state is a valid, empty gzip). */
  async end(): Promise<void> {
    await this.#flush();
    await this.#consumed;
    this.#gzip.end();
    await this.#copying;
  }

  /** Stops zlib when the run fails before end(). */
  destroy(): void {
    this.#gzip.destroy();
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
