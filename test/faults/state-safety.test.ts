// Fault matrix, incremental state: a cursor belongs to one pipeline, one API host and one
// source, and one run uses it at a time. Runs in-process against two sandboxes (two hosts).
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { RunFailedError, runPipeline, type ResolvedConnection } from '../../src/pipeline/runner.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { leftBehind, workspace, type Workspace } from './support.js';

describe('incremental state: identity and lock', () => {
  let one: TestSandbox;
  let two: TestSandbox;
  let ws: Workspace;
  beforeAll(async () => {
    [one, two] = await Promise.all([
      startTestSandbox({ products: 300, seed: 91 }),
      startTestSandbox({ products: 300, seed: 92 }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([one?.close(), two?.close()]);
  });
  beforeEach(async () => {
    await ws?.remove();
    ws = await workspace();
  });

  const pipelineYaml = (name: string, status = 'active') =>
    `name: ${name}\nsource: { type: products.query, filter: { status: ${status} } }\nsinks:\n  - { type: jsonl, path: "out/${name}-{run}.jsonl" }\nstate: { path: .state/shared.json }\n`;

  async function run(yaml: string, sandbox: TestSandbox, opts: { fullRefresh?: boolean; sandboxRun?: boolean } = {}) {
    const registry = createRegistry();
    const file = await ws.write('p.yml', yaml);
    const [loaded] = parsePipelines(yaml, registry, { env: {}, file });
    const connection: Partial<ResolvedConnection> = {
      baseUrl: sandbox.url,
      ...sandbox.credentials,
      rateLimit: Infinity,
      ...(opts.sandboxRun ? { sandbox: true } : {}),
    };
    try {
      return {
        ok: true as const,
        summary: await runPipeline(loaded!, { registry, connection, env: {}, fullRefresh: opts.fullRefresh }),
      };
    } catch (err) {
      if (!(err instanceof RunFailedError)) throw err;
      return { ok: false as const, error: err };
    }
  }

  it('item 9: another pipeline, another source filter or another host is refused; --full-refresh starts over', async () => {
    const first = await run(pipelineYaml('nightly'), one);
    expect(first.ok).toBe(true);
    const saved = await readFile(ws.path('.state/shared.json'), 'utf8');
    expect(JSON.parse(saved)).toMatchObject({
      pipeline: 'nightly',
      source: { type: 'products.query', filter: { status: 'active' } },
      host: new URL(one.url).host,
    });

    for (const [yaml, sandbox, what] of [
      [pipelineYaml('other'), one, 'pipeline "nightly"'],
      [pipelineYaml('nightly', 'inactive'), one, '"status":"active"'],
      [pipelineYaml('nightly'), two, new URL(one.url).host],
    ] as const) {
      const refused = await run(yaml, sandbox);
      expect(refused.ok).toBe(false);
      const error = refused.ok ? undefined : refused.error;
      expect(error?.code).toBe('state.mismatch');
      expect(error?.message).toContain(what);
      expect(error?.message).toContain('--full-refresh');
      expect(error?.summary.requests).toBe(0);
      expect(await readFile(ws.path('.state/shared.json'), 'utf8')).toBe(saved);
    }
    const restarted = await run(pipelineYaml('other'), one, { fullRefresh: true });
    expect(restarted.ok).toBe(true);
    expect(JSON.parse(await readFile(ws.path('.state/shared.json'), 'utf8'))).toMatchObject({ pipeline: 'other' });
  });

  it('item 9: a cursor saved by a --sandbox run is never used against another host', async () => {
    expect((await run(pipelineYaml('nightly'), one, { sandboxRun: true })).ok).toBe(true);
    expect(JSON.parse(await readFile(ws.path('.state/shared.json'), 'utf8'))).toMatchObject({ host: 'sandbox' });
    const real = await run(pipelineYaml('nightly'), one);
    expect(real.ok).toBe(false);
    expect(real.ok ? undefined : real.error.code).toBe('state.mismatch');
    expect(real.ok ? '' : real.error.message).toContain('--sandbox');
  });

  it('item 10: a second run on a locked state exits 1 naming the holder, sends no request and touches no output', async () => {
    // The lock of a live run (this very process, another run id).
    await ws.write(
      '.state/shared.json.lock',
      JSON.stringify({
        runId: '20260101T000000Z-abcdef',
        pipeline: 'nightly',
        host: (await import('node:os')).hostname(),
        pid: process.pid,
        acquiredAt: new Date().toISOString(),
        heartbeatAt: new Date().toISOString(),
      }),
    );
    const second = await run(pipelineYaml('nightly'), one);
    expect(second.ok).toBe(false);
    const error = second.ok ? undefined : second.error;
    expect(error?.code).toBe('state.locked');
    expect(error?.exitCode).toBe(1);
    expect(error?.message).toContain('20260101T000000Z-abcdef');
    expect(error?.message).toContain(`pid ${process.pid}`);
    expect(error?.summary.requests).toBe(0);
    expect((await leftBehind(ws.dir)).final.sort()).toEqual(['.state/shared.json.lock', 'p.yml']);
  });

  it('item 10: the lock of a run that died (no such process) is taken over; the lock is gone after the run', async () => {
    await ws.write(
      '.state/shared.json.lock',
      JSON.stringify({
        runId: '20260101T000000Z-dead00',
        pipeline: 'nightly',
        host: (await import('node:os')).hostname(),
        pid: 2 ** 22 + 7,
        acquiredAt: '2026-01-01T00:00:00.000Z',
        heartbeatAt: new Date().toISOString(),
      }),
    );
    const run1 = await run(pipelineYaml('nightly'), one);
    expect(run1.ok).toBe(true);
    expect((await leftBehind(ws.dir)).final.filter((f) => f.startsWith('.state/'))).toEqual(['.state/shared.json']);
  });

  it('item 10: two runs at once on one state: one succeeds, the other exits 1 with state.locked', async () => {
    const yaml = pipelineYaml('nightly');
    const [a, b] = await Promise.all([run(yaml, one), run(yaml, one)]);
    const outcomes = [a, b].map((r) => (r.ok ? 'ok' : r.error.code)).sort();
    expect(outcomes).toEqual(['ok', 'state.locked']);
  });
});
