// The catalog that is only files, as Iceberg's "file system tables" (spec: Commit Conflict
// Resolution, File System Tables): `metadata/v<N>.metadata.json` files beside the data and
// `metadata/version-hint.text` naming the current N, which readers without a catalog (DuckDB's
// iceberg_scan, icebird, Spark's Hadoop tables) follow.
//
// A commit creates v<N+1> only if no file has that name (`putIfAbsent`: an exclusive create
// locally, a conditional PUT on S3), so of two writers built on vN exactly one wins; then it
// replaces the hint. A writer killed between the two leaves a v<N+1> the hint does not name: not
// part of the table (the hint is what readers and the next load follow), and found by
// iceberg-garbage.ts as a file to remove before the next commit needs its name.
import type { Fence } from '../../../core/lock.js';
import { IcebergCommitConflictError, IcebergMetadataError, applyUpdates } from './iceberg-catalog.js';
import type { IcebergCatalog, IcebergTableRef, LoadedTable, TableCommit } from './iceberg-catalog.js';
import type { MetadataLogEntry, TableMetadata } from './iceberg-types.js';

export const VERSION_HINT = 'metadata/version-hint.text';

/** The table property Iceberg's own writers bound the metadata log with, and their default. */
export const PREVIOUS_VERSIONS_MAX = `write.metadata.previous-versions-max`;
const DEFAULT_PREVIOUS_VERSIONS = 100;

export function metadataFileName(version: number): string {
  return `metadata/v${version}.metadata.json`;
}

export class FilesCatalog implements IcebergCatalog {
  readonly kind = 'files' as const;
  readonly #now: () => Date;

  /** `now`: the clock of `last-updated-ms` and the logs (tests pin it). */
  constructor(options: { now?: () => Date } = {}) {
    this.#now = options.now ?? (() => new Date());
  }

  async load(table: IcebergTableRef): Promise<LoadedTable | undefined> {
    const hint = await table.store.readText(VERSION_HINT);
    if (hint === undefined) return undefined;
    const version = Number(hint.trim());
    if (!Number.isSafeInteger(version) || version < 1)
      throw new IcebergMetadataError(
        `${table.store.location(VERSION_HINT)} holds ${JSON.stringify(hint.slice(0, 40))}, not a version number: restore it or remove the table folder`,
      );
    const rel = metadataFileName(version);
    const text = await table.store.readText(rel);
    if (text === undefined)
      throw new IcebergMetadataError(
        `${table.store.location(VERSION_HINT)} names version ${version}, but ${table.store.location(rel)} does not exist: restore it or remove the table folder`,
      );
    let metadata: TableMetadata;
    try {
      metadata = JSON.parse(text) as TableMetadata;
    } catch (err) {
      throw new IcebergMetadataError(`${table.store.location(rel)} is not valid JSON: ${(err as Error).message}`, {
        cause: err,
      });
    }
    if (metadata['format-version'] !== 2)
      throw new IcebergMetadataError(
        `${table.store.location(rel)} is format version ${String(metadata['format-version'])}; only 2 is written here`,
      );
    return { metadata, metadataLocation: `${table.location}/${rel}`, version };
  }

  /** Each commit atomically, in the order given: a failure leaves the earlier ones committed. */
  async commit(changes: readonly TableCommit[], fence?: Fence): Promise<LoadedTable[]> {
    const committed: LoadedTable[] = [];
    for (const change of changes) committed.push(await this.#commitOne(change, fence));
    return committed;
  }

  async #commitOne({ table, base, requirements, updates }: TableCommit, fence?: Fence): Promise<LoadedTable> {
    if (base && base.version === undefined)
      throw new IcebergMetadataError(`the base of a commit to ${table.location} has no version number`, {
        code: 'iceberg.update_invalid',
      });
    const now = this.#now();
    const metadata = applyUpdates(base?.metadata, requirements, updates, now);
    if (base) {
      const log: MetadataLogEntry[] = [
        ...(metadata['metadata-log'] ?? []),
        { 'timestamp-ms': base.metadata['last-updated-ms'], 'metadata-file': base.metadataLocation },
      ];
      const max = Number(metadata.properties?.[PREVIOUS_VERSIONS_MAX] ?? DEFAULT_PREVIOUS_VERSIONS);
      metadata['metadata-log'] = log.slice(Math.max(0, log.length - Math.max(1, max)));
    }
    const version = (base?.version ?? 0) + 1;
    const rel = metadataFileName(version);
    await fence?.assertHeld();
    if (!(await table.store.putIfAbsent(rel, JSON.stringify(metadata), { contentType: 'application/json' })))
      throw new IcebergCommitConflictError(
        `${table.store.location(rel)} exists already: another writer committed to the table, or a killed one left it (the next run removes it)`,
      );
    // The hint is the pointer readers follow: a run that lost its lock since the put does not move it.
    await fence?.assertHeld();
    await table.store.write(VERSION_HINT, String(version), { contentType: 'text/plain' });
    return { metadata, metadataLocation: `${table.location}/${rel}`, version };
  }

  async close(): Promise<void> {}
}
