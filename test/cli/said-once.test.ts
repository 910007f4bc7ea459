// Each retry and each error is said once (issue 25). The duplicates came from two places:
// - the progress plan's probes ran beside the extract against the same host and logged their own
//   retries, unlabelled, on the run's bus: an unreachable host showed every retry twice;
// - in pretty text a failed pipeline's error was written as a `failed` line and again as the
//   summary's error line.
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished as after } from 'vitest';
import { cleanEnv, jsonLines, runCli, sandboxEnv, useSandboxWorkspace } from './cli-process.js';

/**
 * A local server that accepts each connection and drops it at once: the connection is reset, which
 * is retried (a refused loopback port is not: it fails at the first attempt).
 */
async function droppingServer(): Promise<{ port: number; close(): void }> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, close: () => server.close() };
}

describe('the CLI says each retry and each error once', { timeout: 120_000 }, () => {
  const shared = useSandboxWorkspace({ products: 100 });

  it('an unreachable host: one retry line per retry, each under the pipeline', async () => {
    const file = join(shared.ws.dir, 'unreachable.yml');
    await writeFile(
      file,
      `name: unreachable\nconnection: { maxAttempts: 3, maxRetryWait: "2s" }\nsource: { type: products.query, filter: { status: [active] } }\nsinks: [{ type: jsonl, path: out/unreachable.jsonl }]\n`,
    );
    const dropping = await droppingServer();
    after(() => dropping.close());
    const env = cleanEnv({
      CATALOG_BASE_URL: `http://127.0.0.1:${dropping.port}`,
      CATALOG_API_KEY: 'k',
      CATALOG_API_SECRET: 's',
      CATALOG_RATE_LIMIT: '0',
    });
    const r = await runCli(['run', file], { env });
    expect(r.code, r.stderr).toBe(1);
    const retries = jsonLines(r.stderr).filter((l) => l.event === 'retry');
    expect(
      retries.map((l) => [l.pipeline, l.attempt]),
      r.stderr,
    ).toEqual([
      ['unreachable', 1],
      ['unreachable', 2],
    ]);
    const pretty = await runCli(['run', file, '--log-format', 'pretty'], { env });
    expect(pretty.stderr.match(/attempt 1 failed/g), pretty.stderr).toHaveLength(1);
    expect(pretty.stderr.match(/connection to the catalog API .* was reset/g), pretty.stderr).toHaveLength(1);
  });

  it('a refused credential: its paragraph once in pretty text, once as a JSON failed line', async () => {
    const file = join(shared.ws.dir, 'refused.yml');
    await writeFile(
      file,
      `name: refused\nsource: { type: brands.query }\nsinks: [{ type: jsonl, path: out/refused.jsonl }]\n`,
    );
    const env = sandboxEnv(shared.sandbox, { CATALOG_API_SECRET: 'wrong' });
    const pretty = await runCli(['run', file, '--log-format', 'pretty'], { env });
    expect(pretty.code).toBe(1);
    expect(pretty.stderr.match(/rejected the credentials/g), pretty.stderr).toHaveLength(1);
    expect(pretty.stderr).toMatch(/error \[auth\.unauthorized\]: .*rejected the credentials/);
    const json = await runCli(['run', file], { env });
    const lines = jsonLines(json.stderr);
    expect(lines.filter((l) => l.event === 'failed')).toHaveLength(1);
    expect(lines.filter((l) => l.level === 'error' && l.event !== 'failed' && l.event !== 'summary')).toEqual([]);
  });
});
