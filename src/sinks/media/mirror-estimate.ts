// What `run --dry-run` can say about a media mirror without reading a record: the dry run reads
// no records, so which files the catalog names this time is unknown; the mirror's state says what
// earlier runs saw and how each ended. From it: the known files not stored yet (to fetch, or
// waiting for their backoff), the stored ones a rerun asks again (conditional GETs), and what is
// left unknown, said plainly.
import type { ObjectStore } from '../../storage/object-store.js';
import { backingOff, type BackoffSettings } from './media-mirror.js';
import { storedName } from './media-targets.js';
import { type FileState, MirrorState, STATE_REL } from './mirror-state.js';

export interface MirrorEstimate {
  /** Where the state is (`<path>/_mirror/state.json`). */
  state: string;
  /** False when there is no state yet: every file the records name is new. */
  stateFound: boolean;
  /** Files the state knows (earlier runs saw them named). */
  known: number;
  stored: number;
  storedBytes: number;
  /** Known files without a good copy that this run would ask for. */
  toFetch: number;
  /** Those files' bytes estimated at the mean size of the stored files of the same type (null: no stored file to judge by). */
  estimatedBytesToFetch: number | null;
  /** Known files without a good copy still within their backoff (failed before): not asked this run. */
  waiting: number;
  /** Stored files a run asks again with a conditional GET (no download while unchanged). */
  revalidated: number;
  /** Their bytes as stored: what they would cost if all had changed. */
  revalidatedBytes: number;
  /** What the estimate cannot know, for a person. */
  unknown: string;
}

export interface EstimateSettings extends BackoffSettings {
  revalidate: 'auto' | 'always';
}

const UNKNOWN =
  'files the records name that no earlier run saw (new products or media, new formats) are not counted: a dry run reads no records, so their number and bytes are known only once the run reads them';

/** The estimate from the state in `store` (read only; nothing is written). */
export async function estimateMirror(
  store: ObjectStore,
  settings: EstimateSettings,
  now = Date.now(),
): Promise<MirrorEstimate> {
  const state = await MirrorState.load(store);
  const found = state.found;
  const e: MirrorEstimate = {
    state: store.location(STATE_REL),
    stateFound: found,
    known: state.files.size,
    stored: 0,
    storedBytes: 0,
    toFetch: 0,
    estimatedBytesToFetch: null,
    waiting: 0,
    revalidated: 0,
    revalidatedBytes: 0,
    unknown: found ? UNKNOWN : `no state yet: every file the records name is new; ${UNKNOWN}`,
  };
  const missing: FileState[] = [];
  for (const f of state.files.values()) {
    if (f.stored) {
      e.stored++;
      e.storedBytes += f.bytes ?? 0;
      if (revalidates(f, settings)) {
        e.revalidated++;
        e.revalidatedBytes += f.bytes ?? 0;
      }
    } else if (backingOff(f, settings, now)) e.waiting++;
    else missing.push(f);
  }
  e.toFetch = missing.length;
  e.estimatedBytesToFetch = bytesByMean(state, missing);
  return e;
}

/** A stored file is asked again unless `auto` and its URL is a content name (its bytes cannot change). */
function revalidates(f: FileState, settings: EstimateSettings): boolean {
  if (settings.revalidate === 'always') return true;
  try {
    return !storedName(new URL(f.url)).contentName;
  } catch {
    return true;
  }
}

/** The missing files' bytes at the mean stored size of their type; null when a type has no stored file. */
function bytesByMean(state: MirrorState, missing: readonly FileState[]): number | null {
  if (missing.length === 0) return 0;
  const sizes = new Map<string, { total: number; n: number }>();
  for (const f of state.files.values()) {
    if (!f.stored || f.bytes === null) continue;
    const s = sizes.get(f.type) ?? { total: 0, n: 0 };
    s.total += f.bytes;
    s.n++;
    sizes.set(f.type, s);
  }
  let bytes = 0;
  for (const f of missing) {
    const s = sizes.get(f.type);
    if (!s) return null;
    bytes += s.total / s.n;
  }
  return Math.round(bytes);
}
