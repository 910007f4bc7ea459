// The row positions of an Iceberg `current/` snapshot (merge-positions.ts), as the snapshot's
// summary names them: read back for the next run's row delta only when the file's data and delete
// files are exactly the snapshot's live ones (ARCHITECTURE.md, "The table sink: Iceberg").
import type { ObjectStore } from '../../storage/object-store.js';
import type { IcebergTableRef } from './iceberg/iceberg-catalog.js';
import type { Snapshot } from './iceberg/iceberg-types.js';
import { DELETED, readSnapshotManifests } from './iceberg/manifests.js';
import { decodePositions, type MergePositions } from './merge-positions.js';

/** The summary key naming the positions beside the merge state: the next run writes position deletes from them. */
export const POSITIONS = 'catalog-streams.positions';
/** The name a positions file has (a summary naming anything else names no file of this table). */
const POSITIONS_FILE = /^_table\/positions-[A-Za-z0-9][\w.-]*\.bin\.gz$/;

/** The positions file a snapshot names, relative to the table's root, when it is one. */
export function positionsOf(snapshot: Snapshot): string | undefined {
  const named = snapshot.summary[POSITIONS];
  return typeof named === 'string' && POSITIONS_FILE.test(named) ? named : undefined;
}

/**
 * Each state frame's data file and position, when the snapshot names a positions file whose data
 * and delete files are exactly the snapshot's live ones; else none: the run writes every row again
 * (a table another engine rewrote, or one an earlier version wrote). `root` is the store of the
 * table's root (where `_table/` is); `uri` a root-relative name as the manifests write it.
 */
export async function snapshotPositions(
  root: ObjectStore,
  table: IcebergTableRef,
  snapshot: Snapshot,
  uri: (rel: string) => string,
): Promise<MergePositions | undefined> {
  const rel = positionsOf(snapshot);
  if (!rel) return undefined;
  const chunks: Buffer[] = [];
  for await (const chunk of await root.readStream(rel)) chunks.push(chunk);
  const delta = decodePositions(
    Buffer.concat(chunks),
    Number(snapshot.summary['catalog-streams.rows']),
    root.location(rel),
  );
  const manifests = await readSnapshotManifests(table.store, table.location, snapshot['manifest-list']);
  const live = manifests.flatMap((m) => m.entries).filter((e) => e.status !== DELETED);
  const same = (content: 0 | 1, paths: readonly string[]) => {
    const have = live
      .filter((e) => e.data_file.content === content)
      .map((e) => e.data_file.file_path)
      .sort();
    const want = paths.map(uri).sort();
    return have.length === want.length && have.every((p, i) => p === want[i]);
  };
  if (
    !same(
      0,
      delta.files.map((f) => f.path),
    ) ||
    !same(
      1,
      delta.deleteFiles.map((d) => d.path),
    )
  )
    return undefined;
  return delta;
}
