// Parquet as a record format (used by the parquet sink and by the s3 sink with
// format: parquet): locks the column schema (declared, or inferred from the first
// `inferenceSample` records, typed by a resource hint where one is known), shapes
// each record into a row, and applies `onSchemaMismatch` to records that do not fit.
import { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { z } from 'zod';
import { ConfigError, SinkError } from '../errors.js';
import type { SinkStream, StageContext } from '../pipeline/stage.js';
import { waitForDrain, type ByteDestination } from './byte-destination.js';
import {
  COLUMN_TYPE_NAMES,
  ColumnSchema,
  declaredSchema,
  inferSchema,
  RecordShaper,
  type ColumnHint,
  type ColumnSchemaSettings,
  type Mismatch,
} from './column-schema.js';
import { byteSize, deadLetterSpec } from './option-schemas.js';
import { CompressionRatio, PARQUET_COMPRESSIONS, ParquetEncoder, type ParquetRow } from './parquet-encoder.js';
import type { PartEncoder } from './part-encoder.js';
import { describeRecord, type EmitItem, type RecordFormat } from './record-sink.js';

export const DEFAULT_ROW_GROUP_ROWS = 10_000;
export const DEFAULT_ROW_GROUP_BYTES = 16 * 1024 * 1024;

/** Options of the Parquet format, shared by the parquet sink and the s3 sink. */
export const parquetFormatOptions = {
  columns: z
    .record(z.string().min(1), z.enum(COLUMN_TYPE_NAMES))
    .optional()
    .describe(
      'Declared columns by field path, e.g. {id: string, "meta.createdAt": timestamp, ean: "string[]"}; the file has exactly these. ' +
        'Types: string, int32, int64, double, boolean, timestamp, json, and lists string[], int64[], ... Default: inferred from the records',
    ),
  inferenceSample: z
    .number()
    .int()
    .positive()
    .default(1000)
    .describe('Records read (and held) before the inferred schema is locked for the run'),
  nested: z
    .enum(['flatten', 'json'])
    .default('flatten')
    .describe('Nested objects: flatten into parent_child columns (name_en, meta_createdAt), or one JSON text column per object'),
  timestampFields: z
    .array(z.string().min(1))
    .optional()
    .describe('Integer fields (dotted paths) stored as timestamps; default: fields whose name ends in "At" (createdAt, updatedAt, officialDeletionAt)'),
  timestamps: z
    .enum(['millis', 'micros', 'raw'])
    .default('millis')
    .describe('Timestamp columns: TIMESTAMP (UTC) in millisecond or microsecond precision, or raw: keep the integers as given (INT64)'),
  timestampInput: z
    .enum(['seconds', 'milliseconds'])
    .default('seconds')
    .describe('Unit of integer timestamps in the records (the Catalog API sends unix seconds)'),
  onSchemaMismatch: z
    .enum(['fail', 'dead-letter', 'ignore'])
    .default('fail')
    .describe(
      'A record that does not fit the locked schema (a new field, another type): fail the run naming the column and record id; ' +
        'dead-letter: send the record to deadLetter; ignore: write it without the misfit values and log each column once',
    ),
  deadLetter: deadLetterSpec
    .optional()
    .describe('Sink for records that do not fit (onSchemaMismatch: dead-letter), written unchanged, e.g. {type: jsonl, path: out/rejected.jsonl}'),
  compression: z
    .enum(PARQUET_COMPRESSIONS)
    .default('snappy')
    .describe('Column compression: snappy, gzip or none (zstd is not available: hyparquet-writer has no zstd and Node 20 zlib neither)'),
  rowGroupRows: z
    .number()
    .int()
    .positive()
    .default(DEFAULT_ROW_GROUP_ROWS)
    .describe('A row group is written once it has this many rows (or rowGroupBytes); memory holds one row group per open file'),
  rowGroupBytes: byteSize()
    .default(DEFAULT_ROW_GROUP_BYTES)
    .describe('A row group is written once its values take about this much memory (number or "16MiB"); caps memory for wide rows'),
};

const parquetFormatSchema = z.strictObject(parquetFormatOptions);
export type ParquetFormatOptions = z.output<typeof parquetFormatSchema>;

/** Zod check: dead-letter needs a deadLetter sink. */
export function checkDeadLetter(options: { onSchemaMismatch?: string; deadLetter?: unknown }, ctx: z.RefinementCtx): void {
  if (options.onSchemaMismatch === 'dead-letter' && !options.deadLetter) {
    ctx.addIssue({
      code: 'custom',
      path: ['deadLetter'],
      message: 'onSchemaMismatch: dead-letter needs a deadLetter sink, e.g. {type: jsonl, path: out/rejected.jsonl}',
    });
  }
}

/** The parquet options that differ from their defaults (to reject them where they do not apply). */
export function parquetOptionsSet(options: Partial<ParquetFormatOptions>): string[] {
  const defaults = parquetFormatSchema.parse({}) as Record<string, unknown>;
  return Object.keys(parquetFormatOptions).filter((key) => {
    const value = (options as Record<string, unknown>)[key];
    return value !== undefined && value !== defaults[key];
  });
}

export interface ParquetFormatSetup {
  options: ParquetFormatOptions;
  ctx: StageContext;
  /** Stage name for events and messages (`parquet`, `s3`). */
  stage: string;
  /** Column names left out of the data (Hive partition keys of the path template). */
  excludedColumns: ReadonlySet<string>;
  /** Types from the resource schema, when known. */
  hint?: ColumnHint | undefined;
  /** Footer metadata. */
  metadata?: Record<string, string>;
}

export class ParquetFormat implements RecordFormat<ParquetRow> {
  readonly #setup: ParquetFormatSetup;
  readonly #settings: ColumnSchemaSettings;
  #shaper: RecordShaper | undefined;
  #sample: Array<{ record: Record<string, unknown>; ordinal: number }> = [];
  #deadLetter: SinkStream | undefined;
  #deadLetterError: Error | undefined;
  readonly #warned = new Set<string>();
  readonly #problems: Mismatch[] = [];
  readonly #compressionRatio = new CompressionRatio();

  constructor(setup: ParquetFormatSetup) {
    this.#setup = setup;
    const { options } = setup;
    this.#settings = {
      nested: options.nested,
      timestampFields: options.timestampFields,
      timestamps: options.timestamps,
      timestampInput: options.timestampInput,
      excluded: setup.excludedColumns,
    };
    if (options.columns) this.#lock(declaredSchema(options.columns, this.#settings), []);
  }

  accept(record: Record<string, unknown>, ordinal: number, emit: EmitItem<ParquetRow>): void | Promise<void> {
    if (this.#shaper) return this.#shapeAndEmit(record, ordinal, emit);
    this.#sample.push({ record, ordinal });
    if (this.#sample.length >= this.#setup.options.inferenceSample) return this.#inferAndReplay(emit);
  }

  async flush(emit: EmitItem<ParquetRow>): Promise<void> {
    if (!this.#shaper && this.#sample.length > 0) await this.#inferAndReplay(emit);
  }

  async #inferAndReplay(emit: EmitItem<ParquetRow>): Promise<void> {
    const sample = this.#sample;
    this.#sample = [];
    const { schema, notes } = inferSchema(
      sample.map((s) => s.record),
      this.#settings,
      this.#setup.hint,
    );
    this.#lock(schema, notes, sample.length);
    for (const { record, ordinal } of sample) {
      const pending = this.#shapeAndEmit(record, ordinal, emit);
      if (pending) await pending;
    }
  }

  #lock(schema: ColumnSchema, notes: string[], sampled?: number): void {
    this.#shaper = new RecordShaper(schema);
    const { events } = this.#setup.ctx;
    for (const note of notes) events.emit('warning', { code: 'sink.parquet.inference', message: `${this.#setup.stage}: ${note}` });
    events.emit('info', {
      code: 'sink.parquet.schema',
      message:
        sampled === undefined
          ? `${this.#setup.stage}: ${schema.columns.length} declared columns`
          : `${this.#setup.stage}: ${schema.columns.length} columns inferred from ${sampled} records${this.#setup.hint ? ' and the resource schema' : ''}, now locked`,
      columns: schema.describe(),
    });
  }

  #shapeAndEmit(record: Record<string, unknown>, ordinal: number, emit: EmitItem<ParquetRow>): void | Promise<void> {
    const problems = this.#problems;
    problems.length = 0;
    const row = this.#shaper!.shape(record, problems);
    if (problems.length === 0) return emit(record, row);
    return this.#mismatch(record, ordinal, row, problems, emit);
  }

  #mismatch(
    record: Record<string, unknown>,
    ordinal: number,
    row: ParquetRow,
    problems: Mismatch[],
    emit: EmitItem<ParquetRow>,
  ): void | Promise<void> {
    const { ctx, stage, options } = this.#setup;
    const who = describeRecord(record, ordinal);
    const id = typeof record.id === 'string' || typeof record.id === 'number' ? record.id : undefined;
    const message = this.#describeMismatch(problems[0]!, who) + (problems.length > 1 ? ` (and ${problems.length - 1} more)` : '');
    switch (options.onSchemaMismatch) {
      case 'fail':
        ctx.events.emit('invalid', { stage, id, action: 'fail', message });
        throw new SinkError(`${message}; declare the column or set onSchemaMismatch: dead-letter or ignore`, { code: 'sink.parquet.schema' });
      case 'dead-letter':
        ctx.events.emit('invalid', { stage, id, action: 'dead-letter', message });
        return this.#writeDeadLetter(record);
      case 'ignore':
        for (const problem of problems) {
          const key = `${problem.kind}:${problem.column}`;
          if (this.#warned.has(key)) continue;
          this.#warned.add(key);
          ctx.events.emit('warning', {
            code: 'sink.parquet.schema',
            message: `${this.#describeMismatch(problem, who)}; ${problem.kind === 'new-field' ? 'the field is left out' : 'written as null'} (logged once per column)`,
          });
        }
        return emit(record, row);
    }
  }

  #describeMismatch(problem: Mismatch, who: string): string {
    const { stage } = this.#setup;
    if (problem.kind === 'new-field') {
      const locked = this.#setup.options.columns ? 'declared in columns' : `locked after ${this.#setup.options.inferenceSample} sampled records`;
      return `${stage}: ${who} has field "${problem.column}" (${problem.actual}) that is not in the Parquet schema (${locked})`;
    }
    return `${stage}: Parquet column "${problem.column}" expects ${problem.expected}, but ${who} has ${problem.actual}`;
  }

  async #writeDeadLetter(record: Record<string, unknown>): Promise<void> {
    const spec = this.#setup.options.deadLetter;
    if (!spec) throw new ConfigError(`${this.#setup.stage}: onSchemaMismatch: dead-letter needs a deadLetter sink`, { path: 'deadLetter' });
    if (!this.#deadLetter) {
      const sink = this.#setup.ctx.createSink(spec);
      sink.on('error', (err) => {
        this.#deadLetterError = err;
      });
      this.#deadLetter = sink;
    }
    if (this.#deadLetterError) throw this.#deadLetterError;
    if (!this.#deadLetter.write(record)) await waitForDrain(this.#deadLetter as Writable);
  }

  createEncoder(destination: ByteDestination): PartEncoder<ParquetRow> {
    const schema = this.#shaper?.schema;
    if (!schema) throw new SinkError(`${this.#setup.stage}: no Parquet schema is known yet`, { code: 'sink.parquet.schema' });
    const { compression, rowGroupRows, rowGroupBytes } = this.#setup.options;
    return new ParquetEncoder(destination, schema.parquetColumns(), {
      compression,
      rowGroupRows,
      rowGroupBytes,
      metadata: this.#setup.metadata,
      compressionRatio: this.#compressionRatio,
    });
  }

  canWriteEmpty(): boolean {
    return !!this.#shaper;
  }

  describeSchema(): unknown {
    return this.#shaper ? { columns: this.#shaper.schema.describe() } : null;
  }

  async close(): Promise<void> {
    const deadLetter = this.#deadLetter;
    if (!deadLetter) return;
    deadLetter.end();
    await finished(deadLetter);
  }

  async revoke(): Promise<void> {
    await this.#deadLetter?.revoke?.();
  }

  async abort(reason: Error): Promise<void> {
    this.#sample = [];
    if (this.#deadLetter && !this.#deadLetter.destroyed) {
      this.#deadLetter.destroy(reason);
      await finished(this.#deadLetter).catch(() => {});
    }
  }
}
