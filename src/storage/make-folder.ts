// Creating a folder and its missing parents. Not `mkdir(dir, { recursive: true })`: on Linux, under
// /proc (and other pseudo file systems where mkdir answers ENOENT although the parent exists), Node's
// recursive mkdir loops forever in a libuv thread: the run spins, and the busy thread keeps the
// process alive after its summary. This walk makes one mkdir per missing level and fails at once.
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';

export async function makeFolder(dir: string): Promise<void> {
  const target = path.resolve(dir);
  const missing: string[] = [];
  for (let at = target; ; at = path.dirname(at)) {
    const found = await stat(at).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    if (found) {
      if (!found.isDirectory()) throw Object.assign(new Error(`EEXIST: ${at} is not a folder`), { code: 'EEXIST' });
      break;
    }
    missing.push(at);
    if (path.dirname(at) === at) break;
  }
  for (const folder of missing.reverse()) {
    await mkdir(folder).catch((err: NodeJS.ErrnoException) => {
      // Another run made it meanwhile: fine. Any other answer (ENOENT under /proc, EACCES) is final.
      if (err.code !== 'EEXIST') throw err;
    });
  }
}
