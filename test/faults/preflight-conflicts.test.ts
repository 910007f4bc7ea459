// Fault matrix, issue 15 items 9, 10 and 14 as a scheduler meets them: a run that cannot go ahead (a
// dataset or state another run holds, a cursor of another pipeline or host) is refused before its first
// API request, so it spends none of the request budget the other run shares; and `--dry-run` refuses a
// foreign cursor as the run would. The CLI runs as cron starts it (default log level, so the progress
// display's plan would probe the API beside the run); each refused run talks to a sandbox of its own,
// whose request counter (GET /_sandbox/stats) must stay at zero.
import { hostname } from 'node:os';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { S3RVER_CREDENTIALS, startS3Server, type S3TestServer } from '../helpers/s3-server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { workspace as cliWorkspace } from '../cli/cli-process.js';
import {
  jsonLines,
  pipelineWorkspace,
  runCli,
  sandboxEnv,
  startCli,
  stateFile,
  type PipelineWorkspace,
} from './support.js';

/** The API requests (every endpoint, every status) the sandbox's admin route reports; admin calls (this one) are not. */
async function requestsSeen(sandbox: TestSandbox): Promise<number> {
  const res = await fetch(`${sandbox.url}/_sandbox/stats`, { headers: { authorization: sandbox.adminAuthorization } });
  expect(res.status).toBe(200);
  const { byEndpoint } = (await res.json()) as { byEndpoint: Record<string, Record<string, number>> };
  return Object.entries(byEndpoint)
    .filter(([endpoint]) => endpoint !== 'admin')
    .map(([, byStatus]) => byStatus)
    .reduce((n, byStatus) => n + Object.values(byStatus).reduce((a, b) => a + b, 0), 0);
}

/** A lock document held by a live run: this test process, another run id. */
const liveLock = (runId: string) =>
  JSON.stringify({
    runId,
    pipeline: 'holder',
    host: hostname(),
    pid: process.pid,
    acquiredAt: new Date().toISOString(),
    heartbeatAt: new Date().toISOString(),
  });

async function until(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('refused before the first request', { timeout: 120_000 }, () => {
  let sandbox: TestSandbox;
  let ws: PipelineWorkspace | undefined;
  beforeAll(async () => {
    sandbox = await startTestSandbox({ products: 300, seed: 71 });
  });
  afterAll(() => sandbox?.close());
  beforeEach(async () => {
    await ws?.remove();
    sandbox.setFaults({});
    sandbox.resetStats();
  });

  const nightly = (sinks: string) =>
    `name: nightly\nsource: { type: products.query, filter: { status: [active, inactive, replaced] }, pageSize: 50 }\nsinks:\n${sinks}state: { path: .state/nightly.json }\n`;

  it('a state another run holds: exit 1 state.locked naming it; zero requests; no output', async () => {
    ws = await pipelineWorkspace('nightly', nightly('  - { type: jsonl, path: "out/products-{run}.jsonl" }\n'));
    await ws.write('.state/nightly.json.lock', liveLock('20260101T000000Z-a11ce0'));
    const result = await runCli(['run', ws.file], { cwd: ws.dir, env: sandboxEnv(sandbox) });
    expect(result.code, result.stderr).toBe(1);
    const summary = jsonLines(result.stderr).find((l) => l.event === 'summary');
    expect(summary).toMatchObject({
      status: 'failed',
      requests: 0,
      outputs: [],
      error: { code: 'state.locked', message: expect.stringContaining('20260101T000000Z-a11ce0') },
    });
    expect(await requestsSeen(sandbox)).toBe(0);
    expect(await ws.read('.state/nightly.json')).toBe(ws.state);
  });

  it('a local dataset another run publishes into (.publish.lock): exit 1 publish.locked; zero requests', async () => {
    // A full extract into a dataset of parts that each run replaces: one run publishes into it at a time.
    const text = `name: lake\nsource: { type: products.query, filter: { status: [active, inactive, replaced] }, pageSize: 50 }\nsinks:\n  - { type: parquet, path: "out/dt={date}/part-{part}.parquet", maxRows: 100 }\n`;
    ws = await pipelineWorkspace('lake', text);
    const date = new Date().toISOString().slice(0, 10);
    await ws.write(`out/dt=${date}/.publish.lock`, liveLock('20260101T000000Z-b0b000'));
    const result = await runCli(['run', ws.file], { cwd: ws.dir, env: sandboxEnv(sandbox) });
    expect(result.code, result.stderr).toBe(1);
    const summary = jsonLines(result.stderr).find((l) => l.event === 'summary');
    expect(summary).toMatchObject({
      status: 'failed',
      requests: 0,
      outputs: [],
      error: { code: 'publish.locked', message: expect.stringContaining('20260101T000000Z-b0b000') },
    });
    expect(await requestsSeen(sandbox)).toBe(0);
    // The holder's lock is left alone.
    expect(JSON.parse(await ws.read(`out/dt=${date}/.publish.lock`))).toMatchObject({
      runId: '20260101T000000Z-b0b000',
    });
  });

  it.each([
    ['another pipeline', 'other', undefined, 'pipeline "other"'],
    ['another API host', 'nightly', 'api.example.com', 'api.example.com'],
  ])(
    'item 9 in --dry-run: a cursor of %s is refused as the run refuses it (exit 1, state.mismatch), before any request',
    async (_what, pipeline, host, named) => {
      ws = await pipelineWorkspace('nightly', nightly('  - { type: jsonl, path: "out/products-{run}.jsonl" }\n'));
      const state = {
        ...JSON.parse(stateFile(pipeline, 1_700_000_000)),
        ...(host
          ? { host, source: { type: 'products.query', filter: { status: ['active', 'inactive', 'replaced'] } } }
          : {}),
      };
      await ws.write('.state/nightly.json', `${JSON.stringify(state, null, 2)}\n`);
      const saved = await ws.read('.state/nightly.json');

      const dry = await runCli(['run', ws.file, '--dry-run'], { cwd: ws.dir, env: sandboxEnv(sandbox) });
      expect(dry.code, dry.stderr).toBe(1);
      expect(await requestsSeen(sandbox)).toBe(0);
      const real = await runCli(['run', ws.file], { cwd: ws.dir, env: sandboxEnv(sandbox) });
      expect(real.code, real.stderr).toBe(1);
      expect(await requestsSeen(sandbox)).toBe(0);

      const refusal = jsonLines(real.stderr).find((l) => l.event === 'summary')!.error as {
        code: string;
        message: string;
      };
      expect(refusal.code).toBe('state.mismatch');
      expect(refusal.message).toContain(named);
      expect(refusal.message).toContain('--full-refresh');
      // The dry run says the same, with the same code.
      const dryError = jsonLines(dry.stderr).find((l) => l.level === 'error')!;
      expect(dryError).toMatchObject({ code: 'state.mismatch' });
      expect(dryError.message).toContain(refusal.message);
      expect(dry.stdout).toBe('');
      expect(await ws.read('.state/nightly.json')).toBe(saved);
    },
  );

  it('--dry-run with a cursor of this pipeline plans from it (control)', async () => {
    ws = await pipelineWorkspace('nightly', nightly('  - { type: jsonl, path: "out/products-{run}.jsonl" }\n'));
    const dry = await runCli(['run', ws.file, '--dry-run', '--log-format', 'pretty'], {
      cwd: ws.dir,
      env: sandboxEnv(sandbox),
    });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('incremental: updatedSince 1970-01-01T00:00:01Z, unix 1');
  });
});

describe('two runs on one S3 dataset at once', { timeout: 120_000 }, () => {
  let s3: S3TestServer;
  let busy: TestSandbox;
  let other: TestSandbox;
  let ws: { dir: string; remove(): Promise<void> };
  beforeAll(async () => {
    [s3, busy, other] = await Promise.all([
      startS3Server({ bucket: 'lake' }),
      startTestSandbox({ products: 600, seed: 72 }),
      startTestSandbox({ products: 600, seed: 72 }),
    ]);
    ws = await cliWorkspace();
  });
  afterAll(async () => {
    await Promise.all([s3?.stop(), busy?.close(), other?.close(), ws?.remove()]);
  });

  const env = (sandbox: TestSandbox) =>
    sandboxEnv(sandbox, {
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      S3_ENDPOINT: s3.endpoint,
      LAKE_BUCKET: 'lake',
      LAKE_PREFIX: 'overlap',
    });

  it('the second run (products-lake-s3.yml) exits 1 publish.locked without one product request; the first publishes', async () => {
    // The first run holds the dataset's _publish.lock from before its first request; its answers are slow.
    busy.setFaults({ latencyMs: 3000 });
    const first = startCli(['run', 'pipelines/products-lake-s3.yml'], { cwd: ws.dir, env: env(busy) });
    await until(() => busy.stats.requests > 0, "the first run's first request");
    const second = await runCli(['run', 'pipelines/products-lake-s3.yml'], { cwd: ws.dir, env: env(other) });
    expect(second.code, second.stderr).toBe(1);
    const summary = jsonLines(second.stderr).find((l) => l.event === 'summary')!;
    expect(summary).toMatchObject({ status: 'failed', requests: 0, outputs: [], error: { code: 'publish.locked' } });
    expect(summary.error.message).toContain('s3://lake/overlap/products/dt=');
    expect(await requestsSeen(other)).toBe(0);

    const done = await first.done;
    expect(done.code, done.stderr).toBe(0);
    const firstRun = jsonLines(done.stderr).find((l) => l.event === 'summary')!;
    expect(summary.error.message).toContain(firstRun.runId);
  });
});
