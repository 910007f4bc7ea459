// Shared by the fault-matrix tests (test/faults): a workspace per test, a
// pipeline run in-process (the runner with a CatalogClient the test
// configures: timeouts and backoff are not pipeline-file options) or as the
// built CLI (test/cli/cli-process.ts: exit codes and signals), and readers
// that turn what a run left behind into id lists to compare exactly.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest';
import { CatalogClient, type CatalogClientOptions } from '../../src/client/index.js';
import { CatalogStreamsError } from '../../src/errors.js';
import { RunEvents } from '../../src/events.js';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { RunFailedError, type RunSummary, runPipeline } from '../../src/pipeline/runner.js';
import type { Sandbox, SandboxOptions } from '../../src/sandbox/index.js';
import { listFiles } from '../cli/cli-process.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { productIdsWithStatus } from '../sources/sandbox-harness.js';

export {
  cleanEnv,
  jsonLines,
  listFiles,
  runCli,
  runPath,
  sandboxEnv,
  startCli,
  summaryRunId,
} from '../cli/cli-process.js';
export { allProductIds, productIdsWithStatus } from '../sources/sandbox-harness.js';

export interface FaultFixture {
  readonly sandbox: TestSandbox;
  /** The ids the fixture's pipelines select: every status but no_selection. */
  readonly expected: string[];
  /** This test's workspace: the pipeline file and an old state cursor. */
  readonly ws: PipelineWorkspace;
}

/**
 * The hooks a fault-matrix file needs: one sandbox for the file, and before each
 * test a fresh workspace holding `<name>.yml` with its state, faults off and the
 * sandbox's counters reset.
 */
export function faultFixture(name: string, pipeline: string, sandbox: SandboxOptions): FaultFixture {
  const f = {} as { sandbox: TestSandbox; expected: string[]; ws: PipelineWorkspace };
  beforeAll(async () => {
    f.sandbox = await startTestSandbox(sandbox);
    f.expected = productIdsWithStatus(f.sandbox, 'active', 'inactive', 'replaced');
  });
  afterAll(() => f.sandbox?.close());
  beforeEach(async () => {
    f.ws = await pipelineWorkspace(name, pipeline);
    f.sandbox.setFaults({});
    f.sandbox.resetStats();
  });
  afterEach(() => f.ws?.remove());
  return f;
}

/**
 * A sandbox for a describe block, the ids a full extract of it delivers, and for each test a
 * fresh plain workspace and reset request counters (faultFixture is the same with a pipeline file).
 */
export function sandboxFixture(sandbox: SandboxOptions): { sandbox: TestSandbox; expected: string[]; ws: Workspace } {
  const f = {} as { sandbox: TestSandbox; expected: string[]; ws: Workspace };
  beforeAll(async () => {
    f.sandbox = await startTestSandbox(sandbox);
    f.expected = productIdsWithStatus(f.sandbox, 'active', 'inactive', 'replaced');
  });
  afterAll(() => f.sandbox?.close());
  beforeEach(async () => {
    f.ws = await workspace();
    f.sandbox.resetStats();
  });
  afterEach(() => f.ws?.remove());
  return f;
}

export interface Workspace {
  dir: string;
  path(relative: string): string;
  write(relative: string, text: string): Promise<string>;
  read(relative: string): Promise<string>;
  remove(): Promise<void>;
}

export async function workspace(prefix = 'catalog-streams-faults-'): Promise<Workspace> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const path = (relative: string) => join(dir, relative);
  return {
    dir,
    path,
    async write(relative, text) {
      await mkdir(dirname(path(relative)), { recursive: true });
      await writeFile(path(relative), text);
      return path(relative);
    },
    read: (relative) => readFile(path(relative), 'utf8'),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** A state file holding `cursor` (an old one: the incremental filter then takes every product). */
export function stateFile(pipeline: string, cursor = 1): string {
  return `${JSON.stringify({ version: 1, pipeline, cursor, updatedAt: '2026-01-01T00:00:00.000Z' }, null, 2)}\n`;
}

export interface PipelineWorkspace extends Workspace {
  /** `<name>.yml`, relative to `dir`. */
  file: string;
  /** The state file's text as written (cursor 1), to compare with after a failed run. */
  state: string;
  /** The state file now, parsed. */
  readState(): Promise<{ cursor: number; [key: string]: unknown }>;
}

/** A workspace holding the pipeline `<name>.yml` and its state file `.state/<name>.json` with an old cursor. */
export async function pipelineWorkspace(name: string, yaml: string): Promise<PipelineWorkspace> {
  const ws = await workspace();
  const state = stateFile(name);
  await ws.write(`${name}.yml`, yaml);
  await ws.write(`.state/${name}.json`, state);
  return { ...ws, file: `${name}.yml`, state, readState: async () => JSON.parse(await ws.read(`.state/${name}.json`)) };
}

/**
 * The files under `dir`: under a final name, and temp files. A killed {run} dataset's lock and
 * write journal (what the next run needs to remove its files) are neither: left out.
 */
export async function leftBehind(dir: string): Promise<{ final: string[]; temp: string[] }> {
  const files = (await listFiles(dir)).filter(
    (f) => !/(^|\/)(\.publish\.[0-9a-f]{8}\.lock|_journal\/[^/]+\.json)$/.test(f),
  );
  const temp = files.filter((f) => /(^|\/)\.[^/]+\.tmp$/.test(f));
  return { final: files.filter((f) => !temp.includes(f)), temp };
}

/** The `id` column of Parquet files (a glob is fine), in file order. */
export async function parquetIds(fileOrGlob: string): Promise<string[]> {
  const { rows } = await duckdbQuery(`SELECT id FROM read_parquet(${sqlString(fileOrGlob)})`);
  return rows.map((r) => String(r.id));
}

/** The lines of a JSONL file (gzipped when it ends in .gz), parsed. */
export async function jsonlLines<T = Record<string, any>>(file: string): Promise<T[]> {
  const raw = await readFile(file);
  const text = (file.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as T);
}

/** The ids of a JSONL file, in file order (dead letters: the id of their `record`). */
export async function jsonlIds(
  file: string,
  of: (line: Record<string, any>) => unknown = (l) => l.id,
): Promise<string[]> {
  return (await jsonlLines(file)).map((l) => String(of(l)));
}

/** `actual` holds every id of `expected` exactly once, and nothing else (order aside). */
export function expectExactIds(actual: readonly string[], expected: readonly string[]): void {
  const counts = new Map<string, number>();
  for (const id of actual) counts.set(id, (counts.get(id) ?? 0) + 1);
  const duplicates = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
  expect(duplicates.slice(0, 5), 'ids written more than once').toEqual([]);
  const wanted = new Set(expected);
  expect([...counts.keys()].filter((id) => !wanted.has(id)).slice(0, 5), 'ids that should not be there').toEqual([]);
  expect(expected.filter((id) => !counts.has(id)).slice(0, 5), 'ids missing').toEqual([]);
  expect(actual.length).toBe(expected.length);
}

export type InProcessRun =
  | { ok: true; summary: RunSummary; events: RecordedEvent[] }
  | { ok: false; summary: RunSummary; error: CatalogStreamsError; exitCode: number; events: RecordedEvent[] };

export interface RecordedEvent {
  name: string;
  payload: any;
}

/**
 * Runs the workspace's pipeline file with the runner, on a client the test
 * configures (fast backoff by default), against `sandbox`. A failed run
 * resolves too, with the exit code the CLI would use.
 */
export async function runInProcess(
  ws: PipelineWorkspace,
  sandbox: Sandbox,
  client: Partial<CatalogClientOptions> = {},
  /** Called as soon as runPipeline settles, before any I/O callback can run (to see what is left at that moment). */
  onSettled?: () => void,
  /** Hears every recorded event as it happens (e.g. to change the sandbox's data between requests). */
  onEvent?: (name: string, payload: any) => void,
): Promise<InProcessRun> {
  const file = ws.path(ws.file);
  const [loaded] = parsePipelines(await readFile(file, 'utf8'), createRegistry(), { file });
  const events = new RunEvents();
  const recorded: RecordedEvent[] = [];
  for (const name of ['request', 'retry', 'throttle', 'info', 'warning', 'invalid', 'output'] as const) {
    events.on(name, (payload: unknown) => {
      recorded.push({ name, payload });
      onEvent?.(name, payload);
    });
  }
  const catalog = new CatalogClient({
    baseUrl: sandbox.url,
    ...sandbox.credentials,
    rateLimit: 0,
    retry: { minTimeout: 5, maxTimeout: 40 },
    events,
    ...client,
  });
  try {
    const summary = await runPipeline(loaded!, { registry: createRegistry(), client: catalog, events }).finally(() =>
      onSettled?.(),
    );
    return { ok: true, summary, events: recorded };
  } catch (err) {
    if (!(err instanceof RunFailedError)) throw err;
    return {
      ok: false,
      summary: err.summary,
      error: err.cause as CatalogStreamsError,
      exitCode: err.exitCode,
      events: recorded,
    };
  } finally {
    await catalog.close();
  }
}
