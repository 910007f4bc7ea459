// The media table, `media.parquet` beside the files: one row per name the mirror knows (stored or
// still failing), from its state. Written whole through the toolkit's own Parquet encoder and
// replaced atomically, so a reader (DuckDB, Spark) sees the previous or the new table.
import type { ObjectStore } from '../../storage/object-store.js';
import type { ByteDestination } from '../shared/byte-destination.js';
import { ParquetEncoder } from '../parquet/parquet-encoder.js';
import { type TypedColumn } from '../shared/column-types.js';
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
