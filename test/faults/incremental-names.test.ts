// Fault matrix, issue 15 item 5: an incremental pipeline (`state:`) writes only the changes since its
// last run, so an output name without {run} would replace the earlier nights' data with tonight's few
// changes. The loader refuses such a file (exit 2, nothing requested) and names the sink's path.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { leftBehind, pipelineWorkspace, runCli, sandboxEnv, type PipelineWorkspace } from './support.js';

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
    sandbox.resetStats();
  });

  const yaml = (sinkPath: string, deadLetter = '') =>
    `name: nightly\nsource: { type: products.query, filter: { status: active } }\n${deadLetter}sinks:\n  - { type: jsonl, path: "${sinkPath}" }\nstate: { path: .state/nightly.json }\n`;

  it.each(['out/products.jsonl', 'out/products-{date}.jsonl'])('run refuses path "%s" (exit 2, no request, no file)', async (sinkPath) => {
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
  });

  it('validate reports it too', async () => {
    ws = await pipelineWorkspace('nightly', yaml('out/products.jsonl'));
    const result = await runCli(['validate', ws.file], { cwd: ws.dir, env: sandboxEnv(sandbox) });
    expect(result.code).toBe(2);
    expect(result.stderr + result.stdout).toContain('sinks[0].path');
  });

  it('a dead-letter sink without {run} is refused as well', async () => {
    const dl = 'transforms:\n  - { type: validate, onInvalid: dead-letter, deadLetter: { type: jsonl, path: "out/rejects.jsonl" } }\n';
    ws = await pipelineWorkspace('nightly', yaml('out/products-{run}.jsonl', dl));
    const result = await runCli(['run', ws.file], { cwd: ws.dir, env: sandboxEnv(sandbox) });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('transforms[0].deadLetter.path');
  });

  it('with {run} in the path the run succeeds and adds a file per run', async () => {
    ws = await pipelineWorkspace('nightly', yaml('out/products-{run}.jsonl'));
    const first = await runCli(['run', ws.file], { cwd: ws.dir, env: sandboxEnv(sandbox) });
    expect(first.code, first.stderr).toBe(0);
    const second = await runCli(['run', ws.file], { cwd: ws.dir, env: sandboxEnv(sandbox) });
    expect(second.code, second.stderr).toBe(0);
    const files = (await leftBehind(ws.dir)).final.filter((f) => f.includes('products-'));
    expect(files).toHaveLength(2);
  });
});
