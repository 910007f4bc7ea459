// Code API: a chain of stages whose callbacks know the record type of the stage before.
// `stream.pipeline(source, map(fn), sink)` cannot tell `fn` what the source emits (each argument is
// typed on its own), so callbacks fell back to `any`. `chain(productsQuery(...))` starts from the
// source's record type (`Product`), each `.map` / `.flatMap` takes the type its function returns,
// `.filter` keeps it, `.through(stage)` adds any Transform (a built-in stage keeps the type unless
// told `.through<Out>(...)`), and `.to(...sinks)` runs the whole chain with stream.pipeline, through
// `tee` when there are several sinks. The streams are the same as written by hand.
import type { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { PartialStageContext } from '../core/default-context.js';
import type { AnyRecord, RecordStream } from '../core/record-stream.js';
import {
  type FilterFunction,
  type FlatMapFunction,
  type MapFunction,
  filter,
  flatMap,
  map,
} from '../transforms/functional.js';
import { tee } from './tee.js';

export class RecordChain<T extends object> {
  readonly #streams: readonly (Readable | Transform)[];

  constructor(streams: readonly (Readable | Transform)[]) {
    this.#streams = streams;
  }

  /** `fn` on each record of the stage before (typed as it emits); null drops the record. */
  map<Out extends object>(fn: MapFunction<T, Out>, ctx?: PartialStageContext): RecordChain<Out> {
    return new RecordChain<Out>([...this.#streams, map(fn, ctx)]);
  }

  /** Keeps the records for which `fn` is truthy; the type stays. */
  filter(fn: FilterFunction<T>, ctx?: PartialStageContext): RecordChain<T> {
    return new RecordChain<T>([...this.#streams, filter(fn, ctx)]);
  }

  /** Each record of the list `fn` returns. */
  flatMap<Out extends object>(fn: FlatMapFunction<T, Out>, ctx?: PartialStageContext): RecordChain<Out> {
    return new RecordChain<Out>([...this.#streams, flatMap(fn, ctx)]);
  }

  /** Any transform stream (a built-in stage, a Transform of yours); say `Out` when it changes the records. */
  through<Out extends object = T>(stage: Transform & RecordStream<Out>): RecordChain<Out> {
    return new RecordChain<Out>([...this.#streams, stage]);
  }

  /** The streams so far, source first (to hand to stream.pipeline or planFromStreams yourself). */
  get streams(): readonly (Readable | Transform)[] {
    return this.#streams;
  }

  /** Runs the chain into one sink, or into several through tee(); resolves once every sink committed. */
  async to(...sinks: Writable[]): Promise<void> {
    const sink = sinks.length === 1 ? sinks[0]! : tee(...sinks);
    await pipeline([...this.#streams, sink] as unknown as [Readable, Writable]);
  }
}

/** Starts a chain at a source: its record type (`Product` for productsQuery) types the callbacks after it. */
export function chain<T extends object = AnyRecord>(source: Readable & RecordStream<T>): RecordChain<T> {
  return new RecordChain<T>([source]);
}
