// Runs the built `catalog-streams` CLI (dist/src/cli/main.js, built by `npm
// test`'s tsc) as a child process, the way cron or Kubernetes would, and gives
// tests a fresh workspace: a temp folder holding copies of pipelines/ and
// examples/, so the shipped pipelines' `../out/...` and `../.state/...` paths
// land inside it. Also: the in-process `main()` with captured output, and
// small readers for what a run leaves behind.
import { type ChildProcess, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { main } from '../../src/cli/main.js';
import type { CliIO } from '../../src/cli/io.js';
import type { SandboxOptions } from '../../src/sandbox/index.js';
import { afterAll, beforeAll, expect } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
/** The built CLI: `npm test` compiles src and test into dist/ before vitest runs. */
export const CLI = join(REPO, 'dist/src/cli/main.js');

/**
 * Where the runs of the tests keep their history (pipelines without a state): a temp folder of
 * this test process, not `.catalog-streams/` of the checkout the suite runs in. A test of the
 * default location passes `CATALOG_STREAMS_STATE_DIR: ''`.
 */
export const TEST_STATE_DIR = join(tmpdir(), `catalog-streams-test-state-${process.pid}`);

/** An environment without the developer's catalog or AWS settings. */
export function cleanEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { CATALOG_STREAMS_STATE_DIR: TEST_STATE_DIR };
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(CATALOG_|AWS_|S3_|LAKE_|NIGHTLY_)/.test(k)) continue;
    env[k] = v;
  }
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}

/**
 * The environment of a CLI run against a sandbox started by the test: its URL
 * and credentials, and CATALOG_RATE_LIMIT=0 (the test sandboxes have no rate
 * limit, so the client need not pace) unless `extra` says otherwise.
 */
export function sandboxEnv(
  sandbox: { url: string; credentials: { apiKey: string; apiSecret: string } },
  extra: Record<string, string | undefined> = {},
): NodeJS.ProcessEnv {
  return cleanEnv({
    CATALOG_BASE_URL: sandbox.url,
    CATALOG_API_KEY: sandbox.credentials.apiKey,
    CATALOG_API_SECRET: sandbox.credentials.apiSecret,
    CATALOG_RATE_LIMIT: '0',
    ...extra,
  });
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliProcess {
  child: ChildProcess;
  /** Output so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves when some stderr line matches (rejects after timeoutMs). */
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<void>;
  done: Promise<CliResult>;
}

export function startCli(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): CliProcess {
  return startCommand(process.execPath, [CLI, ...args], opts);
}

/** Any command (a shell wrapper around the CLI, say) with the same output capture as startCli. */
export function startCommand(
  command: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): CliProcess {
  const child = spawn(command, args, {
    cwd: opts.cwd ?? REPO,
    env: opts.env ?? cleanEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => {
    err += c.toString();
    for (const w of waiters) w();
  });
  const done = new Promise<CliResult>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal, stdout: out, stderr: err })),
  );
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    done,
    waitForStderr(pattern, timeoutMs = 20_000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (pattern.test(err)) {
            cleanup();
            resolve();
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`no stderr line matched ${pattern} within ${timeoutMs} ms; stderr so far:\n${err}`));
        }, timeoutMs);
        const onClose = () => {
          cleanup();
          reject(new Error(`the CLI exited before stderr matched ${pattern}; stderr:\n${err}`));
        };
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
          child.off('close', onClose);
        };
        waiters.add(check);
        child.once('close', onClose);
        check();
      });
    },
  };
}

export function runCli(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
  return startCli(args, opts).done;
}

/** `main()` in-process with captured output, a fake signal emitter and the given environment. */
export async function runMain(argv: string[], given: NodeJS.ProcessEnv = {}, opts: { tty?: boolean } = {}) {
  const env = { CATALOG_STREAMS_STATE_DIR: TEST_STATE_DIR, ...given };
  const out: string[] = [];
  const err: string[] = [];
  const sink = (into: string[], tty: boolean) =>
    Object.assign(
      new Writable({
        write(chunk, _encoding, callback) {
          into.push(String(chunk));
          callback();
        },
      }),
      { isTTY: tty, columns: 100 },
    );
  const signals = new EventEmitter();
  const io: CliIO = { stdout: sink(out, false), stderr: sink(err, opts.tty ?? false), env, signals };
  const code = await main(argv, io);
  return { code, stdout: out.join(''), stderr: err.join(''), signals };
}

/** A temp folder with copies of pipelines/ and examples/; `remove()` deletes it. */
export async function workspace(prefix = 'catalog-streams-cli-'): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await cp(join(REPO, 'pipelines'), join(dir, 'pipelines'), { recursive: true });
  await cp(join(REPO, 'examples'), join(dir, 'examples'), { recursive: true });
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * A sandbox and a workspace shared by the tests of one describe block: started in its
 * beforeAll, removed in its afterAll. Read the fields inside tests (they are set by then).
 */
export function useSandboxWorkspace(options: SandboxOptions): {
  sandbox: TestSandbox;
  ws: { dir: string; remove(): Promise<void> };
} {
  const shared = {} as { sandbox: TestSandbox; ws: { dir: string; remove(): Promise<void> } };
  beforeAll(async () => {
    shared.sandbox = await startTestSandbox(options);
    shared.ws = await workspace();
  });
  afterAll(async () => {
    await shared.sandbox?.close();
    await shared.ws?.remove();
  });
  return shared;
}

/** Every file under `dir`, as paths relative to it, sorted (hidden temp files included). */
export async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

/** The JSON log lines of a non-TTY run's stderr (every line must be JSON). */
export function jsonLines(stderr: string): Array<Record<string, any>> {
  return stderr
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, any>);
}

export async function readJson<T = any>(file: string): Promise<T> {
  return JSON.parse(await readFile(file, 'utf8')) as T;
}

/**
 * An output path template (`out/products-{run}.parquet`) with the run's id in place of `{run}`: the
 * name that run committed. Incremental pipelines need {run} in every output name (their outputs
 * add up, src/pipeline/incremental-outputs.ts); the run id comes from the run's summary.
 */
export function runPath(template: string, runId: string): string {
  expect(runId, 'a run id from the summary').toMatch(/^\d{8}T\d{6}Z-[0-9a-f]{6}$/);
  return template.replaceAll('{run}', runId);
}

/** The run id of the CLI's (JSON log) summary line of `pipeline` (the only one when not given). */
export function summaryRunId(stderr: string, pipeline?: string): string {
  const summaries = jsonLines(stderr).filter(
    (l) => l.event === 'summary' && (pipeline === undefined || l.pipeline === pipeline),
  );
  expect(summaries, `one summary line${pipeline ? ` of ${pipeline}` : ''}`).toHaveLength(1);
  return String(summaries[0]!.runId);
}
