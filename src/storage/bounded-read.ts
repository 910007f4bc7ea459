// Reading the toolkit's own local files: only regular files, and never more than a limit.
//
// Every file the run reads back (a `_table.json`, a state, a lock, a history file, an Iceberg
// manifest) lives in a folder others can write too. Whatever is planted there must not hang or
// exhaust the run: a FIFO would block `open()` for reading until a writer comes (the run sits in
// preflight holding its lock, and a SIGTERM cannot end it), `/dev/zero` or a huge file would be
// read into memory until V8 gives up. So a file is opened with O_NONBLOCK (a FIFO's open returns
// at once), checked with fstat on the open handle (what is read is what was checked, with no
// window for a swap between a stat and an open), refused unless it is a regular file, and read
// up to its limit and no further (a regular file can still grow while it is read). O_NOFOLLOW: a
// symbolic link at the file's own name is refused (`storage.symlink`), never read through; the
// folders above it are checked by the store (storage/no-symlink.ts).
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import path from 'node:path';
import { StorageError } from '../errors.js';
import { symlinkRefused } from './no-symlink.js';

const MiB = 1024 * 1024;

/** The byte limits of the files the run reads back whole (docs/security.md lists them). */
export const READ_LIMITS = {
  /** A JSON document of the toolkit read as text: `_table.json`, a state, a lock, a manifest. */
  text: 64 * MiB,
  /** One run's history file (about 300 bytes). */
  historyRun: 64 * 1024,
  /** A pipeline's compacted history (the last 500 runs, about 150 KB). */
  historyFile: 16 * MiB,
  /** A run's journal of files written (storage/write-journal.ts; a name per file, at most 100,000). */
  journal: 16 * MiB,
} as const;

/** What kind of file `info` is, for messages. */
function fileKind(info: Stats): string {
  if (info.isDirectory()) return 'a folder';
  if (info.isFIFO()) return 'a FIFO (named pipe)';
  if (info.isCharacterDevice()) return 'a character device';
  if (info.isBlockDevice()) return 'a block device';
  if (info.isSocket()) return 'a socket';
  return 'not a regular file';
}

export function notRegularFile(file: string, info: Stats): StorageError {
  return new StorageError(
    'read',
    file,
    `it is ${fileKind(info)}, not a regular file; this toolkit reads back only regular files it wrote. Remove it (someone else put it there) and run again`,
    { code: 'storage.not_regular_file' },
  );
}

export function tooLarge(file: string, limit: number, size?: number): StorageError {
  const what = size === undefined ? 'it is larger' : `it is ${size} bytes, larger`;
  return new StorageError(
    'read',
    file,
    `${what} than the limit of ${limit} bytes for this file; a file of this toolkit is never that large, so it was not read. Check who wrote it, and remove or restore it`,
    { code: 'storage.too_large' },
  );
}

/**
 * `file` opened for reading if it is a regular file: a StorageError (`storage.not_regular_file`)
 * for anything else, without blocking on a FIFO; `storage.symlink` when `file` itself is a link.
 * System errors (ENOENT...) are thrown as they are.
 */
export async function openRegularFile(file: string): Promise<{ handle: FileHandle; size: number }> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW).catch(
    (err: NodeJS.ErrnoException) => {
      throw err.code === 'ELOOP' ? symlinkRefused(file, path.dirname(file)) : err;
    },
  );
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw notRegularFile(file, info);
    return { handle, size: info.size };
  } catch (err) {
    await handle.close().catch(() => {});
    throw err;
  }
}

/**
 * The content of a regular file of at most `maxBytes` bytes; `storage.too_large` for a larger
 * one (checked before reading, and again while reading: it may grow), `storage.not_regular_file`
 * for a FIFO, a device, a folder. A missing file throws the system's ENOENT error.
 */
export async function readBoundedRegularFile(file: string, maxBytes: number): Promise<Buffer> {
  const { handle, size } = await openRegularFile(file);
  try {
    if (size > maxBytes) throw tooLarge(file, maxBytes, size);
    // Up to one byte past the limit: that byte tells a file that grew past it from one that fits.
    const chunks: Buffer[] = [];
    let total = 0;
    let next = Math.min(size, maxBytes) + 1;
    for (;;) {
      const chunk = Buffer.allocUnsafe(next);
      const { bytesRead } = await handle.read(chunk, 0, next, null);
      if (bytesRead === 0) return Buffer.concat(chunks, total);
      total += bytesRead;
      if (total > maxBytes) throw tooLarge(file, maxBytes);
      chunks.push(chunk.subarray(0, bytesRead));
      next = Math.min(64 * 1024, maxBytes + 1 - total);
    }
  } finally {
    await handle.close().catch(() => {});
  }
}

/**
 * A regular file as a stream of chunks (the handle is closed when the stream ends or is
 * destroyed); `storage.not_regular_file` for anything else.
 */
export async function openRegularFileStream(file: string, highWaterMark = 256 * 1024): Promise<AsyncIterable<Buffer>> {
  const { handle } = await openRegularFile(file);
  return handle.createReadStream({ highWaterMark });
}

/** `source`, failing with `storage.too_large` once more than `maxBytes` bytes came through. */
export async function* limitBytes(
  source: AsyncIterable<Buffer>,
  maxBytes: number,
  location: string,
): AsyncGenerator<Buffer> {
  let total = 0;
  for await (const chunk of source) {
    total += chunk.length;
    if (total > maxBytes) {
      (source as { destroy?: () => void }).destroy?.();
      throw tooLarge(location, maxBytes);
    }
    yield chunk;
  }
}
