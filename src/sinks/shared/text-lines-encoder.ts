// Lines of text into one destination, batched, optionally gzip'd: the encoder of the
// line-based formats (JSON Lines, CSV).
import { createGzip, type Gzip } from 'node:zlib';
import type { ByteDestination } from './byte-destination.js';
import { writeWithBackpressure } from '../../storage/stream-write.js';
import type { PartEncoder } from './part-encoder.js';

const BATCH_CHARS = 64 * 1024;

/**
 * Writes items as lines of text into one destination (JSON Lines, CSV): `line` turns an item
 * into its text, newline included; `header`, when given, is written first. Lines are batched into
 * chunks of 64 Ki characters; with gzip the chunks go through one gzip stream whose output is
 * written with backpressure.
 *
 * `bytes` (used for maxBytes rotation) is exact for plain output (every line so far,
 * including the batch not yet handed over); for gzip it is the compressed bytes
 * produced so far, which trails the input by what zlib holds back.
 */
export class TextLinesEncoder<Item> implements PartEncoder<Item> {
  rows = 0;
  readonly #dest: ByteDestination;
  readonly #gzip: Gzip | undefined;
  /** Bytes of the lines handed over to the destination (or to gzip). */
  #flushedBytes = 0;
  #batch: string[] = [];
  /** Characters in the batch: it is handed over at BATCH_CHARS (a UTF-8 byte count per line cost as much as a tenth of JSON.stringify). */
  #batchChars = 0;
  /** Bytes of the batch's first `#counted` lines, counted when `bytes` was asked for (rotation by maxBytes). */
  #counted = 0;
  #countedBytes = 0;
  #gzipError: Error | undefined;
  #gzipDone: Promise<void> | undefined;
  readonly #line: (item: Item) => string;

  constructor(dest: ByteDestination, options: { gzip: boolean; line: (item: Item) => string; header?: string }) {
    this.#dest = dest;
    this.#line = options.line;
    if (options.header) this.#add(options.header);
    if (options.gzip) {
      const gzip = createGzip();
      this.#gzip = gzip;
      this.#gzipDone = new Promise<void>((resolve, reject) => {
        gzip.on('end', resolve);
        gzip.on('error', (err) => {
          this.#gzipError = err;
          reject(err);
        });
        // destroy() without an error emits neither 'end' nor 'error': an end() waiting on a
        // part that an abort destroyed must still settle, or the abort waits for it forever.
        gzip.on('close', () => reject(this.#gzipError ?? new Error('the gzip stream was closed before it ended')));
      });
      this.#gzipDone.catch(() => {});
      gzip.on('data', (chunk: Buffer) => {
        let pending: void | Promise<void>;
        try {
          pending = dest.write(chunk);
        } catch (err) {
          gzip.destroy(err as Error);
          return;
        }
        if (pending) {
          gzip.pause();
          pending.then(
            () => gzip.resume(),
            (err: Error) => gzip.destroy(err),
          );
        }
      });
    }
  }

  get bytes(): number {
    if (this.#gzip) return this.#dest.bytes;
    // The batch's lines are counted once each, when asked for: only a sink rotating by maxBytes asks.
    const batch = this.#batch;
    for (; this.#counted < batch.length; this.#counted++)
      this.#countedBytes += Buffer.byteLength(batch[this.#counted]!);
    return this.#flushedBytes + this.#countedBytes;
  }

  write(item: Item): void | Promise<void> {
    this.rows++;
    this.#add(this.#line(item));
    if (this.#batchChars >= BATCH_CHARS) return this.#flushBatch();
  }

  #add(line: string): void {
    this.#batch.push(line);
    this.#batchChars += line.length;
  }

  #flushBatch(): void | Promise<void> {
    if (this.#batch.length === 0) return;
    const chunk = Buffer.from(this.#batch.length === 1 ? this.#batch[0]! : this.#batch.join(''));
    this.#flushedBytes += chunk.length;
    this.#batch = [];
    this.#batchChars = 0;
    this.#counted = 0;
    this.#countedBytes = 0;
    if (this.#gzipError) throw this.#gzipError;
    return this.#gzip ? writeWithBackpressure(this.#gzip, chunk) : this.#dest.write(chunk);
  }

  async end(): Promise<void> {
    await this.#flushBatch();
    if (this.#gzip) {
      this.#gzip.end();
      await this.#gzipDone;
    }
  }

  destroy(): void {
    this.#gzip?.destroy();
  }
}
