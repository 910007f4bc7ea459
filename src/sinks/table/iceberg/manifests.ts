// Iceberg manifests and manifest lists: Avro object container files (Avro 1.x spec, "Object
// Container Files") whose records follow the Iceberg spec's v2 `manifest_entry` and
// `manifest_file` schemas, field ids included (readers project them by id).
//
// Values are encoded by avsc; the container around them is written here: one block, codec null.
// Doing so keeps the output a deterministic function of the records (avsc's BlockEncoder is a
// stream that writes no header at all for zero records) and the schema in the header is the
// spec's JSON exactly as below, `field-id` attributes and all. Reading accepts any writer's file
// (several blocks, codec null or deflate) and decodes with the schema the file carries.
import { randomBytes } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import avro from 'avsc';
import { limitBytes } from '../../../storage/bounded-read.js';
import { IcebergMetadataError } from './iceberg-catalog.js';

/** Manifest entry status (spec: Manifest Entry Fields). */
export const EXISTING = 0;
export const ADDED = 1;
export const DELETED = 2;

/** A `map<int, long>` as Iceberg stores it in Avro: an array of key/value records, logical type map. */
const intMap = (name: string, mapId: number, keyId: number, valueId: number, valueType: string): object => ({
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
          { name: 'value', type: valueType, 'field-id': valueId },
        ],
      },
    },
  ],
  default: null,
  'field-id': mapId,
});

/** The spec's v2 `manifest_entry` with its `data_file` (an unpartitioned table: `partition` has no fields). */
export const MANIFEST_ENTRY_SCHEMA = {
  type: 'record',
  name: 'manifest_entry',
  fields: [
    { name: 'status', type: 'int', 'field-id': 0 },
    { name: 'snapshot_id', type: ['null', 'long'], default: null, 'field-id': 1 },
    { name: 'sequence_number', type: ['null', 'long'], default: null, 'field-id': 3 },
    { name: 'file_sequence_number', type: ['null', 'long'], default: null, 'field-id': 4 },
    {
      name: 'data_file',
      type: {
        type: 'record',
        name: 'r2',
        fields: [
          { name: 'content', type: 'int', 'field-id': 134 },
          { name: 'file_path', type: 'string', 'field-id': 100 },
          { name: 'file_format', type: 'string', 'field-id': 101 },
          { name: 'partition', type: { type: 'record', name: 'r102', fields: [] }, 'field-id': 102 },
          { name: 'record_count', type: 'long', 'field-id': 103 },
          { name: 'file_size_in_bytes', type: 'long', 'field-id': 104 },
          intMap('column_sizes', 108, 117, 118, 'long'),
          intMap('value_counts', 109, 119, 120, 'long'),
          intMap('null_value_counts', 110, 121, 122, 'long'),
          intMap('nan_value_counts', 137, 138, 139, 'long'),
          intMap('lower_bounds', 125, 126, 127, 'bytes'),
          intMap('upper_bounds', 128, 129, 130, 'bytes'),
          { name: 'key_metadata', type: ['null', 'bytes'], default: null, 'field-id': 131 },
          {
            name: 'split_offsets',
            type: ['null', { type: 'array', items: 'long', 'element-id': 133 }],
            default: null,
            'field-id': 132,
          },
          {
            name: 'equality_ids',
            type: ['null', { type: 'array', items: 'int', 'element-id': 136 }],
            default: null,
            'field-id': 135,
          },
          { name: 'sort_order_id', type: ['null', 'int'], default: null, 'field-id': 140 },
          { name: 'referenced_data_file', type: ['null', 'string'], default: null, 'field-id': 143 },
        ],
      },
      'field-id': 2,
    },
  ],
} as const;

/** The spec's v2 `manifest_file`, a manifest list's record. */
export const MANIFEST_FILE_SCHEMA = {
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
    {
      name: 'partitions',
      type: [
        'null',
        {
          type: 'array',
          items: {
            type: 'record',
            name: 'r508',
            fields: [
              { name: 'contains_null', type: 'boolean', 'field-id': 509 },
              { name: 'contains_nan', type: ['null', 'boolean'], default: null, 'field-id': 518 },
              { name: 'lower_bound', type: ['null', 'bytes'], default: null, 'field-id': 510 },
              { name: 'upper_bound', type: ['null', 'bytes'], default: null, 'field-id': 511 },
            ],
          },
          'element-id': 508,
        },
      ],
      default: null,
      'field-id': 507,
    },
    { name: 'key_metadata', type: ['null', 'bytes'], default: null, 'field-id': 519 },
  ],
} as const;

/** The `data_file` fields this toolkit sets; the optional metrics are left null (readers then scan the file). */
export interface DataFileRecord {
  /** 0: data, 1: position deletes. */
  content: 0 | 1;
  file_path: string;
  file_format: 'PARQUET' | string;
  partition: Record<string, never>;
  record_count: number;
  file_size_in_bytes: number;
}

export interface ManifestEntry {
  status: typeof EXISTING | typeof ADDED | typeof DELETED;
  /** Null: inherited from the manifest list (ADDED entries only). */
  snapshot_id: number | null;
  sequence_number: number | null;
  file_sequence_number: number | null;
  data_file: DataFileRecord;
}

export interface ManifestFile {
  manifest_path: string;
  manifest_length: number;
  partition_spec_id: number;
  content: 0 | 1;
  sequence_number: number;
  min_sequence_number: number;
  added_snapshot_id: number;
  added_files_count: number;
  existing_files_count: number;
  deleted_files_count: number;
  added_rows_count: number;
  existing_rows_count: number;
  deleted_rows_count: number;
  partitions: null;
  key_metadata: null;
}

const MAGIC = Buffer.from([0x4f, 0x62, 0x6a, 0x01]);
/** The Avro container's reserved metadata keys (template literals: they are not error codes). */
const AVRO_SCHEMA = `avro.schema`;
const AVRO_CODEC = `avro.codec`;
const metadataType = avro.Type.forSchema({ type: 'map', values: 'bytes' });
const longType = avro.Type.forSchema('long');
const entryType = avro.Type.forSchema(MANIFEST_ENTRY_SCHEMA as unknown as avro.Schema);
const manifestFileType = avro.Type.forSchema(MANIFEST_FILE_SCHEMA as unknown as avro.Schema);

function container(
  schema: object,
  type: avro.Type,
  records: readonly object[],
  metadata: Record<string, string>,
): Buffer {
  const meta: Record<string, Buffer> = {};
  for (const [k, v] of Object.entries(metadata)) meta[k] = Buffer.from(v);
  meta[AVRO_SCHEMA] = Buffer.from(JSON.stringify(schema));
  meta[AVRO_CODEC] = Buffer.from('null');
  const sync = randomBytes(16);
  const parts: Buffer[] = [MAGIC, metadataType.toBuffer(meta), sync];
  if (records.length > 0) {
    const data = Buffer.concat(
      records.map((r) => {
        // The full check names the bad field; toBuffer's own error does not.
        const errors: string[] = [];
        if (!type.isValid(r, { errorHook: (path) => errors.push(path.join('.')) }))
          throw new IcebergMetadataError(`an Iceberg manifest record does not fit its schema at ${errors.join(', ')}`, {
            code: 'iceberg.update_invalid',
          });
        return type.toBuffer(r);
      }),
    );
    parts.push(longType.toBuffer(records.length), longType.toBuffer(data.length), data, sync);
  }
  return Buffer.concat(parts);
}

/** The bytes of a manifest file: its entries, and the key-value metadata the spec requires of a v2 manifest. */
export function encodeManifest(
  entries: readonly ManifestEntry[],
  meta: {
    schemaJson: string;
    schemaId: number;
    partitionSpecId: number;
    partitionFieldsJson: string;
    content?: 'data' | 'deletes';
  },
): Buffer {
  const data = entries.map((e) => ({
    ...e,
    data_file: {
      column_sizes: null,
      value_counts: null,
      null_value_counts: null,
      nan_value_counts: null,
      lower_bounds: null,
      upper_bounds: null,
      key_metadata: null,
      split_offsets: null,
      equality_ids: null,
      sort_order_id: null,
      referenced_data_file: null,
      ...e.data_file,
    },
  }));
  return container(MANIFEST_ENTRY_SCHEMA, entryType, data, {
    schema: meta.schemaJson,
    'schema-id': String(meta.schemaId),
    'partition-spec': meta.partitionFieldsJson,
    'partition-spec-id': String(meta.partitionSpecId),
    'format-version': '2',
    content: meta.content ?? 'data',
  });
}

/** The bytes of a manifest list, with the key-value metadata Iceberg's own writers put there. */
export function encodeManifestList(
  manifests: readonly ManifestFile[],
  meta: { snapshotId: number; parentSnapshotId: number | undefined; sequenceNumber: number },
): Buffer {
  return container(MANIFEST_FILE_SCHEMA, manifestFileType, manifests, {
    'snapshot-id': String(meta.snapshotId),
    'parent-snapshot-id': meta.parentSnapshotId === undefined ? 'null' : String(meta.parentSnapshotId),
    'sequence-number': String(meta.sequenceNumber),
    'format-version': '2',
  });
}

export interface AvroFile {
  metadata: Record<string, string>;
  records: Array<Record<string, unknown>>;
}

/**
 * Limits of an Avro file read back (a manifest list or manifest this toolkit wrote, a few KB to a
 * few MB): the file, the bytes its deflate blocks inflate to (all blocks together), and the
 * records a block may announce. Without them an 80-byte file planted in `metadata/` (schema
 * `"null"`, a block of 2^40 records) makes every later run allocate until V8 aborts.
 */
export const AVRO_LIMITS: AvroLimits = { fileBytes: 256 * 1024 * 1024, inflatedBytes: 256 * 1024 * 1024 };

export interface AvroLimits {
  fileBytes: number;
  inflatedBytes: number;
}

/** An Avro file over one of AVRO_LIMITS. */
export class AvroLimitError extends IcebergMetadataError {
  constructor(name: string, why: string) {
    super(`${name} is not read: ${why}; check who wrote it, and remove it if it is not the table's`, {
      code: 'iceberg.avro_limit',
    });
  }
}

/**
 * The fewest bytes one value of `type` encodes to (a record: its fields'); a block of `count`
 * records needs at least `count` times this many bytes. At least 1 for a file we read: a schema
 * whose records take no bytes (`"null"`) is none of Iceberg's, and would let a count be anything.
 */
function minEncodedBytes(type: avro.Type, seen = new Set<avro.Type>()): number {
  const t = type as avro.Type & {
    underlyingType?: avro.Type;
    fields?: Array<{ type: avro.Type }>;
    types?: avro.Type[];
    size?: number;
  };
  if (t.underlyingType) return minEncodedBytes(t.underlyingType, seen);
  if (seen.has(type)) return 0;
  switch (type.typeName) {
    case 'null':
      return 0;
    case 'float':
      return 4;
    case 'double':
      return 8;
    case 'fixed':
      return t.size ?? 0;
    case 'record':
    case 'error': {
      seen.add(type);
      const sum = (t.fields ?? []).reduce((n, f) => n + minEncodedBytes(f.type, seen), 0);
      seen.delete(type);
      return sum;
    }
    case 'union:unwrapped':
    case 'union:wrapped':
      return 1 + Math.min(...(t.types ?? []).map((b) => minEncodedBytes(b, seen)));
    default:
      // boolean, int, long, enum, string, bytes, array, map: one byte at least.
      return 1;
  }
}

/** A block's bytes, inflated within what is left of the file's budget. */
function blockBytes(block: Buffer, codec: string, budget: { left: number; limit: number }, name: string): Buffer {
  if (codec !== 'deflate') return block;
  let out: Buffer;
  try {
    out = inflateRawSync(block, { maxOutputLength: Math.max(1, budget.left) });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
      throw new AvroLimitError(name, `its deflate blocks inflate to more than ${budget.limit} bytes`);
    throw err;
  }
  budget.left -= out.length;
  return out;
}

/**
 * The file's header map (`map<bytes>`), decoded by hand: avsc would loop over any count a block
 * announces (2^40 entries of a planted header take forever). Each entry takes at least 2 bytes (two
 * lengths), so a count over half the bytes left is refused before any entry is read.
 */
function decodeHeader(buf: Buffer, name: string): { value: Record<string, Buffer>; offset: number } {
  const value: Record<string, Buffer> = {};
  const readLong = (at: number) => longType.decode(buf, at) as { value: number; offset: number };
  const readBytes = (at: number) => {
    const length = readLong(at);
    if (length.offset < 0 || length.value < 0 || length.offset + length.value > buf.length) return undefined;
    return { bytes: buf.subarray(length.offset, length.offset + length.value), offset: length.offset + length.value };
  };
  let pos = 4;
  for (;;) {
    const block = readLong(pos);
    if (block.offset < 0) return { value, offset: -1 };
    pos = block.offset;
    if (block.value === 0) return { value, offset: pos };
    let count = block.value;
    if (count < 0) {
      // A negative count is followed by the block's size in bytes (Avro spec); the size is not needed.
      count = -count;
      const size = readLong(pos);
      if (size.offset < 0) return { value, offset: -1 };
      pos = size.offset;
    }
    if (count * 2 > buf.length - pos)
      throw new AvroLimitError(name, `its header announces ${count} entries in ${buf.length - pos} bytes`);
    for (let i = 0; i < count; i++) {
      const key = readBytes(pos);
      const entry = key && readBytes(key.offset);
      if (!key || !entry) return { value, offset: -1 };
      value[key.bytes.toString('utf8')] = entry.bytes;
      pos = entry.offset;
    }
  }
}

/** Any Avro object container file, decoded with the schema it carries; `name` is for messages. */
export function decodeAvroFile(bytes: Uint8Array, name: string, limits: AvroLimits = AVRO_LIMITS): AvroFile {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const fail = (why: string, cause?: unknown): IcebergMetadataError =>
    new IcebergMetadataError(`${name} is not an Avro file Iceberg can read: ${why}`, cause ? { cause } : {});
  if (buf.length < 4 || !buf.subarray(0, 4).equals(MAGIC)) throw fail('it does not start with Obj\\x01');
  try {
    const header = decodeHeader(buf, name);
    if (header.offset < 0) throw fail('its header is cut short');
    const metadata: Record<string, string> = {};
    for (const [k, v] of Object.entries(header.value)) metadata[k] = v.toString('utf8');
    const codec = metadata[AVRO_CODEC] ?? 'null';
    if (codec !== 'null' && codec !== 'deflate') throw fail(`its codec ${codec} is not null or deflate`);
    const type = avro.Type.forSchema(JSON.parse(metadata[AVRO_SCHEMA] ?? 'null') as avro.Schema);
    const minRecord = Math.max(1, minEncodedBytes(type));
    const budget = { left: limits.inflatedBytes, limit: limits.inflatedBytes };
    const sync = buf.subarray(header.offset, header.offset + 16);
    let pos = header.offset + 16;
    const records: Array<Record<string, unknown>> = [];
    while (pos < buf.length) {
      const count = longType.decode(buf, pos) as { value: number; offset: number };
      const size = longType.decode(buf, count.offset) as { value: number; offset: number };
      if (count.offset < 0 || size.offset < 0 || size.value < 0 || size.offset + size.value + 16 > buf.length)
        throw fail('a block is cut short');
      if (!buf.subarray(size.offset + size.value, size.offset + size.value + 16).equals(sync))
        throw fail('a block does not end with the sync marker');
      const block = blockBytes(buf.subarray(size.offset, size.offset + size.value), codec, budget, name);
      // Checked before decoding: each record takes at least minRecord bytes of the block.
      if (count.value < 0 || count.value * minRecord > block.length)
        throw new AvroLimitError(
          name,
          `a block announces ${count.value} records of at least ${minRecord} byte(s) each in ${block.length} bytes (count x minimum record size must fit the block)`,
        );
      let at = 0;
      for (let i = 0; i < count.value; i++) {
        const r = type.decode(block, at) as { value: Record<string, unknown>; offset: number };
        if (r.offset < 0) throw fail('a record is cut short');
        records.push(r.value);
        at = r.offset;
      }
      pos = size.offset + size.value + 16;
    }
    return { metadata, records };
  } catch (err) {
    if (err instanceof IcebergMetadataError) throw err;
    throw fail((err as Error).message, err);
  }
}

/**
 * An Avro file of the table, read whole (at most AVRO_LIMITS.fileBytes). A missing one is an
 * error: it is named by metadata or a manifest list, so the table is broken (and nothing may be
 * collected as garbage on its word).
 */
export async function readAvro(
  store: { readStream(rel: string): Promise<AsyncIterable<Buffer>>; location(rel: string): string },
  rel: string,
  limits: AvroLimits = AVRO_LIMITS,
): Promise<AvroFile> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of limitBytes(await store.readStream(rel), limits.fileBytes, store.location(rel)))
      chunks.push(chunk);
  } catch (err) {
    if ((err as { code?: string }).code === 'storage.too_large')
      throw new AvroLimitError(store.location(rel), `it is larger than the limit of ${limits.fileBytes} bytes`);
    throw new IcebergMetadataError(
      `cannot read ${store.location(rel)}, which the table's metadata names: ${(err as Error).message}`,
      { cause: err },
    );
  }
  return decodeAvroFile(Buffer.concat(chunks), store.location(rel), limits);
}

/**
 * The store-relative name of a location written in the table's metadata, or undefined for one
 * outside the table root (a file another tool put elsewhere: never read or removed as ours).
 */
export function relativeName(tableLocation: string, uri: string): string | undefined {
  const root = `${tableLocation.replace(/\/+$/, '')}/`;
  return uri.startsWith(root) ? decodeURIComponent(uri.slice(root.length)) : undefined;
}

/** A manifest list's records, each with its manifest's entries (sequence numbers inherited as the spec says). */
export interface SnapshotManifest {
  file: ManifestFile;
  entries: ManifestEntry[];
}

/** `relativeName`, or an error for a location outside the table (metadata we would have to trust blindly). */
export function ownName(tableLocation: string, uri: string): string {
  const name = relativeName(tableLocation, uri);
  if (name === undefined)
    throw new IcebergMetadataError(
      `${uri} is outside the table at ${tableLocation}; this toolkit reads only its own tables`,
    );
  return name;
}

type ReadableStore = { readStream(rel: string): Promise<AsyncIterable<Buffer>>; location(rel: string): string };

/** A snapshot's manifest list: its manifest_file records. */
export async function readManifestList(
  store: ReadableStore,
  tableLocation: string,
  manifestList: string,
): Promise<ManifestFile[]> {
  return (await readAvro(store, ownName(tableLocation, manifestList))).records as unknown as ManifestFile[];
}

/** The manifests of a snapshot (its manifest list's), read whole. */
export async function readSnapshotManifests(
  store: ReadableStore,
  tableLocation: string,
  manifestList: string,
): Promise<SnapshotManifest[]> {
  const out: SnapshotManifest[] = [];
  for (const file of await readManifestList(store, tableLocation, manifestList)) {
    const manifest = await readAvro(store, ownName(tableLocation, file.manifest_path));
    const entries = (manifest.records as unknown as ManifestEntry[]).map((e) => ({
      ...e,
      // Spec: null snapshot id and sequence numbers of ADDED entries come from the manifest list.
      snapshot_id: e.snapshot_id ?? file.added_snapshot_id,
      sequence_number: e.sequence_number ?? (e.status === ADDED ? file.sequence_number : null),
      file_sequence_number: e.file_sequence_number ?? (e.status === ADDED ? file.sequence_number : null),
    }));
    out.push({ file, entries });
  }
  return out;
}
