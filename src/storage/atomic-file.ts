// A local output file that appears under its final name only when complete.
//
// Bytes go to `.<name>.<host>-<pid>-<random>.tmp` in the same folder (hidden, so globs such as
// `*.parquet` never pick it up, and on the same file system so the rename is atomic). The name is
// the one every local atomic write uses (storage/local-file.ts): its random part cannot be guessed,
// and the file is opened with `wx` (O_EXCL), so nothing planted at that name, a symlink included,
// is followed or overwritten. The bytes are streamed here, so only the name is shared.
// `close()` flushes, fsyncs and closes it; `commit()` renames it over the final name.
// `abort()` removes the temp file; after an abort nothing exists under the final name
// that this object created. A process killed with SIGKILL can leave a `.tmp` behind,
// never a partial file under the final name; the next run of the dataset removes it
// (sinks/local/local-dataset.ts), knowing from its name whether its writer still runs.
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { rename, unlink } from 'node:fs/promises';
import { makeFolder } from './make-folder.js';
import { dirname } from 'node:path';
import { SinkError, StorageError } from '../errors.js';
import { tempPathFor } from './local-file.js';
import { storageStep } from './step-hook.js';
import { waitForDrain, writeWithBackpressure } from './stream-write.js';

const STREAM_HIGH_WATER_MARK = 256 * 1024;

export interface AtomicFileOptions {
  /**
   * Checks the folders above the file before it is created and before a committed file is removed
   * (a store's no-symlink rule, storage/no-symlink.ts). The rename of the unguessable temp name
   * needs none: through a folder swapped for a link meanwhile it finds no temp file and fails.
   */
  check?: () => Promise<void>;
  /**
   * Makes the folder ready instead of `check` and making it here: a store that remembers the
   * folders it checked (storage/checked-folders.ts) spends one lstat per file, not one per level.
   */
  folder?: () => Promise<void>;
}

/** A ByteDestination (sinks/shared/byte-destination.ts) by shape: storage knows nothing of sinks. */
export class AtomicFile {
  readonly kind = 'file' as const;
  readonly location: string;
  readonly tempPath: string;
  bytes = 0;
  readonly #stream: WriteStream;
  readonly #check: (() => Promise<void>) | undefined;
  #state: 'open' | 'closed' | 'committed' | 'aborted' = 'open';
  #closing: Promise<void> | undefined;

  private constructor(location: string, tempPath: string, stream: WriteStream, check?: () => Promise<void>) {
    this.location = location;
    this.tempPath = tempPath;
    this.#stream = stream;
    this.#check = check;
  }

  /** Creates the folder if needed and opens a fresh temp file next to `finalPath`. */
  static async create(finalPath: string, options: AtomicFileOptions = {}): Promise<AtomicFile> {
    const dir = dirname(finalPath);
    const tempPath = tempPathFor(finalPath);
    // A link where one of our folders should be is refused as it is (storage.symlink), not as a sink error.
    if (!options.folder) await options.check?.();
    try {
      await (options.folder ?? (() => makeFolder(dir)))();
      // `flush`: fsync before close, so a committed file survives a crash right after the rename.
      const stream = createWriteStream(tempPath, { flags: 'wx', flush: true, highWaterMark: STREAM_HIGH_WATER_MARK });
      // Errors surface through write()/close(); keep an unobserved one from crashing the process.
      stream.on('error', () => {});
      await once(stream, 'ready');
      return new AtomicFile(finalPath, tempPath, stream, options.check);
    } catch (err) {
      if (err instanceof StorageError) throw err;
      throw new SinkError(`cannot create ${finalPath}: ${(err as Error).message}`, { code: 'sink.file', cause: err });
    }
  }

  write(chunk: Uint8Array): void | Promise<void> {
    if (this.#state !== 'open')
      throw new SinkError(`write to ${this.location} after it was closed`, { code: 'sink.file' });
    this.bytes += chunk.byteLength;
    return writeWithBackpressure(this.#stream, chunk);
  }

  /** Flushes, fsyncs and closes the temp file (still under its temp name). */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    const stream = this.#stream;
    try {
      if (stream.writableNeedDrain) await waitForDrain(stream);
      const closed = once(stream, 'close');
      stream.end();
      await closed;
      if (stream.errored) throw stream.errored;
      this.#state = 'closed';
    } catch (err) {
      throw new SinkError(`cannot write ${this.location}: ${(err as Error).message}`, {
        code: 'sink.file',
        cause: err,
      });
    }
  }

  async commit(): Promise<void> {
    if (this.#state === 'committed') return;
    await this.close();
    try {
      storageStep('rename', this.location);
      await rename(this.tempPath, this.location);
    } catch (err) {
      throw new SinkError(`cannot rename ${this.tempPath} to ${this.location}: ${(err as Error).message}`, {
        code: 'sink.file',
        cause: err,
      });
    }
    this.#state = 'committed';
  }

  async abort(): Promise<void> {
    if (this.#state === 'committed' || this.#state === 'aborted') return;
    this.#state = 'aborted';
    if (!this.#stream.closed) {
      const closed = once(this.#stream, 'close').catch(() => {});
      this.#stream.destroy();
      await closed;
    }
    await unlink(this.tempPath).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }

  /** Removes the committed file again (a later part of the run failed). */
  async revoke(): Promise<void> {
    if (this.#state !== 'committed') return this.abort();
    await this.#check?.();
    storageStep('remove', this.location);
    await unlink(this.location).catch(() => {});
  }
}
