// What the Iceberg tests share: Parquet data files written by our ParquetEncoder (as the table
// sink writes them: staged, then committed under their final name), and the spec's Avro
// schemas, written out here from the Iceberg spec
// (format/spec.md: Manifest Entry Fields, Data File Fields, Manifest Lists) independently of src.
import { pathToFileURL } from 'node:url';
import { ParquetEncoder } from '../../../src/sinks/parquet/parquet-encoder.js';
import { type TypedColumn } from '../../../src/sinks/shared/column-types.js';
import type { IcebergTableRef, LoadedTable } from '../../../src/sinks/table/iceberg/iceberg-catalog.js';
import { tableSchema } from '../../../src/sinks/table/iceberg/iceberg-commit.js';
import { prepareCommit } from '../../../src/sinks/table/iceberg/snapshot-operations.js';
import { parquetFooterMetadata } from '../../../src/sinks/table/iceberg/iceberg-schema.js';
import type { FilesCatalog } from '../../../src/sinks/table/iceberg/files-catalog.js';
import type { IcebergSchema } from '../../../src/sinks/table/iceberg/iceberg-types.js';
import { LocalObjectStore } from '../../../src/storage/object-store.js';

export function localTable(root: string, name: 'current' | 'changes'): IcebergTableRef {
  const dir = `${root}/${name}`;
  return { name, location: pathToFileURL(dir).href, store: new LocalObjectStore(dir) };
}

/**
 * Writes `rows` (physical values in column order) as `rel` under the table, with the footer entry
 * Iceberg's writers add (parquetFooterMetadata: icebird maps columns by id with it); returns what
 * the manifest lists of it.
 */
export async function writeDataFile(
  table: IcebergTableRef,
  rel: string,
  columns: readonly TypedColumn[],
  schema: IcebergSchema,
  rows: unknown[][],
): Promise<{ location: string; rows: number; bytes: number }> {
  const staged = await table.store.stage(rel);
  const encoder = new ParquetEncoder(staged.file, columns, {
    compression: 'snappy',
    rowGroupRows: 1000,
    rowGroupBytes: 1 << 20,
    metadata: parquetFooterMetadata(schema),
  });
  for (const values of rows) await encoder.write({ values, bytes: 100 });
  await encoder.end();
  await staged.finish();
  await staged.commit();
  const bytes = staged.file.bytes;
  return { location: `${table.location}/${rel}`, rows: rows.length, bytes };
}

export const T0 = Date.parse('2026-11-01T00:00:00Z');

/** One run of the sink against one table: data file, manifests, commit. */
export async function run(
  catalog: FilesCatalog,
  table: IcebergTableRef,
  args: {
    runId: string;
    operation: 'append' | 'overwrite';
    columns: TypedColumn[];
    rows: unknown[][];
    keepSnapshots?: number;
    minute: number;
  },
): Promise<LoadedTable> {
  const base = await catalog.load(table);
  const schema = tableSchema(base?.metadata, args.columns);
  const file = await writeDataFile(
    table,
    `data/part-00000-${args.runId}.parquet`,
    schema.columns,
    schema.schema,
    args.rows,
  );
  const prepared = await prepareCommit({
    table,
    base,
    files: [file],
    operation: args.operation,
    columns: args.columns,
    summary: { 'catalog-streams.run-id': args.runId },
    runId: args.runId,
    keepSnapshots: args.keepSnapshots ?? 10,
    now: new Date(T0 + args.minute * 60_000),
  });
  const [loaded] = await catalog.commit([prepared.commit]);
  return loaded!;
}

// The spec's v2 schemas (format/spec.md), as Avro with the spec's field ids. Only the fields a v2
// writer may write are here; each optional one is a union with null, default null (spec:
// Appendix A, Avro). Maps with int keys are arrays of key/value records (logical type map).
const map = (name: string, id: number, keyId: number, valueId: number, value: string): object => ({
  name,
  type: [
    'null',
    {
      type: 'array',
      logicalType: 'map',
      items: {
        type: 'record',
        name: `k${keyId}_v${valueId}`,
        fields: [
          { name: 'key', type: 'int', 'field-id': keyId },
          { name: 'value', type: value, 'field-id': valueId },
        ],
      },
    },
  ],
  default: null,
  'field-id': id,
});
const optional = (name: string, id: number, type: unknown): object => ({
  name,
  type: ['null', type],
  default: null,
  'field-id': id,
});

export const SPEC_DATA_FILE = {
  type: 'record',
  name: 'r2',
  fields: [
    { name: 'content', type: 'int', 'field-id': 134 },
    { name: 'file_path', type: 'string', 'field-id': 100 },
    { name: 'file_format', type: 'string', 'field-id': 101 },
    { name: 'partition', type: { type: 'record', name: 'r102', fields: [] }, 'field-id': 102 },
    { name: 'record_count', type: 'long', 'field-id': 103 },
    { name: 'file_size_in_bytes', type: 'long', 'field-id': 104 },
    map('column_sizes', 108, 117, 118, 'long'),
    map('value_counts', 109, 119, 120, 'long'),
    map('null_value_counts', 110, 121, 122, 'long'),
    map('nan_value_counts', 137, 138, 139, 'long'),
    map('lower_bounds', 125, 126, 127, 'bytes'),
    map('upper_bounds', 128, 129, 130, 'bytes'),
    optional('key_metadata', 131, 'bytes'),
    optional('split_offsets', 132, { type: 'array', items: 'long', 'element-id': 133 }),
    optional('equality_ids', 135, { type: 'array', items: 'int', 'element-id': 136 }),
    optional('sort_order_id', 140, 'int'),
    optional('referenced_data_file', 143, 'string'),
  ],
};

export const SPEC_MANIFEST_ENTRY = {
  type: 'record',
  name: 'manifest_entry',
  fields: [
    { name: 'status', type: 'int', 'field-id': 0 },
    optional('snapshot_id', 1, 'long'),
    optional('sequence_number', 3, 'long'),
    optional('file_sequence_number', 4, 'long'),
    { name: 'data_file', type: SPEC_DATA_FILE, 'field-id': 2 },
  ],
};

export const SPEC_MANIFEST_FILE = {
  type: 'record',
  name: 'manifest_file',
  fields: [
    { name: 'manifest_path', type: 'string', 'field-id': 500 },
    { name: 'manifest_length', type: 'long', 'field-id': 501 },
    { name: 'partition_spec_id', type: 'int', 'field-id': 502 },
    { name: 'content', type: 'int', 'field-id': 517 },
    { name: 'sequence_number', type: 'long', 'field-id': 515 },
    { name: 'min_sequence_number', type: 'long', 'field-id': 516 },
    { name: 'added_snapshot_id', type: 'long', 'field-id': 503 },
    { name: 'added_files_count', type: 'int', 'field-id': 504 },
    { name: 'existing_files_count', type: 'int', 'field-id': 505 },
    { name: 'deleted_files_count', type: 'int', 'field-id': 506 },
    { name: 'added_rows_count', type: 'long', 'field-id': 512 },
    { name: 'existing_rows_count', type: 'long', 'field-id': 513 },
    { name: 'deleted_rows_count', type: 'long', 'field-id': 514 },
    optional('partitions', 507, {
      type: 'array',
      'element-id': 508,
      items: {
        type: 'record',
        name: 'r508',
        fields: [
          { name: 'contains_null', type: 'boolean', 'field-id': 509 },
          optional('contains_nan', 518, 'boolean'),
          optional('lower_bound', 510, 'bytes'),
          optional('upper_bound', 511, 'bytes'),
        ],
      },
    }),
    optional('key_metadata', 519, 'bytes'),
  ],
};

/** Every `field-id` / `element-id` of an Avro schema by name path, to compare a writer's with the spec's. */
export function avroIds(schema: unknown, path = ''): Record<string, number> {
  const out: Record<string, number> = {};
  if (Array.isArray(schema)) {
    for (const branch of schema) Object.assign(out, avroIds(branch, path));
  } else if (schema && typeof schema === 'object') {
    const s = schema as Record<string, unknown>;
    if (typeof s['element-id'] === 'number') out[`${path}[]`] = s['element-id'];
    if (s.type === 'record')
      for (const f of s.fields as Array<Record<string, unknown>>) {
        const p = path ? `${path}.${String(f.name)}` : String(f.name);
        if (typeof f['field-id'] === 'number') out[p] = f['field-id'];
        Object.assign(out, avroIds(f.type, p));
      }
    else if (s.type === 'array') Object.assign(out, avroIds(s.items, `${path}[]`));
  }
  return out;
}
