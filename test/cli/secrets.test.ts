// Secrets never come back out. A pipeline takes its secret from the environment
// (`connection.apiSecret: ${CATALOG_API_SECRET}`); after a successful run and
// after a run with wrong credentials (exit 1, a message telling what to check),
// neither the secret nor the Basic authorization built from it appears in
// stdout, stderr, the summary file, the state file or any output file.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization, startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { jsonLines, listFiles, runCli, runMain, runPath, sandboxEnv, summaryRunId, workspace } from './cli-process.js';

const KEY = 'cs-test-key-7f3a';
const SECRET = 'Zx9-very-SECRET-value-q7W2';
const WRONG = 'Wr0ng-SECRET-value-p4K8';

const PIPELINE = `name: secretive
connection:
  apiSecret: \${CATALOG_API_SECRET}
  rateLimit: \${RATE:-6000}
  maxAttempts: 2
source:
  type: products.query
  filter: { status: active }
transforms:
  - { type: validate, onInvalid: dead-letter, deadLetter: { type: jsonl, path: "out/rejected-{run}.jsonl" } }
sinks:
  - { type: parquet, path: "out/products-{run}.parquet" }
  - { type: jsonl, path: "out/products-{run}.jsonl" }
state: { path: .state/secretive.json }
`;

describe('secrets', () => {
  let sandbox: TestSandbox;
  let ws: Awaited<ReturnType<typeof workspace>>;
  beforeAll(async () => {
    sandbox = await startTestSandbox({ products: 300, credentials: { apiKey: KEY, apiSecret: SECRET } });
    ws = await workspace();
    await writeFile(join(ws.dir, 'secretive.yml'), PIPELINE);
  });
  afterAll(async () => {
    await sandbox?.close();
    await ws?.remove();
  });

  const env = (secret: string) => sandboxEnv(sandbox, { CATALOG_API_SECRET: secret, CATALOG_RATE_LIMIT: undefined });

  /** Every text the run left: output streams and every file in the workspace but the pipeline itself. */
  async function everythingWritten(result: { stdout: string; stderr: string }): Promise<string> {
    const files = (await listFiles(ws.dir)).filter(
      (f) => !f.startsWith('pipelines/') && !f.startsWith('examples/') && f !== 'secretive.yml',
    );
    const contents = await Promise.all(files.map((f) => readFile(join(ws.dir, f), 'latin1')));
    return [result.stdout, result.stderr, ...contents].join('\n');
  }

  function expectNoSecret(text: string) {
    for (const secret of [SECRET, WRONG]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(basicAuthorization(KEY, secret).slice('Basic '.length));
    }
  }

  it('a successful run: the secret is nowhere in its output, logs, summary, state or files', async () => {
    const result = await runCli(['run', 'secretive.yml', '--summary-file', 'summary.json'], {
      cwd: ws.dir,
      env: env(SECRET),
    });
    expect(result.code, result.stderr).toBe(0);
    const files = await listFiles(ws.dir);
    const runId = summaryRunId(result.stderr);
    expect(files).toEqual(
      expect.arrayContaining([
        '.state/secretive.json',
        runPath('out/products-{run}.jsonl', runId),
        runPath('out/products-{run}.parquet', runId),
        'summary.json',
      ]),
    );
    expectNoSecret(await everythingWritten(result));
  });

  it('wrong credentials: exit 1, one clear error telling to check the credentials, and no secret anywhere', async () => {
    const state = await readFile(join(ws.dir, '.state/secretive.json'), 'utf8');
    const result = await runCli(['run', 'secretive.yml', '--summary-file', 'summary-wrong.json'], {
      cwd: ws.dir,
      env: env(WRONG),
    });
    expect(result.code).toBe(1);
    const errors = jsonLines(result.stderr).filter((l) => l.level === 'error');
    expect(errors.map((l) => l.event)).toEqual(['failed', 'summary']);
    expect(errors[0]!.message).toBe(
      `secretive: the catalog API at ${new URL(sandbox.url).host} rejected the credentials (401 authentication.not_authenticated) for products.query: check CATALOG_API_KEY in the environment and connection.apiSecret in ${join(ws.dir, 'secretive.yml')}, and that they belong to the environment of CATALOG_BASE_URL (credentials are environment-specific: production keys do not work on the sandbox, nor the reverse)`,
    );
    expect(errors[1]).toMatchObject({ status: 'failed', error: { code: 'auth.unauthorized' }, outputs: [] });
    // Nothing written, the cursor of the good run kept.
    expect(await readFile(join(ws.dir, '.state/secretive.json'), 'utf8')).toBe(state);
    expectNoSecret(await everythingWritten(result));
  });

  it('on a TTY (text summary, live display) the secret does not show either', async () => {
    const result = await runMain(['run', join(ws.dir, 'secretive.yml')], env(WRONG), { tty: true });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('rejected the credentials');
    expect(result.stderr).toContain('✗ secretive failed');
    expectNoSecret(result.stderr);
  });

  it('a secret of the wrong type (a number) is redacted from the error', async () => {
    await writeFile(
      join(ws.dir, 'numeric.yml'),
      PIPELINE.replace('apiSecret: ${CATALOG_API_SECRET}', 'apiSecret: 73519046281'),
    );
    const result = await runCli(['validate', 'numeric.yml', '--log-format', 'pretty'], {
      cwd: ws.dir,
      env: env(SECRET),
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'catalog-streams validate: numeric.yml:3:14: connection.apiSecret: expected a string, got ***\n',
    );
    const run = await runCli(['run', 'numeric.yml'], { cwd: ws.dir, env: env(SECRET) });
    expect(run.code).toBe(2);
    expect(run.stderr).not.toContain('73519046281');
  });

  it('a secret put where a value is checked is redacted from the error', async () => {
    await writeFile(join(ws.dir, 'leaky.yml'), PIPELINE.replace('${RATE:-6000}', '${CATALOG_API_SECRET}'));
    const result = await runCli(['validate', 'leaky.yml', '--log-format', 'pretty'], { cwd: ws.dir, env: env(SECRET) });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'catalog-streams validate: leaky.yml:4:14: connection.rateLimit: expected a number, got "***"\n',
    );
  });
});

// A short API key that is also an ordinary word ("status") is redacted where it
// stands as a whole value, never inside other text, JSON keys included: the
// summary keeps its "status" key, the filter its "status" field.
describe('a short secret', () => {
  let sandbox: TestSandbox;
  let ws: Awaited<ReturnType<typeof workspace>>;
  const SHORT_KEY = 'status';
  beforeAll(async () => {
    sandbox = await startTestSandbox({ products: 200, credentials: { apiKey: SHORT_KEY, apiSecret: SECRET } });
    ws = await workspace();
    await writeFile(
      join(ws.dir, 'short.yml'),
      PIPELINE.replace('name: secretive', 'name: short').replace('secretive.json', 'short.json'),
    );
  });
  afterAll(async () => {
    await sandbox?.close();
    await ws?.remove();
  });

  it('does not damage the summary, the log or the summary file', async () => {
    const result = await runCli(['run', 'short.yml', '--summary-file', 'summary.json'], {
      cwd: ws.dir,
      env: sandboxEnv(sandbox, { CATALOG_API_SECRET: SECRET, CATALOG_RATE_LIMIT: undefined }),
    });
    expect(result.code, result.stderr).toBe(0);
    const summary = jsonLines(result.stderr).find((l) => l.event === 'summary')!;
    expect(summary.status).toBe('succeeded');
    // The filter (alone, or beside the incremental window) keeps its status field.
    expect(JSON.stringify(summary.sourceFilter)).toContain('{"status":"active"}');
    const file = JSON.parse(await readFile(join(ws.dir, 'summary.json'), 'utf8'));
    expect(file.exitCode).toBe(0);
    expect(file.pipelines[0].status).toBe('succeeded');
    expect(JSON.stringify(file.pipelines[0].sourceFilter)).toContain('{"status":"active"}');
    expect(result.stderr).not.toContain('***');
    expect(result.stderr).not.toContain(SECRET);
  });

  it('is still redacted where it is the whole value shown', async () => {
    await writeFile(join(ws.dir, 'leaky-key.yml'), PIPELINE.replace('${RATE:-6000}', '${CATALOG_API_KEY}'));
    const result = await runCli(['validate', 'leaky-key.yml', '--log-format', 'pretty'], {
      cwd: ws.dir,
      env: sandboxEnv(sandbox, { CATALOG_API_SECRET: SECRET }),
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'catalog-streams validate: leaky-key.yml:4:14: connection.rateLimit: expected a number, got "***"\n',
    );
  });
});
