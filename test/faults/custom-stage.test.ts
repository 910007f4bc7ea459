// Fault matrix: user code in a `custom` stage (issue 15, item 8). A map that
// returns nothing (a forgotten `return`) must not drop every record and exit 0:
// it fails naming the module, the export and the record. A promise that never
// settles must not let the event loop empty and the process exit 0 with
// nothing committed: the stage's per-record `timeout`, and the run's
// `stallTimeout` watchdog behind it, fail the run with exit 1, a summary, no
// temp file and the cursor unchanged. Through the built CLI.
import { describe, expect, it } from 'vitest';
import {
  expectExactIds,
  faultFixture,
  jsonLines,
  leftBehind,
  parquetIds,
  runCli,
  runPath,
  sandboxEnv,
  summaryRunId,
} from './support.js';

const MODULE = `export const forgetsReturn = (record) => { record.seen = true; };
export const filterForgetsReturn = (record) => { record.photos?.length > 0; };
export const oddOnly = (record) => (Number(record.id.slice(1)) % 2 === 1 ? record : null);
export const hangs = () => new Promise(() => {});
`;

function pipeline(stage: string, extra = ''): string {
  return `name: custom
source:
  type: products.query
  filter: { status: [active, inactive, replaced] }
  pageSize: 100
transforms:
  - ${stage}
sinks:
  - { type: parquet, path: "out/products-{run}.parquet" }
state: { path: .state/custom.json }
${extra}`;
}

const f = faultFixture('custom', pipeline('{ type: custom, module: ./user.mjs }'), { products: 1200, seed: 5 });

async function run(yaml: string) {
  await f.ws.write('user.mjs', MODULE);
  await f.ws.write('custom.yml', yaml);
  const result = await runCli(['run', f.ws.file], { cwd: f.ws.dir, env: sandboxEnv(f.sandbox) });
  return { ...result, lines: jsonLines(result.stderr) };
}

/** A failed run: exit 1, the failure and a failed summary logged, nothing published, no temp file, the cursor unchanged. */
async function expectFailed(result: Awaited<ReturnType<typeof run>>, code: string) {
  expect(result.code, result.stderr).toBe(1);
  const failed = result.lines.find((l) => l.event === 'failed');
  expect(failed, result.stderr).toMatchObject({ level: 'error', code });
  expect(
    result.lines.find((l) => l.event === 'summary'),
    result.stderr,
  ).toMatchObject({ status: 'failed', outputs: [], cursor: { previous: 1, stored: false } });
  expect(await leftBehind(f.ws.path('out'))).toEqual({ final: [], temp: [] });
  expect(await f.ws.read('.state/custom.json')).toBe(f.ws.state);
  return failed!;
}

describe('custom stage contract', () => {
  it.each([
    ['map', 'forgetsReturn'],
    ['filter', 'filterForgetsReturn'],
  ])('a %s that returns undefined fails naming module, export and record; exit 1', async (kind, name) => {
    const result = await run(pipeline(`{ type: custom, module: ./user.mjs, export: ${name}, kind: ${kind} }`));
    const failed = await expectFailed(result, 'data.custom_contract');
    expect(failed.message).toContain(`module "./user.mjs" export "${name}"`);
    expect(failed.message).toContain(`returned undefined for record "${f.expected[0]}"`);
    expect(failed.message).toMatch(/(null|false) to drop/);
  });

  it('a map returning null drops exactly those records; exit 0', async () => {
    const result = await run(
      pipeline('{ type: custom, module: ./user.mjs, export: oddOnly, columns: {}, inputColumns: keep }'),
    );
    expect(result.code, result.stderr).toBe(0);
    const odd = f.expected.filter((id) => Number(id.slice(1)) % 2 === 1);
    expectExactIds(
      await parquetIds(f.ws.path(runPath('out/products-{run}.parquet', summaryRunId(result.stderr)))),
      odd,
    );
    expect(result.lines.find((l) => l.event === 'summary')).toMatchObject({
      status: 'succeeded',
      records: { read: f.expected.length, dropped: f.expected.length - odd.length },
    });
  });

  it('a promise that never settles: the stage timeout fails the run; exit 1 with a summary', async () => {
    const result = await run(pipeline('{ type: custom, module: ./user.mjs, export: hangs, timeout: 300ms }'));
    const failed = await expectFailed(result, 'data.custom_timeout');
    expect(failed.message).toContain(`module "./user.mjs" export "hangs"`);
    expect(failed.message).toContain(`record "${f.expected[0]}"`);
  });

  it('a chain that stops making progress: the run watchdog (stallTimeout) fails it; exit 1 with a summary', async () => {
    const result = await run(
      pipeline('{ type: custom, module: ./user.mjs, export: hangs, timeout: 1h }', 'stallTimeout: 700ms\n'),
    );
    const failed = await expectFailed(result, 'run.stalled');
    expect(failed.message).toContain('no progress for 0.7 s');
  });
});
