// Where an encoded part's bytes go: a local file committed by rename
// (atomic-file.ts), an S3 object committed by completing its upload
// (storage/s3-object-upload.ts), or stdout. The encoders (JSONL lines, gzip, Parquet row
// groups) only see this interface.
import type { Writable } from 'node:stream';
import { StdoutClosedError } from '../../errors.js';
import type { OutputRecord } from '../../events.js';
import { writeWithBackpressure } from '../../storage/stream-write.js';

export interface ByteDestination {
  readonly kind: OutputRecord['kind'];
  /** Final path, `s3://bucket/key` or `-`. */
  readonly location: string;
  /** Bytes accepted so far. */
  readonly bytes: number;
  /**
   * Queues a chunk; returns a promise when the destination is above its high-water
   * mark, so the caller waits (backpressure) before writing more. The chunk must not be
   * modified afterwards.
   */
  write(chunk: Uint8Array): void | Promise<void>;
  /** Flushes and closes without making the output visible yet (local files, committed at the end of the run). */
  close?(): Promise<void>;
  /** Flushes everything and makes the bytes visible under the final name. */
  commit(): Promise<void>;
  /** Removes every trace of an uncommitted output (temp file, multipart upload). Idempotent. */
  abort(reason?: unknown): Promise<void>;
  /** Removes an output committed earlier in a run that then failed (best effort). */
  revoke?(): Promise<void>;
}

/** Standard output (`-`): written with backpressure, never ended (the process owns it). */
export class StdoutDestination implements ByteDestination {
  readonly kind = 'stdout' as const;
  readonly location = '-';
  bytes = 0;
  readonly #stream: Writable;
  /** Set once the stream errored: a reader that closed the pipe (EPIPE) or a destroyed stream. */
  #closed: StdoutClosedError | Error | undefined;
  readonly #onError = (err: Error) => {
    this.#closed ??= closedError(err);
  };

  constructor(stream: Writable = process.stdout) {
    this.#stream = stream;
    // Without a listener a closed pipe's 'error' would crash the process instead of stopping the run.
    stream.on('error', this.#onError);
  }

  write(chunk: Uint8Array): void | Promise<void> {
    this.#check();
    this.bytes += chunk.byteLength;
    const waiting = writeWithBackpressure(this.#stream, chunk);
    return waiting?.catch((err: unknown) => {
      throw closedError(err);
    });
  }

  /** Resolves once everything written so far has been handed to the OS. */
  commit(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#check();
      this.#stream.write('', (err) => (err ? reject(closedError(err)) : resolve()));
    }).finally(() => this.#stream.off('error', this.#onError));
  }

  async abort(): Promise<void> {
    // Bytes already on stdout cannot be taken back; the run's exit status tells the reader.
    this.#stream.off('error', this.#onError);
  }

  #check(): void {
    if (this.#closed) throw this.#closed;
    if (this.#stream.destroyed || this.#stream.writableEnded) throw new StdoutClosedError();
  }
}

/** EPIPE (and a write after it on the destroyed stream) means the reader left; other errors stay what they are. */
function closedError(err: unknown): Error {
  const code = (err as { code?: string } | undefined)?.code;
  if (code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED' || code === 'ERR_STREAM_WRITE_AFTER_END')
    return new StdoutClosedError({ cause: err });
  return err instanceof Error ? err : new Error(String(err));
}
