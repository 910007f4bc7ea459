// Fault matrix: the CLI process stopped mid-run. (test/cli/signals.test.ts
// covers SIGTERM/SIGINT/SIGKILL on a small local run; these are the heavier
// cases.)
// - SIGTERM while an S3 multipart upload is open: exit 143 after the clean-up;
//   the upload is aborted, nothing is listed in the bucket, the cursor stays.
// - SIGKILL during an extract sliced into createdAt windows (more than 10000
//   matches): no file under a final name, the cursor stays; the rerun writes
//   every id exactly once (windows never overlap) and advances the cursor.
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { S3RVER_CREDENTIALS, startS3Server, type S3TestServer } from '../helpers/s3-server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import {
  type PipelineWorkspace,
  expectExactIds,
  jsonLines,
  jsonlIds,
  leftBehind,
  parquetIds,
  pipelineWorkspace,
  productIdsWithStatus,
  runCli,
  runPath,
  sandboxEnv,
  startCli,
  summaryRunId,
} from './support.js';

let ws: PipelineWorkspace | undefined;
afterEach(() => ws?.remove());

async function until(condition: () => boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('SIGTERM during an S3 multipart upload', () => {
  let sandbox: TestSandbox;
  let s3: S3TestServer;
  beforeAll(async () => {
    [sandbox, s3] = await Promise.all([
      startTestSandbox({ products: 3000, seed: 61 }),
      startS3Server({ bucket: 'lake', uploadPartDelayMs: 400 }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([sandbox?.close(), s3?.stop()]);
  });

  it('exit 143; the upload is aborted; nothing listed; cursor unchanged', async () => {
    ws = await pipelineWorkspace(
      'lake',
      `name: lake
source: { type: products.query, filter: { status: [active, inactive, replaced] } }
sinks:
  - { type: s3, format: jsonl, bucket: lake, key: "catalog/{name}/run={run}/part-{part}.jsonl", partSize: 5MiB }
state: { path: .state/lake.json }
`,
    );
    const env = sandboxEnv(sandbox, {
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      S3_ENDPOINT: s3.endpoint,
    });
    const cli = startCli(['run', ws.file], { cwd: ws.dir, env });
    await until(() => s3.requests.some((r) => r.op === 'UploadPart'), 'the first UploadPart');
    cli.child.kill('SIGTERM');
    const result = await cli.done;
    expect({ code: result.code, signal: result.signal }, result.stderr).toEqual({ code: 143, signal: null });
    expect(jsonLines(result.stderr).find((l) => l.event === 'summary')).toMatchObject({
      status: 'aborted',
      outputs: [],
      cursor: { previous: 1, stored: false },
    });
    // Nothing listed, whether the stop came while parts were uploading (the upload is aborted)
    // or while the run was committing (the completed object and the manifest are deleted again).
    expect(
      (await s3.client.send(new ListObjectsV2Command({ Bucket: 'lake' }))).Contents ?? [],
      JSON.stringify(await s3.requestLog()),
    ).toEqual([]);
    expect(await s3.listMultipartUploads()).toEqual([]);
    expect(await ws.read('.state/lake.json')).toBe(ws.state);
  });
});

describe('SIGKILL during a sliced extract, then a rerun', () => {
  let sandbox: TestSandbox;
  let expected: string[];
  beforeAll(async () => {
    // More than 10000 matches: products.query slices the query into createdAt windows.
    sandbox = await startTestSandbox({ products: 11_000, seed: 62 });
    expected = productIdsWithStatus(sandbox, 'active', 'inactive', 'replaced');
  });
  afterAll(() => sandbox?.close());

  it('no file under a final name and the cursor unchanged after the kill; the rerun writes every id once', async () => {
    expect(expected.length).toBeGreaterThan(10_000);
    ws = await pipelineWorkspace(
      'sliced',
      `name: sliced
source: { type: products.query, filter: { status: [active, inactive, replaced] } }
transforms:
  - { type: validate }
  - { type: normalize-codes }
sinks:
  - { type: parquet, path: "out/dt={date}/products-{run}.parquet" }
  - { type: jsonl, path: "out/products-{run}.jsonl.gz" }
state: { path: .state/sliced.json }
`,
    );
    const env = sandboxEnv(sandbox);
    sandbox.setFaults({ latencyMs: 60 });
    sandbox.resetStats();
    const cli = startCli(['run', ws.file], { cwd: ws.dir, env });
    // Part-way: the windows are being read and the Parquet part is open (its inference sample is 1000 records).
    await until(() => sandbox.stats.requests >= 12, '12 requests');
    cli.child.kill('SIGKILL');
    expect((await cli.done).signal).toBe('SIGKILL');
    expect((await leftBehind(ws.path('out'))).final).toEqual([]);
    expect(await ws.read('.state/sliced.json')).toBe(ws.state);

    sandbox.setFaults({});
    const rerun = await runCli(['run', ws.file], { cwd: ws.dir, env });
    expect(rerun.code, rerun.stderr).toBe(0);
    const summary = jsonLines(rerun.stderr).find((l) => l.event === 'summary')!;
    const runId = summaryRunId(rerun.stderr);
    const date = String(summary.startedAt).slice(0, 10);
    expectExactIds(await parquetIds(ws.path(runPath(`out/dt=${date}/products-{run}.parquet`, runId))), expected);
    expectExactIds(await jsonlIds(ws.path(runPath('out/products-{run}.jsonl.gz', runId))), expected);
    const after = await ws.readState();
    expect(after.cursor).toBeGreaterThan(1);
    expect(after.lastRun).toMatchObject({ records: expected.length });
  });
});
