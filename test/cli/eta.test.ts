// Progress totals and the ETA come from the source plan (every createdAt slice
// of an extract past the 10000 cap), not from the slice the source is in: on a
// paced run against the sandbox the total never changes, the percentage only
// grows, and the ETA given at 50 % counts the requests the plan says are left
// at the slower of the budget's pace and the pace seen so far. Those are
// figures of the run's own clock at that moment; how close the ETA then comes
// to the time the run really took depends on the machine's load from there on,
// so it is not asserted (progress.test.ts checks the arithmetic on a fixed clock).
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

  it('totals from the plan, a percentage that only grows, an ETA at 50 % from the planned requests left', async () => {
    await writeFile(
      join(ws.dir, 'paced.yml'),
      'name: paced\nsource: { type: products.query, filter: { status: [active, replaced, inactive] }, pageSize: 250 }\nsinks: [{ type: jsonl, path: out/paced.jsonl }]\n',
    );
    // 12,000 products: past the 10000 cap, so the extract walks several createdAt slices; 300 requests/min
    // paces ~50 requests over ~11 s.
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
    // The plan counted the pages the run then read; the run adds a few (each lane ends on a page that is
    // not full, createdat-query.ts), so "requests left" is right within 10 %.
    expect(half.plannedRequests).toBeLessThanOrEqual(summary.requests);
    expect(half.plannedRequests).toBeGreaterThanOrEqual(Math.floor(summary.requests / 1.1));
    const left = half.plannedRequests - half.requests;
    expect(left).toBeGreaterThan(0);
    const budgetPace = 60 / 300;
    const seenPace = (Date.parse(half.time) - Date.parse(summary.startedAt)) / 1000 / half.requests;
    const expected = left * Math.max(budgetPace, seenPace);
    // Never faster than the budget allows; the rest of the tolerance covers the ETA's rounding to 0.1 s
    // and the few ms between the run's start and its stats' start, and between the ETA and its log line.
    expect(half.etaSeconds).toBeGreaterThanOrEqual(left * budgetPace - 0.05);
    expect(
      Math.abs(half.etaSeconds - expected),
      `ETA ${half.etaSeconds} s at ${half.percent} %, ${left} requests left at ${Math.max(budgetPace, seenPace)} s each`,
    ).toBeLessThanOrEqual(0.05 * expected + 0.05);
  });
});
