// Fault matrix: what the user got wrong. Through the built CLI.
// - Wrong credentials: exit 1, one error telling to check the credentials; the
//   secret (and the Basic token made of it) appears nowhere: stdout, stderr
//   (the JSON log), the summary file, the state file, any file written.
// - A base URL nobody answers: exit 1, naming the host; nothing written.
// - Bad pipeline files (fixtures/faults): exit 2 from `validate` and from `run`,
//   one line naming file:line:column and the path, before any request.
import { readdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { REPO } from '../cli/cli-process.js';
import { basicAuthorization, startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import {
  type PipelineWorkspace,
  cleanEnv,
  jsonLines,
  leftBehind,
  listFiles,
  pipelineWorkspace,
  runCli,
  sandboxEnv,
  summaryRunId,
} from './support.js';

const KEY = 'faults-key-77c1';
const SECRET = 'faults-RIGHT-secret-3e9f';
const WRONG = 'faults-WRONG-secret-8a0d';
const PIPELINE = `name: guarded
connection:
  apiSecret: \${CATALOG_API_SECRET}
  maxAttempts: 2
source:
  type: products.query
  filter: { status: active }
transforms:
  - { type: validate, onInvalid: dead-letter, deadLetter: { type: jsonl, path: "out/rejected-{run}.jsonl" } }
sinks:
  - { type: parquet, path: "out/products-{run}.parquet" }
  - { type: jsonl, path: "out/products-{run}.jsonl.gz" }
state: { path: .state/guarded.json }
`;
let ws: PipelineWorkspace;
beforeEach(async () => {
  ws = await pipelineWorkspace('guarded', PIPELINE);
});
afterEach(() => ws.remove());

/** Everything the run produced: its output streams and every file in the workspace. */
async function everything(result: { stdout: string; stderr: string }): Promise<string> {
  const files = await listFiles(ws.dir);
  const contents = await Promise.all(files.map((f) => readFile(ws.path(f), 'latin1')));
  return [result.stdout, result.stderr, ...contents].join('\n');
}

describe('wrong credentials', () => {
  let sandbox: TestSandbox;
  beforeAll(async () => {
    sandbox = await startTestSandbox({ products: 200, credentials: { apiKey: KEY, apiSecret: SECRET } });
  });
  afterAll(() => sandbox?.close());

  it('exit 1 with one clear error; the secret is nowhere; nothing written; cursor unchanged', async () => {
    const env = sandboxEnv(sandbox, { CATALOG_API_SECRET: WRONG });
    // --quiet: no progress, so no planning probe beside the run; the one 401 is the run's.
    const result = await runCli(['run', ws.file, '--summary-file', 'summary.json', '--quiet'], { cwd: ws.dir, env });
    expect(result.code, result.stderr).toBe(1);
    const lines = jsonLines(result.stderr);
    const errors = lines.filter((l) => l.level === 'error' && l.event !== 'summary');
    expect(errors, result.stderr).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      event: 'failed',
      code: 'auth.unauthorized',
      message: expect.stringMatching(/credentials|CATALOG_API_KEY|CATALOG_API_SECRET/),
    });
    expect(sandbox.stats.byEndpoint['products.query']).toEqual({ 401: 1 });
    expect(JSON.parse(await ws.read('summary.json'))).toMatchObject({
      exitCode: 1,
      pipelines: [{ status: 'failed', error: { code: 'auth.unauthorized' } }],
    });
    const all = await everything(result);
    for (const secret of [WRONG, basicAuthorization(KEY, WRONG).slice('Basic '.length)])
      expect(all).not.toContain(secret);
    expect(await leftBehind(ws.path('out'))).toEqual({ final: [], temp: [] });
    expect(await ws.read('.state/guarded.json')).toBe(ws.state);
  });

  it('the right credentials (control): exit 0, and the secret is nowhere either', async () => {
    const result = await runCli(['run', ws.file, '--summary-file', 'summary.json'], {
      cwd: ws.dir,
      env: sandboxEnv(sandbox, { CATALOG_API_SECRET: SECRET }),
    });
    expect(result.code, result.stderr).toBe(0);
    const all = await everything(result);
    for (const secret of [SECRET, basicAuthorization(KEY, SECRET).slice('Basic '.length)])
      expect(all).not.toContain(secret);
    const runId = summaryRunId(result.stderr);
    expect((await leftBehind(ws.path('out'))).final).toEqual([
      `products-${runId}.jsonl.gz`,
      `products-${runId}.parquet`,
    ]);
  });
});

describe('unreachable base URL', () => {
  it('exit 1 naming the host and what to check; nothing written; cursor unchanged', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const p = (server.address() as { port: number }).port;
        server.close(() => resolve(p));
      });
    });
    const env = cleanEnv({
      CATALOG_BASE_URL: `http://127.0.0.1:${port}`,
      CATALOG_API_KEY: KEY,
      CATALOG_API_SECRET: SECRET,
      CATALOG_RATE_LIMIT: '0',
    });
    const result = await runCli(['run', ws.file], { cwd: ws.dir, env });
    expect(result.code, result.stderr).toBe(1);
    expect(jsonLines(result.stderr).find((l) => l.event === 'failed')).toMatchObject({
      code: 'network.unreachable',
      message: expect.stringContaining(`127.0.0.1:${port}`),
    });
    expect(await leftBehind(ws.path('out'))).toEqual({ final: [], temp: [] });
    expect(await ws.read('.state/guarded.json')).toBe(ws.state);
    expect(result.stderr).not.toContain(SECRET);
  });
});

describe('bad pipeline files', () => {
  const dir = join(REPO, 'fixtures/faults');
  const expectations: Record<string, RegExp> = {
    'filter-status-typo.yml': /:5:\d+: source\.filter\.status\[0\]: "activ" is not allowed/,
    'parquet-without-path.yml': /:7:\d+: sinks\[0\]\.path: required/,
    'rate-limit-negative.yml': /:4:\d+: connection\.rateLimit: /,
    'source-option-typo.yml': /:6:\d+: source\.pagesize: unknown key "pagesize"; did you mean "pageSize"\?/,
    'transforms-not-a-list.yml': /:7:\d+: transforms: expected a list/,
  };

  it('every file of fixtures/faults has an expectation', async () => {
    expect((await readdir(dir)).filter((f) => f.endsWith('.yml')).sort()).toEqual(Object.keys(expectations).sort());
  });

  it.each(Object.entries(expectations))(
    '%s: exit 2 from validate and from run, one line naming file:line:column and the path',
    async (file, message) => {
      const path = `fixtures/faults/${file}`;
      // A base URL that would refuse connections: no request may be made before the file is checked.
      const env = cleanEnv({
        CATALOG_BASE_URL: 'http://127.0.0.1:9',
        CATALOG_API_KEY: KEY,
        CATALOG_API_SECRET: SECRET,
      });
      for (const command of ['validate', 'run']) {
        const result = await runCli([command, path, '--log-format', 'pretty'], { cwd: REPO, env });
        expect(result.code, result.stderr).toBe(2);
        const lines = result.stderr.trim().split('\n');
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(new RegExp(`^catalog-streams ${command}: ${path.replace(/[.]/g, '\\.')}`));
        expect(lines[0]).toMatch(message);
        expect(result.stdout).toBe('');
      }
    },
  );
});
