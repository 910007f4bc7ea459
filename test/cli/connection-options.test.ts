// The connection block's request timeouts and retry budget, end to end: a real
// CLI process against a sandbox whose answers are slower than the file's
// headers timeout fails after exactly `maxAttempts` attempts (with the default
// 60 s timeout the same run would just wait and succeed), writes nothing and
// says what timed out.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listFiles, runCli, sandboxEnv, useSandboxWorkspace } from './cli-process.js';

describe('connection: timeouts, maxAttempts, maxRetryWait', () => {
  const shared = useSandboxWorkspace({ products: 300 });

  const pipeline = (connection: string) => `name: slow
connection: ${connection}
source: { type: products.query, filter: { status: active }, pageSize: 250 }
sinks:
  - { type: jsonl, path: out/slow.jsonl }
`;

  it('answers slower than timeouts.headers fail the run after maxAttempts attempts; nothing is written', async () => {
    shared.sandbox.setFaults({ latencyMs: 1500 });
    try {
      await writeFile(
        join(shared.ws.dir, 'slow.yml'),
        pipeline('{ maxAttempts: 2, maxRetryWait: "2s", timeouts: { headers: "250ms" } }'),
      );
      shared.sandbox.resetStats();
      const { code, stderr } = await runCli(['run', 'slow.yml', '--quiet'], {
        cwd: shared.ws.dir,
        env: sandboxEnv(shared.sandbox),
      });
      expect(code, stderr).toBe(1);
      expect(stderr).toContain('"code":"network.timeout"');
      expect(stderr).toContain('timed out (UND_ERR_HEADERS_TIMEOUT) on products.query after 2 attempts');
      expect(stderr).toContain('raise connection.timeouts (pipeline file)');
      expect(shared.sandbox.stats.requests).toBe(2);
      expect((await listFiles(shared.ws.dir)).filter((f) => f.startsWith('out/'))).toEqual([]);
    } finally {
      shared.sandbox.setFaults({});
    }
  });

  it('the same answers within a longer timeouts.headers: the run completes', async () => {
    shared.sandbox.setFaults({ latencyMs: 300 });
    try {
      await writeFile(
        join(shared.ws.dir, 'slow.yml'),
        pipeline('{ maxAttempts: 2, timeouts: { headers: "5s", body: "5s", connect: "2s" } }'),
      );
      const { code, stderr } = await runCli(['run', 'slow.yml', '--quiet'], {
        cwd: shared.ws.dir,
        env: sandboxEnv(shared.sandbox),
      });
      expect(code, stderr).toBe(0);
      expect(await listFiles(shared.ws.dir)).toContain('out/slow.jsonl');
    } finally {
      shared.sandbox.setFaults({});
    }
  });
});

describe('CATALOG_RESULT_WINDOW: a sandbox started with --result-window', () => {
  const shared = useSandboxWorkspace({ products: 1_500, resultWindow: 300 });
  const pipelineFile = `name: windowed
source: { type: products.query, filter: { createdAt: { from: 0 } }, pageSize: 100 }
sinks:
  - { type: jsonl, path: out/windowed.jsonl }
`;

  it('with the window the sandbox prints, products.query slices past it and delivers every product once', async () => {
    await writeFile(join(shared.ws.dir, 'windowed.yml'), pipelineFile);
    const { code, stderr } = await runCli(['run', 'windowed.yml', '--quiet'], {
      cwd: shared.ws.dir,
      env: sandboxEnv(shared.sandbox, { CATALOG_RESULT_WINDOW: '300' }),
    });
    expect(code, stderr).toBe(0);
    const ids = (await readFile(join(shared.ws.dir, 'out/windowed.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { id: string }).id);
    expect(ids.length).toBe(1_500);
    expect(new Set(ids).size).toBe(1_500);
  });

  it('a window past the spec cap is a usage error (exit 2)', async () => {
    await writeFile(join(shared.ws.dir, 'windowed.yml'), pipelineFile);
    const { code, stderr } = await runCli(['run', 'windowed.yml'], {
      cwd: shared.ws.dir,
      env: sandboxEnv(shared.sandbox, { CATALOG_RESULT_WINDOW: '20000' }),
    });
    expect(code).toBe(2);
    expect(stderr).toContain('CATALOG_RESULT_WINDOW must be an integer from 1 to 10000');
  });
});
