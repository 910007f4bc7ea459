// The files of an Iceberg table that nothing kept refers to: what a killed run left (data files,
// manifests, a manifest list, a v<N+1>.metadata.json the version hint does not name) and what
// expired snapshots and trimmed metadata-log entries no longer need. The sink removes them
// under its lock, at the start of a run (before its commit needs those names) and after expiring.
//
// Kept: `version-hint.text`, the current metadata file and those its metadata-log names, and for
// every snapshot the current metadata keeps: its manifest list, the manifests it lists, and the
// data files those list as live (ADDED or EXISTING; a DELETED entry records a file the snapshot
// no longer reads). Locally, a killed writer's hidden temp files are in the set too. A file the
// metadata names but that cannot be read stops the walk with an error: on a broken table nothing
// is called garbage.
import type { IcebergTableRef, LoadedTable } from './iceberg-catalog.js';
import { VERSION_HINT } from './files-catalog.js';
import { DELETED, ownName, readAvro, relativeName, type ManifestEntry, type ManifestFile } from './manifests.js';

/** The folders of the table root that Iceberg files live in (anything else there is not ours to judge). */
const FOLDERS = ['metadata/', 'data/'];

/**
 * Store-relative names of every file under the table's `metadata/` and `data/` that `loaded`
 * (the table as the catalog has it now; undefined: no table yet) does not keep, sorted.
 */
export async function unreferenced(table: IcebergTableRef, loaded: LoadedTable | undefined): Promise<string[]> {
  const kept = new Set<string>();
  if (loaded) {
    const keep = (uri: string): void => {
      const rel = relativeName(table.location, uri);
      if (rel !== undefined) kept.add(rel);
    };
    kept.add(VERSION_HINT);
    keep(loaded.metadataLocation);
    for (const entry of loaded.metadata['metadata-log'] ?? []) keep(entry['metadata-file']);
    const own = (uri: string): string => ownName(table.location, uri);
    // An append's manifest list names every earlier manifest again: each is read once.
    const manifestsRead = new Set<string>();
    for (const snapshot of loaded.metadata.snapshots ?? []) {
      const list = own(snapshot['manifest-list']);
      kept.add(list);
      for (const record of (await readAvro(table.store, list)).records) {
        const manifest = own((record as unknown as ManifestFile).manifest_path);
        kept.add(manifest);
        if (manifestsRead.has(manifest)) continue;
        manifestsRead.add(manifest);
        for (const e of (await readAvro(table.store, manifest)).records as unknown as ManifestEntry[])
          if (e.status !== DELETED) keep(e.data_file.file_path);
      }
    }
  }
  const garbage: string[] = [];
  for (const folder of FOLDERS)
    for await (const { rel } of table.store.list(folder)) if (!kept.has(rel)) garbage.push(rel);
  return garbage.sort();
}
