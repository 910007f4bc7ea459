// Fault matrix: S3 failing in the middle of a multipart upload. s3rver (a child
// process) answers 500 to every UploadPart from part 2 on; the SDK retries,
// then the upload fails. The CLI run must exit 1 having aborted the upload:
// nothing listed in the bucket (no data object, no manifest), no multipart
// upload left open, and the state cursor as it was. A control run against a
// healthy server publishes the object and the manifest listing it, every id
// once, with no credential in the manifest.
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3RVER_CREDENTIALS, startS3Server, type S3TestServer } from '../helpers/s3-server.js';
import { basicAuthorization } from '../helpers/sandbox.js';
import { expectExactIds, faultFixture, jsonLines, runCli, sandboxEnv, summaryRunId } from './support.js';

const KEY = 'faults-key-1b7e';
const SECRET = 'faults-SECRET-9d2c-do-not-print';
const PIPELINE = `name: lake
connection: { maxAttempts: 3 }
source:
  type: products.query
  filter: { status: [active, inactive, replaced] }
sinks:
  - type: s3
    format: jsonl
    bucket: lake
    key: "catalog/{name}/dt={date}/run={run}/part-{part}.jsonl"
    partSize: 5MiB
    maxAttempts: 2
state: { path: .state/lake.json }
`;
// About 6 KB per product as JSON: 3000 products make 4 parts of 5 MiB.
const f = faultFixture('lake', PIPELINE, { products: 3000, seed: 51, credentials: { apiKey: KEY, apiSecret: SECRET } });

const s3Env = (s3: S3TestServer) =>
  sandboxEnv(f.sandbox, {
    AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
    AWS_REGION: 'us-east-1',
    S3_ENDPOINT: s3.endpoint,
  });

async function listed(s3: S3TestServer): Promise<string[]> {
  const out = await s3.client.send(new ListObjectsV2Command({ Bucket: 'lake' }));
  return (out.Contents ?? []).map((c) => c.Key!).sort();
}

async function text(s3: S3TestServer, key: string): Promise<string> {
  const got = await s3.client.send(new GetObjectCommand({ Bucket: 'lake', Key: key }));
  return Buffer.from(await got.Body!.transformToByteArray()).toString('utf8');
}

describe('S3 multipart upload failing mid-way', () => {
  let s3: S3TestServer;
  beforeAll(async () => {
    s3 = await startS3Server({ bucket: 'lake', failUploadPartFrom: 2 });
  });
  afterAll(() => s3?.stop());

  it('exit 1; the upload is aborted; nothing listed, no manifest, no open upload; cursor unchanged', async () => {
    const result = await runCli(['run', f.ws.file], { cwd: f.ws.dir, env: s3Env(s3) });
    expect(result.code, result.stderr).toBe(1);
    const lines = jsonLines(result.stderr);
    expect(
      lines.find((l) => l.event === 'failed'),
      result.stderr,
    ).toMatchObject({ level: 'error', code: expect.stringMatching(/^sink\./) });
    expect(lines.find((l) => l.event === 'summary')).toMatchObject({
      status: 'failed',
      outputs: [],
      cursor: { previous: 1, stored: false },
    });
    const log = await s3.requestLog();
    const ops = log.map((r) => r.op);
    expect(ops).toContain('CreateMultipartUpload');
    expect(log.some((r) => r.op === 'UploadPart' && r.partNumber === 2 && r.status === 500)).toBe(true);
    expect(ops).toContain('AbortMultipartUpload');
    expect(ops).not.toContain('CompleteMultipartUpload');
    expect(await listed(s3)).toEqual([]);
    expect(await s3.listMultipartUploads()).toEqual([]);
    expect(await f.ws.read('.state/lake.json')).toBe(f.ws.state);
  });
});

describe('S3 healthy (control)', () => {
  let s3: S3TestServer;
  beforeAll(async () => {
    s3 = await startS3Server({ bucket: 'lake' });
  });
  afterAll(() => s3?.stop());

  it('exit 0; the object and then the manifest listing it; every id once; no credential in the manifest', async () => {
    const result = await runCli(['run', f.ws.file], { cwd: f.ws.dir, env: s3Env(s3) });
    expect(result.code, result.stderr).toBe(0);
    const date = new Date().toISOString().slice(0, 10);
    const keys = await listed(s3);
    // An incremental pipeline's run writes its objects and manifest in a folder of its own (run={run}).
    const runId = summaryRunId(result.stderr);
    expect(keys).toEqual([
      `catalog/lake/dt=${date}/run=${runId}/_manifest.json`,
      `catalog/lake/dt=${date}/run=${runId}/part-00000.jsonl`,
    ]);
    const ids = (await text(s3, keys[1]!))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => String(JSON.parse(l).id));
    expectExactIds(ids, f.expected);
    const manifest = await text(s3, keys[0]!);
    expect(JSON.parse(manifest)).toMatchObject({
      rows: f.expected.length,
      files: [{ key: keys[1], rows: f.expected.length }],
    });
    for (const secret of [SECRET, basicAuthorization(KEY, SECRET).slice('Basic '.length)]) {
      expect(manifest).not.toContain(secret);
      expect(result.stderr).not.toContain(secret);
      expect(await f.ws.read('.state/lake.json')).not.toContain(secret);
    }
    expect(await s3.listMultipartUploads()).toEqual([]);
    expect((await f.ws.readState()).cursor).toBeGreaterThan(1);
  });
});
