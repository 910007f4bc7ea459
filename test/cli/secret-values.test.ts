// Secret values go through the run's redactor wherever they are shown (issue 36, item 7): a secret
// `${VAR}` in a path and in the pipeline name is not printed by `--dry-run` (json and pretty), the
// metrics file's labels, `history` (text and --json) or the summary; a Pushgateway that echoes the
// request does not print its password; a secret shorter than 8 characters that the API echoes is
// redacted as a whole token. The fake Pushgateway and the fake API are node:http in the test.
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, jsonLines, runCli, sandboxEnv, useSandboxWorkspace, workspace } from './cli-process.js';

const TOKEN = 'ptok-8c1f5e2a9b';
/** Short: redacted only where it stands as a token of its own. */
const SHORT = 'Qk9';

const PIPELINE = `name: nightly-\${PARTNER_TOKEN}
source:
  type: products.query
  filter: { status: active }
sinks:
  - { type: jsonl, path: "out/\${PARTNER_TOKEN}/\${SHORT_KEY}/products-{run}.jsonl" }
state: { path: ".state/\${PARTNER_TOKEN}/nightly.json" }
`;

function expectNoSecret(text: string): void {
  expect(text).not.toContain(TOKEN);
  expect(text).not.toMatch(new RegExp(`(?<![A-Za-z0-9_])${SHORT}(?![A-Za-z0-9_])`));
}

async function listen(handler: RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('a secret ${VAR} in a path and in the pipeline name', () => {
  const shared = useSandboxWorkspace({ products: 40 });
  const env = () => sandboxEnv(shared.sandbox, { PARTNER_TOKEN: TOKEN, SHORT_KEY: SHORT });
  beforeAll(async () => {
    await writeFile(join(shared.ws.dir, 'partner.yml'), PIPELINE);
  });

  it('--dry-run does not print it, pretty or json', async () => {
    const pretty = await runCli(['run', 'partner.yml', '--dry-run', '--log-format', 'pretty'], {
      cwd: shared.ws.dir,
      env: env(),
    });
    expect(pretty.code, pretty.stderr).toBe(0);
    expect(pretty.stdout).toContain('pipeline nightly-***: products.query');
    expect(pretty.stdout).toContain(`would write (jsonl): ${join(shared.ws.dir, 'out/***/***/products-')}`);
    expect(pretty.stdout).toContain(`state: ${join(shared.ws.dir, '.state/***/nightly.json')}`);
    expectNoSecret(pretty.stdout + pretty.stderr);

    const json = await runCli(['run', 'partner.yml', '--dry-run', '--log-format', 'json'], {
      cwd: shared.ws.dir,
      env: env(),
    });
    expect(json.code, json.stderr).toBe(0);
    const plan = jsonLines(json.stderr).find((l) => l.event === 'plan')!;
    expect(plan.pipeline).toBe('nightly-***');
    expect(plan.outputs[0].location).toContain('/out/***/***/products-');
    expect(jsonLines(json.stderr).find((l) => l.event === 'dry-run')!.pipelines).toEqual(['nightly-***']);
    expectNoSecret(json.stdout + json.stderr);
  });

  it('a run keeps it out of the metrics labels and the summary; history does not print it', async () => {
    const run = await runCli(
      ['run', 'partner.yml', '--metrics-file', 'metrics.prom', '--summary-file', 'summary.json'],
      { cwd: shared.ws.dir, env: env() },
    );
    expect(run.code, run.stderr).toBe(0);
    const metrics = await readFile(join(shared.ws.dir, 'metrics.prom'), 'utf8');
    expect(metrics).toContain('catalog_streams_last_run_succeeded{pipeline="nightly-***"} 1');
    expectNoSecret(metrics);
    expectNoSecret(run.stderr + (await readFile(join(shared.ws.dir, 'summary.json'), 'utf8')));

    const history = await runCli(['history', 'partner.yml'], { cwd: shared.ws.dir, env: env() });
    expect(history.code, history.stderr).toBe(0);
    expect(history.stdout).toContain(`nightly-***: 1 run (history ${join(shared.ws.dir, '.state/***/history/')}`);
    expectNoSecret(history.stdout + history.stderr);
    const rows = await runCli(['history', 'partner.yml', '--json'], { cwd: shared.ws.dir, env: env() });
    expect(rows.code, rows.stderr).toBe(0);
    expect(JSON.parse(rows.stdout)).toEqual([
      expect.objectContaining({ pipeline: 'nightly-***', status: 'succeeded' }),
    ]);
    expectNoSecret(rows.stdout);
  });

  it('a Pushgateway that echoes the request does not get its password printed', async () => {
    const PASSWORD = 'gw-Pass-9f8e7d';
    const gateway = await listen((req, res) => {
      const basic = (req.headers.authorization ?? '').replace(/^Basic /, '');
      req.resume();
      res.writeHead(400, { 'content-type': 'text/plain' });
      res.end(`rejected: authorization ${basic} (${Buffer.from(basic, 'base64').toString()})`);
    });
    try {
      const url = new URL(gateway.url);
      url.username = 'metrics';
      url.password = PASSWORD;
      const run = await runCli(['run', 'partner.yml', '--pushgateway', url.href], { cwd: shared.ws.dir, env: env() });
      expect(run.code, run.stderr).toBe(0);
      const failed = jsonLines(run.stderr).find((l) => l.event === 'metrics.failed')!;
      // The echo reached the message, the password and the Basic header made of it masked.
      expect(failed.message).toContain('push failed with status 400, rejected: authorization *** (***)');
      expect(run.stderr).not.toContain(PASSWORD);
      expect(run.stderr).not.toContain(Buffer.from(`metrics:${PASSWORD}`).toString('base64'));
    } finally {
      await gateway.close();
    }
  });
});

describe('a secret shorter than 8 characters', () => {
  const KEY = 'echo-key-5d1c9a';
  const SECRET = 'Qx7';
  let api: Awaited<ReturnType<typeof listen>>;
  let ws: Awaited<ReturnType<typeof workspace>>;
  let dir: string;
  beforeAll(async () => {
    // An API that echoes the decoded Authorization header in its error.
    api = await listen((req, res) => {
      const basic = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString();
      req.resume();
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { status: 400, code: 'bad_request', message: `bad header Basic ${basic}` } }));
    });
    ws = await workspace();
    dir = ws.dir;
    await writeFile(
      join(dir, 'echo.yml'),
      'name: echo\nconnection: { maxAttempts: 1 }\nsource: { type: products.query, filter: { status: active } }\nsinks: [{ type: jsonl, path: out/echo.jsonl }]\n',
    );
  });
  afterAll(async () => {
    await api?.close();
    await ws?.remove();
  });

  it('is redacted as a whole token when the API echoes it', async () => {
    const env = cleanEnv({
      CATALOG_BASE_URL: api.url,
      CATALOG_API_KEY: KEY,
      CATALOG_API_SECRET: SECRET,
      CATALOG_RATE_LIMIT: '0',
    });
    const run = await runCli(['run', 'echo.yml', '--summary-file', 'summary.json'], { cwd: dir, env });
    expect(run.code, run.stderr).toBe(1);
    const failed = jsonLines(run.stderr).find((l) => l.event === 'failed')!;
    expect(failed.message).toContain('bad header Basic [redacted]:[redacted]');
    const summary = await readFile(join(dir, 'summary.json'), 'utf8');
    for (const text of [run.stderr, run.stdout, summary]) {
      expect(text).not.toContain(KEY);
      expect(text).not.toMatch(/(?<![A-Za-z0-9_])Qx7(?![A-Za-z0-9_])/);
    }
  });
});
