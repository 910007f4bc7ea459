// Progress totals and the ETA come from the source plan (every createdAt slice
// of an extract past the 10000 cap), not from the slice the source is in: on a
// paced run against the sandbox the total never changes, the percentage only
// grows, and the ETA given at 50 % is within 25 % of the time the run then
// really took to finish.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, jsonLines, runCli, workspace } from './cli-process.js';

describe('progress of a paced, sliced extract', () => {
  let ws: Awaited<ReturnType<typeof workspace>>;
  beforeAll(async () => {
    ws = await workspace();
  });
  afterAll(() => ws?.remove());

  it('totals from the plan, a percentage that only grows, an ETA at 50 % within 25 % of the time left', async () => {
    await writeFile(
      join(ws.dir, 'paced.yml'),
      'name: paced\nsource: { type: products.query, filter: { status: [active, replaced, inactive] }, pageSize: 250 }\nsinks: [{ type: jsonl, path: out/paced.jsonl }]\n',
    );
    // 12,000 products: past the 10000 cap, so the extract walks several createdAt slices; 300 requests/min
    // paces ~55 requests over ~11 s: 200 ms a request leaves room for the work of a page on a loaded
    // machine, so the run's pace is the budget's and the ETA can be held to it.
    const { code, stderr } = await runCli(
      [
        'run',
        'paced.yml',
        '--sandbox',
        '--sandbox-products',
        '12000',
        '--sandbox-rate-limit',
        '300',
        '--progress-interval',
        '0.25',
        '--log-format',
        'json',
      ],
      { cwd: ws.dir, env: cleanEnv() },
    );
    expect(code, stderr).toBe(0);
    const lines = jsonLines(stderr);
    const summary = lines.find((l) => l.event === 'summary')!;
    const progress = lines.filter((l) => l.event === 'progress' && l.total !== undefined);
    expect(progress.length, stderr).toBeGreaterThan(10);
    // One total, from the plan: every slice, equal to what the run read.
    expect(new Set(progress.map((l) => l.total))).toEqual(new Set([summary.records.read]));
    expect(progress.every((l) => l.pipeline === 'paced' && l.totalCapped === false)).toBe(true);
    const percents = progress.map((l) => l.percent as number);
    expect(percents).toEqual([...percents].sort((a, b) => a - b));

    const half = progress.find((l) => l.percent >= 50)!;
    expect(half.etaSeconds).toBeGreaterThan(0);
    const left = (Date.parse(summary.finishedAt) - Date.parse(half.time)) / 1000;
    expect(
      Math.abs(half.etaSeconds - left),
      `ETA ${half.etaSeconds} s at ${half.percent} %, finished ${left} s later`,
    ).toBeLessThanOrEqual(0.25 * left);
  });
});
