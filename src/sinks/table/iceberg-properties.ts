// The table properties the Iceberg layout (iceberg-layout.ts) sets on its tables and reads back:
// the key, and the columns of the version `current/` holds as the run summary names them.
import type { LoadedTable } from './iceberg/iceberg-catalog.js';
import type { NewVersion, PreviousVersion } from './table-layout.js';

/** The summary and property keys the sink reads back; prefixed as Iceberg asks of writers' own keys. */
export const KEY = 'catalog-streams.key';
/**
 * The table property holding the columns of the version `current/` holds, as `_table.json` keeps a
 * hive table's (`{hash, columns: [{name, type}]}`, DuckDB type names): the next run compares its
 * own with them to say when they changed (shared/schema-change.ts). Iceberg's schema has the
 * Iceberg types; these are the ones the run summary and the other sinks name.
 */
export const COLUMNS = 'catalog-streams.columns';
export const SCHEMA_HASH = 'catalog-streams.schema-hash';

/** The table properties a commit of `name` changes: the key, and on `current/` the columns (COLUMNS). */
export function changedProperties(
  name: 'current' | 'changes',
  key: string,
  version: NewVersion,
  base: LoadedTable | undefined,
): Record<string, string> {
  const had = base?.metadata.properties ?? {};
  const wanted: Record<string, string> = { [KEY]: key };
  if (name === 'current') {
    const columns = version.schema.describe().map((c) => ({ name: c.name, type: c.type }));
    wanted[COLUMNS] = JSON.stringify({ hash: version.schema.hash, columns });
  }
  return Object.fromEntries(Object.entries(wanted).filter(([k, v]) => had[k] !== v));
}

/**
 * The columns the COLUMNS property describes, when they are those of the current snapshot (its
 * summary's schema hash): a property left by a version that was taken back afterwards (a revoke
 * rolls the snapshot back, not the properties), or one another writer set, compares nothing.
 */
export function describedColumns(property: string | undefined, hash: string | undefined): PreviousVersion['schema'] {
  if (property === undefined || hash === undefined) return undefined;
  try {
    const parsed = JSON.parse(property) as { hash?: unknown; columns?: unknown };
    const columns = parsed.columns;
    const valid =
      parsed.hash === hash &&
      Array.isArray(columns) &&
      columns.every(
        (c: { name?: unknown; type?: unknown }) => typeof c?.name === 'string' && typeof c.type === 'string',
      );
    return valid ? { hash, columns: columns as Array<{ name: string; type: string }> } : undefined;
  } catch {
    return undefined;
  }
}
