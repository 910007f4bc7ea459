// A folder or file of ours reached through a symbolic link is refused, never followed.
//
// Folders under a store's root are shared with other tools and people; a link planted where one
// of our folders should be (`history/nightly -> /somewhere/else`, a table's `current/data ->
// ../../outside`) would make a listing, a read and above all a removal act on files outside the
// root. The root itself may be a link (an operator moving a lake onto a bigger disk): only the
// segments under it are checked, each with lstat.
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import { StorageError } from '../errors.js';

/** The `storage.symlink` error for the link at `at`, a folder or file of ours under `root`. */
export function symlinkRefused(at: string, root: string): StorageError {
  return new StorageError(
    'use',
    at,
    `it is a symbolic link where this toolkit keeps a folder or file of its own under ${root}; links there are never followed (a listing, read or removal through it would act on files elsewhere). Replace the link with the folder or file itself, or point the configuration at the real location (the configured folder itself may be a link)`,
    { code: 'storage.symlink' },
  );
}

/**
 * Fails with `storage.symlink` naming the first segment of `rel` (under `root`) that is a symbolic
 * link; segments that do not exist yet are fine (nothing can be reached through them).
 */
export async function assertNoSymlinks(root: string, rel: string): Promise<void> {
  let at = root;
  for (const segment of rel.split('/').filter((s) => s !== '')) {
    at = path.join(at, segment);
    const info = await lstat(at).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined;
      throw err;
    });
    if (!info) return;
    if (info.isSymbolicLink()) throw symlinkRefused(at, root);
  }
}
