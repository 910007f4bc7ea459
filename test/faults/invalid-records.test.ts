// Fault matrix: schema-invalid records served by the API (the sandbox breaks
// the same records every time: a 14-digit eanGtin13 or an unknown status).
// At 0.1 % they are dead-lettered and the run succeeds: the Parquet output
// holds every other id once, the dead-letter file exactly the broken ones. At
// 20 % the run fails past `maxInvalid: "1%"`: exit 1, the data output is not
// published, the cursor is unchanged, and the dead letters (all of them: a
// percentage is checked at the end) stay for inspection. Through the built CLI.
import { describe, expect, it } from 'vitest';
import { FaultInjector } from '../../src/sandbox/faults.js';
import { PRODUCT_STATUSES } from '../../src/sandbox/index.js';
import {
  expectExactIds,
  faultFixture,
  jsonLines,
  jsonlIds,
  jsonlLines,
  leftBehind,
  parquetIds,
  runCli,
  runPath,
  sandboxEnv,
  summaryRunId,
} from './support.js';

const SEED = 1;
const PIPELINE = `name: checked
source:
  type: products.query
  filter: { status: [active, inactive, replaced] }
transforms:
  - type: validate
    onInvalid: dead-letter
    deadLetter: { type: jsonl, path: "out/rejected-{run}.jsonl" }
    maxInvalid: "1%"
  - { type: normalize-codes }
sinks:
  - { type: parquet, path: "out/products-{run}.parquet" }
state: { path: .state/checked.json }
`;
const f = faultFixture('checked', PIPELINE, { products: 3000, seed: SEED });

/** The selected products' ids, split by whether the sandbox serves them broken at `rate`. */
function split(rate: number): { valid: string[]; invalid: string[] } {
  const faults = new FaultInjector(SEED, { invalidRecordRate: rate });
  const ds = f.sandbox.dataset;
  const out = { valid: [] as string[], invalid: [] as string[] };
  for (let i = 0; i < ds.productCount; i++) {
    if (ds.status[i] === PRODUCT_STATUSES.indexOf('no_selection')) continue;
    (faults.isInvalid('product', i) ? out.invalid : out.valid).push(ds.productId(i));
  }
  return out;
}

async function run(rate: number) {
  f.sandbox.setFaults({ invalidRecordRate: rate });
  const result = await runCli(['run', f.ws.file], { cwd: f.ws.dir, env: sandboxEnv(f.sandbox) });
  return { ...result, lines: jsonLines(result.stderr) };
}

describe('invalid records', () => {
  it('0.1 %: dead-lettered with their issues, the run succeeds, every other id written once', async () => {
    const { valid, invalid } = split(0.001);
    expect(invalid.length).toBeGreaterThan(1);
    const result = await run(0.001);
    expect(result.code, result.stderr).toBe(0);
    const runId = summaryRunId(result.stderr);
    expectExactIds(await parquetIds(f.ws.path(runPath('out/products-{run}.parquet', runId))), valid);
    const letters = await jsonlLines(f.ws.path(runPath('out/rejected-{run}.jsonl', runId)));
    expectExactIds(await jsonlIds(f.ws.path(runPath('out/rejected-{run}.jsonl', runId)), (l) => l.record.id), invalid);
    for (const letter of letters) {
      expect(letter.issues.length).toBeGreaterThan(0);
      expect(['eanGtin13', 'status']).toContain(letter.issues[0].path);
      expect(letter.origin).toMatchObject({ endpoint: 'products.query' });
    }
    expect(result.lines.find((l) => l.event === 'summary')).toMatchObject({
      status: 'succeeded',
      records: {
        read: valid.length + invalid.length,
        invalid: invalid.length,
        deadLettered: invalid.length,
        written: { parquet: valid.length },
      },
    });
    expect(await leftBehind(f.ws.path('out'))).toEqual({
      final: [`products-${runId}.parquet`, `rejected-${runId}.jsonl`],
      temp: [],
    });
    expect((await f.ws.readState()).cursor).toBeGreaterThan(1);
  });

  it('20 %: past maxInvalid "1%" the run fails, exit 1; no data output, cursor unchanged; the dead letters are kept for inspection', async () => {
    const { invalid } = split(0.2);
    const result = await run(0.2);
    expect(result.code, result.stderr).toBe(1);
    const runId = summaryRunId(result.stderr);
    const failed = result.lines.find((l) => l.event === 'failed');
    expect(failed, result.stderr).toMatchObject({
      level: 'error',
      code: 'data.max_invalid',
      message: expect.stringMatching(
        new RegExp(
          `${invalid.length} invalid records of \\d+ \\([\\d.]+%\\) exceed maxInvalid 1%; the rejected records are in .*rejected-${runId}\\.jsonl`,
        ),
      ),
    });
    expect(result.lines.find((l) => l.event === 'summary')).toMatchObject({
      status: 'failed',
      records: { invalid: invalid.length },
    });
    // By design (src/transforms/dead-letter.ts) the dead letters are committed before the threshold
    // fails the run, so that the error can point at them; a percentage is checked at the end of the
    // input, so they are every invalid record, not a part. The data output is not published.
    expect(await leftBehind(f.ws.path('out'))).toEqual({ final: [`rejected-${runId}.jsonl`], temp: [] });
    expectExactIds(await jsonlIds(f.ws.path(runPath('out/rejected-{run}.jsonl', runId)), (l) => l.record.id), invalid);
    expect(await f.ws.read('.state/checked.json')).toBe(f.ws.state);
  });
});
