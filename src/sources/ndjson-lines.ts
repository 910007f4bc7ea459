// The lines of an NDJSON body, for the stream reader (ndjson-stream.ts): bytes in, one string per
// line out (object mode), split at `\n` with one `\r` before it dropped (split2's default
// `/\r?\n/`). It also shows each chunk of bytes to `onChunk` before decoding it (the reader notes
// the body's last byte and checks the bytes are UTF-8) and tells `onEnd` when the body ended.
//
// Why not split2: this is the stream path's per-byte work, and the JSONL extract is held to 0.8 of
// a hand-written client (docs/performance.md). split2 runs a regex split over every chunk and needs
// a tap in front of it, one more stream hop per chunk; here the lines are found with `indexOf`, in
// one stage.
//
// The same contract as split2's: a line is delivered once its `\n` arrived; the piece after the
// last `\n` is delivered at the end of the body (even without a newline: the reader decides
// whether it was cut off); an unfinished piece longer than `maxLength` characters fails the
// stream with LINE_OVERFLOW (a complete line may be longer: the reader measures those itself).
import { StringDecoder } from 'node:string_decoder';
import { Transform, type TransformCallback } from 'node:stream';

/** The message of the error an unfinished line longer than `maxLength` fails the stream with. */
export const LINE_OVERFLOW = 'maximum buffer reached';

const NEWLINE = '\n';
const CR = 0x0d;

export interface NdjsonLinesOptions {
  /** Longest unfinished line held, in characters. */
  maxLength: number;
  /** Sees every chunk of bytes as it arrives, before it is decoded. */
  onChunk?: (chunk: Buffer) => void;
  /** The body ended: called before the piece after its last newline is delivered. */
  onEnd?: () => void;
}

export class NdjsonLines extends Transform {
  readonly #decoder = new StringDecoder('utf8');
  readonly #maxLength: number;
  readonly #onChunk: ((chunk: Buffer) => void) | undefined;
  readonly #onEnd: (() => void) | undefined;
  /** The text after the last newline so far. */
  #rest = '';

  constructor(options: NdjsonLinesOptions) {
    super({ readableObjectMode: true });
    this.#maxLength = options.maxLength;
    this.#onChunk = options.onChunk;
    this.#onEnd = options.onEnd;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#onChunk?.(chunk);
    const text = this.#rest + this.#decoder.write(chunk);
    let from = 0;
    for (let nl = text.indexOf(NEWLINE); nl >= 0; nl = text.indexOf(NEWLINE, from)) {
      const end = nl > from && text.charCodeAt(nl - 1) === CR ? nl - 1 : nl;
      this.push(text.slice(from, end));
      from = nl + 1;
    }
    this.#rest = from === 0 ? text : text.slice(from);
    if (this.#rest.length > this.#maxLength) return callback(new Error(LINE_OVERFLOW));
    callback();
  }

  override _flush(callback: TransformCallback): void {
    this.#onEnd?.();
    const last = this.#rest + this.#decoder.end();
    this.#rest = '';
    if (last) this.push(last);
    callback();
  }
}
