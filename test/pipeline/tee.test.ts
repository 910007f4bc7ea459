// TeeSink: every record to every sink; the slowest sink sets the pace (nothing
// piles up in front of it); an error in one sink destroys the others, which
// remove their temp files, and outputs a sibling had already committed are
// removed again: a failed tee leaves no outputs.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RunEvents, type OutputRecord } from '../../src/events.js';
import type { SinkStream } from '../../src/core/stage.js';
import { TeeSink } from '../../src/pipeline/tee.js';
import { jsonlSink, parquetSink, sinkStages } from '../../src/sinks/index.js';
import { testContext } from '../helpers/stage-context.js';

/** A sink of our own: records kept in memory, each write taking `delayMs`, optionally failing. */
class MemorySink extends Writable implements SinkStream {
  readonly records: unknown[] = [];
  readonly outputs: OutputRecord[] = [];
  constructor(
    readonly opts: { delayMs?: number; failAt?: number; failInFinalAfterMs?: number; highWaterMark?: number } = {},
  ) {
    super({ objectMode: true, highWaterMark: opts.highWaterMark ?? 4 });
  }
  override _write(record: unknown, _enc: BufferEncoding, callback: (err?: Error | null) => void): void {
    if (this.opts.failAt !== undefined && this.records.length === this.opts.failAt) {
      callback(new Error(`memory sink fails at record ${this.opts.failAt}`));
      return;
    }
    this.records.push(record);
    if (this.opts.delayMs) setTimeout(callback, this.opts.delayMs);
    else callback();
  }
  override _final(callback: (err?: Error | null) => void): void {
    if (this.opts.failInFinalAfterMs !== undefined) {
      setTimeout(() => callback(new Error('memory sink could not commit')), this.opts.failInFinalAfterMs);
      return;
    }
    this.outputs.push({ kind: 'file', location: 'memory', rows: this.records.length, bytes: 0, sink: 'memory' });
    callback();
  }
}

function countingSource(count: number): { stream: Readable; pulled: () => number } {
  let pulled = 0;
  const stream = Readable.from(
    (function* () {
      for (let i = 1; i <= count; i++) {
        pulled++;
        yield { id: `P${String(i).padStart(7, '0')}`, n: i };
      }
    })(),
    { highWaterMark: 8 },
  );
  return { stream, pulled: () => pulled };
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tee-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('TeeSink', () => {
  it('delivers every record to every sink, in order, and lists all outputs', async () => {
    const a = new MemorySink();
    const b = new MemorySink({ delayMs: 1 });
    const tee = new TeeSink([a, b]);
    await pipeline(countingSource(200).stream, tee);
    expect(a.records).toHaveLength(200);
    expect(b.records).toEqual(a.records);
    expect(tee.outputs).toEqual([...a.outputs, ...b.outputs]);
  });

  it('the slowest sink sets the pace: the source is never far ahead of it', async () => {
    const fast = new MemorySink();
    const slow = new MemorySink({ delayMs: 2, highWaterMark: 2 });
    const source = countingSource(300);
    let maxLead = 0;
    const tee = new TeeSink([fast, slow]);
    const sample = setInterval(() => (maxLead = Math.max(maxLead, source.pulled() - slow.records.length)), 1);
    await pipeline(source.stream, tee);
    clearInterval(sample);
    // Buffers in between: the source's 8, the tee's 16, the slow sink's 2, plus records in flight.
    expect(maxLead).toBeLessThanOrEqual(40);
    expect(fast.records.length - slow.records.length).toBe(0);
    expect(slow.records).toHaveLength(300);
  });

  it('an error in one sink destroys the others: no output under a final name, no temp file', async () => {
    const events = new RunEvents();
    const ctx = { baseDir: dir, events };
    const jsonl = jsonlSink({ path: 'out/products.jsonl' }, ctx);
    const parquet = parquetSink({ path: 'out/products.parquet', columns: { id: 'string', n: 'int64' } }, ctx);
    const failing = new MemorySink({ failAt: 150 });
    const tee = new TeeSink([jsonl, parquet, failing], events);
    await expect(pipeline(countingSource(1000).stream, tee)).rejects.toThrow('memory sink fails at record 150');
    for (const s of [jsonl, parquet]) if (!s.closed) await new Promise((r) => s.once('close', r));
    expect(jsonl.destroyed && parquet.destroyed).toBe(true);
    expect(await readdir(join(dir, 'out'), { recursive: true }).catch(() => [])).toEqual([]);
    expect(tee.outputs).toEqual([]);
  });

  it('a sink failing at commit, after a sibling completed its data, publishes nothing', async () => {
    const events = new RunEvents();
    const warnings: string[] = [];
    events.on('warning', (w) => warnings.push(w.message));
    const jsonl = jsonlSink({ path: 'out/products.jsonl' }, { baseDir: dir, events });
    const late = new MemorySink({ failInFinalAfterMs: 100 });
    const tee = new TeeSink([jsonl, late], events);
    const committed: string[] = [];
    events.on('output', (o) => committed.push(o.location));
    await expect(pipeline(countingSource(50).stream, tee)).rejects.toThrow('memory sink could not commit');
    // The jsonl file, complete, waited for its sibling and was never published; its temp file is gone.
    expect(committed).toEqual([]);
    expect(await readdir(join(dir, 'out'))).toEqual([]);
    expect(tee.outputs).toEqual([]);
    expect(warnings).toEqual([]);
  });

  // The Parquet format no longer has a dead-letter output (issue 12: a value that does not fit its
  // column goes to _extra); what still applies is that nothing of the sink stays published.
  it('a Parquet sink held back while a sibling fails publishes nothing, with the misfit values it kept', async () => {
    const ctx = testContext({ baseDir: dir, stages: sinkStages });
    const warnings: string[] = [];
    ctx.events.on('warning', (w) => warnings.push(w.message));
    const committed: string[] = [];
    ctx.events.on('output', (o) => committed.push(o.location));
    const parquet = parquetSink({ path: 'out/p.parquet', columns: { id: 'string', n: 'int64' } }, ctx);
    const late = new MemorySink({ failInFinalAfterMs: 300 });
    const tee = new TeeSink([parquet, late], ctx.events);
    const records = Array.from({ length: 40 }, (_, i) => ({ id: `P${i}`, n: i % 10 === 0 ? 'not a number' : i }));
    await expect(pipeline(Readable.from(records), tee)).rejects.toThrow('memory sink could not commit');
    // The Parquet file waited for its sibling and was never published.
    expect(committed).toEqual([]);
    expect(await readdir(join(dir, 'out'))).toEqual([]);
    expect(warnings).toEqual([
      expect.stringMatching(
        /field "n" has a column, but this value \(string "not a number"\).*kept in the _extra JSON column/,
      ),
    ]);
  });

  it('is destroyed from outside (the run aborted): every sink is destroyed and cleans up', async () => {
    const ctx = { baseDir: dir };
    const jsonl = jsonlSink({ path: 'out/a.jsonl' }, ctx);
    const slow = new MemorySink({ delayMs: 5 });
    const tee = new TeeSink([jsonl, slow]);
    const source = new Readable({ objectMode: true, read() {} });
    const done = pipeline(source, tee);
    for (let i = 0; i < 20; i++) source.push({ id: i });
    await sleep(20);
    tee.destroy(new Error('stopped'));
    await expect(done).rejects.toThrow('stopped');
    if (!jsonl.closed) await new Promise((r) => jsonl.once('close', r));
    expect(slow.destroyed).toBe(true);
    expect(await readdir(join(dir, 'out')).catch(() => [])).toEqual([]);
  });
});
