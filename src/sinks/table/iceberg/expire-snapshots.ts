// Snapshot expiry, as one commit's updates (pyiceberg's `ExpireSnapshots`): the snapshots beyond
// the newest `keepSnapshots` go, and with `maxAgeMs` those older than that too (by count and by
// age: whichever keeps fewer; the new snapshot always stays), except those the caller names in `keep` (what a rollback may
// need) and those another ref names; the metadata log is bounded to match (files it still names
// stay readable for time travel).
import { PREVIOUS_VERSIONS_MAX } from './files-catalog.js';
import { refSnapshotIds } from './iceberg-commit.js';
import type { Snapshot, TableMetadata, TableUpdate } from './iceberg-types.js';

export class ExpireSnapshots {
  readonly #metadata: TableMetadata | undefined;
  readonly #keepSnapshots: number;
  readonly #keep: readonly number[];
  readonly #age: { maxAgeMs: number; now: Date } | undefined;

  constructor(
    metadata: TableMetadata | undefined,
    keepSnapshots: number,
    keep: readonly number[] = [],
    age?: { maxAgeMs: number; now: Date },
  ) {
    this.#metadata = metadata;
    this.#keepSnapshots = keepSnapshots;
    this.#keep = keep;
    this.#age = age;
  }

  /**
   * Older metadata files than the log keeps may name expired snapshots, whose manifest lists
   * garbage collection removes: the log keeps only versions whose current snapshot can still be kept.
   */
  logUpdates(): TableUpdate[] {
    const previousVersions = String(Math.max(1, this.#keepSnapshots - 1));
    if (this.#metadata?.properties?.[PREVIOUS_VERSIONS_MAX] === previousVersions) return [];
    return [{ action: 'set-properties', updates: { [PREVIOUS_VERSIONS_MAX]: previousVersions } }];
  }

  /** The removal of what expires once `added` is the newest snapshot (none: no update). */
  removals(added: Snapshot): TableUpdate[] {
    const metadata = this.#metadata;
    const oldest = this.#age ? this.#age.now.getTime() - this.#age.maxAgeMs : -Infinity;
    const kept = [...(metadata?.snapshots ?? []), added]
      .sort((a, b) => b['sequence-number'] - a['sequence-number'])
      .slice(0, this.#keepSnapshots)
      .filter((s) => s === added || s['timestamp-ms'] >= oldest)
      .map((s) => s['snapshot-id'])
      .concat(this.#keep, refSnapshotIds(metadata));
    const expired = (metadata?.snapshots ?? []).map((s) => s['snapshot-id']).filter((id) => !kept.includes(id));
    return expired.length > 0 ? [{ action: 'remove-snapshots', 'snapshot-ids': expired }] : [];
  }
}
