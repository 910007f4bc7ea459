// The media table, `media.parquet` beside the files: one row per name the mirror knows (stored or
// still failing), from its state. Written whole through the toolkit's own Parquet encoder and
// replaced atomically, so a reader (DuckDB, Spark) sees the previous or the new table.
import type { ObjectStore } from '../../storage/object-store.js';
import type { ByteDestination } from '../shared/byte-destination.js';
import { ParquetEncoder } from '../parquet/parquet-encoder.js';
import { type TypedColumn } from '../shared/column-types.js';
import type { FieldType, RecordSchema } from '../../core/record-schema.js';
import type { FileState, MirrorState } from './mirror-state.js';

export const TABLE_REL = 'media.parquet';

const str = { kind: 'string' } as const;
const ts = { kind: 'timestamp-millis' } as const;
export const MEDIA_TABLE_COLUMNS: readonly TypedColumn[] = [
  { name: 'media_id', type: str },
  { name: 'type', type: str },
  { name: 'format', type: str },
  { name: 'product_ids', type: { kind: 'list', element: str } },
  { name: 'source_url', type: str },
  { name: 'stored_path', type: str },
  { name: 'content_type', type: str },
  { name: 'bytes', type: { kind: 'int64' } },
  { name: 'sha256', type: str },
  { name: 'etag', type: str },
  { name: 'last_modified', type: str },
  { name: 'first_seen', type: ts },
  { name: 'last_seen', type: ts },
  { name: 'last_attempt_at', type: ts },
  { name: 'last_status', type: str },
  { name: 'last_error', type: str },
];

/** Collects the encoded bytes (the table is small: a few hundred bytes per file). */
class MemoryDestination implements ByteDestination {
  readonly kind = 'file' as const;
  bytes = 0;
  readonly chunks: Uint8Array[] = [];
  constructor(readonly location: string) {}
  write(chunk: Uint8Array): void {
    this.chunks.push(chunk);
    this.bytes += chunk.byteLength;
  }
  commit(): Promise<void> {
    return Promise.resolve();
  }
  abort(): Promise<void> {
    return Promise.resolve();
  }
}

const big = (n: number | null) => (n === null ? null : BigInt(n));

function rowOf(store: ObjectStore, rel: string, f: FileState): unknown[] {
  return [
    f.mediaId,
    f.type,
    f.format,
    f.productIds,
    f.url,
    f.stored ? store.location(rel) : null,
    f.contentType,
    big(f.bytes),
    f.sha256,
    f.etag,
    f.lastModified,
    big(f.firstSeen),
    big(f.lastSeen),
    big(f.lastAttemptAt),
    f.lastStatus,
    f.lastError,
  ];
}

/** Writes the table from the state; returns its location and byte count. */
export async function writeMediaTable(
  store: ObjectStore,
  state: MirrorState,
): Promise<{ location: string; bytes: number; rows: number }> {
  const dest = new MemoryDestination(store.location(TABLE_REL));
  const encoder = new ParquetEncoder(dest, MEDIA_TABLE_COLUMNS, {
    compression: 'snappy',
    rowGroupRows: 100_000,
    rowGroupBytes: 64 * 1024 * 1024,
    metadata: { 'catalog-streams.table': 'media-mirror' },
  });
  const names = [...state.files.keys()].sort();
  for (const rel of names) await encoder.write({ values: rowOf(store, rel, state.files.get(rel)!), bytes: 400 });
  await encoder.end();
  const body = Buffer.concat(dest.chunks);
  await store.write(TABLE_REL, body, { contentType: 'application/vnd.apache.parquet' });
  return { location: dest.location, bytes: body.length, rows: names.length };
}

/**
 * The media table's rows as records, for the `table:` option (media-table-sink.ts): the same
 * values as `media.parquet`'s, timestamps as dates and sizes as numbers, so the table sink's
 * column schema (MEDIA_RECORD_SCHEMA) writes them in its own timestamp unit.
 */
export function* mediaTableRecords(store: ObjectStore, state: MirrorState): Generator<Record<string, unknown>> {
  for (const rel of [...state.files.keys()].sort()) {
    const values = rowOf(store, rel, state.files.get(rel)!);
    const record: Record<string, unknown> = {};
    MEDIA_TABLE_COLUMNS.forEach((c, i) => {
      const v = values[i];
      record[c.name] = typeof v !== 'bigint' ? v : c.type.kind === 'timestamp-millis' ? new Date(Number(v)) : Number(v);
    });
    yield record;
  }
}

/** The records' schema for the table sink: MEDIA_TABLE_COLUMNS as record fields. */
export const MEDIA_RECORD_SCHEMA: RecordSchema = {
  fields: MEDIA_TABLE_COLUMNS.map(({ name, type }) => ({ name, type: fieldType(type) })),
};

function fieldType(type: TypedColumn['type']): FieldType {
  switch (type.kind) {
    case 'list':
      return { kind: 'list', element: fieldType(type.element) };
    case 'timestamp-millis':
      return { kind: 'timestamp' };
    case 'int64':
      return { kind: 'int64' };
    default:
      return { kind: 'string' };
  }
}
