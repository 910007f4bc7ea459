// A sink is an output format (what a user names: jsonl, csv, parquet; its options, its
// Content-Type) written to a destination (where the bytes go: local files, S3 objects). An
// OutputFormat makes, for each sink, a RecordEncoding (shared/record-sink.ts: how that sink's
// records become items and bytes). Each format and each destination is one folder (jsonl/, csv/,
// parquet/, local/, s3/) registered once in sinks/index.ts; the destinations build the registered
// sink stages from the formats (ARCHITECTURE.md "Add a format", "Add a destination").
import type { Writable } from 'node:stream';
import type { z } from 'zod';
import type { StageContext } from '../../core/stage.js';
import type { PathTemplate } from './path-template.js';
import type { RecordEncoding } from './record-sink.js';
import { RunEvents } from '../../events.js';
import { EMPTY_SCHEMA, type RecordSchema } from '../../core/record-schema.js';
import { DeferredEncoding, upstreamSchema } from './inferred-schema.js';

/** Where a destination writes: the option that names the output (`path` for files, `key` for objects). */
export type OutputTarget = 'path' | 'key';

/** What a format needs to build its encoder for one sink. */
export interface FormatEnv {
  ctx: StageContext;
  /** The sink's type, for messages (`parquet`, `s3`). */
  stage: string;
  /** The output template as the caller wrote it (a file path or object key; `-` for stdout). */
  target: string;
  template: PathTemplate | undefined;
  /** Code-API extra: a zod schema of the records that types the columns up front. */
  schemaHint?: z.ZodType | undefined;
}

export interface OutputFormat<Name extends string = string, Shape extends z.ZodRawShape = z.ZodRawShape> {
  readonly name: Name;
  /** The description of the sink stage that writes this format to local files. */
  /** The format's name in prose (`JSON Lines`). */
  readonly title: string;
  readonly description: string;
  /** Appended to the description of a local sink's `path` (jsonl: a .gz path is compressed). */
  readonly pathNote?: string;
  /** The format's options, added to each sink's options schema; descriptions speak of `path` or `key`. */
  options(target: OutputTarget): Shape;
  /** The format options a caller set (not left at their default): a destination writing another format rejects them. */
  optionsSet(options: Record<string, unknown>): string[];
  /** Added to the message when this format's options are given for another format. */
  readonly misuseHint?: string;
  /**
   * Whether the format writes columns (Parquet, CSV): a sink built in code whose records nothing
   * declares infers them from a sample (inferred-schema.ts). JSON Lines writes each record as it is.
   */
  readonly needsColumns: boolean;
  /** The Content-Type of an object in this format. */
  contentType(options: Record<string, unknown>, target: string): string;
  create(options: Record<string, unknown>, env: FormatEnv): RecordEncoding<unknown>;
}

/** Identity helper that keeps a format's name and option shape as literal types (editor completion). */
export function defineSinkFormat<const Name extends string, Shape extends z.ZodRawShape>(
  format: OutputFormat<Name, Shape>,
): OutputFormat<Name, Shape> {
  return format;
}

type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;

/** The option shape of every format in `Formats`, merged (a destination that writes any of them). */
export type FormatsShape<Formats extends readonly OutputFormat[]> = UnionToIntersection<
  ReturnType<Formats[number]['options']>
>;

/** The format options of the other formats that a caller set: issues for a sink writing `chosen`. */
export function otherFormatOptions(
  formats: readonly OutputFormat[],
  chosen: string,
  options: Record<string, unknown>,
): { path: string[]; message: string }[] {
  const own = new Set(Object.keys(formats.find((f) => f.name === chosen)?.options('key') ?? {}));
  // Each misplaced option once, naming every format it belongs to (gzip: jsonl and csv).
  const owners = new Map<string, OutputFormat[]>();
  for (const f of formats) {
    if (f.name === chosen) continue;
    for (const key of f.optionsSet(options)) if (!own.has(key)) owners.set(key, [...(owners.get(key) ?? []), f]);
  }
  return [...owners].map(([key, fs]) => {
    const hints = fs.flatMap((f) => (f.misuseHint ? [f.misuseHint] : []));
    return {
      path: [key],
      message: `${key} applies to format: ${fs.map((f) => f.name).join(' or ')} only${hints.length ? ` (${hints.join('; ')})` : ''}`,
    };
  });
}

/**
 * The encoding of one sink. A sink a runner makes knows its records' schema (ctx.recordSchema, or a
 * hint): the encoding is made now, so a bad schema fails before any request. A sink built in code
 * (`deferred`) learns it from the chain piped into it (`sinkOf()`), at its first record.
 */
export function sinkEncoding(
  format: OutputFormat,
  options: Record<string, unknown>,
  env: FormatEnv,
  deferred: { sinkOf(): Writable | undefined } | undefined,
): RecordEncoding<unknown> {
  if (!deferred || env.schemaHint || env.ctx.recordSchema) return format.create(options, env);
  const make = (schema: RecordSchema | undefined) =>
    format.create(options, { ...env, ctx: { ...env.ctx, recordSchema: schema } });
  // Columns the caller declared are the sink's (with the chain's schema, when it declares one): they
  // are checked now, as a runner's sink checks them, and nothing is inferred beside them.
  const declared = options.columns !== undefined;
  if (declared)
    format.create(options, { ...env, ctx: { ...env.ctx, events: new RunEvents(), recordSchema: EMPTY_SCHEMA } });
  return new DeferredEncoding(
    make,
    () => {
      const sink = deferred.sinkOf();
      return sink ? upstreamSchema(sink) : { hints: undefined };
    },
    format.needsColumns && !declared,
  );
}
