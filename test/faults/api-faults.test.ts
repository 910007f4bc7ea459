// Fault matrix: the API misbehaving at the HTTP level. The real runner
// (parsePipelines + runPipeline) runs a sliced products.query into Parquet and
// gzipped JSONL with an incremental cursor, against the sandbox's deterministic
// fault injection. The client is built by the test (fast backoff in milliseconds,
// below what a pipeline file's durations are meant for; a short headers timeout
// for the latency case; test/cli/connection-options.test.ts sets the same from a
// pipeline file). Every run is checked for the exact ids in both outputs (each once),
// its outcome and exit code, its retry/throttle counters, no temp file, and the
// state cursor (advanced after success, byte-for-byte unchanged after failure).
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  type InProcessRun,
  expectExactIds,
  faultFixture,
  jsonlIds,
  leftBehind,
  parquetIds,
  runInProcess,
  runPath,
} from './support.js';

const PIPELINE = `name: faulty
source:
  type: products.query
  filter: { status: [active, inactive, replaced] }
  pageSize: 100
  concurrency: 3
transforms:
  - { type: validate }
  - { type: flatten-locales, locales: [en, nl] }
sinks:
  - { type: parquet, path: "out/products-{run}.parquet" }
  - { type: jsonl, path: "out/products-{run}.jsonl.gz" }
state: { path: .state/faulty.json }
`;
const f = faultFixture('faulty', PIPELINE, { products: 2500, seed: 31 });

async function expectComplete(run: InProcessRun): Promise<void> {
  expect(run.ok, run.ok ? '' : run.error.message).toBe(true);
  expect(run.summary.status).toBe('succeeded');
  expect(run.summary.records.read).toBe(f.expected.length);
  const { runId } = run.summary;
  expectExactIds(await parquetIds(f.ws.path(runPath('out/products-{run}.parquet', runId))), f.expected);
  expectExactIds(await jsonlIds(f.ws.path(runPath('out/products-{run}.jsonl.gz', runId))), f.expected);
  expect(await leftBehind(f.ws.path('out'))).toEqual({
    final: [`products-${runId}.jsonl.gz`, `products-${runId}.parquet`],
    temp: [],
  });
  expect((await f.ws.readState()).cursor).toBeGreaterThan(1);
  expect(run.summary.cursor).toMatchObject({ previous: 1, stored: true });
}

async function expectNothingWritten(run: InProcessRun, code: string): Promise<void> {
  expect(run.ok).toBe(false);
  if (run.ok) return;
  expect(run.exitCode).toBe(1);
  expect(run.summary.status).toBe('failed');
  expect(run.error.code).toBe(code);
  expect(await leftBehind(f.ws.path('out')), run.error.message).toEqual({ final: [], temp: [] });
  expect(run.summary.outputs).toEqual([]);
  expect(await f.ws.read('.state/faulty.json')).toBe(f.ws.state);
  expect(run.summary.cursor).toMatchObject({ previous: 1, stored: false });
}

const retryReasons = (run: InProcessRun) =>
  run.events.filter((e) => e.name === 'retry').map((e) => String(e.payload.reason));

describe('API faults: retried, nothing lost or repeated', () => {
  it('no fault (control): exact ids, no retry', async () => {
    const run = await runInProcess(f.ws, f.sandbox);
    await expectComplete(run);
    expect(run.summary.retries).toBe(0);
    expect(run.summary.pages).toBeGreaterThan(f.expected.length / 100);
  });

  it('a burst of 429s: throttled and retried; the summary counts them', async () => {
    f.sandbox.setFaults({ tooManyRequests: { after: 4, count: 6 } });
    const run = await runInProcess(f.ws, f.sandbox);
    await expectComplete(run);
    expect(f.sandbox.stats.faults.tooManyRequests).toBe(6);
    expect(run.summary.throttles).toBe(6);
    expect(run.summary.retries).toBe(6);
  });

  it('bursts of 500 and 503: retried, one retry per error', async () => {
    f.sandbox.setFaults({ errorRate: 0.3, errorStatuses: [500, 503] });
    const run = await runInProcess(f.ws, f.sandbox);
    await expectComplete(run);
    const errors = f.sandbox.stats.faults.errors;
    expect(errors).toBeGreaterThan(3);
    expect(run.summary.retries).toBe(errors);
    expect(new Set(retryReasons(run).map((r) => r.slice(0, 3)))).toEqual(new Set(['500', '503']));
  });

  it('latency spikes beyond the request timeout: the slow attempts time out and are retried', async () => {
    // A spike: answers take 3 s (the client waits 300 ms for headers) until three attempts have timed out.
    f.sandbox.setFaults({ latencyMs: 3000 });
    const running = runInProcess(f.ws, f.sandbox, { timeouts: { headers: 300 } });
    const deadline = Date.now() + 15_000;
    while (f.sandbox.stats.faults.delayed < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    f.sandbox.setFaults({});
    const run = await running;
    await expectComplete(run);
    expect(run.summary.retries).toBeGreaterThanOrEqual(1);
    expect(new Set(retryReasons(run))).toEqual(new Set(['UND_ERR_HEADERS_TIMEOUT']));
  });

  it('connection resets: retried', async () => {
    f.sandbox.setFaults({ resetRate: 0.25 });
    const run = await runInProcess(f.ws, f.sandbox);
    await expectComplete(run);
    expect(f.sandbox.stats.faults.resets).toBeGreaterThan(3);
    expect(run.summary.retries).toBe(f.sandbox.stats.faults.resets);
  });
});

describe('API faults that outlast the retries: the run fails, nothing is published, the cursor stays', () => {
  it('503 on every request: exit 1 after maxAttempts', async () => {
    f.sandbox.setFaults({ errorRate: 1, errorStatuses: [503] });
    const run = await runInProcess(f.ws, f.sandbox, { retry: { maxAttempts: 3, minTimeout: 5, maxTimeout: 20 } });
    await expectNothingWritten(run, 'api.service_unavailable');
    expect(run.summary.retries).toBe(2);
  });

  it('429 that never ends: exit 1 with a rate-limit error', async () => {
    f.sandbox.setFaults({ tooManyRequests: { after: 0, count: 1000 } });
    const run = await runInProcess(f.ws, f.sandbox, { retry: { maxAttempts: 3, minTimeout: 5, maxTimeout: 20 } });
    await expectNothingWritten(run, 'api.rate_limited');
  });

  it('the run settles only after the sinks have removed their temp files', async () => {
    // stream.pipeline rejects before a destroyed sink's asynchronous _destroy is done; runPipeline
    // waits for every stream of the chain to close before it settles.
    f.sandbox.setFaults({ latencyMs: 10 });
    let atSettlement: string[] = [];
    const first = runInProcess(f.ws, f.sandbox, { retry: { maxAttempts: 2, minTimeout: 5, maxTimeout: 10 } }, () => {
      atSettlement = readdirSync(f.ws.path('out'));
    });
    const deadline = Date.now() + 10_000;
    while (f.sandbox.stats.requests < 12 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    f.sandbox.setFaults({ resetRate: 1 });
    const run = await first;
    expect(run.ok).toBe(false);
    expect(atSettlement).toEqual([]);
  });

  it('resets after part of the extract: the outputs opened so far are discarded', async () => {
    // The first 12 of ~25 requests succeed (Parquet and JSONL parts are open under temp names), then every connection is reset.
    f.sandbox.setFaults({ latencyMs: 10 });
    const first = runInProcess(f.ws, f.sandbox, { retry: { maxAttempts: 2, minTimeout: 5, maxTimeout: 10 } });
    const deadline = Date.now() + 10_000;
    while (f.sandbox.stats.requests < 12 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    f.sandbox.setFaults({ resetRate: 1 });
    const run = await first;
    await expectNothingWritten(run, 'network.reset');
    expect(run.summary.records.read).toBeGreaterThan(0);
  });
});
