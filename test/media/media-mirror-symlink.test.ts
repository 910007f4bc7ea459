// The mirror's folder holds no link it follows (issue 39 with docs/security.md): a format folder
// below the root planted as a link to a folder outside fails the run with `storage.symlink` naming
// it, and nothing is written outside, at the first file or after the folder was swapped mid-run
// (the store checks a folder in full once, then by identity: storage/checked-folders.ts).
import { mkdir, mkdtemp, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAssetHost } from '../../src/sandbox/asset-host.js';
import { MediaMirror } from '../../src/sinks/media/media-mirror.js';
import { type MediaTarget, storedName } from '../../src/sinks/media/media-targets.js';
import { LocalObjectStore } from '../../src/storage/object-store.js';

let host: Awaited<ReturnType<typeof startAssetHost>>;
beforeAll(async () => {
  host = await startAssetHost();
});
afterAll(() => host.close());

function targets(names: string[]): Map<string, MediaTarget> {
  const map = new Map<string, MediaTarget>();
  for (const name of names) {
    const url = `${host.url}/media/large/${name}.webp`;
    const { rel, contentName } = storedName(new URL(url));
    map.set(rel, {
      url,
      rel,
      contentName,
      mediaId: undefined,
      type: 'photo',
      format: 'largeWebp',
      expect: 'image/webp',
      productIds: new Set(['P1']),
    });
  }
  return map;
}

function mirror(root: string, runId: string, concurrency = 4): MediaMirror {
  return new MediaMirror(new LocalObjectStore(root), {
    concurrency,
    requestsPerSecond: 1000,
    timeoutMs: 10_000,
    maxBytes: 2 ** 20,
    userAgent: 'test',
    retries: 0,
    retryDelayMs: 1,
    revalidate: 'auto',
    removeAfterMs: 86_400_000,
    full: true,
    runId,
    signal: new AbortController().signal,
    warn: () => {},
  });
}

const hex = (i: number) => i.toString(16).padStart(24, '0');

async function layout(): Promise<{ root: string; outside: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'mirror-symlink-'));
  const root = join(dir, 'root');
  const outside = join(dir, 'outside');
  await mkdir(join(root, 'files/media'), { recursive: true });
  await mkdir(outside);
  await writeFile(join(outside, 'victim.txt'), 'not the mirror’s\n');
  return { root, outside };
}

describe('media-mirror: a linked folder below the root', () => {
  it('a format folder that is a link to outside fails the run with storage.symlink; nothing is written outside', async () => {
    const { root, outside } = await layout();
    await symlink(outside, join(root, 'files/media/large'));
    const run = mirror(root, 'run-linked').run(targets([hex(1), hex(2), hex(3)]));
    await expect(run).rejects.toMatchObject({
      code: 'storage.symlink',
      message: expect.stringContaining(join(root, 'files/media/large')),
    });
    expect(await readdir(outside)).toEqual(['victim.txt']);
    expect(await readFile(join(outside, 'victim.txt'), 'utf8')).toBe('not the mirror’s\n');
    await rm(join(root, '..'), { recursive: true, force: true });
  });

  it('the folder swapped for a link between two files of one store is refused at the next file', async () => {
    const { root, outside } = await layout();
    const store = new LocalObjectStore(root);
    // The first file checks the folder in full and keeps its identity.
    const first = await store.stage('files/media/large/a.webp');
    await first.file.write(Buffer.from('a'));
    await first.finish();
    await first.commit();
    // Swapped for a link to a folder elsewhere (the real one moved aside): the identity differs.
    await rename(join(root, 'files/media/large'), join(root, 'moved-aside'));
    await mkdir(join(outside, 'large'));
    await symlink(join(outside, 'large'), join(root, 'files/media/large'));
    await expect(store.stage('files/media/large/b.webp')).rejects.toMatchObject({
      code: 'storage.symlink',
      message: expect.stringContaining(join(root, 'files/media/large')),
    });
    expect(await readdir(join(outside, 'large'))).toEqual([]);
    // A link higher up (files/ itself) is caught the same way.
    await rm(join(root, 'files/media/large'));
    await rename(join(root, 'moved-aside'), join(root, 'files/media/large'));
    const again = await store.stage('files/media/large/c.webp');
    expect(again.rel).toBe('files/media/large/c.webp');
    await again.discard();
    await rename(join(root, 'files'), join(outside, 'files'));
    await symlink(join(outside, 'files'), join(root, 'files'));
    await mkdir(join(outside, 'elsewhere/media/large'), { recursive: true });
    await rm(join(outside, 'files'), { recursive: true });
    await rename(join(outside, 'elsewhere'), join(outside, 'files'));
    await expect(store.stage('files/media/large/d.webp')).rejects.toMatchObject({ code: 'storage.symlink' });
    expect(await readdir(join(outside, 'files/media/large'))).toEqual([]);
    await rm(join(root, '..'), { recursive: true, force: true });
  });
});
