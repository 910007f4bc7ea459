// The folder the suite's one pack and one install live in (test/helpers/shared-folder.ts): built
// once however many ask at once, whole or not at all, a dead builder's lock taken over, the
// owner's older keys removed and nobody else's.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sharedFolder } from './shared-folder.js';

const prefix = `shared-folder-test-${process.pid}-`;
const owner = `owner-${process.pid}`;
afterEach(async () => {
  for (const name of await readdir(tmpdir()))
    if (name.startsWith(prefix)) await rm(join(tmpdir(), name), { recursive: true, force: true });
});

/** A build that writes a file and counts its runs, taking a while so the others arrive meanwhile. */
function counting() {
  const runs = { n: 0 };
  const build = async (dir: string) => {
    runs.n++;
    await new Promise((r) => setTimeout(r, 300));
    await writeFile(join(dir, 'built.txt'), 'whole');
    return { file: join(dir, 'built.txt') };
  };
  return { runs, build };
}

describe('sharedFolder', () => {
  it('builds once for callers that ask at the same time; all get the final path', async () => {
    const { runs, build } = counting();
    const got = await Promise.all([1, 2, 3].map(() => sharedFolder(prefix, 'a1', owner, build)));
    expect(runs.n).toBe(1);
    const final = join(tmpdir(), `${prefix}a1`);
    for (const g of got) expect(g).toEqual({ dir: final, value: { file: join(final, 'built.txt') } });
    expect(await readFile(join(final, 'built.txt'), 'utf8')).toBe('whole');
    // No lock and no builder's temp folder left beside it.
    expect((await readdir(tmpdir())).filter((n) => n.startsWith(prefix))).toEqual([`${prefix}a1`]);
    // A later caller (a later run with the same key) reuses it.
    await sharedFolder(prefix, 'a1', owner, build);
    expect(runs.n).toBe(1);
  });

  it('takes over the lock of a builder that died, and its half-built folder', async () => {
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    await mkdir(join(tmpdir(), `${prefix}b2.lock`));
    await writeFile(join(tmpdir(), `${prefix}b2.lock`, 'pid'), String(dead));
    await mkdir(join(tmpdir(), `${prefix}b2`));
    await writeFile(join(tmpdir(), `${prefix}b2`, 'partial'), '');
    const { runs, build } = counting();
    const got = await sharedFolder(prefix, 'b2', owner, build);
    expect(runs.n).toBe(1);
    expect(existsSync(join(got.dir, 'partial'))).toBe(false);
    expect(existsSync(join(tmpdir(), `${prefix}b2.lock`))).toBe(false);
  });

  it('waits for a live builder rather than building beside it', async () => {
    await mkdir(join(tmpdir(), `${prefix}c3.lock`));
    await writeFile(join(tmpdir(), `${prefix}c3.lock`, 'pid'), String(process.pid));
    const { runs, build } = counting();
    const waiting = sharedFolder(prefix, 'c3', owner, build);
    await new Promise((r) => setTimeout(r, 600));
    expect(runs.n).toBe(0);
    await rm(join(tmpdir(), `${prefix}c3.lock`), { recursive: true });
    await waiting;
    expect(runs.n).toBe(1);
  });

  it("a failed build leaves nothing, and the next caller builds again; a new key removes the owner's older ones only", async () => {
    await expect(
      sharedFolder(prefix, 'd4', owner, () => Promise.reject(new Error('npm install failed'))),
    ).rejects.toThrow('npm install failed');
    expect((await readdir(tmpdir())).filter((n) => n.startsWith(prefix))).toEqual([]);
    const { runs, build } = counting();
    await sharedFolder(prefix, 'd4', owner, build);
    await sharedFolder(prefix, 'e5', 'another-checkout', build);
    await sharedFolder(prefix, 'f6', owner, build);
    expect(runs.n).toBe(3);
    expect((await readdir(tmpdir())).filter((n) => n.startsWith(prefix)).sort()).toEqual([
      `${prefix}e5`,
      `${prefix}f6`,
    ]);
  });
});
