// The record type a stream carries, for the compiler only: nothing of it exists at run time. A
// source factory says what it emits (`productsQuery` emits `Product`), `map(fn)` what `fn`
// returns, so `chain(source).map((p) => ...)` types `p` as the record of the stage before instead
// of `any` (pipeline/chain.ts). A stream that says nothing carries `CatalogRecord`-like objects.

declare const recordType: unique symbol;

/** A stream of records of type `T` (a phantom property: never set, only read by the compiler). */
export interface RecordStream<T> {
  readonly [recordType]?: T;
}

/** A record of a stage that declares no type: a plain object of unknown fields. */
export type AnyRecord = Record<string, unknown>;
