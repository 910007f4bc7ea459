// The merge state: the records of a table version as they arrived, `[key, record]` frames in key
// order (v8, gzipped), the merge input of the next run (ARCHITECTURE.md, "The table sink": why a
// state file and not the previous snapshot's Parquet). Written by `StateWriter`, read back by
// `readState`.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { deserialize } from 'node:v8';
import { createGunzip, createGzip } from 'node:zlib';
import { SinkError } from '../../errors.js';
import { frameBody, FrameLimitError, readFrameBodies, type Key } from './sorted-records.js';
import type { StagedFile } from './table-store.js';
import { TableLineage, type StoredLineage } from './table-lineage.js';

/** A record of the previous version's state file: the frame's body, `v8.serialize([key, record])`, and its values. */
export interface PreviousRecord {
  body: Uint8Array;
  key: Key;
  record: Record<string, unknown>;
  /** The run that last changed the key, when the state keeps it (lineage: true, table-lineage.ts). */
  lineage: StoredLineage | null;
}

export async function* emptyState(): AsyncGenerator<PreviousRecord> {}

/**
 * A state file's frame bodies (`v8.serialize([key, record])`), gunzipped, not decoded. `where` names
 * the file in the error a damaged or missing state becomes.
 */
export async function* readStateBodies(
  open: () => Promise<AsyncIterable<Uint8Array>>,
  where: string,
): AsyncGenerator<Buffer> {
  const gunzip = createGunzip();
  let piping: Promise<void> | undefined;
  try {
    const bytes = await open();
    piping = pipeline(Readable.from(bytes), gunzip);
    piping.catch(() => {});
    yield* readFrameBodies(gunzip);
  } catch (err) {
    gunzip.destroy();
    // A frame over the limit has a code of its own: the file is damaged or planted, not cut short.
    const code = err instanceof FrameLimitError ? err.code : 'table.state';
    throw new SinkError(
      `table: cannot read the previous version's state ${where} (${(err as Error).message}); restore it, or move the table away and start a new one`,
      { code, cause: err },
    );
  }
  await piping;
}

/** The previous version's state: each frame's body (copied as it is when the record stays) and what it holds. */
export async function* readState(bodies: AsyncIterable<Buffer>): AsyncGenerator<PreviousRecord> {
  for await (const body of bodies) {
    const decoded = deserialize(body) as [Key, Record<string, unknown>, ...unknown[]];
    yield { body, key: decoded[0], record: decoded[1], lineage: TableLineage.read(decoded) };
  }
}

/** Bytes of frames gathered before zlib takes them. */
const STATE_BATCH = 1 << 20;

/**
 * The merge state: [key, record] frames in key order, one gzip stream (level 1). zlib compresses
 * on the thread pool, beside the merge; two batch buffers, reused, take turns (one filled while
 * zlib reads the other), so the state allocates no buffer per batch.
 */
export class StateWriter {
  readonly #gzip = createGzip({ level: 1 });
  readonly #copying: Promise<void>;
  #batch = Buffer.allocUnsafe(STATE_BATCH);
  #spare = Buffer.allocUnsafe(STATE_BATCH);
  #used = 0;
  /** zlib has consumed the spare batch (it may be filled again). */
  #consumed: Promise<void> = Promise.resolve();

  constructor(staged: StagedFile) {
    this.#copying = (async () => {
      for await (const chunk of this.#gzip as AsyncIterable<Buffer>) {
        const pending = staged.file.write(chunk);
        if (pending) await pending;
      }
    })();
    this.#copying.catch(() => {});
  }

  /** Appends a record's frame; `body` is `v8.serialize([key, record])`. */
  async write(body: Uint8Array): Promise<void> {
    const size = 4 + body.length;
    if (this.#used + size > this.#batch.length) {
      await this.#flush();
      // A record larger than a batch goes alone.
      if (size > this.#batch.length) return this.#send(frameBody(body));
    }
    this.#batch.writeUInt32LE(body.length, this.#used);
    this.#batch.set(body, this.#used + 4);
    this.#used += size;
  }

  async #flush(): Promise<void> {
    if (this.#used === 0) return;
    const full = this.#batch.subarray(0, this.#used);
    await this.#consumed;
    [this.#batch, this.#spare] = [this.#spare, this.#batch];
    this.#used = 0;
    this.#consumed = this.#send(full);
    this.#consumed.catch(() => {});
  }

  #send(bytes: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#gzip.write(bytes, (err) => (err ? reject(err) : resolve()));
      // A failed file write ends the copy, and zlib would wait for a reader forever.
      this.#copying.catch(reject);
    });
  }

  /** Writes what is left and ends the gzip stream (an empty state is a valid, empty gzip). */
  async end(): Promise<void> {
    await this.#flush();
    await this.#consumed;
    this.#gzip.end();
    await this.#copying;
  }

  /** Stops zlib when the run fails before end(). */
  destroy(): void {
    this.#gzip.destroy();
  }
}
