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
 * What a table's manifest lists and manifests name, remembered across walks of one run: both are
 * written once under names of their own and never replaced, so the walk after a commit reads only
 * the new snapshot's files instead of every kept snapshot's again (a changes table keeps one
 * snapshot per run, and on S3 each is a GET). What is kept is the names the walk needs, not the
 * decoded records.
 */
export class ManifestNames {
  /** manifest list -> its manifests' own names */
  readonly #lists = new Map<string, string[]>();
  /** manifest -> the table-relative names of the data files it holds live (outside the table root: left out) */
  readonly #manifests = new Map<string, string[]>();

  async manifestsOf(table: IcebergTableRef, list: string): Promise<string[]> {
    let names = this.#lists.get(list);
    if (!names) {
      names = (await readAvro(table.store, list)).records.map((record) =>
        ownName(table.location, (record as unknown as ManifestFile).manifest_path),
      );
      this.#lists.set(list, names);
    }
    return names;
  }

  async liveFilesOf(table: IcebergTableRef, manifest: string): Promise<string[]> {
    let names = this.#manifests.get(manifest);
    if (!names) {
      names = [];
      for (const e of (await readAvro(table.store, manifest)).records as unknown as ManifestEntry[]) {
        if (e.status === DELETED) continue;
        const rel = relativeName(table.location, e.data_file.file_path);
        if (rel !== undefined) names.push(rel);
      }
      this.#manifests.set(manifest, names);
    }
    return names;
  }
}

/**
 * Store-relative names of every file under the table's `metadata/` and `data/` that `loaded`
 * (the table as the catalog has it now; undefined: no table yet) does not keep, sorted. `names`:
 * what earlier walks of the same table in this run read (a new one reads everything). Not a
 * proof that the files are garbage: another engine's files are unreferenced too; the sink
 * removes only what its journals name (storage/write-journal.ts).
 */
export async function unreferenced(
  table: IcebergTableRef,
  loaded: LoadedTable | undefined,
  names: ManifestNames = new ManifestNames(),
): Promise<string[]> {
  const kept = await referenced(table, loaded, names);
  const garbage: string[] = [];
  for (const folder of FOLDERS)
    for await (const { rel } of table.store.list(folder)) if (!kept.has(rel)) garbage.push(rel);
  return garbage.sort();
}

/**
 * Store-relative names of the files `loaded` keeps (undefined: none): the version hint, the
 * current metadata file and its log, and every kept snapshot's manifest list, manifests and live
 * data files (snapshots a tag or branch of another engine names are kept snapshots too).
 */
export async function referenced(
  table: IcebergTableRef,
  loaded: LoadedTable | undefined,
  names: ManifestNames = new ManifestNames(),
): Promise<Set<string>> {
  const kept = new Set<string>();
  if (loaded) {
    const keep = (uri: string): void => {
      const rel = relativeName(table.location, uri);
      if (rel !== undefined) kept.add(rel);
    };
    kept.add(VERSION_HINT);
    keep(loaded.metadataLocation);
    for (const entry of loaded.metadata['metadata-log'] ?? []) keep(entry['metadata-file']);
    // An append's manifest list names every earlier manifest again: each is walked once.
    const manifestsWalked = new Set<string>();
    for (const snapshot of loaded.metadata.snapshots ?? []) {
      const list = ownName(table.location, snapshot['manifest-list']);
      kept.add(list);
      for (const manifest of await names.manifestsOf(table, list)) {
        kept.add(manifest);
        if (manifestsWalked.has(manifest)) continue;
        manifestsWalked.add(manifest);
        for (const rel of await names.liveFilesOf(table, manifest)) kept.add(rel);
      }
    }
  }
  return kept;
}
