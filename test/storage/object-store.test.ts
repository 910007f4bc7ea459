// The object-store contract (storage/object-store.ts), run against both implementations: a local
// folder and an S3 prefix on s3rver. Whatever sits above (sinks, the table, the state, locks)
// relies on exactly these promises.
import { existsSync, symlinkSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { storeLockBackend } from '../../src/core/lock.js';
import { StorageError } from '../../src/errors.js';
import { LocalObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { createS3Client } from '../../src/storage/s3-client.js';
import { S3ObjectStore } from '../../src/storage/s3-object-store.js';
import { s3ServerForFile } from '../helpers/s3-server.js';
import { tempDir } from '../sinks/records.js';

const s3 = s3ServerForFile();

let counter = 0;
const implementations: Array<[string, () => Promise<ObjectStore>]> = [
  ['local folder', async () => new LocalObjectStore(join(await tempDir('object-store-'), 'root'))],
  [
    'S3 prefix (s3rver)',
    async () =>
      new S3ObjectStore({
        bucket: s3.bucket,
        prefix: `contract-${++counter}/`,
        client: () => createS3Client({}),
        feature: 's3-table',
      }),
  ],
];

async function names(store: ObjectStore, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) if (!o.rel.split('/').at(-1)!.startsWith('.')) out.push(o.rel);
  return out.sort();
}

describe.each(implementations)('ObjectStore contract: %s', (_name, open) => {
  it('reads nothing where nothing was written, then exactly what was written, replaced whole', async () => {
    const store = await open();
    try {
      expect(await store.readText('a/b.json')).toBeUndefined();
      await store.write('a/b.json', '{"v":1}');
      expect(await store.readText('a/b.json')).toBe('{"v":1}');
      await store.write('a/b.json', Buffer.from('{"v":2}'));
      expect(await store.readText('a/b.json')).toBe('{"v":2}');
      const chunks: Buffer[] = [];
      for await (const c of await store.readStream('a/b.json')) chunks.push(Buffer.from(c));
      expect(Buffer.concat(chunks).toString()).toBe('{"v":2}');
    } finally {
      await store.close();
    }
  });

  it('puts if absent: true once, then false, and the first content stays', async () => {
    const store = await open();
    try {
      expect(await store.putIfAbsent('lock', 'first')).toBe(true);
      expect(await store.putIfAbsent('lock', 'second')).toBe(false);
      expect(await store.readText('lock')).toBe('first');
      await store.remove('lock');
      expect(await store.putIfAbsent('lock', 'third')).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('lists by prefix, recursively, and removes (a missing name is no error)', async () => {
    const store = await open();
    try {
      for (const rel of ['x/1.txt', 'x/y/2.txt', 'xz/3.txt', 'z.txt']) await store.write(rel, rel);
      expect(await names(store, 'x/')).toEqual(['x/1.txt', 'x/y/2.txt']);
      expect(await names(store, 'x')).toEqual(['x/1.txt', 'x/y/2.txt', 'xz/3.txt']);
      expect(await names(store)).toEqual(['x/1.txt', 'x/y/2.txt', 'xz/3.txt', 'z.txt']);
      await store.remove('x/y/2.txt');
      await store.remove('x/y/2.txt');
      await store.remove('never/was.txt');
      expect(await names(store)).toEqual(['x/1.txt', 'xz/3.txt', 'z.txt']);
    } finally {
      await store.close();
    }
  });

  it('stages: invisible until committed, and a discard leaves nothing', async () => {
    const store = await open();
    try {
      const kept = await store.stage('parts/p-1.bin');
      await kept.file.write(Buffer.from('kept'));
      const dropped = await store.stage('parts/p-2.bin');
      await dropped.file.write(Buffer.from('dropped'));
      expect(await store.readText('parts/p-1.bin')).toBeUndefined();
      await kept.finish();
      await dropped.finish();
      await kept.commit();
      await dropped.discard();
      expect(await store.readText('parts/p-1.bin')).toBe('kept');
      expect(await store.readText('parts/p-2.bin')).toBeUndefined();
      expect(await names(store, 'parts/')).toEqual(['parts/p-1.bin']);
      expect(kept.location).toBe(store.location('parts/p-1.bin'));
    } finally {
      await store.close();
    }
  });

  it('refuses names that would leave the root, before any I/O', async () => {
    const store = await open();
    try {
      for (const rel of ['../outside.txt', 'a/../../b', '/etc/passwd', 'a//b', '', 'a/./b']) {
        await expect(store.write(rel, 'x'), rel).rejects.toThrow(StorageError);
        await expect(store.remove(rel), rel).rejects.toMatchObject({ code: 'storage.outside_root' });
      }
      expect(await names(store)).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('carries a lock: one holder at a time, named in the lock document', async () => {
    const store = await open();
    try {
      const lock = storeLockBackend(store, 'd/_publish.lock');
      expect(lock.location).toBe(store.location('d/_publish.lock'));
      expect(await lock.create('{"runId":"a"}')).toBe(true);
      expect(await lock.create('{"runId":"b"}')).toBe(false);
      expect(await lock.read()).toBe('{"runId":"a"}');
      await lock.replace('{"runId":"a","beat":1}');
      expect(await lock.read()).toBe('{"runId":"a","beat":1}');
      await lock.remove();
      expect(await lock.read()).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('the client closes and opens again on the next use', async () => {
    const store = await open();
    await store.write('again.txt', '1');
    await store.close();
    expect(await store.readText('again.txt')).toBe('1');
    await store.close();
  });
});

describe('local folder specifics', () => {
  it('a write never follows a symlink planted in the folder, and fails naming the file when the folder is a file', async () => {
    const dir = await tempDir('object-store-local-');
    const store = new LocalObjectStore(dir);
    await writeFile(join(dir, 'victim.txt'), 'untouched');
    symlinkSync(join(dir, 'victim.txt'), join(dir, 'link.json'));
    await store.write('link.json', 'new');
    // The name is replaced (rename over the link); the link's target is never written.
    expect(await store.readText('victim.txt')).toBe('untouched');
    expect(await store.readText('link.json')).toBe('new');
    await writeFile(join(dir, 'file'), 'a file');
    const err = await store.write('file/inside.json', 'x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect((err as StorageError).message).toContain(join(dir, 'file/inside.json'));
    expect((await readdir(dir)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('removeAbandoned removes the temp files of dead writers whose final name it is asked about, and nothing else', async () => {
    const dir = await tempDir('object-store-abandoned-');
    const store = new LocalObjectStore(dir);
    await mkdir(join(dir, 'snap'), { recursive: true });
    const { HOST_TAG } = await import('../../src/storage/local-file.js');
    const dead = `.p.parquet.${HOST_TAG}-999999-0123abcd.tmp`;
    const live = `.q.parquet.${HOST_TAG}-${process.pid}-0123abcd.tmp`;
    const other = `.notes.txt.${HOST_TAG}-999999-0123abcd.tmp`;
    for (const n of [dead, live, other]) await writeFile(join(dir, 'snap', n), 'x');
    const removed = await store.removeAbandoned('', (rel) => rel.endsWith('.parquet'));
    expect(removed).toEqual([join(dir, 'snap', dead)]);
    expect(existsSync(join(dir, 'snap', live))).toBe(true);
    expect(existsSync(join(dir, 'snap', other))).toBe(true);
  });
});

// Issue 36, item 2: the store checked names lexically only, and listed, read, wrote and removed
// through a linked folder. Now every folder below the root is checked with lstat first.
describe('local folder: no symbolic link below the root is followed', () => {
  const VICTIM = 'outside: not the store’s\n';

  /** A store at `<dir>/root` whose `data/` is a link to `<dir>/outside` holding victim.txt. */
  async function linkedData() {
    const dir = await tempDir('object-store-links-');
    await mkdir(join(dir, 'root'));
    await mkdir(join(dir, 'outside'));
    await writeFile(join(dir, 'outside/victim.txt'), VICTIM);
    symlinkSync('../outside', join(dir, 'root/data'));
    return { dir, store: new LocalObjectStore(join(dir, 'root')), link: join(dir, 'root/data') };
  }

  const refused = (link: string) => ({ code: 'storage.symlink', message: expect.stringContaining(link) });

  it('read, stream, write, put, remove, stage and list under a linked folder fail naming it; the victim stays', async () => {
    const { dir, store, link } = await linkedData();
    await expect(store.readText('data/victim.txt')).rejects.toMatchObject(refused(link));
    await expect(store.readStream('data/victim.txt')).rejects.toMatchObject(refused(link));
    await expect(store.write('data/victim.txt', 'new')).rejects.toMatchObject(refused(link));
    await expect(store.write('data/new.txt', 'new')).rejects.toMatchObject(refused(link));
    await expect(store.putIfAbsent('data/lock', 'x')).rejects.toMatchObject(refused(link));
    await expect(store.remove('data/victim.txt')).rejects.toMatchObject(refused(link));
    await expect(store.stage('data/part.parquet')).rejects.toMatchObject(refused(link));
    await expect(names(store, 'data/')).rejects.toMatchObject(refused(link));
    expect(await readdir(join(dir, 'outside'))).toEqual(['victim.txt']);
    expect(await readFile(join(dir, 'outside/victim.txt'), 'utf8')).toBe(VICTIM);
  });

  it('a walk from above never descends into the link nor lists it; a linked file is not listed', async () => {
    const { dir, store } = await linkedData();
    await store.write('kept/own.json', '{}');
    symlinkSync(join(dir, 'outside/victim.txt'), join(dir, 'root/kept/link.json'));
    expect(await names(store)).toEqual(['kept/own.json']);
    const { HOST_TAG } = await import('../../src/storage/local-file.js');
    await writeFile(join(dir, 'outside', `.x.parquet.${HOST_TAG}-999999-0123abcd.tmp`), 'x');
    expect(await store.removeAbandoned('', () => true)).toEqual([]);
    expect((await readdir(join(dir, 'outside'))).sort()).toEqual([
      `.x.parquet.${HOST_TAG}-999999-0123abcd.tmp`,
      'victim.txt',
    ]);
  });

  it('a link at a file name is refused for reading, replaced (never followed) by a write', async () => {
    const { dir, store } = await linkedData();
    symlinkSync(join(dir, 'outside/victim.txt'), join(dir, 'root/_table.json'));
    await expect(store.readText('_table.json')).rejects.toMatchObject(refused(join(dir, 'root/_table.json')));
    await store.remove('_table.json');
    expect(await readFile(join(dir, 'outside/victim.txt'), 'utf8')).toBe(VICTIM);
  });

  it('the root itself may be a link; checkedFrom extends the check to the folders above the root', async () => {
    const { dir } = await linkedData();
    const viaLink = new LocalObjectStore(join(dir, 'root/data'));
    expect(await viaLink.readText('victim.txt')).toBe(VICTIM);
    await viaLink.write('sub/own.json', '{}');
    expect(await names(viaLink)).toEqual(['sub/own.json', 'victim.txt']);
    const checked = new LocalObjectStore(join(dir, 'root/data'), { checkedFrom: join(dir, 'root') });
    await expect(checked.readText('victim.txt')).rejects.toMatchObject(refused(join(dir, 'root/data')));
    await expect(names(checked)).rejects.toMatchObject(refused(join(dir, 'root/data')));
    // A checkedFrom that is not above the root changes nothing.
    expect(
      await new LocalObjectStore(join(dir, 'root/data'), { checkedFrom: join(dir, 'x') }).readText('victim.txt'),
    ).toBe(VICTIM);
  });
});
