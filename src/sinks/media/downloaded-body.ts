// One download's body on its way to the store. A small body (most images) is held in memory and
// published after the download, so the download slot is free again as soon as the last byte
// arrived: the host sees `concurrency` requests at once while the temp file, fsync and rename of
// finished files go on beside them (the storing no longer stretches each slot; at 10 ms per file
// it took as long as the download). A body past MEMORY_BYTES is staged in the store at that point
// and streamed there, so memory stays bounded whatever the file size. Either way the bytes reach
// the final name only through the store's stage (temp name, fsync, atomic rename; on S3 one
// PUT), and a failed attempt discards them: the previous copy stays.
import type { ObjectStore, ObjectWriteOptions, StagedObject } from '../../storage/object-store.js';
import { s3Status } from '../../storage/s3-client.js';

/** The most bytes of one body held in memory before it is staged in the store. */
export const MEMORY_BYTES = 512 * 1024;

export class DownloadedBody {
  readonly #store: ObjectStore;
  readonly #rel: string;
  readonly #options: ObjectWriteOptions;
  #chunks: Uint8Array[] = [];
  #held = 0;
  #staged: StagedObject | undefined;

  constructor(store: ObjectStore, rel: string, options: ObjectWriteOptions) {
    this.#store = store;
    this.#rel = rel;
    this.#options = options;
  }

  write(chunk: Uint8Array): void | Promise<void> {
    if (this.#staged) return this.#staged.file.write(chunk);
    this.#chunks.push(chunk);
    this.#held += chunk.byteLength;
    if (this.#held > MEMORY_BYTES) return this.#stage();
  }

  /**
   * Makes the bytes visible under the final name. A body in memory is written in one go (locally a
   * temp file, fsync, rename; on S3 one PUT, conditional when `ifAbsent`); a staged one is finished.
   * False when the conditional put found an object at the name (not the mirror's: left as it is).
   */
  async publish(): Promise<boolean> {
    if (!this.#staged) return this.#writeWhole();
    const staged = this.#staged;
    try {
      await staged.finish();
      await staged.commit();
      return true;
    } catch (err) {
      await staged.discard().catch(() => {});
      // A staged upload completes with If-None-Match too: 412 (409: another conditional put under way).
      const status = s3Status((err as { cause?: unknown }).cause);
      if (status === 412 || status === 409) return false;
      throw err;
    }
  }

  async #writeWhole(): Promise<boolean> {
    const body = Buffer.concat(this.#chunks);
    this.#chunks = [];
    if (this.#options.ifAbsent && this.#store.kind === 'object')
      return this.#store.putIfAbsent(this.#rel, body, this.#options);
    await this.#store.write(this.#rel, body, this.#options);
    return true;
  }

  async discard(): Promise<void> {
    this.#chunks = [];
    const staged = this.#staged;
    this.#staged = undefined;
    await staged?.discard();
  }

  async #stage(): Promise<void> {
    const staged = await this.#store.stage(this.#rel, this.#options);
    this.#staged = staged;
    const chunks = this.#chunks;
    this.#chunks = [];
    for (const chunk of chunks) await staged.file.write(chunk);
  }
}
