// The Airflow and Dagster examples (examples/airflow, examples/dagster). Airflow and Dagster are not
// installed where the tests run (and cannot be), so: each file compiles (`python3 -m py_compile`);
// every flag it passes is one `catalog-streams help run` lists; the exit codes it names are the
// catalogue's (docs/errors.md), all of them, each in the set its remedy says; and the summary fields
// it reads exist. Then the files run for real under small stand-ins for the airflow, pendulum and
// dagster modules (only the names the examples use): the task and the asset start the CLI of the
// packed package installed in an empty project, with their defaults (only the project folder is
// told to Airflow, whose default is /opt/catalog-streams), against the sandbox; the CLI's lines
// reach the task's or step's log line by line, the Airflow task declares its output folder as a
// Dataset, and a success, a bad pipeline file (exit 2) and a refused credential (exit 1, remedy
// fix) end as the orchestrator must see them; a fake CLI covers exit 1 with remedy retry and a
// signal exit.
import { spawn, spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../src/error-codes.js';
import type { RunSummary } from '../../src/pipeline/runner.js';
import { REPO, listFiles, runMain, sandboxEnv } from '../cli/cli-process.js';
import { packedProject, shellPath, type PackedProject } from '../helpers/packed-project.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const EXAMPLES = ['examples/airflow/catalog_streams_dag.py', 'examples/dagster/catalog_streams_assets.py'];
const python = spawnSync('python3', ['--version']);
const noPython = python.error !== undefined || python.status !== 0;

// Every field of a run summary: the compiler fails here when RunSummary changes, the test below
// when an example reads a field that is not one of these.
const SUMMARY_FIELDS: Record<keyof RunSummary, true> = {
  pipeline: true,
  runId: true,
  status: true,
  startedAt: true,
  finishedAt: true,
  durationMs: true,
  source: true,
  sourceFilter: true,
  records: true,
  requests: true,
  retries: true,
  throttles: true,
  pages: true,
  bytes: true,
  files: true,
  objects: true,
  outputs: true,
  recordsPerSecond: true,
  cursor: true,
  warnings: true,
  warningCounts: true,
  schemaChanges: true,
  tables: true,
  error: true,
  regions: true,
};
const RECORD_FIELDS: Record<keyof RunSummary['records'], true> = {
  read: true,
  written: true,
  invalid: true,
  deadLettered: true,
  skipped: true,
  dropped: true,
};
const ERROR_FIELDS: Record<keyof NonNullable<RunSummary['error']>, true> = { code: true, message: true, remedy: true };

describe.skipIf(noPython)('orchestrator examples (python3 present)', () => {
  let pycache: string;
  beforeAll(async () => {
    pycache = await mkdtemp(join(tmpdir(), 'pycache-'));
  });
  afterAll(() => rm(pycache, { recursive: true, force: true }));

  it.each(EXAMPLES)('%s compiles', (file) => {
    // The compiled files go to a temp folder, not beside the example (examples/ is packed).
    const r = spawnSync('python3', ['-m', 'py_compile', join(REPO, file)], {
      env: { ...process.env, PYTHONPYCACHEPREFIX: pycache },
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
  });

  it.each(EXAMPLES)('%s passes only flags of catalog-streams run', async (file) => {
    const source = await readFile(join(REPO, file), 'utf8');
    const flags = [...source.matchAll(/"(--[a-z][a-z-]*)"/g)].map((m) => m[1]!);
    expect(flags).toContain('--summary-file');
    const help = (await runMain(['help', 'run'])).stdout;
    for (const flag of flags) expect(help, flag).toMatch(new RegExp(`^ +${flag}\\b`, 'm'));
  });

  it.each(EXAMPLES)('%s names every exit code, each where its remedy puts it', async (file) => {
    const source = await readFile(join(REPO, file), 'utf8');
    const sets = Object.fromEntries(
      [...source.matchAll(/^([A-Z_]+_EXIT_CODES) = \{([\d, ]+)\}/gm)].map((m) => [
        m[1]!,
        m[2]!.split(',').map((n) => Number(n.trim())),
      ]),
    );
    const remedyOf = (code: number) => EXIT_CODES.find((e) => e.exitCode === code)?.remedy;
    expect(sets.SUCCESS_EXIT_CODES!.map(remedyOf)).toEqual(['none']);
    expect(sets.FAIL_EXIT_CODES!.map(remedyOf)).toEqual(['fix']);
    // Exit 1: retried or not by the error code's remedy, read from the summary.
    expect(sets.RUN_FAILED_EXIT_CODES).toEqual([1]);
    for (const code of sets.RETRY_EXIT_CODES!) expect(remedyOf(code), String(code)).toBe('retry');
    expect(
      Object.values(sets)
        .flat()
        .sort((a, b) => a - b),
    ).toEqual(EXIT_CODES.map((e) => e.exitCode));
  });

  it.each(EXAMPLES)('%s reads only fields a run summary has', async (file) => {
    const source = await readFile(join(REPO, file), 'utf8');
    const read = (variable: string) =>
      [...source.matchAll(new RegExp(`\\b${variable}(?:\\["|\\.get\\(")([A-Za-z]+)"`, 'g'))].map((m) => m[1]!);
    const pipelineFields = [...read('p'), ...read('pipeline')];
    expect(pipelineFields.length).toBeGreaterThan(3);
    for (const f of pipelineFields) expect(Object.keys(SUMMARY_FIELDS), f).toContain(f);
    for (const f of read('records')) expect(Object.keys(RECORD_FIELDS), f).toContain(f);
    for (const f of read('e')) expect(Object.keys(ERROR_FIELDS), f).toContain(f);
  });
});

/** Stand-ins for the modules the examples import: only the names they use, doing the least that runs them. */
const STUBS: Record<string, string> = {
  'pendulum.py': 'def datetime(*args, **kwargs):\n    return None\n',
  'airflow/__init__.py': `
class DAG:
    def __init__(self, **kwargs):
        self.kwargs = kwargs
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False
`,
  'airflow/exceptions.py': `
class AirflowException(Exception):
    pass
class AirflowFailException(AirflowException):
    pass
`,
  'airflow/decorators.py': `
class _Task:
    def __init__(self, function, kwargs):
        self.function = function
        self.kwargs = kwargs
    def __call__(self, *args, **kwargs):
        return None  # in a DAG file, calling a task only adds it to the DAG
def task(*args, **kwargs):
    return lambda function: _Task(function, kwargs)
`,
  'airflow/datasets/__init__.py': `
class Dataset:
    def __init__(self, uri):
        self.uri = uri
`,
  'airflow/hooks/__init__.py': '',
  // As Airflow's: each line of the merged stdout and stderr is logged as it comes.
  'airflow/hooks/subprocess.py': `
import os, subprocess, sys
from collections import namedtuple
SubprocessResult = namedtuple("SubprocessResult", ["exit_code", "output"])
class SubprocessHook:
    def run_command(self, command, env=None, output_encoding="utf-8", cwd=None):
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd,
                                   env=env if env or env == {} else os.environ)
        line = ""
        for raw in iter(process.stdout.readline, b""):
            line = raw.decode(output_encoding).rstrip()
            sys.stderr.write("[task log] " + line + "\\n")
        process.wait()
        return SubprocessResult(exit_code=process.returncode, output=line)
`,
  'dagster/__init__.py': `
class Failure(Exception):
    def __init__(self, description=None, metadata=None, allow_retries=None):
        super().__init__(description)
        self.description = description
        self.metadata = metadata
        self.allow_retries = allow_retries
class MaterializeResult:
    def __init__(self, metadata=None):
        self.metadata = metadata
class MetadataValue:
    int = float = json = staticmethod(lambda value: value)
class Backoff:
    EXPONENTIAL = "exponential"
class RetryPolicy:
    def __init__(self, **kwargs):
        pass
class AssetExecutionContext:
    pass
class _Log:
    def info(self, message):
        import sys
        sys.stderr.write("[step log] " + message + "\\n")
class _Context:
    log = _Log()
class _Asset:
    def __init__(self, function):
        self.function = function
def asset(**kwargs):
    return lambda function: _Asset(function)
def define_asset_job(name, selection):
    return name
class ScheduleDefinition:
    def __init__(self, **kwargs):
        pass
class Definitions:
    def __init__(self, **kwargs):
        pass
`,
};

/** Loads an example and runs its task or asset once; prints what the orchestrator would see. */
const DRIVER = `
import importlib.util, json, sys
path, kind = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("example", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
if kind == "airflow":
    from airflow.exceptions import AirflowException, AirflowFailException
    try:
        outlets = [d.uri for d in module.extract_products.kwargs.get("outlets", [])]
        print(json.dumps({"outcome": "success", "value": module.extract_products.function(), "outlets": outlets}))
    except AirflowFailException as e:
        print(json.dumps({"outcome": "fail", "message": str(e)}))
    except AirflowException as e:
        print(json.dumps({"outcome": "retry", "message": str(e)}))
else:
    import dagster
    try:
        result = module.products_nightly.function(dagster._Context())
        print(json.dumps({"outcome": "success", "value": result.metadata}))
    except dagster.Failure as e:
        print(json.dumps({"outcome": "retry" if e.allow_retries is not False else "fail", "message": e.description}))
`;

/** A CLI that writes the summary it is given and exits with the code it is given. */
const FAKE_CLI = `#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
with open(args[args.index("--summary-file") + 1], "w") as f:
    f.write(os.environ["FAKE_SUMMARY"])
sys.exit(int(os.environ["FAKE_EXIT"]))
`;

describe.skipIf(noPython)('orchestrator examples run under stand-in modules', () => {
  let dir: string;
  let sandbox: TestSandbox;
  let packed: PackedProject;
  let project: string;
  beforeAll(async () => {
    [sandbox, packed] = await Promise.all([
      startTestSandbox({ products: 300 }),
      packedProject('catalog-streams-orchestrators-'),
    ]);
    project = packed.project;
    dir = await mkdtemp(join(tmpdir(), 'orchestrators-'));
    for (const [rel, text] of Object.entries({ ...STUBS, 'driver.py': DRIVER })) {
      await mkdir(join(dir, 'stubs', rel, '..'), { recursive: true });
      await writeFile(join(dir, 'stubs', rel), text);
    }
    await writeFile(join(dir, 'fake-catalog-streams'), FAKE_CLI);
    await chmod(join(dir, 'fake-catalog-streams'), 0o755);
  }, 180_000);
  afterAll(async () => {
    await Promise.all([sandbox?.close(), packed?.remove(), dir && rm(dir, { recursive: true, force: true })]);
  });

  // Asynchronous: the sandbox answers from this process, which must not block while the CLI runs.
  // Run from the project folder (as `dagster dev` is); Airflow's task is told the folder (its default
  // is /opt/catalog-streams), nothing else: the bin and the pipeline are the examples' defaults.
  const run = async (
    kind: 'airflow' | 'dagster',
    env: NodeJS.ProcessEnv,
  ): Promise<{ outcome: string; value?: unknown; message?: string; outlets?: string[]; log: string }> => {
    const example = kind === 'airflow' ? EXAMPLES[0]! : EXAMPLES[1]!;
    const child = spawn('python3', [join(dir, 'stubs/driver.py'), join(REPO, example), kind], {
      cwd: project,
      env: {
        ...sandboxEnv(sandbox),
        PATH: shellPath(),
        PYTHONPATH: join(dir, 'stubs'),
        PYTHONPYCACHEPREFIX: join(dir, 'pycache'),
        ...(kind === 'airflow' ? { CATALOG_STREAMS_PROJECT: project } : {}),
        CATALOG_STREAMS_METRICS_FILE: join(project, `${kind}.prom`),
        ...env,
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(status, stderr).toBe(0);
    return { ...JSON.parse(stdout.trim().split('\n').at(-1)!), log: stderr };
  };

  it.each(['airflow', 'dagster'] as const)(
    '%s: a run succeeds with its summary, a bad file fails at once, a refused credential is not retried',
    async (kind) => {
      const ok = await run(kind, {});
      expect(ok.outcome, ok.message).toBe('success');
      // The CLI's JSON lines reached the task's (step's) log one by one, the summary among them.
      const logged = kind === 'airflow' ? '[task log] ' : '[step log] ';
      expect(ok.log).toMatch(new RegExp(`^${escapeRegExp(logged)}\\{"time":[^\\n]*"event":"summary"`, 'm'));
      // The shipped pipeline wrote under the project folder; Airflow names that folder as its Dataset.
      expect((await listFiles(join(project, 'out/products-nightly'))).length).toBeGreaterThan(0);
      if (kind === 'airflow') expect(ok.outlets).toEqual([`file://${join(project, 'out/products-nightly')}`]);
      // The metrics file the example asks for is written, for the last run: a success.
      expect(await readFile(join(project, `${kind}.prom`), 'utf8')).toMatch(
        /^catalog_streams_exit_code\{pipeline="products-nightly"\} 0$/m,
      );
      if (kind === 'airflow')
        expect(ok.value).toMatchObject({ 'products-nightly': { records_read: expect.any(Number), throttles: 0 } });
      else expect(ok.value).toMatchObject({ records_read: expect.any(Number), throttles_429: 0, invalid: 0 });
      const read =
        kind === 'airflow' ? (ok.value as any)['products-nightly'].records_read : (ok.value as any).records_read;
      expect(read).toBeGreaterThan(0);

      const bad = await run(kind, { CATALOG_STREAMS_PIPELINE: join(project, 'pipelines/no-such-file.yml') });
      expect(bad).toMatchObject({ outcome: 'fail', message: expect.stringContaining('exit 2') });

      const refused = await run(kind, { CATALOG_API_SECRET: 'not-the-secret' });
      expect(refused).toMatchObject({ outcome: 'fail', message: expect.stringContaining('auth.unauthorized') });
    },
  );

  it.each(['airflow', 'dagster'] as const)('%s: retries a transient error and a signal exit', async (kind) => {
    const summary = (remedy: string) =>
      JSON.stringify({
        exitCode: 1,
        pipelines: [
          { pipeline: 'products-nightly', status: 'failed', error: { code: 'state.locked', message: 'held', remedy } },
        ],
      });
    const fake = { CATALOG_STREAMS_BIN: join(dir, 'fake-catalog-streams') };
    expect(await run(kind, { ...fake, FAKE_EXIT: '1', FAKE_SUMMARY: summary('retry') })).toMatchObject({
      outcome: 'retry',
      message: expect.stringContaining('state.locked: held'),
    });
    expect((await run(kind, { ...fake, FAKE_EXIT: '1', FAKE_SUMMARY: summary('fix') })).outcome).toBe('fail');
    expect(await run(kind, { ...fake, FAKE_EXIT: '143', FAKE_SUMMARY: '{}' })).toMatchObject({
      outcome: 'retry',
      message: expect.stringContaining('143'),
    });
  });
});
