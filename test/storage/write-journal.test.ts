// The write journal (storage/write-journal.ts), locally and on S3 (s3rver): a clean-up removes
// only files a run's journal names (and, on S3, whose metadata names that run); foreign files and
// files a planted journal names stay byte for byte.
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { createS3Client } from '../../src/storage/s3-client.js';
import { S3ObjectStore } from '../../src/storage/s3-object-store.js';
import { WriteJournal } from '../../src/storage/write-journal.js';
import { s3ServerForFile } from '../helpers/s3-server.js';
import { tempDir } from '../sinks/records.js';

const s3 = s3ServerForFile();
let counter = 0;

const implementations: Array<[string, () => Promise<ObjectStore>]> = [
  ['local folder', async () => new LocalObjectStore(join(await tempDir('journal-'), 'root'))],
  [
    'S3 prefix (s3rver)',
    async () =>
      new S3ObjectStore({
        bucket: s3.bucket,
        prefix: `journal-${++counter}/`,
        client: () => createS3Client({}),
        feature: 's3-table',
      }),
  ],
];

async function names(store: ObjectStore, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(o.rel);
  return out.sort();
}

describe.each(implementations)('WriteJournal: %s', (_name, open) => {
  it('records names before the files exist, and another run reads them back', async () => {
    const store = await open();
    try {
      const journal = await WriteJournal.open(store, 'run-1', 't/');
      await journal.record(['t/data/a.parquet', 't/data/b.parquet']);
      await journal.record(['t/data/a.parquet']);
      expect(await names(store)).toEqual(['t/_journal/run-1.json']);
      expect(journal.files).toEqual(['t/data/a.parquet', 't/data/b.parquet']);
      expect(await WriteJournal.ownedBy(store, 't/')).toEqual([
        { runId: 'run-1', files: ['t/data/a.parquet', 't/data/b.parquet'] },
      ]);
      expect(await WriteJournal.ownedBy(store, 't/', { self: 'run-1' })).toEqual([]);
      await expect(journal.record(['elsewhere/x'])).rejects.toMatchObject({ code: 'storage.outside_root' });
      await expect(journal.record(['t/_journal/run-2.json'])).rejects.toMatchObject({ code: 'storage.outside_root' });
    } finally {
      await store.close();
    }
  });

  it('sweeps what a killed run wrote and keep rejects, leaves foreign files, drops the emptied journal', async () => {
    const store = await open();
    try {
      const killed = await WriteJournal.open(store, 'killed', '');
      await killed.record(['data/part-0-killed.parquet', 'data/part-1-killed.parquet', 'data/never-written.parquet']);
      await store.write('data/part-0-killed.parquet', 'p0', killed.writeOptions());
      const staged = await store.stage('data/part-1-killed.parquet', killed.writeOptions());
      await staged.file.write(Buffer.from('p1'));
      await staged.finish();
      await staged.commit();
      // Foreign: a README, and a Spark part named like ours, written without a journal.
      await store.write('data/README.md', 'readme');
      await store.write('data/part-00000-3f1c-c000.snappy.parquet', 'spark');
      const kept = await WriteJournal.open(store, 'kept', '');
      await kept.record(['data/part-0-kept.parquet']);
      await store.write('data/part-0-kept.parquet', 'k', kept.writeOptions());

      const result = await WriteJournal.sweep(store, '', (rel) => rel === 'data/part-0-kept.parquet', {
        self: 'now',
      });
      expect(result.removed.sort()).toEqual(
        [store.location('data/part-0-killed.parquet'), store.location('data/part-1-killed.parquet')].sort(),
      );
      expect(result.dropped).toEqual(['killed']);
      expect(await names(store)).toEqual([
        '_journal/kept.json',
        'data/README.md',
        'data/part-0-kept.parquet',
        'data/part-00000-3f1c-c000.snappy.parquet',
      ]);
      expect(await store.readText('data/README.md')).toBe('readme');
      expect(await store.readText('data/part-00000-3f1c-c000.snappy.parquet')).toBe('spark');
    } finally {
      await store.close();
    }
  });

  it('ignores a journal that is not one (reported), and removes nothing it names', async () => {
    const store = await open();
    try {
      await store.write('data/victim.parquet', 'victim');
      await store.write(
        '_journal/bad.json',
        '{"format":"catalog-streams.journal","version":1,"run":"other","files":[]}',
      );
      await store.write('_journal/worse.json', 'not json');
      await store.write(
        '_journal/escape.json',
        '{"format":"catalog-streams.journal","version":1,"run":"escape","files":["../data/victim.parquet"]}',
      );
      const ignored: string[] = [];
      const result = await WriteJournal.sweep(store, '', () => false, { ignored: (at) => ignored.push(at) });
      expect(result.removed).toEqual([]);
      expect(ignored.sort()).toEqual(
        ['_journal/bad.json', '_journal/escape.json', '_journal/worse.json'].map((r) => store.location(r)),
      );
      expect(await store.readText('data/victim.parquet')).toBe('victim');
    } finally {
      await store.close();
    }
  });
});

describe('WriteJournal on S3: the object metadata is the proof', () => {
  it('a planted journal naming a foreign object deletes nothing and is dropped', async () => {
    const store = await implementations[1]![1]();
    try {
      await store.write('data/foreign.parquet', 'foreign');
      await store.write('data/other-run.parquet', 'other', { metadata: { 'catalog-streams-run': 'someone-else' } });
      await store.write(
        '_journal/planted.json',
        JSON.stringify({
          format: 'catalog-streams.journal',
          version: 1,
          run: 'planted',
          files: ['data/foreign.parquet', 'data/other-run.parquet'],
        }),
      );
      const result = await WriteJournal.sweep(store, '', () => false);
      expect(result.removed).toEqual([]);
      expect(result.dropped).toEqual(['planted']);
      expect(await store.readText('data/foreign.parquet')).toBe('foreign');
      expect(await store.readText('data/other-run.parquet')).toBe('other');
    } finally {
      await store.close();
    }
  });
});

describe('WriteJournal locally', () => {
  it('removes a link at a journaled name never, nor what it points at; a dead writer’s temp file goes', async () => {
    const dir = await tempDir('journal-link-');
    await mkdir(join(dir, 'root', 'data'), { recursive: true });
    await writeFile(join(dir, 'victim.txt'), 'victim');
    await symlink(join(dir, 'victim.txt'), join(dir, 'root', 'data', 'linked.parquet'));
    // A temp file of a writer that is gone (pid 999999 of this host), for a journaled name.
    const { HOST_TAG } = await import('../../src/storage/local-file.js');
    const temp = join(dir, 'root', 'data', `.part-0.parquet.${HOST_TAG}-999999-0a1b2c3d.tmp`);
    await writeFile(temp, 'half');
    const store = new LocalObjectStore(join(dir, 'root'));
    const journal = await WriteJournal.open(store, 'killed');
    await journal.record(['data/linked.parquet', 'data/part-0.parquet']);
    const result = await WriteJournal.sweep(store, '', () => false, { self: 'now' });
    expect(result.removed).toEqual([temp]);
    expect(await readFile(join(dir, 'victim.txt'), 'utf8')).toBe('victim');
    expect(await readFile(join(dir, 'root', 'data', 'linked.parquet'), 'utf8')).toBe('victim');
  });
});
