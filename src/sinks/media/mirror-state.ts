// The mirror's own memory, `_mirror/state.json` beside its table: per stored name what it stored
// (bytes, sha256, type), the validators the host sent and when the name was seen and tried. It is
// replaced atomically every few files and at the end, so a killed run resumes without fetching
// again what it already stored; a file published after the last save is found by its name in a
// write journal (media-mirror.ts, "adopt"). The media table is written from it.
import type { ObjectStore } from '../../storage/object-store.js';
import type { MediaFileType } from './media-targets.js';

export const STATE_REL = '_mirror/state.json';
const FORMAT = 'catalog-streams.media-mirror';
/** 100,000 files at about 600 bytes each, with room. */
const MAX_STATE_BYTES = 256 * 1024 * 1024;

export type AttemptStatus = 'stored' | 'unchanged' | 'skipped' | 'failed';

export interface FileState {
  url: string;
  mediaId: string | null;
  type: MediaFileType;
  format: string;
  productIds: string[];
  /** A good copy is published under the name (set by the first good download, kept through failures). */
  stored: boolean;
  contentType: string | null;
  bytes: number | null;
  sha256: string | null;
  etag: string | null;
  lastModified: string | null;
  /** Unix milliseconds. */
  firstSeen: number;
  lastSeen: number;
  lastAttemptAt: number | null;
  lastStatus: AttemptStatus;
  lastError: string | null;
  /** Failed attempts in a row (the next runs retry; the count shows how long it has failed). */
  failures: number;
  /**
   * Unix milliseconds of the last failed attempt (null once one succeeds): the next run asks for
   * the file only after a backoff from here (media-mirror.ts, `retryDelayAfter`). Absent in states
   * written before it existed: read as null (retried at once).
   */
  lastFailedAt?: number | null;
}

interface StateDocument {
  format: typeof FORMAT;
  version: 1;
  files: Record<string, FileState>;
}

export class MirrorState {
  readonly files: Map<string, FileState>;
  /** Whether a state document was there (false: a first run). */
  readonly found: boolean;
  readonly #store: ObjectStore;
  #saving: Promise<void> = Promise.resolve();

  private constructor(store: ObjectStore, files: Map<string, FileState>, found: boolean) {
    this.#store = store;
    this.files = files;
    this.found = found;
  }

  /** The state in `store`, or an empty one; a document of another form is an error (never overwritten blindly). */
  static async load(store: ObjectStore): Promise<MirrorState> {
    const text = await store.readText(STATE_REL, { maxBytes: MAX_STATE_BYTES });
    if (text === undefined) return new MirrorState(store, new Map(), false);
    const doc = JSON.parse(text) as Partial<StateDocument>;
    if (doc.format !== FORMAT || doc.version !== 1 || typeof doc.files !== 'object' || doc.files === null)
      throw new Error(`${store.location(STATE_REL)} is not a media mirror state (format ${FORMAT}, version 1)`);
    return new MirrorState(store, new Map(Object.entries(doc.files)), true);
  }

  /** Writes the whole state atomically; saves run one after another, the last one whole. */
  save(): Promise<void> {
    const files = Object.fromEntries([...this.files].sort(([a], [b]) => (a < b ? -1 : 1)));
    const doc: StateDocument = { format: FORMAT, version: 1, files };
    const body = `${JSON.stringify(doc)}\n`;
    const write = this.#saving.then(() => this.#store.write(STATE_REL, body, { contentType: 'application/json' }));
    this.#saving = write.catch(() => {});
    return write;
  }
}
