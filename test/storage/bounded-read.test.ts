// Files the run reads back are read only if they are regular files, and never past a limit
// (storage/bounded-read.ts): a FIFO at `_table.json` used to block the run in preflight for good,
// `_table.json` linked to /dev/zero was read until memory ran out, and any size was read whole.
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readBoundedRegularFile } from '../../src/storage/bounded-read.js';
import { LocalObjectStore } from '../../src/storage/object-store.js';

describe('reading back only regular files, bounded', () => {
  let dir: string;
  let store: LocalObjectStore;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bounded-read-'));
    store = new LocalObjectStore(dir);
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  // Before: readFile() on a FIFO waits for a writer that never comes; the test timed out.
  it('refuses a FIFO at once instead of waiting for a writer', async () => {
    execFileSync('mkfifo', [join(dir, '_table.json')]);
    await expect(store.readText('_table.json')).rejects.toMatchObject({
      code: 'storage.not_regular_file',
      message: expect.stringContaining(`${join(dir, '_table.json')}: it is a FIFO`),
    });
    await expect(store.readStream('_table.json')).rejects.toMatchObject({ code: 'storage.not_regular_file' });
  }, 10_000);

  // A link at the name is refused as a link now (never followed, storage/no-symlink.ts); a device
  // reached otherwise (the root itself, /dev, may be a link or a device folder) is still refused as one.
  it('refuses _table.json linked to /dev/zero without reading it, and /dev/zero itself', async () => {
    await symlink('/dev/zero', join(dir, '_table.json'));
    await expect(store.readText('_table.json')).rejects.toMatchObject({
      code: 'storage.symlink',
      message: expect.stringContaining(join(dir, '_table.json')),
    });
    await expect(readBoundedRegularFile(join(dir, '_table.json'), 1024)).rejects.toMatchObject({
      code: 'storage.symlink',
    });
    await expect(new LocalObjectStore('/dev').readText('zero')).rejects.toMatchObject({
      code: 'storage.not_regular_file',
      message: expect.stringContaining('a character device'),
    });
  });

  it('refuses a folder where a file should be', async () => {
    await mkdir(join(dir, 'state.json'));
    await expect(store.readText('state.json')).rejects.toMatchObject({ code: 'storage.not_regular_file' });
  });

  it('reads up to the limit and refuses a byte more, naming the file and the limit', async () => {
    await writeFile(join(dir, 'fits.json'), '0123456789');
    await writeFile(join(dir, 'over.json'), '0123456789A');
    expect(await store.readText('fits.json', { maxBytes: 10 })).toBe('0123456789');
    await expect(store.readText('over.json', { maxBytes: 10 })).rejects.toMatchObject({
      code: 'storage.too_large',
      message: expect.stringMatching(/over\.json: it is 11 bytes, larger than the limit of 10 bytes/),
    });
    expect((await readBoundedRegularFile(join(dir, 'fits.json'), 10)).toString()).toBe('0123456789');
  });

  it('still tells a missing file from a refused one', async () => {
    expect(await store.readText('missing.json')).toBeUndefined();
    await expect(store.readStream('missing.json')).rejects.toMatchObject({ code: 'storage.read_failed' });
  });
});
