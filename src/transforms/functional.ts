// User code as a stage: map, filter and flat-map over records, sync or async.
// The code API's `map(fn)`, `filter(fn)`, `flatMap(fn)` and the pipeline
// file's `custom` stage both build a FunctionTransform.
//
// The contract, by kind:
//   map      fn(record, ctx) -> record | null (or a Promise of it); null drops
//            the record; a list or a boolean is an error.
//   filter   fn(record, ctx) -> truthy keeps the record unchanged, falsy drops it.
//   flat-map fn(record, ctx) -> a list of records (each emitted, in order),
//            a single record, or null / [] (nothing).
// `undefined` is an error of every kind, naming the function and the record:
// it is what a function with a forgotten `return` gives, and taking it as
// "drop" once turned such a bug into a run that dropped every record and
// exited 0. Only an explicit null (or false from a filter) drops.
// A Promise that has not settled after `timeoutMs` fails the run the same way
// (its timer also keeps the process alive while the call is pending, so a
// promise that never settles cannot let the event loop empty and exit 0).
// Records are plain objects; one returned in place of its input gets the
// input's origin if it has none. Calls run one at a time, in order.
import { z } from 'zod';
import { DataError } from '../errors.js';
import { defineStage, type StageContext } from '../core/stage.js';
import { markStage, plannedStage } from '../core/planned-stage.js';
import type { RecordSchema } from '../core/record-schema.js';
import { keepOrigin, originOf } from '../core/origin.js';
import { defaultStageContext, type PartialStageContext } from '../core/default-context.js';
import { RecordTransform, type RecordOutput } from './record-transform.js';
import type { AnyRecord, RecordStream } from '../core/record-stream.js';

export type FunctionKind = 'map' | 'filter' | 'flat-map';

type Awaitable<T> = T | Promise<T>;

/** What user functions receive besides the record: the run's context and the stage's `options`. */
export interface RecordFunctionContext extends StageContext {
  /** `options` of a custom stage in a pipeline file (undefined in code). */
  options: unknown;
  /** Stage name used in messages: `map`, `custom(./my-transform.js)`, `custom(./my-transform.js#enrich)`. */
  stage: string;
}

export type MapFunction<In extends object = AnyRecord, Out extends object = AnyRecord> = (
  record: In,
  ctx: RecordFunctionContext,
) => Awaitable<Out | null>;
export type FilterFunction<In extends object = AnyRecord> = (
  record: In,
  ctx: RecordFunctionContext,
) => Awaitable<unknown>;
export type FlatMapFunction<In extends object = AnyRecord, Out extends object = AnyRecord> = (
  record: In,
  ctx: RecordFunctionContext,
) => Awaitable<readonly Out[] | Out | null>;
// The runtime calls every kind with whatever record comes: `any` here only, never in a caller's callback.
export type RecordFunction = MapFunction<any, any> | FilterFunction<any> | FlatMapFunction<any, any>;

function isRecord(v: unknown): v is object {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export interface FunctionTransformOptions {
  /** `fn` is a loader called once before the first record (a module import). */
  lazy?: boolean;
  /** `options` of a custom stage, handed to the function as ctx.options. */
  userOptions?: unknown;
  /** Names the function in errors, e.g. `custom: module "./t.mjs" export "default"` (default: the stage name). */
  label?: string;
  /** A returned Promise must settle within this many ms (default: no limit). */
  timeoutMs?: number;
}

export class FunctionTransform extends RecordTransform {
  readonly kind: FunctionKind;
  #fn: RecordFunction | undefined;
  readonly #load: (() => Promise<RecordFunction>) | undefined;
  readonly #fnCtx: RecordFunctionContext;
  readonly #label: string;
  readonly #timeoutMs: number | undefined;
  /** The timeout of the call in flight: cleared when the stream is destroyed, so it cannot hold the process open. */
  #timer: NodeJS.Timeout | undefined;

  /** `fn` directly, or (lazy) a loader to get it once before the first record. */
  constructor(
    stage: string,
    kind: FunctionKind,
    fn: RecordFunction | (() => Promise<RecordFunction>),
    ctx: StageContext,
    options: FunctionTransformOptions = {},
  ) {
    super(stage, ctx);
    this.kind = kind;
    if (options.lazy) this.#load = fn as () => Promise<RecordFunction>;
    else this.#fn = fn as RecordFunction;
    this.#fnCtx = { ...ctx, options: options.userOptions, stage };
    this.#label = options.label ?? stage;
    this.#timeoutMs = options.timeoutMs;
  }

  /** `custom: module "./t.mjs" export "default" (map)`, or `map` in code. */
  protected override get label(): string {
    return this.#label === this.kind ? this.kind : `${this.#label} (${this.kind})`;
  }

  protected override async prepare(): Promise<void> {
    if (this.#load) this.#fn = await this.#load();
  }

  processRecord(record: object): RecordOutput | Promise<RecordOutput> {
    const result = this.#fn!(record, this.#fnCtx);
    if (result instanceof Promise || typeof (result as { then?: unknown } | null)?.then === 'function') {
      return this.#settled(record, Promise.resolve(result)).then((value: unknown) => this.#accept(record, value));
    }
    return this.#accept(record, result);
  }

  /** The call's promise, failing with `data.custom_timeout` when it does not settle within the timeout. */
  #settled(input: object, promise: Promise<unknown>): Promise<unknown> {
    const ms = this.#timeoutMs;
    if (ms === undefined) return promise;
    const timeout = new Promise<never>((_, reject) => {
      this.#timer = setTimeout(() => {
        const seconds = ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`;
        reject(
          new DataError(
            `${this.#label}: the ${this.kind} function did not settle its Promise within ${seconds} for record ${describeId(input)}; ` +
              "make sure every code path resolves or rejects, or raise the stage's `timeout`",
            { code: 'data.custom_timeout' },
          ),
        );
      }, ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(this.#timer));
  }

  protected override abort(): void {
    clearTimeout(this.#timer);
  }

  #accept(input: object, value: unknown): RecordOutput {
    if (value === undefined) {
      throw new DataError(
        `${this.#label}: the ${this.kind} function returned undefined for record ${describeId(input)}; ` +
          `${UNDEFINED_HINT[this.kind]} (a missing \`return\` gives undefined, which is never taken as "drop")`,
        { code: 'data.custom_contract' },
      );
    }
    if (this.kind === 'filter') return value ? input : null;
    if (value === null) return null;
    if (this.kind === 'map') {
      if (isRecord(value)) return originOf(value) ? value : keepOrigin(input, value);
      throw this.#contractError(input, value, 'a record (a plain object), or null to drop it');
    }
    if (isRecord(value)) return originOf(value) ? value : keepOrigin(input, value);
    if (Array.isArray(value)) {
      for (const el of value) {
        if (!isRecord(el)) throw this.#contractError(input, el, 'a list of records (plain objects)');
        if (!originOf(el)) keepOrigin(input, el);
      }
      return value as object[];
    }
    throw this.#contractError(input, value, 'a list of records, a record, or null');
  }

  #contractError(input: object, value: unknown, expected: string): DataError {
    const id = (input as { id?: unknown }).id;
    const got = Array.isArray(value) ? 'a list' : value === null ? 'null' : typeof value;
    const hint =
      this.kind === 'map' && Array.isArray(value)
        ? ' (use kind: flat-map to emit several records)'
        : this.kind === 'map' && typeof value === 'boolean'
          ? ' (use kind: filter to keep or drop records)'
          : '';
    return new DataError(
      `${this.#label}: the ${this.kind} function must return ${expected}, but returned ${got}${id !== undefined ? ` for record ${JSON.stringify(id)}` : ''}${hint}`,
      { code: 'data.custom_contract' },
    );
  }
}

const UNDEFINED_HINT: Record<FunctionKind, string> = {
  map: 'return the record, or null to drop it',
  filter: 'return true to keep the record, or false to drop it',
  'flat-map': 'return a list of records, or null (or []) to drop the record',
};

function describeId(record: object): string {
  const id = (record as { id?: unknown }).id;
  return id === undefined ? '(without an id)' : JSON.stringify(id);
}

/**
 * The definitions of the code API's function stages (not registered: a pipeline file writes
 * `custom`). A filter passes records unchanged, so the schema goes through it; a map or flat-map
 * declares nothing about what it returns, so a sink piped from it infers its columns from the
 * records (sinks/shared/inferred-schema.ts).
 */
function functionStage(kind: FunctionKind) {
  return defineStage({
    kind: 'transform',
    type: kind,
    description: `Code API: ${kind}(fn)`,
    options: z.strictObject({ fn: z.custom<(...args: any[]) => unknown>((v) => typeof v === 'function') }),
    create: (options, ctx) => new FunctionTransform(kind, kind, options.fn as MapFunction, ctx),
    ...(kind === 'filter' ? { schema: (input: RecordSchema) => input } : {}),
  });
}

export const functionStages = {
  map: functionStage('map'),
  filter: functionStage('filter'),
  'flat-map': functionStage('flat-map'),
} as const;

function functionTransform(kind: FunctionKind, fn: unknown, ctx: PartialStageContext | undefined): FunctionTransform {
  const transform = new FunctionTransform(kind, kind, fn as MapFunction, defaultStageContext(ctx));
  return markStage(transform, plannedStage(functionStages[kind], { fn }, { fn }, 'transform'));
}

/**
 * Code API: a stage applying `fn` to every record; null drops the record (undefined is an error).
 * `In` is the record of the stage before: `chain(source).map(fn)` infers it, else annotate `fn`'s
 * parameter (a plain `Record<string, unknown>` when neither says).
 */
export function map<In extends object = AnyRecord, Out extends object = AnyRecord>(
  fn: MapFunction<In, Out>,
  ctx?: PartialStageContext,
): FunctionTransform & RecordStream<Out> {
  return functionTransform('map', fn, ctx);
}

/** Code API: a stage keeping the records for which `fn` returns a truthy value (or a Promise of one). */
export function filter<In extends object = AnyRecord>(
  fn: FilterFunction<In>,
  ctx?: PartialStageContext,
): FunctionTransform & RecordStream<In> {
  return functionTransform('filter', fn, ctx);
}

/** Code API: a stage emitting every record of the list `fn` returns (a record or null also work). */
export function flatMap<In extends object = AnyRecord, Out extends object = AnyRecord>(
  fn: FlatMapFunction<In, Out>,
  ctx?: PartialStageContext,
): FunctionTransform & RecordStream<Out> {
  return functionTransform('flat-map', fn, ctx);
}
