// An ObjectStore whose writes are journaled: every name is recorded in the run's write journal
// (storage/write-journal.ts) before the file is created, and on S3 written with the metadata
// naming the run. Code that writes through a store it was given (the Iceberg catalog writing
// `vN.metadata.json`, the commit writing manifests) then leaves proof of ownership without
// knowing about journals. Reads, lists and removes pass through unchanged.
import type { ObjectStore, ObjectWriteOptions, ReadTextOptions, StagedObject, StoredObject } from './object-store.js';
import type { WriteJournal } from './write-journal.js';

export class JournaledStore implements ObjectStore {
  readonly inner: ObjectStore;
  readonly #journal: () => WriteJournal | undefined;
  readonly #under: string;

  /**
   * `journal`: the run's journal once opened (before: writes are not journaled, e.g. a read-only
   * use); `under`: where `inner`'s root is under the journal's store ('' or a folder with "/").
   */
  constructor(inner: ObjectStore, journal: () => WriteJournal | undefined, under = '') {
    this.inner = inner;
    this.#journal = journal;
    this.#under = under;
  }

  get kind(): 'file' | 'object' {
    return this.inner.kind;
  }

  location(rel: string): string {
    return this.inner.location(rel);
  }

  readText(rel: string, options?: ReadTextOptions): Promise<string | undefined> {
    return this.inner.readText(rel, options);
  }

  readStream(rel: string): Promise<AsyncIterable<Buffer>> {
    return this.inner.readStream(rel);
  }

  /** The object's S3 user metadata, when the store has it (S3ObjectStore.metadata). */
  metadata(rel: string): Promise<Record<string, string> | undefined> {
    const metadata = (this.inner as { metadata?: (rel: string) => Promise<Record<string, string> | undefined> })
      .metadata;
    return metadata ? metadata.call(this.inner, rel) : Promise.resolve(undefined);
  }

  async #recorded(rel: string, options: ObjectWriteOptions | undefined): Promise<ObjectWriteOptions | undefined> {
    const journal = this.#journal();
    if (!journal) return options;
    await journal.record([`${this.#under}${rel}`]);
    return journal.writeOptions(options);
  }

  async write(rel: string, body: string | Uint8Array, options?: ObjectWriteOptions): Promise<void> {
    return this.inner.write(rel, body, await this.#recorded(rel, options));
  }

  async putIfAbsent(rel: string, body: string | Uint8Array, options?: ObjectWriteOptions): Promise<boolean> {
    return this.inner.putIfAbsent(rel, body, await this.#recorded(rel, options));
  }

  async stage(rel: string, options?: ObjectWriteOptions): Promise<StagedObject> {
    return this.inner.stage(rel, await this.#recorded(rel, options));
  }

  list(prefix: string, maxDepth?: number): AsyncIterable<StoredObject> {
    return this.inner.list(prefix, maxDepth);
  }

  remove(rel: string): Promise<void> {
    return this.inner.remove(rel);
  }

  removeAbandoned(prefix: string, accept: (finalRel: string) => boolean, maxDepth?: number): Promise<string[]> {
    return this.inner.removeAbandoned(prefix, accept, maxDepth);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
