// The header line of an earlier CSV file, read back to say when this run's columns differ from
// the ones it was written with (issue 37 item 10). A CSV file carries its column names and nothing
// else: no types, no hash, no writer's mark. So the comparison is of names only, and a file counts
// as this toolkit's only when its header ends with `_extra` (every CSV sink writes that column
// last); anything else, a file without a header (`header: false`), another tool's, garbage, is
// "not known". Gzip-compressed files are read through gunzip. The read is bounded either way:
// at most MAX_HEADER_BYTES of text, from a regular file opened without following a link.
import { createGunzip } from 'node:zlib';
import { openRegularFile } from '../../storage/bounded-read.js';
import { EXTRA_COLUMN } from '../shared/column-schema.js';
import type { DescribedColumn, DescribedSchema } from '../shared/schema-change.js';

/** The longest header line read back (a few hundred columns take a few KB). */
export const MAX_HEADER_BYTES = 1024 * 1024;

/** The first `maxBytes` bytes of a regular file (no link, no FIFO: storage/bounded-read.ts). */
async function filePrefix(file: string, maxBytes: number): Promise<Buffer> {
  const { handle, size } = await openRegularFile(file);
  try {
    const bytes = Buffer.alloc(Math.min(size, maxBytes));
    const { bytesRead } = await handle.read(bytes, 0, bytes.length, 0);
    return bytes.subarray(0, bytesRead);
  } finally {
    await handle.close().catch(() => {});
  }
}

/** The text before the first line feed, without its CR; undefined when none comes within `maxBytes`. */
function lineOf(bytes: Buffer, maxBytes: number): string | undefined {
  const end = bytes.indexOf(0x0a);
  if (end < 0 || end > maxBytes) return undefined;
  return bytes.toString('utf8', 0, end).replace(/\r$/, '');
}

/**
 * The first line of `file`, gunzipped when it starts with gzip's magic number: only as much is
 * inflated as the line needs (a truncated prefix inflates as far as it goes), never more than
 * `maxBytes` of text.
 */
async function firstLine(file: string, maxBytes: number): Promise<string | undefined> {
  const prefix = await filePrefix(file, maxBytes);
  if (prefix[0] !== 0x1f || prefix[1] !== 0x8b) return lineOf(prefix, maxBytes);
  const gunzip = createGunzip();
  gunzip.end(prefix);
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of gunzip as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    total += chunk.length;
    if (chunk.includes(0x0a) || total > maxBytes) break;
  }
  return lineOf(Buffer.concat(chunks), maxBytes);
}

/** One CSV line's fields (RFC 4180: quoted fields, doubled quotes); undefined when its quotes do not close. */
export function splitCsvLine(line: string, delimiter: string): string[] | undefined {
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    let field = '';
    if (line[i] === '"') {
      for (i++; ; i++) {
        if (i >= line.length) return undefined;
        if (line[i] !== '"') field += line[i];
        else if (line[i + 1] === '"') field += line[++i];
        else break;
      }
      i++;
      if (i < line.length && line[i] !== delimiter) return undefined;
    } else {
      const end = line.indexOf(delimiter, i);
      field = line.slice(i, end < 0 ? line.length : end);
      i = end < 0 ? line.length : end;
    }
    fields.push(field);
    if (i >= line.length) return fields;
    i += delimiter.length;
  }
}

/**
 * The column names of an earlier CSV file of this toolkit at `file`: its header line split by
 * `delimiter`; undefined when the file cannot be read, is over the limit, or is not ours.
 */
export async function csvHeaderColumns(
  file: string,
  delimiter: string,
  maxBytes = MAX_HEADER_BYTES,
): Promise<string[] | undefined> {
  const line = await firstLine(file, maxBytes).catch(() => undefined);
  const names = line === undefined ? undefined : splitCsvLine(line, delimiter);
  return names?.at(-1) === EXTRA_COLUMN ? names : undefined;
}

/**
 * An earlier CSV file's columns as a schema to compare this run's with (shared/schema-change.ts):
 * its header's names, each typed as this run types it (the file records no types, so a change of
 * type alone is not seen; a column only the file has gets the type ''), and no hash (''). Undefined
 * when the file does not tell (see csvHeaderColumns).
 */
export async function csvPublishedSchema(
  file: string,
  delimiter: string,
  current: readonly DescribedColumn[],
): Promise<DescribedSchema | undefined> {
  const names = await csvHeaderColumns(file, delimiter);
  if (!names) return undefined;
  const types = new Map(current.map((c) => [c.name, c.type]));
  return { hash: '', columns: names.map((name) => ({ name, type: types.get(name) ?? '' })) };
}
