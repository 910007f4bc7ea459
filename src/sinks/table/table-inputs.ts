// The merge's two inputs, on disk: this run's records, sorted in bounded runs spilled to a temp
// folder (sorted-records.ts), and the previous version's merge state (merge-state.ts), read once,
// or twice from a local copy when a full run checks its delete candidates first (delete-check.ts).
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { StageContext } from '../../core/stage.js';
import { emptyState, readState, readStateBodies, type PreviousRecord } from './merge-state.js';
import { checkDeleteCandidates, type DeleteCheck } from './delete-check.js';
import { ExternalSort, mergeSorted, type Key } from './sorted-records.js';
import type { IncomingRecord } from './table-merge.js';
import type { ResolvedConfig } from './table-options.js';
import type { TableStore } from './table-store.js';

export interface TableInputsDeps {
  config: ResolvedConfig;
  store: TableStore;
  ctx: StageContext;
  checkStopped(): void;
  progress(what: string, detail: Record<string, number>): void;
}

export class TableInputs {
  readonly #deps: TableInputsDeps;
  #tempDir: string | undefined;
  #sort: ExternalSort | undefined;
  /** A local copy of the previous state read from S3, when it is read twice (a full run checking deletes). */
  #stateCopy: string | undefined;

  constructor(deps: TableInputsDeps) {
    this.#deps = deps;
  }

  /** Makes the temp folder the sort spills to. */
  async open(): Promise<void> {
    this.#tempDir = await mkdtemp(path.join(tmpdir(), 'catalog-streams-sort-'));
    this.#sort = new ExternalSort(this.#tempDir, this.#deps.config.sortBufferBytes, (written) =>
      this.#deps.progress(`sorting the received records: ${written} written by merge passes`, { written }),
    );
  }

  /** Records received so far. */
  get count(): number {
    return this.#sort!.count;
  }

  add(key: Key, record: Record<string, unknown>): Promise<void> {
    return this.#sort!.add(key, record);
  }

  /** The check before a full run's merge (delete-check.ts), reading the state the merge reads. */
  checkDeletes(stateRel: string): Promise<DeleteCheck> {
    const { config, store, ctx } = this.#deps;
    const dir = this.#tempDir!;
    return checkDeleteCandidates({
      lookup: ctx.recordLookup,
      key: config.key,
      sortBufferBytes: config.sortBufferBytes,
      tempDir: dir,
      where: store.location(''),
      events: ctx.events,
      signal: ctx.signal,
      beforeRead: async () => {
        if (store.kind !== 'object') return;
        // Read twice: fetched once.
        const copy = path.join(dir, 'previous-state.v8.gz');
        await pipeline(await store.objects.readStream(stateRel), createWriteStream(copy));
        this.#stateCopy = copy;
      },
      stateBodies: () => this.#stateBodies(stateRel),
      extract: this.#sort!,
      checkStopped: () => this.#deps.checkStopped(),
      progress: (what, detail) => this.#deps.progress(what, detail),
    });
  }

  /** The previous version's records (none on a first run), in key order. */
  previous(stateRel: string | undefined): AsyncIterable<PreviousRecord> {
    return stateRel === undefined ? emptyState() : readState(this.#stateBodies(stateRel));
  }

  /** This run's records in key order, with what the delete check found joining them as later arrivals. */
  async *incoming(
    onReplaced: ((earlier: Uint8Array, later: Uint8Array) => void) | undefined,
    check: DeleteCheck | undefined,
  ): AsyncGenerator<IncomingRecord> {
    for await (const { next, from } of mergeSorted(this.#sort!.sorted(onReplaced), check?.found?.sorted()))
      yield {
        key: next.key,
        body: next.body,
        get record() {
          return next.record;
        },
        found: from === 'b',
      };
  }

  /** Removes the temp folder (the sort's runs, the candidates, the state copy). */
  async close(): Promise<void> {
    if (this.#tempDir) await rm(this.#tempDir, { recursive: true, force: true });
  }

  /** The previous version's state file, gunzipped, as frame bodies, not decoded. */
  #stateBodies(rel: string): AsyncGenerator<Buffer> {
    const { store } = this.#deps;
    const open = async () =>
      this.#stateCopy ? createReadStream(this.#stateCopy) : await store.objects.readStream(rel);
    return readStateBodies(open, store.location(rel));
  }
}
