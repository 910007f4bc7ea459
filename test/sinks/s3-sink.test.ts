import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AbortedError, SinkError } from '../../src/errors.js';
import type { OutputRecord } from '../../src/events.js';
import { TeeSink } from '../../src/pipeline/tee.js';
import { s3Sink, stringifyJson, type S3Manifest } from '../../src/sinks/index.js';
import { duckdbQuery, parquetColumnTypes, sqlString } from '../helpers/duckdb.js';
import { startS3Server, useS3rverEnvironment, type S3TestServer } from '../helpers/s3-server.js';
import { testContext } from '../helpers/stage-context.js';
import { PRODUCT_HINT, productRecords, randomBatches, tempDir } from './records.js';
import { waitClosed, waitFor } from './stream-harness.js';

let server: S3TestServer;
let restoreEnv: () => void;

beforeAll(async () => {
  server = await startS3Server();
  // Credentials and region through the SDK's default chain, the endpoint through S3_ENDPOINT.
  restoreEnv = useS3rverEnvironment(server.endpoint);
});

afterAll(async () => {
  restoreEnv?.();
  await server?.stop();
});

async function listKeys(client: S3Client, bucket: string, prefix: string): Promise<string[]> {
  const result = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
  return (result.Contents ?? []).map((c) => c.Key!).sort();
}

async function getObject(client: S3Client, bucket: string, key: string): Promise<Buffer> {
  const result = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return Buffer.from(await result.Body!.transformToByteArray());
}

/** An endless source of product records that counts the JSON bytes it has handed out. */
function countingSource(): { stream: Readable; pulledBytes: () => number } {
  let pulled = 0;
  const records = productRecords(10_000_000);
  const stream = Readable.from(
    (function* () {
      for (const r of records) {
        pulled += stringifyJson(r).length + 1;
        yield r;
      }
    })(),
  );
  return { stream, pulledBytes: () => pulled };
}

const lines = (records: unknown[]) => records.map((r) => `${stringifyJson(r)}\n`).join('');

describe('s3 sink', () => {
  it('streams multipart objects with rotation, then writes the manifest last', async () => {
    const ctx = testContext({
      run: {
        sourceType: 'products.query',
        sourceFilter: { status: 'active', updatedSince: 1_700_000_000 },
        cursor: { previous: 1_700_000_000, next: 1_700_086_400 },
      },
    });
    const seen: OutputRecord[] = [];
    ctx.events.on('output', (o) => seen.push(o));
    const records = [...productRecords(90_000)];
    const sink = s3Sink(
      {
        format: 'jsonl',
        bucket: server.bucket,
        key: 'catalog/products/dt={date}/part-{part}.jsonl',
        maxRows: 40_000,
        partSize: '5MiB',
      },
      ctx,
    );
    await pipeline(randomBatches(records, 400), sink);

    const prefix = 'catalog/products/dt=2026-01-02/';
    expect(await listKeys(server.client, server.bucket, 'catalog/')).toEqual([
      `${prefix}_manifest.json`,
      `${prefix}part-00000-test-run.jsonl`,
      `${prefix}part-00001-test-run.jsonl`,
      `${prefix}part-00002-test-run.jsonl`,
    ]);
    // Every object reads back; together they are exactly the input, in order.
    let all = '';
    for (let part = 0; part < 3; part++)
      all += (await getObject(server.client, server.bucket, `${prefix}part-0000${part}-test-run.jsonl`)).toString(
        'utf8',
      );
    expect(all).toBe(lines(records));

    // The two full objects went up in several parts; the last small one in one PUT.
    const log = await server.requestLog();
    const parts = (key: string) =>
      log.filter((r) => r.op === 'UploadPart' && r.key === key && r.status === 200).map((r) => r.partNumber);
    expect(parts(`${prefix}part-00000-test-run.jsonl`).sort()).toEqual([1, 2, 3]);
    expect(parts(`${prefix}part-00001-test-run.jsonl`).sort()).toEqual([1, 2, 3]);
    expect(log.some((r) => r.op === 'PutObject' && r.key === `${prefix}part-00002-test-run.jsonl`)).toBe(true);
    const ops = log.map((r) => `${r.op} ${r.key}`);
    const manifestAt = ops.indexOf(`PutObject ${prefix}_manifest.json`);
    expect(manifestAt).toBeGreaterThan(ops.lastIndexOf(`CompleteMultipartUpload ${prefix}part-00001-test-run.jsonl`));
    expect(manifestAt).toBeGreaterThan(ops.lastIndexOf(`PutObject ${prefix}part-00002-test-run.jsonl`));
    expect(await server.listMultipartUploads()).toEqual([]);

    const manifest = JSON.parse(
      (await getObject(server.client, server.bucket, `${prefix}_manifest.json`)).toString('utf8'),
    ) as S3Manifest;
    expect(manifest).toMatchObject({
      version: 1,
      runId: 'test-run',
      name: 'test',
      startedAt: '2026-01-02T03:04:05.000Z',
      source: {
        type: 'products.query',
        filter: { status: 'active', updatedSince: 1_700_000_000 },
        cursor: { previous: 1_700_000_000, next: 1_700_086_400 },
      },
      format: 'jsonl',
      bucket: server.bucket,
      keyTemplate: 'catalog/products/dt={date}/part-{part}.jsonl',
      rows: 90_000,
      bytes: Buffer.byteLength(all),
      schema: null,
    });
    expect(Date.parse(manifest.finishedAt)).toBeGreaterThan(Date.parse(manifest.startedAt));
    expect(manifest.files.map((f) => [f.key, f.rows])).toEqual([
      [`${prefix}part-00000-test-run.jsonl`, 40_000],
      [`${prefix}part-00001-test-run.jsonl`, 40_000],
      [`${prefix}part-00002-test-run.jsonl`, 10_000],
    ]);
    for (const file of manifest.files) {
      const head = await server.client.send(new HeadObjectCommand({ Bucket: server.bucket, Key: file.key }));
      expect(file.etag).toBe(head.ETag);
      expect(file.bytes).toBe(head.ContentLength);
    }
    expect(sink.outputs.map((o) => [o.kind, o.location, o.rows])).toEqual([
      ['object', `s3://${server.bucket}/${prefix}part-00000-test-run.jsonl`, 40_000],
      ['object', `s3://${server.bucket}/${prefix}part-00001-test-run.jsonl`, 40_000],
      ['object', `s3://${server.bucket}/${prefix}part-00002-test-run.jsonl`, 10_000],
      ['object', `s3://${server.bucket}/${prefix}_manifest.json`, 0],
    ]);
    expect(seen).toEqual(sink.outputs);
  });

  it('writes Parquet objects that DuckDB reads back, with the schema in the manifest', async () => {
    const records = [...productRecords(30_000)];
    const sink = s3Sink(
      {
        format: 'parquet',
        bucket: server.bucket,
        key: 'lake/products/{run}/part-{part}.parquet',
        maxRows: 12_000,
        rowGroupRows: 4000,
        schemaHint: PRODUCT_HINT,
      },
      testContext(),
    );
    await pipeline(Readable.from(records), sink);
    const keys = await listKeys(server.client, server.bucket, 'lake/products/test-run/');
    expect(keys).toEqual(
      ['_manifest.json', 'part-00000.parquet', 'part-00001.parquet', 'part-00002.parquet'].map(
        (k) => `lake/products/test-run/${k}`,
      ),
    );
    const dir = await tempDir();
    for (const key of keys.filter((k) => k.endsWith('.parquet'))) {
      await writeFile(join(dir, key.split('/').pop()!), await getObject(server.client, server.bucket, key));
    }
    expect(await parquetColumnTypes(join(dir, 'part-00000.parquet'))).toMatchObject({
      eanGtin13: 'VARCHAR',
      ean: 'VARCHAR[]',
      serial: 'BIGINT',
      meta_createdAt: 'TIMESTAMP WITH TIME ZONE',
    });
    const { rows } = await duckdbQuery(
      `SELECT count(*) AS n, sum(publicPrice) AS price, sum(serial) AS serial, count(*) FILTER (WHERE starts_with(eanGtin13, '00')) AS zeros
       FROM read_parquet(${sqlString(join(dir, '*.parquet'))})`,
    );
    expect(rows[0]).toEqual({
      n: 30_000n,
      price: BigInt(records.reduce((n, r) => n + r.publicPrice, 0)),
      serial: records.reduce((n, r) => n + r.serial, 0n),
      zeros: BigInt(records.filter((r) => r.eanGtin13.startsWith('00')).length),
    });
    const manifest = JSON.parse(
      (await getObject(server.client, server.bucket, 'lake/products/test-run/_manifest.json')).toString('utf8'),
    ) as S3Manifest;
    expect(manifest.format).toBe('parquet');
    expect(manifest.files.map((f) => f.rows)).toEqual([12_000, 12_000, 6_000]);
    // The schema (columns, types, hash) in the manifest is the one in every object's footer.
    const schema = manifest.schema as { hash: string; columns: Array<{ name: string; type: string }> };
    expect(schema.columns).toContainEqual({ name: 'meta_createdAt', type: 'TIMESTAMP WITH TIME ZONE' });
    const footer = await duckdbQuery(
      `SELECT DISTINCT decode(value) AS hash FROM parquet_kv_metadata(${sqlString(join(dir, '*.parquet'))}) WHERE decode(key) = 'catalog-streams.schema-hash'`,
    );
    expect(footer.rows).toEqual([{ hash: schema.hash }]);
  });

  it('columnNames: snake_case: the objects and the manifest name the columns in snake_case', async () => {
    const records = [...productRecords(500)];
    const sink = s3Sink(
      {
        format: 'parquet',
        bucket: server.bucket,
        key: 'snake/products/{run}/part-{part}.parquet',
        columnNames: 'snake_case',
        schemaHint: PRODUCT_HINT,
      },
      testContext(),
    );
    await pipeline(Readable.from(records), sink);
    const dir = await tempDir();
    const file = join(dir, 'part-00000.parquet');
    await writeFile(file, await getObject(server.client, server.bucket, 'snake/products/test-run/part-00000.parquet'));
    const types = await parquetColumnTypes(file);
    expect(types).toMatchObject({
      ean_gtin13: 'VARCHAR',
      public_price: 'BIGINT',
      requires_legal_text: 'BOOLEAN',
      is_a_nutrition_supplement: 'BOOLEAN',
      meta_created_at: 'TIMESTAMP WITH TIME ZONE',
      _extra: 'JSON',
    });
    for (const name of Object.keys(types)) expect(name).toMatch(/^[a-z_][a-z0-9_]*$/);
    const { rows } = await duckdbQuery(
      `SELECT count(*) AS n, sum(public_price) AS price, count(*) FILTER (WHERE requires_legal_text) AS legal
       FROM read_parquet(${sqlString(file)})`,
    );
    expect(rows[0]).toEqual({
      n: 500n,
      price: BigInt(records.reduce((n, r) => n + r.publicPrice, 0)),
      legal: BigInt(records.filter((r) => r.requiresLegalText).length),
    });
    const manifest = JSON.parse(
      (await getObject(server.client, server.bucket, 'snake/products/test-run/_manifest.json')).toString('utf8'),
    ) as S3Manifest;
    const columns = (manifest.schema as { columns: Array<{ name: string }> }).columns.map((c) => c.name);
    expect(columns).toEqual(Object.keys(types));
  });

  it('writes CSV objects (format: csv, gzip by the key) that DuckDB reads back, with the columns in the manifest', async () => {
    const records = [...productRecords(2500)];
    const sink = s3Sink(
      {
        format: 'csv',
        bucket: server.bucket,
        key: 'csv/products/{run}/part-{part}.csv.gz',
        maxRows: 1000,
        schemaHint: PRODUCT_HINT,
      },
      testContext(),
    );
    await pipeline(randomBatches(records, 50), sink);
    const keys = await listKeys(server.client, server.bucket, 'csv/products/test-run/');
    expect(keys).toEqual(
      ['_manifest.json', 'part-00000.csv.gz', 'part-00001.csv.gz', 'part-00002.csv.gz'].map(
        (k) => `csv/products/test-run/${k}`,
      ),
    );
    const dir = await tempDir();
    for (const key of keys.filter((k) => k.endsWith('.csv.gz'))) {
      await writeFile(join(dir, key.split('/').pop()!), await getObject(server.client, server.bucket, key));
    }
    const { rows } = await duckdbQuery(
      `SELECT count(*) AS n, sum(publicPrice::BIGINT) AS price, count(*) FILTER (WHERE starts_with(eanGtin13, '00')) AS zeros
       FROM read_csv(${sqlString(join(dir, '*.csv.gz'))}, all_varchar = true, header = true)`,
    );
    expect(rows[0]).toEqual({
      n: 2500n,
      price: BigInt(records.reduce((n, r) => n + r.publicPrice, 0)),
      zeros: BigInt(records.filter((r) => r.eanGtin13.startsWith('00')).length),
    });
    const manifest = JSON.parse(
      (await getObject(server.client, server.bucket, 'csv/products/test-run/_manifest.json')).toString('utf8'),
    ) as S3Manifest;
    expect(manifest.format).toBe('csv');
    expect(manifest.files.map((f) => f.rows)).toEqual([1000, 1000, 500]);
    const schema = manifest.schema as { columns: Array<{ name: string; type: string }> };
    expect(schema.columns).toContainEqual({ name: 'eanGtin13', type: 'VARCHAR' });
    expect(schema.columns.at(-1)).toMatchObject({ name: '_extra', type: 'JSON' });
  });

  it('writes only a manifest (no files) when no record arrives', async () => {
    const sink = s3Sink(
      { format: 'parquet', bucket: server.bucket, key: 'empty/{date}/part-{part}.parquet', schemaHint: PRODUCT_HINT },
      testContext(),
    );
    await pipeline(Readable.from([]), sink);
    expect(await listKeys(server.client, server.bucket, 'empty/')).toEqual(['empty/2026-01-02/_manifest.json']);
    const manifest = JSON.parse(
      (await getObject(server.client, server.bucket, 'empty/2026-01-02/_manifest.json')).toString('utf8'),
    ) as S3Manifest;
    expect(manifest).toMatchObject({ files: [], rows: 0, bytes: 0 });
  });

  it('pauses the pipeline while the upload queue is full (backpressure)', async () => {
    const slow = await startS3Server({ uploadPartDelayMs: 1500 });
    try {
      const { stream, pulledBytes } = countingSource();
      const sink = s3Sink(
        {
          format: 'jsonl',
          bucket: slow.bucket,
          key: 'bp/data.jsonl',
          endpoint: slow.endpoint,
          partSize: '5MiB',
          queueSize: 1,
        },
        testContext(),
      );
      const done = pipeline(stream, sink);
      await waitFor(() => slow.requests.some((r) => r.op === 'UploadPart'), 'the first part');
      await new Promise((r) => setTimeout(r, 1500));
      // One part in flight, one being filled, the body and sink buffers: far from the endless input.
      expect(pulledBytes()).toBeGreaterThan(5 * 2 ** 20);
      expect(pulledBytes()).toBeLessThan(20 * 2 ** 20);
      stream.destroy(new Error('enough'));
      await expect(done).rejects.toThrow('enough');
      await waitFor(async () => (await slow.listMultipartUploads()).length === 0, 'the upload to be aborted');
      await waitClosed(sink);
      expect(await listKeys(slow.client, slow.bucket, 'bp/')).toEqual([]);
    } finally {
      await slow.stop();
    }
  });

  it('aborts the multipart upload and writes nothing when an upload part fails half-way', async () => {
    const faulty = await startS3Server({ failUploadPartFrom: 2 });
    try {
      const ctx = testContext();
      const sink = s3Sink(
        {
          format: 'jsonl',
          bucket: faulty.bucket,
          key: 'fault/part-{part}.jsonl',
          endpoint: faulty.endpoint,
          partSize: '5MiB',
          maxAttempts: 2,
        },
        ctx,
      );
      const failure = pipeline(Readable.from(productRecords(60_000)), sink);
      await expect(failure).rejects.toThrow(SinkError);
      await expect(failure).rejects.toMatchObject({ code: 'sink.s3.upload' });
      // The server answers 500 before reading the part's body; the SDK sees that 500 or,
      // when it is still sending the body, the closed connection (EPIPE/ECONNRESET).
      await expect(failure).rejects.toThrow(
        /s3:\/\/test-bucket\/fault\/part-00000-test-run\.jsonl: (InternalError \(HTTP 500\)|.*(EPIPE|ECONNRESET))/,
      );
      await waitClosed(sink);
      const log = await faulty.requestLog();
      expect(log.filter((r) => r.op === 'UploadPart' && r.status === 500).map((r) => r.partNumber)).toContain(2);
      expect(log.some((r) => r.op === 'AbortMultipartUpload' && r.status === 204)).toBe(true);
      expect(await faulty.listMultipartUploads()).toEqual([]);
      expect(await listKeys(faulty.client, faulty.bucket, '')).toEqual([]);
      expect(sink.outputs).toEqual([]);
    } finally {
      await faulty.stop();
    }
  });

  it('removes completed objects and aborts the open upload when the pipeline fails mid-stream', async () => {
    // Slow parts keep part-00001's multipart upload open while the pipeline fails.
    const slow = await startS3Server({ uploadPartDelayMs: 800 });
    try {
      const source = Readable.from(productRecords(10_000_000));
      const sink = s3Sink(
        {
          format: 'jsonl',
          bucket: slow.bucket,
          key: 'midway/part-{part}.jsonl',
          endpoint: slow.endpoint,
          maxBytes: '12MiB',
          partSize: '5MiB',
        },
        testContext(),
      );
      const done = pipeline(source, sink);
      await waitFor(
        () =>
          slow.requests.some((r) => r.op === 'CreateMultipartUpload' && r.key === 'midway/part-00001-test-run.jsonl'),
        'part-00000 to complete and part-00001 to be under way',
      );
      // The dataset lock of the run, and the completed part.
      expect(await listKeys(slow.client, slow.bucket, 'midway/')).toEqual([
        'midway/_publish.lock',
        'midway/part-00000-test-run.jsonl',
      ]);
      expect((await slow.listMultipartUploads()).map((u) => u.key)).toEqual(['midway/part-00001-test-run.jsonl']);
      source.destroy(new Error('the API went away'));
      await expect(done).rejects.toThrow('the API went away');
      await waitClosed(sink);
      expect(await slow.listMultipartUploads()).toEqual([]);
      expect(await listKeys(slow.client, slow.bucket, 'midway/')).toEqual([]);
      const log = await slow.requestLog();
      expect(log.filter((r) => r.op === 'DeleteObject').map((r) => r.key)).toEqual([
        'midway/part-00000-test-run.jsonl',
        'midway/_publish.lock',
      ]);
      expect(log.filter((r) => r.op === 'AbortMultipartUpload' && r.status === 204).map((r) => r.key)).toEqual([
        'midway/part-00001-test-run.jsonl',
      ]);
      expect(log.some((r) => r.op === 'CompleteMultipartUpload' && r.key === 'midway/part-00001-test-run.jsonl')).toBe(
        false,
      );
      expect(sink.outputs).toEqual([]);
    } finally {
      await slow.stop();
    }
  });

  it('aborts when ctx.signal aborts', async () => {
    const ctx = testContext();
    const sink = s3Sink(
      {
        format: 'parquet',
        bucket: server.bucket,
        key: 'signal/part-{part}.parquet',
        rowGroupRows: 1000,
        partSize: '5MiB',
        schemaHint: PRODUCT_HINT,
      },
      ctx,
    );
    const done = pipeline(Readable.from(productRecords(10_000_000)), sink);
    await waitFor(() => server.requests.some((r) => r.key.startsWith('signal/')), 'the upload to start');
    ctx.controller.abort();
    await expect(done).rejects.toThrow(AbortedError);
    await waitClosed(sink);
    expect(await server.listMultipartUploads()).toEqual([]);
    expect(await listKeys(server.client, server.bucket, 'signal/')).toEqual([]);
  });

  it('fails with a credentials error when S3 rejects the access key', async () => {
    const restore = useS3rverEnvironment(server.endpoint, { accessKeyId: 'NOT-A-KEY', secretAccessKey: 'x' });
    try {
      const sink = s3Sink({ format: 'jsonl', bucket: server.bucket, key: 'auth/data.jsonl' }, testContext());
      const failure = pipeline(Readable.from(productRecords(100)), sink);
      await expect(failure).rejects.toMatchObject({ code: 'sink.s3.auth' });
      await expect(failure).rejects.toThrow(
        /S3 rejected the credentials to write s3:\/\/test-bucket\/auth\/_publish\.lock: InvalidAccessKeyId/,
      );
    } finally {
      restore();
    }
    expect(await listKeys(server.client, server.bucket, 'auth/')).toEqual([]);
  });

  it('reports an error, instead of hanging, when the server dies mid-upload; no object or manifest appears', async () => {
    const doomed = await startS3Server({ uploadPartDelayMs: 200 });
    let restarted: S3TestServer | undefined;
    try {
      const sink = s3Sink(
        {
          format: 'jsonl',
          bucket: doomed.bucket,
          key: 'dead/data.jsonl',
          endpoint: doomed.endpoint,
          partSize: '5MiB',
          maxAttempts: 2,
        },
        testContext(),
      );
      const failure = pipeline(Readable.from(productRecords(100_000)), sink);
      await waitFor(() => doomed.requests.some((r) => r.op === 'UploadPart'), 'the first part');
      doomed.kill();
      await expect(failure).rejects.toMatchObject({ code: 'sink.s3.upload' });
      restarted = await startS3Server({ directory: doomed.directory });
      // No data object; the dataset lock could not be removed from a dead server: it names this
      // run and is taken over once stale (at once by a later run on this host once this process ended).
      expect(await listKeys(restarted.client, restarted.bucket, 'dead/')).toEqual(['dead/_publish.lock']);
      // The multipart upload itself could not be aborted on a dead server: S3 buckets need an
      // AbortIncompleteMultipartUpload lifecycle rule for that case.
    } finally {
      await restarted?.stop();
      await doomed.stop();
    }
  });

  it('validates options: format-specific options, part size, manifest key', () => {
    const base = { bucket: 'b', key: 'k/part-{part}.parquet' };
    expect(() => s3Sink({ ...base, format: 'jsonl', compression: 'gzip' })).toThrow(
      /s3\.compression: compression applies to format: parquet only/,
    );
    expect(() => s3Sink({ ...base, format: 'parquet', gzip: true })).toThrow(
      /gzip applies to format: jsonl or csv only \(Parquet compresses columns: use compression\)/,
    );
    expect(() => s3Sink({ ...base, format: 'jsonl', delimiter: 'tab' })).toThrow(
      /delimiter applies to format: csv only/,
    );
    // columnNames names columns: JSON Lines writes records as they are
    expect(() => s3Sink({ ...base, format: 'jsonl', columnNames: 'snake_case' })).toThrow(
      /columnNames applies to format: parquet or csv only/,
    );
    expect(() => s3Sink({ ...base, format: 'parquet', partSize: '1MiB' })).toThrow(/at least 5MiB/);
    expect(() => s3Sink({ ...base, format: 'parquet', manifestKey: 'k/{part}/m.json' })).toThrow(
      /manifestKey .* only \{name\}, \{run\} and \{date\}/,
    );
    expect(() => s3Sink({ ...base, format: 'xml' as 'jsonl' })).toThrow(/s3\.format/);
    expect(() => s3Sink({ ...base, format: 'jsonl', bukcet: 'x' } as never)).toThrow(/bukcet/);
  });
});

describe('s3 sink behind a tee', () => {
  it('objects and manifest it committed are deleted again when a sibling sink fails afterwards', async () => {
    const ctx = testContext();
    const warnings: string[] = [];
    const outputs: string[] = [];
    ctx.events.on('warning', (w) => warnings.push(w.message));
    ctx.events.on('output', (o) => outputs.push(o.location));
    const s3 = s3Sink(
      {
        format: 'parquet',
        bucket: server.bucket,
        key: 'revoked/part-{part}.parquet',
        maxRows: 400,
        schemaHint: PRODUCT_HINT,
      },
      ctx,
    );
    // A sibling that commits slowly and then fails: the s3 sink has uploaded its objects by then.
    const sibling = new Writable({
      objectMode: true,
      write: (_r, _e, cb) => cb(),
      final: (cb) => setTimeout(() => cb(new Error('sibling could not commit')), 1500),
    });
    const tee = new TeeSink([s3, sibling as never], ctx.events);
    await expect(pipeline(randomBatches([...productRecords(1000)], 100), tee)).rejects.toThrow(
      'sibling could not commit',
    );
    // It had uploaded three objects under names of this run, and held back the manifest...
    expect(outputs.sort()).toEqual(
      [0, 1, 2].map((p) => `s3://${server.bucket}/revoked/part-0000${p}-${ctx.run.id}.parquet`),
    );
    // ...and none of them is left.
    expect(await listKeys(server.client, server.bucket, 'revoked/')).toEqual([]);
    expect(tee.outputs).toEqual([]);
    expect(warnings).toEqual([]);
  });
});
