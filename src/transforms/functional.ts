// User code as a stage: map, filter and flat-map over records, sync or async.
// The code API's `map(fn)`, `filter(fn)`, `flatMap(fn)` and the pipeline
// file's `custom` stage both build a FunctionTransform.
//
// The contract, by kind:
//   map      fn(record, ctx) -> record | null | undefined (or a Promise of it);
//            null/undefined drops the record; a list or a boolean is an error.
//   filter   fn(record, ctx) -> truthy keeps the record unchanged, falsy drops it.
//   flat-map fn(record, ctx) -> a list of records (each emitted, in order),
//            a single record, or null/undefined (nothing).
// Records are plain objects; one returned in place of its input gets the
// input's origin if it has none. Calls run one at a time, in order.
import { DataError } from '../errors.js';
import type { StageContext } from '../pipeline/stage.js';
import { keepOrigin, originOf } from '../sources/origin.js';
import { defaultStageContext } from './code-api.js';
import { RecordTransform, type RecordOutput } from './record-transform.js';

export type FunctionKind = 'map' | 'filter' | 'flat-map';

type Awaitable<T> = T | Promise<T>;

/** What user functions receive besides the record: the run's context and the stage's `options`. */
export interface RecordFunctionContext extends StageContext {
  /** `options` of a custom stage in a pipeline file (undefined in code). */
  options: unknown;
  /** Stage name used in messages: `map`, `custom(./my-transform.js)`. */
  stage: string;
}

export type MapFunction<In extends object = any, Out extends object = any> = (record: In, ctx: RecordFunctionContext) => Awaitable<Out | null | undefined>;
export type FilterFunction<In extends object = any> = (record: In, ctx: RecordFunctionContext) => Awaitable<unknown>;
export type FlatMapFunction<In extends object = any, Out extends object = any> = (
  record: In,
  ctx: RecordFunctionContext,
) => Awaitable<readonly Out[] | Out | null | undefined>;
export type RecordFunction = MapFunction | FilterFunction | FlatMapFunction;

function isRecord(v: unknown): v is object {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export class FunctionTransform extends RecordTransform {
  readonly kind: FunctionKind;
  #fn: RecordFunction | undefined;
  readonly #load: (() => Promise<RecordFunction>) | undefined;
  readonly #fnCtx: RecordFunctionContext;

  /** `fn` directly, or `load` to get it once before the first record (a module import). */
  constructor(stage: string, kind: FunctionKind, fn: RecordFunction | (() => Promise<RecordFunction>), ctx: StageContext, options: { lazy?: boolean; userOptions?: unknown } = {}) {
    super(stage, ctx);
    this.kind = kind;
    if (options.lazy) this.#load = fn as () => Promise<RecordFunction>;
    else this.#fn = fn as RecordFunction;
    this.#fnCtx = { ...ctx, options: options.userOptions, stage };
  }

  protected override async prepare(): Promise<void> {
    if (this.#load) this.#fn = await this.#load();
  }

  processRecord(record: object): RecordOutput | Promise<RecordOutput> {
    const result = this.#fn!(record, this.#fnCtx);
    if (result instanceof Promise) return result.then((value: unknown) => this.#accept(record, value));
    if (typeof (result as { then?: unknown } | null)?.then === 'function') {
      return Promise.resolve(result).then((value: unknown) => this.#accept(record, value));
    }
    return this.#accept(record, result);
  }

  #accept(input: object, value: unknown): RecordOutput {
    if (this.kind === 'filter') return value ? input : null;
    if (value === null || value === undefined) return null;
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
    const hint = this.kind === 'map' && Array.isArray(value) ? ' (use kind: flat-map to emit several records)' : this.kind === 'map' && typeof value === 'boolean' ? ' (use kind: filter to keep or drop records)' : '';
    return new DataError(
      `${this.stage}: the ${this.kind} function must return ${expected}, but returned ${got}${id !== undefined ? ` for record ${JSON.stringify(id)}` : ''}${hint}`,
      { code: 'data.custom_contract' },
    );
  }
}

/** Code API: a stage applying `fn` to every record; null/undefined drops the record. */
export function map<In extends object = any, Out extends object = any>(fn: MapFunction<In, Out>, ctx: StageContext = defaultStageContext()): FunctionTransform {
  return new FunctionTransform('map', 'map', fn, ctx);
}

/** Code API: a stage keeping the records for which `fn` returns a truthy value (or a Promise of one). */
export function filter<In extends object = any>(fn: FilterFunction<In>, ctx: StageContext = defaultStageContext()): FunctionTransform {
  return new FunctionTransform('filter', 'filter', fn, ctx);
}

/** Code API: a stage emitting every record of the list `fn` returns (a record or null also work). */
export function flatMap<In extends object = any, Out extends object = any>(fn: FlatMapFunction<In, Out>, ctx: StageContext = defaultStageContext()): FunctionTransform {
  return new FunctionTransform('flat-map', 'flat-map', fn, ctx);
}
