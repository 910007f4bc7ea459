// The key/value metadata of a Parquet file's footer, read back without reading the file: the last
// 8 bytes give the footer's length, the footer (a Thrift compact-protocol FileMetaData) is read
// bounded and walked only as far as its `key_value_metadata` (field 5), every other field skipped.
// Used to tell which columns an earlier run wrote (`catalog-streams.schema`), where the file may be
// anything a user or another tool put at that path: every malformed byte is a `FooterError`, never
// a read past the footer, a loop or an allocation larger than the footer itself.
import { openRegularFile } from '../../storage/bounded-read.js';

/** The longest footer read back: our footers hold a schema and a few row groups (kilobytes). */
export const MAX_FOOTER_BYTES = 16 * 1024 * 1024;
/** Deeper nesting than a FileMetaData has is not a footer. */
const MAX_DEPTH = 32;
/** "PAR1", the magic number at both ends of a Parquet file. */
const MAGIC = Buffer.from('PAR1', 'latin1');

/** A footer that is not the Thrift FileMetaData it claims to be: caught below, never surfaced. */
class FooterError extends Error {}

/** The compact protocol's type ids. */
const T = {
  True: 1,
  False: 2,
  Byte: 3,
  I16: 4,
  I32: 5,
  I64: 6,
  Double: 7,
  Binary: 8,
  List: 9,
  Set: 10,
  Map: 11,
  Struct: 12,
} as const;

/** A cursor over compact-protocol bytes that fails instead of reading past its end. */
class CompactReader {
  #pos = 0;
  constructor(readonly bytes: Buffer) {}

  byte(): number {
    if (this.#pos >= this.bytes.length) throw new FooterError('truncated');
    return this.bytes[this.#pos++]!;
  }

  /** An unsigned varint of at most 10 bytes (a number: lengths and sizes fit easily). */
  varint(): number {
    let result = 0;
    let factor = 1;
    for (let i = 0; i < 10; i++) {
      const b = this.byte();
      result += (b & 0x7f) * factor;
      if ((b & 0x80) === 0) return result;
      factor *= 128;
    }
    throw new FooterError('varint too long');
  }

  skipBytes(n: number): void {
    if (n < 0 || this.#pos + n > this.bytes.length) throw new FooterError('truncated');
    this.#pos += n;
  }

  binary(): string {
    const n = this.varint();
    const start = this.#pos;
    this.skipBytes(n);
    return this.bytes.toString('utf8', start, start + n);
  }

  /** The next field's id and type, or undefined at the struct's end. */
  field(lastId: number): { id: number; type: number } | undefined {
    const b = this.byte();
    if (b === 0) return undefined;
    const delta = b >> 4;
    const id = delta === 0 ? zigzag(this.varint()) : lastId + delta;
    return { id, type: b & 0x0f };
  }

  /** A list or set header: its element type and size. */
  listHeader(): { type: number; size: number } {
    const b = this.byte();
    const size = b >> 4 === 15 ? this.varint() : b >> 4;
    // Each element takes at least one byte: a larger size is a lie that would only loop.
    if (size > this.bytes.length) throw new FooterError('list too long');
    return { type: b & 0x0f, size };
  }

  skip(type: number, depth: number): void {
    if (depth > MAX_DEPTH) throw new FooterError('nested too deep');
    switch (type) {
      case T.True:
      case T.False:
        // A boolean field's value is its type.
        return;
      case T.Byte:
        return void this.byte();
      case T.I16:
      case T.I32:
      case T.I64:
        return void this.varint();
      case T.Double:
        return this.skipBytes(8);
      case T.Binary:
        return this.skipBytes(this.varint());
      case T.List:
      case T.Set:
        return this.#skipList(depth);
      case T.Map:
        return this.#skipMap(depth);
      case T.Struct:
        return this.skipStruct(depth);
      default:
        throw new FooterError(`unknown type ${type}`);
    }
  }

  skipStruct(depth: number): void {
    let id = 0;
    for (let f = this.field(id); f; f = this.field(id)) {
      this.skip(f.type, depth + 1);
      id = f.id;
    }
  }

  #skipList(depth: number): void {
    const { type, size } = this.listHeader();
    // Booleans in a list are one byte each (in a struct their value is the field type).
    for (let i = 0; i < size; i++) {
      if (type === T.True || type === T.False) this.byte();
      else this.skip(type, depth + 1);
    }
  }

  #skipMap(depth: number): void {
    const size = this.varint();
    if (size === 0) return;
    if (size > this.bytes.length) throw new FooterError('map too long');
    const kv = this.byte();
    for (let i = 0; i < size; i++) {
      this.skip(kv >> 4, depth + 1);
      this.skip(kv & 0x0f, depth + 1);
    }
  }
}

function zigzag(n: number): number {
  return n % 2 === 0 ? n / 2 : -(n + 1) / 2;
}

/** FileMetaData's `key_value_metadata` (field 5: list<KeyValue{1: key, 2: value}>). */
function keyValues(footer: Buffer): Map<string, string> {
  const reader = new CompactReader(footer);
  const found = new Map<string, string>();
  let id = 0;
  for (let f = reader.field(id); f; f = reader.field(id)) {
    id = f.id;
    if (f.id !== 5 || f.type !== T.List) {
      reader.skip(f.type, 1);
      continue;
    }
    const { type, size } = reader.listHeader();
    if (type !== T.Struct) throw new FooterError('key_value_metadata is not a list of structs');
    for (let i = 0; i < size; i++) keyValue(reader, found);
  }
  return found;
}

function keyValue(reader: CompactReader, into: Map<string, string>): void {
  let key: string | undefined;
  let value: string | undefined;
  let id = 0;
  for (let f = reader.field(id); f; f = reader.field(id)) {
    id = f.id;
    if (f.type === T.Binary && (f.id === 1 || f.id === 2)) {
      if (f.id === 1) key = reader.binary();
      else value = reader.binary();
    } else reader.skip(f.type, 2);
  }
  if (key !== undefined && value !== undefined) into.set(key, value);
}

/**
 * The footer's key/value metadata of the Parquet file `file`; undefined for anything that is not
 * a readable regular Parquet file with a footer of at most `maxFooter` bytes (a link, a FIFO, a
 * CSV, garbage, a truncated file). Never throws: whatever is there only means "not known".
 */
export async function parquetKeyValues(
  file: string,
  maxFooter = MAX_FOOTER_BYTES,
): Promise<Map<string, string> | undefined> {
  const opened = await openRegularFile(file).catch(() => undefined);
  if (!opened) return undefined;
  const { handle, size } = opened;
  try {
    if (size < 12) return undefined;
    const tail = Buffer.alloc(8);
    await handle.read(tail, 0, 8, size - 8);
    const length = tail.readUInt32LE(0);
    if (!tail.subarray(4).equals(MAGIC) || length > maxFooter || length + 12 > size) return undefined;
    const footer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(footer, 0, length, size - 8 - length);
    return bytesRead === length ? keyValues(footer) : undefined;
  } catch {
    return undefined;
  } finally {
    await handle.close().catch(() => {});
  }
}
