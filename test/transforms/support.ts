// Shared by the transform tests: fixtures, an in-memory sink registered as a
// stage (dead-letter target), and helpers that push records through real streams.
import { readFileSync } from 'node:fs';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import type { OutputRecord } from '../../src/events.js';
import type { SinkStream, StageDefinition } from '../../src/core/stage.js';
import { testContext, type TestContext } from '../helpers/stage-context.js';

export function fixture<T = any>(name: string): T {
  return JSON.parse(readFileSync(new URL(`../../fixtures/transforms/${name}`, import.meta.url), 'utf8')) as T;
}

/** A sink keeping what it receives; `committed` once `_final` ran, `destroyed` if aborted. */
export class MemorySink extends Writable implements SinkStream {
  readonly records: any[] = [];
  outputs: OutputRecord[] = [];
  committed = false;

  constructor(
    readonly path: string,
    opts: { highWaterMark?: number; failOnWrite?: number } = {},
  ) {
    super({ objectMode: true, highWaterMark: opts.highWaterMark ?? 16 });
    this.#failOnWrite = opts.failOnWrite;
  }

  readonly #failOnWrite: number | undefined;

  override _write(record: unknown, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    // round-trip like a JSONL sink would: symbols and undefined disappear
    this.records.push(JSON.parse(JSON.stringify(record)));
    if (this.#failOnWrite !== undefined && this.records.length >= this.#failOnWrite) cb(new Error('disk full'));
    else setImmediate(cb);
  }

  override _final(cb: (e?: Error | null) => void): void {
    this.committed = true;
    this.outputs = [{ kind: 'file', location: this.path, rows: this.records.length, bytes: 0, sink: 'jsonl' }];
    cb();
  }
}

/** Registers MemorySink as the `jsonl` sink type; every sink made is kept in `made`. */
export function memorySinks(opts: { highWaterMark?: number; failOnWrite?: number } = {}) {
  const made: MemorySink[] = [];
  const def: StageDefinition = {
    kind: 'sink',
    type: 'jsonl',
    description: 'in-memory test sink',
    options: z.looseObject({ path: z.string() }),
    create: (o: { path: string }) => {
      const s = new MemorySink(o.path, opts);
      made.push(s);
      return s;
    },
  };
  return { def, made };
}

export function context(opts: Parameters<typeof testContext>[0] = {}): TestContext {
  return testContext({ source: { type: 'products.query', resource: 'product', endpoint: 'products.query' }, ...opts });
}

/** Runs records through the stages with stream.pipeline; returns what reaches the end. */
export async function run(records: readonly object[], ...stages: NodeJS.ReadWriteStream[]): Promise<any[]> {
  const out: any[] = [];
  const collect = new Writable({
    objectMode: true,
    write(record, _enc, cb) {
      out.push(record);
      cb();
    },
  });
  await pipeline([Readable.from(records), ...stages, collect] as unknown as readonly NodeJS.ReadWriteStream[]);
  return out;
}

/** A Readable that delivers records in random-size bursts written while the consumer is corked (exercises _writev). */
export async function runInBursts(
  records: readonly object[],
  stage: NodeJS.ReadWriteStream & import('node:stream').Transform,
  seed = 1,
): Promise<any[]> {
  const out: any[] = [];
  let s = seed;
  const rand = () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const collect = new Writable({
    objectMode: true,
    write(record, _enc, cb) {
      out.push(record);
      cb();
    },
  });
  const done = pipeline(stage, collect);
  let i = 0;
  while (i < records.length) {
    const n = 1 + Math.floor(rand() * 40);
    stage.cork();
    for (const r of records.slice(i, i + n)) stage.write(r);
    i += n;
    process.nextTick(() => stage.uncork());
    await new Promise((r) => setImmediate(r));
  }
  stage.end();
  await done;
  return out;
}

/** The record as a sink would write it (no origin symbol). */
export function plain<T>(record: T): T {
  return JSON.parse(JSON.stringify(record)) as T;
}
