// Where an encoded part's bytes go: a local file committed by rename
// (atomic-file.ts), an S3 object committed by completing its upload
// (s3-object-upload.ts), or stdout. The encoders (JSONL lines, gzip, Parquet row
// groups) only see this interface.
import type { Writable } from 'node:stream';
import type { OutputRecord } from '../events.js';
import { writeWithBackpressure } from '../storage/stream-write.js';

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

  constructor(stream: Writable = process.stdout) {
    this.#stream = stream;
  }

  write(chunk: Uint8Array): void | Promise<void> {
    this.bytes += chunk.byteLength;
    return writeWithBackpressure(this.#stream, chunk);
  }

  /** Resolves once everything written so far has been handed to the OS. */
  commit(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#stream.write('', (err) => (err ? reject(err) : resolve()));
    });
  }

  async abort(): Promise<void> {
    // Bytes already on stdout cannot be taken back; the run's exit status tells the reader.
  }
}
