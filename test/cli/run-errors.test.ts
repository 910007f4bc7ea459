// `catalog-streams run` when it cannot do its job: exit 2 for what the user must
// fix (usage, no connection, pipelines of one file wanting different
// connections), exit 1 for a run that failed (nobody answers at the base URL),
// each with one sentence that says what to check.
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, jsonLines, runCli, runMain, workspace } from './cli-process.js';

describe('run: errors', () => {
  let ws: Awaited<ReturnType<typeof workspace>>;
  beforeAll(async () => {
    ws = await workspace();
  });
  afterAll(() => ws?.remove());

  it.each([
    [['run'], "catalog-streams run: takes exactly one pipeline file, got 0 (see 'catalog-streams run --help')"],
    [
      ['run', 'a.yml', 'b.yml'],
      "catalog-streams run: takes exactly one pipeline file, got 2 (see 'catalog-streams run --help')",
    ],
    [
      ['run', 'pipelines/demo.yml', '--ful-refresh'],
      "catalog-streams run: unknown option --ful-refresh; did you mean --full-refresh? (see 'catalog-streams run --help')",
    ],
    [
      ['run', 'pipelines/demo.yml', '--sandbox-products', 'lots'],
      'catalog-streams run: --sandbox-products must be an integer from 1 to 10000000, got "lots"',
    ],
    [
      ['run', 'pipelines/nope.yml'],
      'catalog-streams run: pipelines/nope.yml: cannot read the pipeline file (no such file)',
    ],
  ])('%j: exit 2, one line', async (argv, message) => {
    const { code, stderr, stdout } = await runMain([...(argv as string[]), '--log-format', 'pretty'], cleanEnv());
    expect({ code, stderr, stdout }).toEqual({ code: 2, stderr: `${message}\n`, stdout: '' });
  });

  it('no connection configured: exit 2 naming the variables, or --sandbox', async () => {
    const file = join(ws.dir, 'pipelines/reference-data.yml');
    const { code, stderr } = await runMain(['run', file, '--log-format', 'pretty'], cleanEnv());
    expect(code).toBe(2);
    expect(stderr).toBe(
      `catalog-streams run: ${file}: no API connection: set CATALOG_BASE_URL, CATALOG_API_KEY, CATALOG_API_SECRET (or a connection: block in the file), or pass --sandbox to run against the embedded sandbox\n`,
    );
  });

  it('CATALOG_RATE_LIMIT that is not a number: exit 2', async () => {
    const env = cleanEnv({
      CATALOG_BASE_URL: 'http://127.0.0.1:1',
      CATALOG_API_KEY: 'k',
      CATALOG_API_SECRET: 's',
      CATALOG_RATE_LIMIT: 'fast',
    });
    const { code, stderr } = await runMain(
      ['run', join(ws.dir, 'pipelines/reference-data.yml'), '--log-format', 'pretty'],
      env,
    );
    expect(code).toBe(2);
    expect(stderr).toBe(
      'catalog-streams run: CATALOG_RATE_LIMIT must be a number of requests per minute (0: no limit), got "fast"\n',
    );
  });

  it.each([
    ['rateLimit', 'rateLimit: 50'],
    ['timeouts', 'timeouts: { headers: 5m }'],
    ['maxRetryWait', 'maxRetryWait: 10s'],
  ])('pipelines of one file with a different connection.%s: exit 2 (they share one client)', async (setting, line) => {
    const file = join(ws.dir, `two-${setting}.yml`);
    await writeFile(
      file,
      `name: a\nsource: { type: brands.query }\nsinks: [{ type: jsonl, path: a.jsonl }]\n---\nname: b\nconnection:\n  ${line}\nsource: { type: brands.query }\nsinks: [{ type: jsonl, path: b.jsonl }]\n`,
    );
    const env = cleanEnv({ CATALOG_BASE_URL: 'http://127.0.0.1:1', CATALOG_API_KEY: 'k', CATALOG_API_SECRET: 's' });
    const { code, stderr } = await runMain(['run', file, '--log-format', 'pretty'], env);
    expect(code).toBe(2);
    expect(stderr).toBe(
      `catalog-streams run: ${file}: pipeline "b" has another connection.${setting} than "a"; the pipelines of one file share one client and request budget: give them the same connection, or put them in separate files\n`,
    );
  });

  it('nobody answers at the base URL: exit 1 after one attempt (loopback) with a NetworkError naming the host and what to check', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    await writeFile(
      join(ws.dir, 'nowhere.yml'),
      'name: nowhere\nconnection: { maxAttempts: 2 }\nsource: { type: brands.query }\nsinks: [{ type: jsonl, path: out/nowhere.jsonl }]\n',
    );
    const env = cleanEnv({
      CATALOG_BASE_URL: `http://127.0.0.1:${port}`,
      CATALOG_API_KEY: 'k',
      CATALOG_API_SECRET: 'secret-not-shown',
    });
    const { code, stderr } = await runCli(['run', 'nowhere.yml'], { cwd: ws.dir, env });
    expect(code).toBe(1);
    const failed = jsonLines(stderr).find((l) => l.event === 'failed');
    expect(failed).toMatchObject({
      level: 'error',
      code: 'network.unreachable',
      message: `nowhere: cannot reach the catalog API at 127.0.0.1:${port} (ECONNREFUSED) for brands.query: check CATALOG_BASE_URL (host, port, https), your network, proxy and firewall`,
    });
    expect(jsonLines(stderr).at(-1)).toMatchObject({ event: 'summary', status: 'failed', outputs: [] });
  });
});
