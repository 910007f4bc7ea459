// Fault matrix, issue 15 item 5: an incremental pipeline (`state:`) writes only the changes since its
// last run, so an output name without {run} would replace the earlier nights' data with tonight's few
// changes. The loader (and runPipeline, for a pipeline built in code) refuses such a file (exit 2,
// nothing requested) and names the sink's path; shapes that replace nothing are accepted.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError } from '../../src/errors.js';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { Redactor } from '../../src/pipeline/env.js';
import { runPipeline, type RunnablePipeline } from '../../src/pipeline/runner.js';
import { defineStage, type SinkStream } from '../../src/core/stage.js';
import { outputFormats } from '../../src/sinks/index.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import {
  jsonLines,
  jsonlIds,
  leftBehind,
  pipelineWorkspace,
  runCli,
  runPath,
  sandboxEnv,
  summaryRunId,
  type PipelineWorkspace,
} from './support.js';

describe('incremental pipeline with a fixed output name', { timeout: 60_000 }, () => {
  let sandbox: TestSandbox;
  let ws: PipelineWorkspace | undefined;
  beforeAll(async () => {
    sandbox = await startTestSandbox({ products: 200, seed: 5 });
  });
  afterAll(async () => {
    await sandbox?.close();
  });
  beforeEach(async () => {
    await ws?.remove();
    sandbox.setFaults({});
    sandbox.resetStats();
  });

  const yaml = (sinkPath: string, deadLetter = '') =>
    `name: nightly\nsource: { type: products.query, filter: { status: active } }\n${deadLetter}sinks:\n  - { type: jsonl, path: "${sinkPath}" }\nstate: { path: .state/nightly.json }\n`;
  const s3Yaml = (key: string, extra = '') =>
    `name: nightly\nsource: { type: products.query, filter: { status: active } }\nsinks:\n  - { type: s3, format: parquet, bucket: lake, key: "${key}"${extra} }\nstate: { path: .state/nightly.json }\n`;

  it.each(['out/products.jsonl', 'out/products-{date}.jsonl'])(
    'run refuses path "%s" (exit 2, no request, no file)',
    async (sinkPath) => {
      ws = await pipelineWorkspace('nightly', yaml(sinkPath));
      const before = sandbox.stats.requests;
      const result = await runCli(['run', ws.file], { cwd: ws.dir, env: sandboxEnv(sandbox) });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('nightly.yml');
      expect(result.stderr).toContain('sinks[0].path');
      expect(result.stderr).toContain('{run}');
      expect(result.stderr).toContain(sinkPath.replace('.jsonl', '-{run}.jsonl'));
      expect(sandbox.stats.requests).toBe(before);
      expect((await leftBehind(ws.dir)).final.filter((f) => f.startsWith('out/'))).toEqual([]);
      expect(await ws.read('.state/nightly.json')).toBe(ws.state);
    },
  );

  it('validate reports it too, with its code', async () => {
    ws = await pipelineWorkspace('nightly', yaml('out/products.jsonl'));
    const result = await runCli(['validate', ws.file], { cwd: ws.dir, env: sandboxEnv(sandbox) });
    expect(result.code).toBe(2);
    expect(result.stderr + result.stdout).toContain('sinks[0].path');
    expect(jsonLines(result.stderr).find((l) => l.level === 'error')).toMatchObject({
      code: 'config.state_fixed_output',
    });
  });

  it('a dead-letter sink without {run} is refused as well', async () => {
    const dl =
      'transforms:\n  - { type: validate, onInvalid: dead-letter, deadLetter: { type: jsonl, path: "out/rejects.jsonl" } }\n';
    ws = await pipelineWorkspace('nightly', yaml('out/products-{run}.jsonl', dl));
    const result = await runCli(['run', ws.file], { cwd: ws.dir, env: sandboxEnv(sandbox) });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('transforms[0].deadLetter.path');
    expect(sandbox.stats.requests).toBe(0);
  });

  it.each([
    // Without {run} the S3 sink adds -<run id> to its keys, but removes the earlier runs' objects once published.
    ['catalog/nightly/dt={date}/part-{part}.parquet', '', 'key', 'remove the objects the earlier runs wrote'],
    // {run} only in the file name: every run writes (and replaces) the same dt=<date>/_manifest.json.
    [
      'catalog/nightly/dt={date}/part-{part}-{run}.parquet',
      '',
      'key',
      'catalog/nightly/dt={date}/run={run}/part-{part}.parquet',
    ],
    [
      'catalog/nightly/run={run}/part-{part}.parquet',
      ', manifestKey: "catalog/nightly/_manifest.json"',
      'manifestKey',
      'catalog/nightly/_manifest-{run}.json',
    ],
  ])('an S3 key "%s"%s is refused (the %s), naming the fix', async (key, extra, field, hint) => {
    ws = await pipelineWorkspace('nightly', s3Yaml(key, extra));
    const result = await runCli(['validate', ws.file, '--log-format', 'pretty'], {
      cwd: ws.dir,
      env: sandboxEnv(sandbox),
    });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(`sinks[0].${field}`);
    expect(result.stderr).toContain(hint);
  });

  it.each([
    ['an S3 key with a folder per run', s3Yaml('catalog/nightly/dt={date}/run={run}/part-{part}.parquet')],
    [
      'an S3 key with {run} in the name and no manifest',
      s3Yaml('catalog/nightly/dt={date}/part-{part}-{run}.parquet', ', manifest: false'),
    ],
    ['stdout', yaml('-')],
    [
      'a default dead-letter sink (it gets {run})',
      yaml('out/products-{run}.jsonl', 'transforms:\n  - { type: validate, onInvalid: dead-letter }\n'),
    ],
  ])('accepted: %s', async (_what, text) => {
    ws = await pipelineWorkspace('nightly', text);
    const result = await runCli(['validate', ws.file], { cwd: ws.dir, env: sandboxEnv(sandbox) });
    expect(result.code, result.stderr).toBe(0);
  });

  it('every local-file format (csv included) with a fixed path is refused: the check follows the registry', () => {
    const registry = createRegistry();
    const local = registry.types('sink').filter((type) => registry.get(type)?.replacesAt === 'path');
    expect(local.sort()).toEqual(outputFormats.map((f) => f.name).sort());
    for (const type of local) {
      const text = yaml('out/products.data').replace('type: jsonl', `type: ${type}`);
      expect(() => parsePipelines(text, registry, { file: 'p.yml' }), type).toThrow(ConfigError);
      expect(() => parsePipelines(text, registry, { file: 'p.yml' }), type).toThrow(/sinks\[0\]\.path.*\{run\}/s);
      const accepted = yaml('out/products-{run}.data').replace('type: jsonl', `type: ${type}`);
      expect(parsePipelines(accepted, registry, { file: 'p.yml' })).toHaveLength(1);
    }
  });

  it('a sink type that is not jsonl, parquet or s3 decides for itself (a registered sink with a fixed path is accepted)', () => {
    const registry = createRegistry().register(
      defineStage({
        kind: 'sink',
        type: 'merge-table',
        description: 'merges each run into one table',
        options: z.strictObject({ path: z.string() }),
        create: () =>
          Object.assign(new Writable({ objectMode: true, write: (_r, _e, cb) => cb() }), { outputs: [] }) as SinkStream,
      }),
    );
    const [loaded] = parsePipelines(yaml('out/products.jsonl').replace('type: jsonl', 'type: merge-table'), registry, {
      file: 'p.yml',
    });
    expect(loaded!.config.state?.path).toBe('.state/nightly.json');
  });

  it('with {run} in the path the run succeeds and adds a file per run', async () => {
    ws = await pipelineWorkspace('nightly', yaml('out/products-{run}.jsonl'));
    const first = await runCli(['run', ws.file], { cwd: ws.dir, env: sandboxEnv(sandbox) });
    expect(first.code, first.stderr).toBe(0);
    const second = await runCli(['run', ws.file], { cwd: ws.dir, env: sandboxEnv(sandbox) });
    expect(second.code, second.stderr).toBe(0);
    const files = (await leftBehind(ws.dir)).final.filter((f) => f.includes('products-'));
    expect(files).toEqual(
      [
        runPath('out/products-{run}.jsonl', summaryRunId(first.stderr)),
        runPath('out/products-{run}.jsonl', summaryRunId(second.stderr)),
      ].sort(),
    );
  });

  it("the default dead-letter path of an incremental validate carries {run}: two runs keep both runs' rejects", async () => {
    ws = await pipelineWorkspace(
      'nightly',
      yaml(
        'out/products-{run}.jsonl',
        'transforms:\n  - { type: validate, onInvalid: dead-letter, maxInvalid: none }\n',
      ),
    );
    sandbox.setFaults({ invalidRecordRate: 0.05 });
    const first = await runCli(['run', ws.file, '--full-refresh'], { cwd: ws.dir, env: sandboxEnv(sandbox) });
    expect(first.code, first.stderr).toBe(0);
    const second = await runCli(['run', ws.file, '--full-refresh'], { cwd: ws.dir, env: sandboxEnv(sandbox) });
    expect(second.code, second.stderr).toBe(0);
    const runs = [summaryRunId(first.stderr), summaryRunId(second.stderr)];
    const rejects = runs.map((id) => runPath('out/nightly-rejected-{run}.jsonl', id));
    expect((await leftBehind(ws.dir)).final.filter((f) => f.includes('rejected'))).toEqual([...rejects].sort());
    const summary = jsonLines(first.stderr).find((l) => l.event === 'summary')!;
    expect(summary.records.deadLettered).toBeGreaterThan(0);
    // The same invalid records (the fault is seeded per product) in each run's own file.
    const [a, b] = await Promise.all(rejects.map((f) => jsonlIds(ws!.path(f), (l) => l.record.id)));
    expect(a).toHaveLength(summary.records.deadLettered);
    expect(b).toEqual(a);
  });

  it('runPipeline (a pipeline built in code) refuses the same shape before any request', async () => {
    const loaded: RunnablePipeline = {
      file: '<code>',
      baseDir: process.cwd(),
      config: {
        name: 'nightly',
        source: { type: 'products.query', filter: { status: 'active' } },
        transforms: [],
        sinks: [{ type: 'jsonl', path: 'out/never-written.jsonl' }],
        state: { path: '.state/never-written.json', overlapSeconds: 300 },
      } as RunnablePipeline['config'],
      variables: [],
      redactor: new Redactor(),
    };
    const error = await runPipeline(loaded, {
      registry: createRegistry(),
      connection: { baseUrl: sandbox.url, ...sandbox.credentials, rateLimit: Infinity },
    }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({
      code: 'config.state_fixed_output',
      exitCode: 2,
      message: expect.stringContaining('sinks[0].path'),
    });
    expect(sandbox.stats.requests).toBe(0);
  });
});
