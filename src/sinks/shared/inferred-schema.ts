// The records' schema of a sink built in code. A runner hands every sink the schema its plan
// derived; a sink made by a factory (`parquetSink({path})`) is made before it is piped, so it
// waits for its first record. By then stream.pipeline has piped every stream, and the sink walks
// the chain upstream (core/planned-stage.ts): built-in stages all the way to a source give the
// declared schema, as a pipeline file would. A stage that declares nothing about what it returns
// (`map(fn)`, a Transform of the caller's) leaves the sink to infer its columns from the first
// SAMPLE_RECORDS records it receives; a field first seen after those is kept in `_extra`, with the
// warning every sink gives for a field its schema does not name (ARCHITECTURE.md "Run assembly").
import type { Writable } from 'node:stream';
import { stageSchemas, upstreamStages } from '../../core/planned-stage.js';
import type { FieldType, RecordField, RecordSchema } from '../../core/record-schema.js';
import type { ByteDestination } from './byte-destination.js';
import type { PartEncoder } from './part-encoder.js';
import type { EmitItem, RecordEncoding } from './record-sink.js';

/** Records a sink holds back to decide its columns when nothing upstream declares them. */
export const SAMPLE_RECORDS = 1000;

/** What is known upstream of a sink: a declared schema, or only hints (same-named fields) for inferring one. */
export type UpstreamSchema = { declared: RecordSchema } | { hints: RecordSchema | undefined };

/** The schema the chain piped into `sink` declares, or the last one declared before a stage that declares none. */
export function upstreamSchema(sink: Writable): UpstreamSchema {
  const { stages, complete } = upstreamStages(sink);
  if (!complete) return { hints: undefined };
  const [source, ...transforms] = stages;
  const { schemas, declared } = stageSchemas(source!, transforms);
  if (declared) return { declared: schemas.at(-1)! };
  const firstUndeclared = transforms.findIndex((t) => !t.definition.schema);
  return { hints: schemas[firstUndeclared] };
}

/**
 * A RecordEncoding made once the records' schema is known: at the first record when the chain
 * declares it, else after the sample (or at the end of a shorter input).
 */
export class DeferredEncoding<Item> implements RecordEncoding<Item> {
  readonly #make: (schema: RecordSchema | undefined) => RecordEncoding<Item>;
  readonly #upstream: () => UpstreamSchema;
  /** Whether the format needs columns (Parquet, CSV); JSON Lines takes a schema only when one is declared. */
  readonly #needsColumns: boolean;
  #inner: RecordEncoding<Item> | undefined;
  #sample: Array<[Record<string, unknown>, number]> = [];
  #hints: RecordSchema | undefined;

  constructor(
    make: (schema: RecordSchema | undefined) => RecordEncoding<Item>,
    upstream: () => UpstreamSchema,
    needsColumns: boolean,
  ) {
    this.#make = make;
    this.#upstream = upstream;
    this.#needsColumns = needsColumns;
  }

  async accept(record: Record<string, unknown>, ordinal: number, emit: EmitItem<Item>): Promise<void> {
    if (this.#inner) return this.#inner.accept(record, ordinal, emit);
    if (this.#sample.length === 0) {
      const known = this.#upstream();
      if ('declared' in known || !this.#needsColumns) {
        this.#inner = this.#make('declared' in known ? known.declared : undefined);
        return this.#inner.accept(record, ordinal, emit);
      }
      this.#hints = known.hints;
    }
    this.#sample.push([record, ordinal]);
    if (this.#sample.length >= SAMPLE_RECORDS) await this.#release(emit);
  }

  async flush(emit: EmitItem<Item>): Promise<void> {
    if (!this.#inner) await this.#release(emit);
    return this.#inner!.flush(emit);
  }

  createEncoder(destination: ByteDestination): PartEncoder<Item> {
    return this.#ensure().createEncoder(destination);
  }

  canWriteEmpty(): boolean {
    return this.#ensure().canWriteEmpty();
  }

  describeSchema(): unknown {
    return this.#inner?.describeSchema() ?? null;
  }

  async readPublishedSchema(file: string): Promise<unknown> {
    return this.#inner?.readPublishedSchema?.(file);
  }

  async close(): Promise<void> {
    await this.#inner?.close();
  }

  async abort(reason: Error): Promise<void> {
    await this.#inner?.abort(reason);
  }

  async revoke(): Promise<void> {
    await this.#inner?.revoke?.();
  }

  /** Decides the columns from the sample, then passes the held records on in order. */
  async #release(emit: EmitItem<Item>): Promise<void> {
    const held = this.#sample;
    this.#sample = [];
    const inner = this.#ensure(held.map(([r]) => r));
    for (const [record, ordinal] of held) await inner.accept(record, ordinal, emit);
  }

  #ensure(sample: readonly Record<string, unknown>[] = []): RecordEncoding<Item> {
    if (!this.#inner) {
      const known = this.#sample.length === 0 && sample.length === 0 ? this.#upstream() : { hints: this.#hints };
      this.#inner = this.#make('declared' in known ? known.declared : inferSchema(sample, known.hints));
    }
    return this.#inner;
  }
}

/**
 * The columns of records nothing declared: each top-level field in the order first seen, typed by
 * a same-named field of `hints` (the last declared schema upstream), else by the kind most of its
 * non-null values have: boolean, string, integer (int64; double when any is fractional), a list
 * (of its elements' kind), an object (JSON text). Values of another kind do not fit the column and
 * are kept in `_extra`, as with a declared schema. A field that is null in every record is a string.
 */
export function inferSchema(records: readonly Record<string, unknown>[], hints?: RecordSchema): RecordSchema {
  const seen = new Map<string, unknown[]>();
  for (const record of records) {
    for (const [name, value] of Object.entries(record)) {
      if (value === undefined) continue;
      let values = seen.get(name);
      if (!values) seen.set(name, (values = []));
      if (value !== null) values.push(value);
    }
  }
  const declared = new Map((hints?.fields ?? []).map((f) => [f.name, f.type]));
  const fields: RecordField[] = [...seen].map(([name, values]) => ({
    name,
    type: declared.get(name) ?? typeOfValues(values),
  }));
  return { fields };
}

type ValueKind = 'boolean' | 'string' | 'number' | 'list' | 'object';

function kindOf(v: unknown): ValueKind {
  if (Array.isArray(v)) return 'list';
  if (typeof v === 'number' || typeof v === 'bigint') return 'number';
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'string') return 'string';
  return 'object';
}

function typeOfValues(values: readonly unknown[]): FieldType {
  if (values.length === 0) return { kind: 'string' };
  const counts = new Map<ValueKind, number>();
  for (const v of values) counts.set(kindOf(v), (counts.get(kindOf(v)) ?? 0) + 1);
  const [kind] = [...counts].reduce((best, next) => (next[1] > best[1] ? next : best));
  switch (kind) {
    case 'boolean':
    case 'string':
      return { kind };
    case 'number':
      return values.some((v) => typeof v === 'number' && !Number.isSafeInteger(v))
        ? { kind: 'double' }
        : { kind: 'int64' };
    case 'list': {
      const element = typeOfValues(
        values
          .filter(Array.isArray)
          .flat()
          .filter((v) => v !== null && v !== undefined),
      );
      return element.kind === 'json' || element.kind === 'list' ? { kind: 'json' } : { kind: 'list', element };
    }
    default:
      return { kind: 'json' };
  }
}
