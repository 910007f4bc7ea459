// Lines of text into one destination, batched, optionally gzip'd: the encoder of the
// line-based formats (JSON Lines, CSV).
import { createGzip, type Gzip } from 'node:zlib';
import type { ByteDestination } from './byte-destination.js';
import { writeWithBackpressure } from '../storage/stream-write.js';
import type { PartEncoder } from './part-encoder.js';

const BATCH_BYTES = 64 * 1024;

/**
 * Writes items as lines of text into one destination (JSON Lines, CSV): `line` turns an item
 * into its text, newline included; `header`, when given, is written first. Lines are batched into
 * 64 KiB chunks; with gzip the chunks go through one gzip stream whose output is
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
  #lineBytes = 0;
  #batch: string[] = [];
  #batchBytes = 0;
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
    return this.#gzip ? this.#dest.bytes : this.#lineBytes;
  }

  write(item: Item): void | Promise<void> {
    this.rows++;
    this.#add(this.#line(item));
    if (this.#batchBytes >= BATCH_BYTES) return this.#flushBatch();
  }

  #add(line: string): void {
    const size = Buffer.byteLength(line);
    this.#lineBytes += size;
    this.#batch.push(line);
    this.#batchBytes += size;
  }

  #flushBatch(): void | Promise<void> {
    if (this.#batch.length === 0) return;
    const chunk = Buffer.from(this.#batch.length === 1 ? this.#batch[0]! : this.#batch.join(''));
    this.#batch = [];
    this.#batchBytes = 0;
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
