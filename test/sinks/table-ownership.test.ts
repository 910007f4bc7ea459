// Issue 36 items 1, 8, 10, 12 (tables): a table run removes only files a journal of the table
// names (storage/write-journal.ts), on S3 only objects whose metadata names that run. Foreign files
// (a README, another tool's JSON, Spark- and Hive-named parquet) placed in the hive and Iceberg
// folders survive byte for byte across a first run, later runs and expiry, reported once per run
// (info table.foreign_files); a tag another engine put on an Iceberg snapshot survives expiry with
// its data file; what a killed run wrote (journaled) goes with the next run, locally and on S3.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { newRunId } from '../../src/core/run-id.js';
import { tableSink } from '../../src/sinks/index.js';
import { FilesCatalog } from '../../src/sinks/table/iceberg/files-catalog.js';
import { storeUri } from '../../src/sinks/table/iceberg-layout.js';
import { LocalObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { createS3Client } from '../../src/storage/s3-client.js';
import { S3ObjectStore } from '../../src/storage/s3-object-store.js';
import { WriteJournal } from '../../src/storage/write-journal.js';
import { s3ServerForFile } from '../helpers/s3-server.js';
import { testContext } from '../helpers/stage-context.js';
import { tempDir } from './records.js';

const s3 = s3ServerForFile();
const columns = { id: 'string', price: 'int64' } as const;
const SPARK = 'part-00000-6b1e9c52-3f0a-4d7e-9a51-2c8f1e0d4b7a-c000.snappy.parquet';

/** A place a table lives: its path for the sink, and raw access to what is there. */
interface Where {
  path: string;
  store: ObjectStore;
  put(rel: string, body: string, metadata?: Record<string, string>): Promise<void>;
  get(rel: string): Promise<string | undefined>;
  names(): Promise<string[]>;
}

async function localWhere(): Promise<Where> {
  const dir = await tempDir('table-own-');
  const root = join(dir, 'lake/t');
  const store = new LocalObjectStore(root);
  return {
    path: root,
    store,
    put: async (rel, body) => {
      await mkdir(dirname(join(root, rel)), { recursive: true });
      await writeFile(join(root, rel), body);
    },
    get: (rel) => readFile(join(root, rel), 'utf8').catch(() => undefined),
    names: async () => {
      const out: string[] = [];
      for await (const { rel } of store.list('')) out.push(rel);
      return out.sort();
    },
  };
}

let counter = 0;
async function s3Where(): Promise<Where> {
  const prefix = `own-${++counter}/t/`;
  const store = new S3ObjectStore({ bucket: s3.bucket, prefix, client: () => createS3Client({}), feature: 's3-table' });
  return {
    path: `s3://${s3.bucket}/${prefix}`,
    store,
    put: async (rel, body, metadata) => {
      await s3.client.send(
        new PutObjectCommand({ Bucket: s3.bucket, Key: `${prefix}${rel}`, Body: body, Metadata: metadata }),
      );
    },
    get: async (rel) => {
      const res = await s3.client
        .send(new GetObjectCommand({ Bucket: s3.bucket, Key: `${prefix}${rel}` }))
        .catch(() => undefined);
      return res?.Body?.transformToString('utf8');
    },
    names: async () => {
      const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }));
      return (listed.Contents ?? []).map((c) => c.Key!.slice(prefix.length)).sort();
    },
  };
}

/** One run of the table sink at `startedAt`; its info events. */
async function runTable(
  where: Where,
  startedAt: string,
  options: Record<string, unknown> = {},
  count = 5,
  fullRefresh = false,
): Promise<{ runId: string; info: Array<{ code: string; message: string }> }> {
  const ctx = testContext({ baseDir: '/' });
  if (fullRefresh) ctx.mode = { ...ctx.mode, fullRefresh: true };
  ctx.run.id = newRunId(new Date(startedAt));
  ctx.run.startedAt = new Date(startedAt);
  const info: Array<{ code: string; message: string }> = [];
  ctx.events.on('info', (i) => info.push(i));
  const records = Array.from({ length: count }, (_, i) => ({ id: `P${i}`, price: i }));
  await pipeline(Readable.from(records), tableSink({ path: where.path, columns, ...options }, ctx));
  return { runId: ctx.run.id, info };
}

/** Plants `files` and returns a check that they are all still there, byte for byte. */
async function plantForeign(where: Where, files: Record<string, string>): Promise<() => Promise<void>> {
  for (const [rel, body] of Object.entries(files)) await where.put(rel, body);
  return async () => {
    for (const [rel, body] of Object.entries(files)) expect(await where.get(rel), rel).toBe(body);
  };
}

/** What a run killed after uploading leaves: its journal naming `files`, and the files (S3: with its metadata). */
async function plantKilled(where: Where, runId: string, files: string[]): Promise<void> {
  const journal = await WriteJournal.open(where.store, runId);
  await journal.record(files);
  for (const rel of files) await where.put(rel, 'PAR1 partial', { 'catalog-streams-run': runId });
}

const places: Array<[string, () => Promise<Where>]> = [
  ['locally', localWhere],
  ['on S3 (s3rver)', s3Where],
];

describe.each(places)('hive table %s: only journaled files are removed', (_name, open) => {
  it('foreign files survive first run, later runs and a same-day rerun; a killed run’s parts go', async () => {
    const where = await open();
    try {
      const intact = await plantForeign(where, {
        [`snapshot/dt=2026-05-01/${SPARK}`]: 'spark part',
        [`changes/dt=2026-05-01/${SPARK}`]: 'spark change',
        'changes/README.md': 'change rows',
        '_table/other-tool.json': '{"tool":"other"}',
      });
      const first = await runTable(where, '2026-05-01T02:00:00Z');
      await intact();
      const foreign = first.info.filter((i) => i.code === 'table.foreign_files');
      expect(foreign).toHaveLength(1);
      expect(foreign[0]!.message).toContain('4 file(s)');

      const killed = newRunId(new Date('2026-05-01T03:00:00Z'));
      const killedFiles = [
        `snapshot/dt=2026-05-01/part-00000-${killed}.parquet`,
        `changes/dt=2026-05-01/part-00000-${killed}.parquet`,
      ];
      await plantKilled(where, killed, killedFiles);
      // A same-day rerun: the first run's snapshot is superseded and goes; the killed run's parts go.
      const rerun = await runTable(where, '2026-05-01T05:00:00Z');
      await intact();
      const removed = rerun.info.find((i) => i.code === 'stale_temp_removed')?.message ?? '';
      for (const rel of killedFiles) expect(removed).toContain(where.store.location(rel));
      expect(removed).not.toContain(SPARK);
      await runTable(where, '2026-05-02T02:00:00Z');
      await intact();
      const names = await where.names();
      for (const rel of killedFiles) expect(names).not.toContain(rel);
      expect(names).not.toContain(`_journal/${killed}.json`);
      expect(names.filter((n) => n.startsWith('snapshot/dt=2026-05-01/'))).toEqual(
        [`snapshot/dt=2026-05-01/${SPARK}`, `snapshot/dt=2026-05-01/part-00000-${rerun.runId}.parquet`].sort(),
      );
    } finally {
      await where.store.close();
    }
  });
});

describe.each(places)('iceberg tables %s: only journaled files are removed, refs of others kept', (_name, open) => {
  it('foreign files and a tagged snapshot’s data file survive expiry; killed and expired files go', async () => {
    const where = await open();
    const options = { format: 'iceberg', keepSnapshots: 1 };
    try {
      const intact = await plantForeign(where, {
        'current/data/README.md': 'data of the current table',
        'current/metadata/other-tool.json': '{"tool":"other"}',
        'changes/data/00000-0-abc.parquet': 'spark file',
      });
      const first = await runTable(where, '2026-05-01T02:00:00Z', options);
      await intact();
      expect(first.info.filter((i) => i.code === 'table.foreign_files')).toHaveLength(1);
      const firstData = `current/data/part-00000-${first.runId}.parquet`;
      const firstBytes = await where.get(firstData);
      expect(firstBytes).toBeDefined();

      // Another engine tags the first snapshot of current/ (a new metadata version it writes).
      const catalog = new FilesCatalog();
      const sub = where.store.kind === 'file' ? new LocalObjectStore(where.store.location('current')) : undefined;
      const current = sub ?? new S3ObjectStore({ ...s3Options(where), prefix: `${s3Prefix(where)}current/` });
      const table = { name: 'current' as const, location: storeUri(current), store: current };
      const loaded = (await catalog.load(table))!;
      const tagged = loaded.metadata['current-snapshot-id']!;
      await catalog.commit([
        {
          table,
          base: loaded,
          requirements: [],
          updates: [{ action: 'set-snapshot-ref', 'ref-name': 'audit', type: 'tag', 'snapshot-id': tagged }],
        },
      ]);
      await current.close();

      const killed = newRunId(new Date('2026-05-02T01:00:00Z'));
      const killedFiles = [`current/data/part-00000-${killed}.parquet`, `current/metadata/${killed}-m0.avro`];
      await plantKilled(where, killed, killedFiles);
      // A product more each run (a new data file each: a row delta keeps the earlier ones); the
      // third is a full refresh, which writes every row again: the second's file is left only in
      // the second's snapshot.
      const second = await runTable(where, '2026-05-02T02:00:00Z', options, 6);
      await runTable(where, '2026-05-03T02:00:00Z', options, 7, true);
      // The second run's snapshot is the third's rollback target: the fourth expires it.
      const fourth = await runTable(where, '2026-05-04T02:00:00Z', options, 8);
      await intact();
      const names = await where.names();
      for (const rel of killedFiles) expect(names).not.toContain(rel);
      // The tagged snapshot and its data file stay; the second run's data file expired and went.
      expect(await where.get(firstData)).toBe(firstBytes);
      expect(names).not.toContain(`current/data/part-00000-${second.runId}.parquet`);
      expect(names).toContain(`current/data/part-00000-${fourth.runId}.parquet`);
      const after = (await catalog.load(table))!;
      await current.close();
      expect(after.metadata.refs?.audit).toEqual({ 'snapshot-id': tagged, type: 'tag' });
      expect(after.metadata.snapshots?.map((s) => s['snapshot-id'])).toContain(tagged);
    } finally {
      await where.store.close();
    }
  });
});

function s3Prefix(where: Where): string {
  return (where.store as S3ObjectStore).prefix;
}

function s3Options(where: Where): ConstructorParameters<typeof S3ObjectStore>[0] {
  return {
    bucket: (where.store as S3ObjectStore).bucket,
    prefix: s3Prefix(where),
    client: () => createS3Client({}),
    feature: 's3-table',
  };
}
