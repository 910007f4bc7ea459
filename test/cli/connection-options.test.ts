// The connection block's request timeouts and retry budget, end to end: a real
// CLI process against a sandbox whose answers are slower than the file's
// headers timeout fails after exactly `maxAttempts` attempts (with the default
// 60 s timeout the same run would just wait and succeed), writes nothing and
// says what timed out.
import { writeFile } from 'node:fs/promises';
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
      await writeFile(join(shared.ws.dir, 'slow.yml'), pipeline('{ maxAttempts: 2, maxRetryWait: "2s", timeouts: { headers: "250ms" } }'));
      shared.sandbox.resetStats();
      const { code, stderr } = await runCli(['run', 'slow.yml', '--quiet'], { cwd: shared.ws.dir, env: sandboxEnv(shared.sandbox) });
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
      await writeFile(join(shared.ws.dir, 'slow.yml'), pipeline('{ maxAttempts: 2, timeouts: { headers: "5s", body: "5s", connect: "2s" } }'));
      const { code, stderr } = await runCli(['run', 'slow.yml', '--quiet'], { cwd: shared.ws.dir, env: sandboxEnv(shared.sandbox) });
      expect(code, stderr).toBe(0);
      expect(await listFiles(shared.ws.dir)).toContain('out/slow.jsonl');
    } finally {
      shared.sandbox.setFaults({});
    }
  });
});
