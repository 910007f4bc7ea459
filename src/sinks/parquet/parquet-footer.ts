// The key/value metadata of a Parquet file's footer, read back without reading the file: the last
// 8 bytes give the footer's length, and only the footer is read, bounded, and parsed by hyparquet
// (the reader of the writer we use, same pinned version). Used to tell which columns an earlier
// run wrote (`catalog-streams.schema`), where the file may be anything a user or another tool put
// at that path: a malformed footer is only "not known", never a read past the footer (hyparquet
// reads through a DataView over the footer alone, which throws at its end).
import { parquetMetadata } from 'hyparquet';
import { openRegularFile } from '../../storage/bounded-read.js';

/** The longest footer read back: our footers hold a schema and a few row groups (kilobytes). */
export const MAX_FOOTER_BYTES = 16 * 1024 * 1024;
/** "PAR1", the magic number at both ends of a Parquet file. */
const MAGIC = Buffer.from('PAR1', 'latin1');

/** The footer's `key_value_metadata` as a map (entries without a value left out). */
function keyValues(footerAndTail: Buffer): Map<string, string> {
  const metadata = parquetMetadata(footerAndTail);
  const found = new Map<string, string>();
  for (const kv of metadata.key_value_metadata ?? []) if (typeof kv.value === 'string') found.set(kv.key, kv.value);
  return found;
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
    // The footer with its length and magic after it: what hyparquet parses a footer from.
    const footer = Buffer.alloc(length + 8);
    const { bytesRead } = await handle.read(footer, 0, length + 8, size - 8 - length);
    return bytesRead === length + 8 ? keyValues(footer) : undefined;
  } catch {
    return undefined;
  } finally {
    await handle.close().catch(() => {});
  }
}
