// The folders a local store has checked for links and made, remembered by identity, so a store
// that creates many files in few folders (the media mirror: thousands of images in one format
// folder) checks each folder in full once and then costs one lstat per file instead of one per
// folder level plus a stat to make it.
//
// The no-symlink rule (storage/no-symlink.ts) stays whole: a folder is checked segment by segment
// the first time, and its identity (device and inode, from lstat, which follows the links above
// the last segment but not the last) is kept. Before each later file, one lstat of the folder's
// path must give the same identity: a folder (or any folder above it) swapped for a link to
// another place resolves to another inode and is checked in full again, which names the link
// (`storage.symlink`); a folder removed or replaced is checked and made again. The only swap the
// identity cannot tell is a link back to the very folder that was checked (moved elsewhere on the
// same device): files still land in that folder, never in one the run did not check. Reads,
// listings and removals keep their full check per operation.
import { lstat } from 'node:fs/promises';

interface Identity {
  dev: number;
  ino: number;
}

export class CheckedFolders {
  readonly #known = new Map<string, Identity>();
  readonly #pending = new Map<string, Promise<void>>();

  /**
   * Resolves once `dir` exists and holds no link below the root: at once after one lstat when
   * `dir` is the folder checked before, else through `full` (check the segments, make the folder,
   * which throws `storage.symlink` for a link) and a fresh identity.
   */
  ready(dir: string, full: () => Promise<void>): Promise<void> {
    // Files staged at once into one folder share the check under way: its lstat was issued at most
    // one lstat before theirs would have been, the same window as any check before an open.
    let pending = this.#pending.get(dir);
    if (!pending) {
      pending = this.#check(dir, full).finally(() => this.#pending.delete(dir));
      this.#pending.set(dir, pending);
    }
    return pending;
  }

  async #check(dir: string, full: () => Promise<void>): Promise<void> {
    const known = this.#known.get(dir);
    if (known) {
      const now = await identity(dir);
      if (now && now.dev === known.dev && now.ino === known.ino) return;
      this.#known.delete(dir);
    }
    await full();
    const made = await identity(dir);
    if (made) this.#known.set(dir, made);
  }
}

/** The folder's identity, or undefined when the name is not a folder itself (absent, a file, a link). */
async function identity(dir: string): Promise<Identity | undefined> {
  const info = await lstat(dir).catch(() => undefined);
  return info?.isDirectory() ? { dev: info.dev, ino: info.ino } : undefined;
}
