// A folder under the temp dir built once per name for every test process that asks for it (the two
// vitest workers of a run, and later runs while the name stays the same): the packed tarball, the
// installed package. Building takes seconds to a minute (npm), so the first process to ask builds
// it and the others wait instead of doing the same work side by side.
//
// The builder holds a lock (a `<name>.lock` folder with its pid in it: mkdir is atomic), builds into
// `<name>.tmp-<pid>` and renames that into place, so a reader sees the whole folder or none; the
// value it returns is kept in `<name>/shared.json`. A lock whose process is gone (killed mid-build)
// is taken over, so a killed run never blocks the next one; a live builder is waited for however
// long npm takes on a busy machine.
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface SharedFolder<T> {
  dir: string;
  value: T;
}

interface Stored<T> {
  /** Who may remove the folder once a newer one of the same owner exists (a checkout's path). */
  owner: string;
  value: T;
}

/** Longest wait for a builder whose process is alive; past it something is wrong, so say so. */
const MAX_WAIT_MS = 10 * 60_000;
/** A lock folder with no pid in it yet: its maker is between mkdir and writeFile, or died there. */
const PIDLESS_LOCK_MS = 30_000;

/**
 * The folder `<tmpdir>/<prefix><key>`, made by `build(dir)` in whichever process asks first.
 * `owner` names who the folder belongs to: once a new key is built, the owner's folders of older
 * keys (same prefix) are removed, so a checkout keeps one per prefix, not one per rebuild.
 */
export async function sharedFolder<T>(
  prefix: string,
  key: string,
  owner: string,
  build: (dir: string) => Promise<T>,
): Promise<SharedFolder<T>> {
  const dir = join(tmpdir(), `${prefix}${key}`);
  const lock = `${dir}.lock`;
  for (let waited = 0; waited < MAX_WAIT_MS; waited += 200) {
    const done = await readStored<T>(dir);
    if (done) return { dir, value: done.value };
    if (await takeLock(lock)) {
      try {
        return { dir, value: await buildInPlace(prefix, dir, owner, build) };
      } finally {
        await rm(lock, { recursive: true, force: true });
      }
    }
    await sleep(200);
  }
  throw new Error(`${lock} held for ${MAX_WAIT_MS / 60_000} minutes by a live process; remove it if no test runs`);
}

async function readStored<T>(dir: string): Promise<Stored<T> | undefined> {
  const text = await readFile(join(dir, 'shared.json'), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : (JSON.parse(text) as Stored<T>);
}

/** The lock, if free or left by a process that is gone; false while a live process holds it. */
async function takeLock(lock: string): Promise<boolean> {
  try {
    await mkdir(lock);
    await writeFile(join(lock, 'pid'), String(process.pid));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  if (await holderAlive(lock)) return false;
  // Gone: remove its lock; the next round of the caller's loop takes it (or sees another taker's).
  await rm(lock, { recursive: true, force: true });
  return false;
}

async function holderAlive(lock: string): Promise<boolean> {
  const pid = Number(await readFile(join(lock, 'pid'), 'utf8').catch(() => ''));
  if (!pid) {
    const made = await stat(lock).catch(() => undefined);
    return made !== undefined && Date.now() - made.mtimeMs < PIDLESS_LOCK_MS;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function buildInPlace<T>(
  prefix: string,
  dir: string,
  owner: string,
  build: (dir: string) => Promise<T>,
): Promise<T> {
  // Another holder may have finished between our look and our lock.
  const done = await readStored<T>(dir);
  if (done) return done.value;
  const temp = `${dir}.tmp-${process.pid}`;
  await rm(temp, { recursive: true, force: true });
  await mkdir(temp);
  try {
    const value = await build(temp);
    const stored: Stored<T> = { owner, value: relocate(value, temp, dir) };
    await writeFile(join(temp, 'shared.json'), JSON.stringify(stored));
    // A half-built folder of a killed builder (no shared.json) would block the rename.
    await rm(dir, { recursive: true, force: true });
    await rename(temp, dir);
    await removeOlder(prefix, dir, owner);
    return stored.value;
  } catch (err) {
    await rm(temp, { recursive: true, force: true });
    throw err;
  }
}

/** The value with paths into the temp folder pointed at the final one. */
function relocate<T>(value: T, from: string, to: string): T {
  return JSON.parse(JSON.stringify(value).replaceAll(JSON.stringify(from).slice(1, -1), to)) as T;
}

/** The owner's complete folders of the same prefix but another key: superseded by `dir`. */
async function removeOlder(prefix: string, dir: string, owner: string): Promise<void> {
  for (const other of await readdir(tmpdir())) {
    const path = join(tmpdir(), other);
    // Keys only: not this folder, not a lock or a builder's temp folder.
    if (path === dir || !other.startsWith(prefix) || !/^[0-9a-f]+$/.test(other.slice(prefix.length))) continue;
    const stored = await readStored<unknown>(path).catch(() => undefined);
    if (stored?.owner === owner) await rm(path, { recursive: true, force: true });
  }
}
