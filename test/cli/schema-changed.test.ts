// Issue 37 item 10: the run summary and the manifest say when an output's columns changed since
// the previous run of the same output published (a field promoted with columns:, a naming
// switched), so the reader learns it from the run rather than from a Binder Error. Here the s3
// sink, whose manifest records each run's schema: a run keyed by {run} compares with the newest
// earlier manifest of its key template, a replacing one with the manifest it replaces.
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { S3Manifest } from '../../src/sinks/index.js';
import { startS3Server, S3RVER_CREDENTIALS, type S3TestServer } from '../helpers/s3-server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { jsonLines, runCli, sandboxEnv, workspace } from './cli-process.js';

const pipeline = (key: string, sinkOptions: string) => `name: changing
source: { type: brands.query, sorting: { id: ASC } }
sinks:
  - { type: s3, format: parquet, bucket: lake, key: "${key}"${sinkOptions} }
`;

describe('a schema change is said in the summary and the manifest', { timeout: 120_000 }, () => {
  let s3: S3TestServer;
  let sandbox: TestSandbox;
  let ws: Awaited<ReturnType<typeof workspace>>;
  beforeAll(async () => {
    [s3, sandbox, ws] = await Promise.all([
      startS3Server({ bucket: 'lake' }),
      startTestSandbox({ products: 50 }),
      workspace(),
    ]);
  });
  afterAll(async () => {
    await Promise.all([s3?.stop(), sandbox?.close(), ws?.remove()]);
  });

  const env = () =>
    sandboxEnv(sandbox, {
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      S3_ENDPOINT: s3.endpoint,
    });

  async function run(key: string, sinkOptions: string, extra: string[] = []) {
    const file = join(ws.dir, 'changing.yml');
    await writeFile(file, pipeline(key, sinkOptions));
    const r = await runCli(['run', file, ...extra], { cwd: ws.dir, env: env() });
    expect(r.code, r.stderr).toBe(0);
    return r;
  }
  const summaryOf = (stderr: string) => jsonLines(stderr).find((l) => l.event === 'summary')!;
  async function manifest(runId: string, prefix: string): Promise<S3Manifest> {
    const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: 'lake', Prefix: prefix }));
    const key = (listed.Contents ?? [])
      .map((c) => c.Key!)
      .find((k) => k.includes(runId) && k.endsWith('_manifest.json'))!;
    const body = await s3.client.send(new GetObjectCommand({ Bucket: 'lake', Key: key }));
    return JSON.parse(await body.Body!.transformToString()) as S3Manifest;
  }

  it('a key with {run}: first run nothing; a promoted column and a naming switch are listed; the same schema again nothing', async () => {
    const key = 'runs/brands/run={run}/part-{part}.parquet';
    const first = summaryOf((await run(key, '')).stderr);
    expect(first).not.toHaveProperty('schemaChanges');
    expect(await manifest(first.runId, 'runs/')).not.toHaveProperty('schemaChanged');

    const promoted = summaryOf((await run(key, ', columns: { logoUrl: string }')).stderr);
    expect(promoted.schemaChanges).toEqual([
      {
        sink: 's3',
        location: `s3://lake/runs/brands/run=${promoted.runId}/_manifest.json`,
        change: expect.objectContaining({ added: [{ name: 'logoUrl', type: 'VARCHAR' }], removed: [], retyped: [] }),
      },
    ]);
    const written = await manifest(promoted.runId, 'runs/');
    expect(written.schemaChanged).toEqual(promoted.schemaChanges[0].change);
    expect(written.schemaChanged!.from).not.toBe(written.schemaChanged!.to);

    const renamed = await run(key, ', columns: { logoUrl: string }, columnNames: snake_case', [
      '--log-format',
      'pretty',
    ]);
    // The text summary: one line naming the columns.
    const line = renamed.stderr.split('\n').filter((l) => l.includes('schema changed:'));
    expect(line, renamed.stderr).toHaveLength(1);
    expect(line[0]).toMatch(/added .*logo_url VARCHAR.*; removed .*logoUrl/);

    const same = summaryOf((await run(key, ', columns: { logoUrl: string }, columnNames: snake_case')).stderr);
    expect(same).not.toHaveProperty('schemaChanges');
  });

  it('a replacing key: compared with the manifest it replaces', async () => {
    const key = 'latest/brands/part-{part}.parquet';
    await run(key, '');
    const changed = summaryOf((await run(key, ', columns: { logoUrl: string }')).stderr);
    expect(changed.schemaChanges.map((c: { change: { added: unknown } }) => c.change.added)).toEqual([
      [{ name: 'logoUrl', type: 'VARCHAR' }],
    ]);
  });
});
