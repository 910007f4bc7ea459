// Fault matrix, leftovers and destinations: temp files of killed runs are removed by a later
// run of the same dataset (never a live run's, never another dataset's); a destination that
// cannot be written is found before the first request, also by --dry-run.
import { createHash } from 'node:crypto';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { RunFailedError, runPipeline } from '../../src/pipeline/runner.js';
import { outputFormats } from '../../src/sinks/index.js';
import { expectExactIds, parquetIds, runCli, runPath, sandboxEnv, sandboxFixture } from './support.js';

describe('leftovers and destinations', () => {
  const f = sandboxFixture({ products: 400, seed: 13 });

  const yaml = `name: leftovers
source: { type: products.query, filter: { status: [active, inactive, replaced] } }
sinks:
  - { type: parquet, path: "out/products-{run}.parquet" }
state: { path: .state/leftovers.json }
`;
  // A full extract (no state) may write a fixed name; an incremental one needs {run} in it.
  const fixedName = yaml.replace('out/products-{run}.parquet', 'out/products.parquet').replace(/^state:.*\n/m, '');

  async function run(text = yaml) {
    const registry = createRegistry();
    const file = await f.ws.write('p.yml', text);
    const [loaded] = parsePipelines(text, registry, { env: {}, file });
    const connection = { baseUrl: f.sandbox.url, ...f.sandbox.credentials, rateLimit: Infinity };
    try {
      return { ok: true as const, summary: await runPipeline(loaded!, { registry, connection, env: {} }) };
    } catch (err) {
      if (!(err instanceof RunFailedError)) throw err;
      return { ok: false as const, error: err };
    }
  }

  it('item 13: a run removes the temp files killed runs of its dataset left, and only those', async () => {
    const host = createHash('sha256').update(hostname()).digest('hex').slice(0, 6);
    const dead = 2 ** 22 + 11; // above the kernel's default pid_max: no such process
    // Temp files of earlier runs (other run ids) of this dataset, and of another dataset.
    const killed = `.products-20260101T010203Z-0a1b2c.parquet.${host}-${dead}-0badc0de.tmp`;
    const live = `.products-20260101T010204Z-3d4e5f.parquet.${host}-${process.pid}-00c0ffee.tmp`;
    const otherDataset = `.customers-20260101T010203Z-0a1b2c.parquet.${host}-${dead}-0badf00d.tmp`;
    for (const name of [killed, live, otherDataset])
      await f.ws.write(`out/${name}`, 'PAR1 partial bytes of a killed run');
    const result = await run();
    expect(result.ok).toBe(true);
    const runId = result.ok ? result.summary.runId : '';
    expect((await readdir(f.ws.path('out'))).sort()).toEqual([otherDataset, live, `products-${runId}.parquet`].sort());
    expectExactIds(await parquetIds(f.ws.path(runPath('out/products-{run}.parquet', runId))), f.expected);
  });

  it('item 14: a state folder that cannot be written is found before the first request', async () => {
    // Tests may run as root, which ignores permission bits: `.state` is a file, so no state can be written under it.
    await f.ws.write('.state', 'not a folder');
    const result = await run();
    expect(result.ok).toBe(false);
    const error = result.ok ? undefined : result.error;
    expect(error?.code).toBe('preflight.state');
    expect(error?.message).toContain('state.path ".state/leftovers.json"');
    expect(error?.summary.requests).toBe(0);
    expect(f.sandbox.stats.requests).toBe(0);
  });

  it('item 14: an output path that is a folder is found before the first request, also by --dry-run', async () => {
    await mkdir(f.ws.path('out/products.parquet'), { recursive: true });
    await writeFile(f.ws.path('out/products.parquet/keep.txt'), 'a folder in the way');
    const result = await run(fixedName);
    expect(result.ok).toBe(false);
    const error = result.ok ? undefined : result.error;
    expect(error?.code).toBe('preflight.output');
    expect(error?.message).toContain('sinks[0].path "out/products.parquet"');
    expect(error?.summary.requests).toBe(0);
    expect(f.sandbox.stats.requests).toBe(0);

    const dry = await runCli(['run', 'p.yml', '--dry-run'], { cwd: f.ws.dir, env: sandboxEnv(f.sandbox) });
    expect(dry.code, dry.stderr).toBe(1);
    expect(dry.stderr).toContain('is a folder');
    expect(f.sandbox.stats.requests).toBe(0);
  });

  it.each(outputFormats.map((format) => format.name))(
    'item 14: every local-file format (%s) has its output path checked before the first request',
    async (type) => {
      await mkdir(f.ws.path(`out/products.${type}`), { recursive: true });
      const text = fixedName.replace(
        '{ type: parquet, path: "out/products.parquet" }',
        `{ type: ${type}, path: "out/products.${type}" }`,
      );
      const result = await run(text);
      expect(result.ok).toBe(false);
      const error = result.ok ? undefined : result.error;
      expect(error?.code).toBe('preflight.output');
      expect(error?.message).toContain(`sinks[0].path "out/products.${type}"`);
      expect(f.sandbox.stats.requests).toBe(0);
    },
  );
});
