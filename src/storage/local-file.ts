// Local files that appear whole or not at all, written so that nobody else's file is ever touched.
//
// Every write goes to a temp file in the target's own folder (same file system, so the rename or
// link that publishes it is atomic) named `.<name>.<host>-<pid>-<random>.tmp`: hidden, so globs such
// as `*.parquet` skip it; naming its writer, so a later run can tell a dead writer's leftover from a
// live one's (sinks/local/local-dataset.ts); and with a random part from the CSPRNG, so nobody can plant
// something at the name beforehand. The temp file is opened with `wx` (O_CREAT | O_EXCL): the open
// fails if anything exists at that name, a symlink included, so a link planted there is never
// followed and its target never written. Only a temp file this process created is removed on failure.
// node:fs alone does it (open 'wx', write, sync, rename or link), so no dependency is needed.
import { createHash, randomBytes } from 'node:crypto';
import { link, open, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { StorageError } from '../errors.js';
import { makeFolder } from './make-folder.js';
import { storageStep } from './step-hook.js';

/** Who writes: the first 6 hex digits of sha256(hostname), so the name carries no host name. */
export const HOST_TAG = createHash('sha256').update(hostname()).digest('hex').slice(0, 6);
/** A temp file untouched this long is abandoned whoever wrote it (a host whose processes we cannot see). */
const ABANDONED_MS = 24 * 60 * 60 * 1000;
const TEMP_NAME = /^\.(.+)\.([0-9a-f]{6})-(\d+)-[0-9a-f]{8}\.tmp$/;
/** Fresh names tried when something already exists at a temp name (a collision, or a planted file). */
const TEMP_ATTEMPTS = 3;
/** Like writeFile's default: the umask decides. */
const DEFAULT_MODE = 0o666;

export interface LocalWriteOptions {
  /** Permission bits of the new file (before the umask); 0o666 when absent. */
  mode?: number;
  /** The caller made (and checked) the folder just now: no stat here (storage/checked-folders.ts). */
  folderReady?: boolean;
}

/** A fresh, unpredictable temp name beside `finalPath`, naming its writer (host tag and pid). */
export function tempPathFor(finalPath: string): string {
  return path.join(
    path.dirname(finalPath),
    `.${path.basename(finalPath)}.${HOST_TAG}-${process.pid}-${randomBytes(4).toString('hex')}.tmp`,
  );
}

/** The parts of a temp file name made by tempPathFor, or undefined for any other name. */
export function parseTempName(name: string): { finalName: string; hostTag: string; pid: number } | undefined {
  const m = TEMP_NAME.exec(name);
  return m ? { finalName: m[1]!, hostTag: m[2]!, pid: Number(m[3]) } : undefined;
}

/**
 * Replaces `file` with `data` atomically: a reader sees the previous content or the new one, never
 * part of it. The folder is created if needed; the data is fsynced before the rename, so a crash
 * right after it cannot leave an empty file under the final name.
 * Fails with StorageError (`storage.write_failed`), leaving `file` as it was and no temp file.
 */
export async function writeFileAtomic(
  file: string,
  data: string | Uint8Array,
  options: LocalWriteOptions = {},
): Promise<void> {
  if (!options.folderReady) await createFolder(file, 'write');
  const temp = await writeTempFile(file, data, options.mode ?? DEFAULT_MODE, 'write');
  try {
    storageStep('rename', file);
    await rename(temp, file);
  } catch (err) {
    await removeOwnTemp(temp);
    throw failure('write', file, `renaming the temp file ${path.basename(temp)} over it failed`, err);
  }
}

/**
 * Creates `file` with `data` only if nothing exists under that name: true when created, false when
 * it existed. The content is complete before the name appears (link(2) of a finished temp file), so
 * a reader never finds it empty or half written. Fails with StorageError (`storage.write_failed`)
 * for anything but an existing file, leaving no temp file.
 */
export async function createFileExclusive(
  file: string,
  data: string | Uint8Array,
  options: LocalWriteOptions = {},
): Promise<boolean> {
  await createFolder(file, 'create');
  const temp = await writeTempFile(file, data, options.mode ?? DEFAULT_MODE, 'create');
  try {
    storageStep('link', file);
    await link(temp, file);
    return true;
  } catch (err) {
    if (errorCode(err) === 'EEXIST') return false;
    throw failure('create', file, `linking the temp file ${path.basename(temp)} to it failed`, err);
  } finally {
    await removeOwnTemp(temp);
  }
}

async function createFolder(file: string, operation: Operation): Promise<void> {
  const dir = path.dirname(file);
  try {
    await makeFolder(dir);
  } catch (err) {
    // mkdir reports a file in the way as EEXIST or ENOTDIR, depending on where it is.
    const hint = errorCode(err) === 'EEXIST' ? `a part of ${dir} is a file, not a folder; fix the path` : undefined;
    throw failure(operation, file, `creating the folder ${dir} failed`, err, hint);
  }
}

/** A complete, fsynced, closed temp file beside `file` that this process created; its path. */
async function writeTempFile(file: string, data: string | Uint8Array, mode: number, operation: Operation) {
  let handle: FileHandle | undefined;
  let temp = '';
  for (let attempt = 1; !handle; attempt++) {
    temp = tempPathFor(file);
    try {
      handle = await open(temp, 'wx', mode);
    } catch (err) {
      if (errorCode(err) === 'EEXIST' && attempt < TEMP_ATTEMPTS) continue;
      throw failure(operation, file, `creating the temp file ${path.basename(temp)} beside it failed`, err);
    }
  }
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (err) {
    await handle.close().catch(() => {});
    await removeOwnTemp(temp);
    throw failure(operation, file, `writing the temp file ${path.basename(temp)} beside it failed`, err);
  }
  try {
    await handle.close();
  } catch (err) {
    await removeOwnTemp(temp);
    throw failure(operation, file, `closing the temp file ${path.basename(temp)} beside it failed`, err);
  }
  return temp;
}

/** Removes a temp file this process created (never followed: unlink removes the name itself). */
async function removeOwnTemp(temp: string): Promise<void> {
  await unlink(temp).catch(() => {});
}

type Operation = 'write' | 'create';

function failure(operation: Operation, file: string, step: string, err: unknown, hint?: string): StorageError {
  const outcome = operation === 'write' ? `${file} is unchanged` : `${file} was not created`;
  const reason = `${step} (${(err as Error).message}); ${outcome}; ${hint ?? advice(err, file)}`;
  return new StorageError(operation, file, reason, { cause: err });
}

/** What the user can do about an error of the file system. */
function advice(err: unknown, file: string): string {
  const dir = path.dirname(file);
  switch (errorCode(err)) {
    case 'ENOSPC':
      return 'free disk space on that file system and run again';
    case 'EDQUOT':
      return "free space within this user's disk quota and run again";
    case 'EACCES':
    case 'EPERM':
      return `check that this user may create files in ${dir}`;
    case 'EROFS':
      return `${dir} is on a read-only file system; choose a writable location`;
    case 'ENOTDIR':
      return `a part of ${dir} is a file, not a folder; fix the path`;
    case 'EISDIR':
    case 'ENOTEMPTY':
      return `${file} is a folder; remove it or choose another file name`;
    case 'EEXIST':
      return `something keeps creating files at this program's temp names in ${dir}; find out what, or write elsewhere`;
    case 'EMFILE':
    case 'ENFILE':
      return 'too many open files; raise the limit (ulimit -n) or run fewer pipelines at once';
    default:
      return `check ${dir} and its file system`;
  }
}

function errorCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** Whether `file` is a temp file (storage/local-file.ts tempPathFor) whose writer is gone: a process of this host that has ended, or untouched for a day. */
export async function isStaleTemp(file: string): Promise<boolean> {
  const temp = parseTempName(path.basename(file));
  if (!temp) return false;
  if (temp.hostTag === HOST_TAG && !processExists(temp.pid)) return true;
  const info = await stat(file).catch(() => undefined);
  return !!info && Date.now() - info.mtimeMs > ABANDONED_MS;
}

/** Whether a process with this pid runs on this host (EPERM: it does, as another user). */
export function processExists(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
