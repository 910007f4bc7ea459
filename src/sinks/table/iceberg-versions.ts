// The history of a files-only Iceberg table (`catalog-streams history`): its versions read from
// the snapshots `current/` keeps, without a run of the table sink.
import type { ObjectStore } from '../../storage/object-store.js';
import type { TableVersion } from './hive-layout.js';
import { FilesCatalog } from './iceberg/files-catalog.js';
import { RUN_ID, storeUri } from './iceberg-layout.js';

/**
 * The versions of a files-only Iceberg layout, from the snapshots `current/` keeps (oldest
 * first), as `catalog-streams history` shows them; undefined when `current` holds no table.
 * The data files are not listed: engines read them through the table.
 */
export async function icebergTableVersions(current: ObjectStore): Promise<TableVersion[] | undefined> {
  const loaded = await new FilesCatalog().load({ name: 'current', location: storeUri(current), store: current });
  if (!loaded) return undefined;
  return (loaded.metadata.snapshots ?? []).map((snapshot) => {
    const summary = snapshot.summary;
    const count = (name: string) => Number(summary[`catalog-streams.${name}`] ?? 0);
    const mode = summary['catalog-streams.mode'];
    return {
      runId: summary[RUN_ID] ?? String(snapshot['snapshot-id']),
      date: summary['catalog-streams.date'] ?? new Date(snapshot['timestamp-ms']).toISOString().slice(0, 10),
      mode: mode === 'first' || mode === 'incremental' ? mode : 'full',
      startedAt: summary['catalog-streams.started-at'] ?? new Date(snapshot['timestamp-ms']).toISOString(),
      committedAt: new Date(snapshot['timestamp-ms']).toISOString(),
      schemaHash: summary['catalog-streams.schema-hash'] ?? '',
      rows: count('rows'),
      counts: {
        inserted: count('inserted'),
        updated: count('updated'),
        deleted: count('deleted'),
        unchanged: count('unchanged'),
      },
      ...(summary['catalog-streams.shared-keys'] ? { sharedKeys: count('shared-keys') } : {}),
      snapshot: [],
      changes: [],
    };
  });
}
