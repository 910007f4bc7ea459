// Whether a sink's columns changed since the previous run of the same output published (issue 37
// item 10): a column promoted from `_extra`, a field the resource gained, a naming switched, a
// type fixed. Readers of a file lake meet such a change as a `Binder Error` or a NULL column; the
// run says it first: a `schemaChanged` block in the manifest and an info event
// (`sink.schema_changed`) that the run summary lists, one line per output.
import type { RunEvents } from '../../events.js';

/** A column as a schema description lists it (ColumnSchema.describe()). */
export interface DescribedColumn {
  name: string;
  type: string;
}

/** What differs between the previous published schema of an output and this run's. */
export interface SchemaChange {
  /** The previous and the new schema hash. */
  from: string;
  to: string;
  /** Columns this run writes that the previous version did not have, with their types. */
  added: DescribedColumn[];
  /** Columns of the previous version this run does not write. */
  removed: DescribedColumn[];
  /** Columns of both under another type. */
  retyped: Array<{ name: string; from: string; to: string }>;
}

/** A schema as a manifest records it: `{hash, columns}`. */
export interface DescribedSchema {
  hash: string;
  columns: readonly DescribedColumn[];
}

function isDescribedSchema(value: unknown): value is DescribedSchema {
  const v = value as Partial<DescribedSchema> | undefined;
  return (
    typeof v?.hash === 'string' &&
    Array.isArray(v.columns) &&
    v.columns.every((c) => typeof c?.name === 'string' && typeof c.type === 'string')
  );
}

/**
 * The change from `previous` to `current`; undefined when there was no previous schema (a first
 * run, or a manifest without one) or the columns are the same.
 */
export function schemaChange(previous: unknown, current: unknown): SchemaChange | undefined {
  if (!isDescribedSchema(previous) || !isDescribedSchema(current)) return undefined;
  const before = new Map(previous.columns.map((c) => [c.name, c.type]));
  const after = new Map(current.columns.map((c) => [c.name, c.type]));
  const added = current.columns.filter((c) => !before.has(c.name)).map(({ name, type }) => ({ name, type }));
  const removed = previous.columns.filter((c) => !after.has(c.name)).map(({ name, type }) => ({ name, type }));
  const retyped = current.columns
    .filter((c) => before.has(c.name) && before.get(c.name) !== c.type)
    .map((c) => ({ name: c.name, from: before.get(c.name)!, to: c.type }));
  if (added.length + removed.length + retyped.length === 0) return undefined;
  return { from: previous.hash, to: current.hash, added, removed, retyped };
}

/** `added route_of_administration VARCHAR; removed routeOfAdministration; retyped hs_code BIGINT -> VARCHAR`. */
export function describeSchemaChange(change: SchemaChange): string {
  const parts: string[] = [];
  if (change.added.length) parts.push(`added ${change.added.map((c) => `${c.name} ${c.type}`).join(', ')}`);
  if (change.removed.length) parts.push(`removed ${change.removed.map((c) => c.name).join(', ')}`);
  if (change.retyped.length)
    parts.push(`retyped ${change.retyped.map((c) => `${c.name} ${c.from} -> ${c.to}`).join(', ')}`);
  return parts.join('; ');
}

/** The info event the run summary lists the change from. */
export function reportSchemaChange(events: RunEvents, sink: string, location: string, change: SchemaChange): void {
  events.emit('info', {
    code: 'sink.schema_changed',
    message:
      `${sink} ${location}: the columns changed since the previous run's (${describeSchemaChange(change)}); ` +
      'queries over older and newer files need union_by_name (docs/lake-contract.md, "Changing the schema of a file lake")',
    sink,
    location,
    schemaChanged: change,
  });
}
