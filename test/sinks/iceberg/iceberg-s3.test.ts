// The same tables on an S3 prefix (s3rver): the version hint replaced by a plain PUT, the next
// metadata file created by a conditional PUT (If-None-Match), data files staged and uploaded.
// icebird reads them as it reads S3 tables (it turns s3://bucket/key into
// https://bucket.s3.amazonaws.com/key); the test's fetch answers those URLs from the S3 store.
import { afterAll, describe, expect, it, vi } from 'vitest';
import { icebergRead } from 'icebird';
import { IcebergCommitConflictError, type IcebergTableRef } from '../../../src/sinks/table/iceberg/iceberg-catalog.js';
import { tableSchema } from '../../../src/sinks/table/iceberg/iceberg-commit.js';
import { prepareCommit } from '../../../src/sinks/table/iceberg/snapshot-operations.js';
import { unreferenced } from '../../../src/sinks/table/iceberg/iceberg-garbage.js';
import { FilesCatalog } from '../../../src/sinks/table/iceberg/files-catalog.js';
import { createS3Client } from '../../../src/storage/s3-client.js';
import { S3ObjectStore } from '../../../src/storage/s3-object-store.js';
import { s3ServerForFile } from '../../helpers/s3-server.js';
import { run, T0, writeDataFile } from './iceberg-helpers.js';
import { icebirdFetch } from '../../helpers/iceberg-reader.js';

const s3 = s3ServerForFile();
afterAll(() => {
  vi.unstubAllGlobals();
});

function s3Table(prefix: string): IcebergTableRef & { store: S3ObjectStore } {
  return {
    name: 'current',
    location: `s3://${s3.bucket}/${prefix}`,
    store: new S3ObjectStore({
      bucket: s3.bucket,
      prefix: `${prefix}/`,
      client: () => createS3Client({}),
      feature: 's3-table',
    }),
  };
}

/** icebird's https://bucket.s3.amazonaws.com/key requests, answered from the table's S3 store. */
function s3Fetch(table: IcebergTableRef & { store: S3ObjectStore }): typeof fetch {
  return icebirdFetch(async (bucket, key) => {
    if (bucket !== s3.bucket || !key.startsWith(table.store.prefix))
      throw new Error(`the test fetch serves s3://${s3.bucket}/${table.store.prefix}... only, not ${bucket}/${key}`);
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of await table.store.readStream(key.slice(table.store.prefix.length))) chunks.push(chunk);
    } catch {
      return undefined;
    }
    return Buffer.concat(chunks);
  });
}

const COLUMNS = [
  { name: 'id', type: { kind: 'string' } },
  { name: 'qty', type: { kind: 'int64' } },
] as const;

describe('Iceberg tables on S3 (s3rver)', () => {
  it('commits, reads back by version, refuses a taken version, and finds a killed commit', async () => {
    const table = s3Table('lake-1/current');
    vi.stubGlobal('fetch', s3Fetch(table));
    const catalog = new FilesCatalog();
    const columns = COLUMNS.map((c) => ({ ...c, type: { ...c.type } }));
    await run(catalog, table, { runId: 'r1', operation: 'overwrite', columns, rows: [['a', 1n]], minute: 1 });
    const v2 = await run(catalog, table, {
      runId: 'r2',
      operation: 'overwrite',
      columns,
      rows: [
        ['a', 2n],
        ['b', 3n],
      ],
      minute: 2,
    });
    expect(v2.metadataLocation).toBe(`s3://${s3.bucket}/lake-1/current/metadata/v2.metadata.json`);
    expect(v2.metadata.snapshots![1]!['manifest-list']).toMatch(
      /^s3:\/\/.*\/lake-1\/current\/metadata\/snap-\d+-r2\.avro$/,
    );
    const read = async (version?: number): Promise<unknown[]> =>
      icebergRead({
        tableUrl: table.location,
        ...(version !== undefined && { metadataFileName: `v${version}.metadata.json` }),
      });
    expect(await read()).toEqual([
      { id: 'a', qty: 2n },
      { id: 'b', qty: 3n },
    ]);
    expect(await read(1)).toEqual([{ id: 'a', qty: 1n }]);

    // A killed run: its data file and manifests are written, its commit is not.
    const schema = tableSchema(v2.metadata, columns);
    const file = await writeDataFile(table, 'data/part-00000-r3.parquet', schema.columns, schema.schema, [['c', 4n]]);
    const killed = await prepareCommit({
      table,
      base: v2,
      files: [file],
      operation: 'overwrite',
      columns,
      summary: {},
      runId: 'r3',
      keepSnapshots: 5,
      now: new Date(T0),
    });
    expect(await unreferenced(table, await catalog.load(table))).toEqual(
      ['data/part-00000-r3.parquet', ...killed.written].sort(),
    );
    // Another writer's v3 holds the name: the conditional PUT refuses the second.
    await table.store.putIfAbsent('metadata/v3.metadata.json', '{}');
    await expect(catalog.commit([killed.commit])).rejects.toBeInstanceOf(IcebergCommitConflictError);
    expect((await catalog.load(table))!.version).toBe(2);
    await table.store.close();
  });
});
