// Kill at every step (issue 23); what is checked is said at the top of kill-every-step.test.ts, the
// machinery is kill-every-step-support.ts. Steps 18 to the last of the Iceberg layout (the first range
// is kill-every-step-iceberg.test.ts): a good run first, then a kill before each step in turn.
import { describe, expect, it } from 'vitest';
import { icebergKills, useKillFixtures } from './kill-every-step-support.js';

useKillFixtures({ s3: false });

describe('kill -9 at every late storage step of an Iceberg table, then a good run', () => {
  it('table sink, format: iceberg, local folder: steps 18 to the last', { timeout: 600_000 }, async () => {
    const { killed, seen } = await icebergKills(18);
    // With the first range's 17: at least 10 kills in all, as before the cut.
    expect(killed).toBeGreaterThanOrEqual(1);
    // The kills between the two tables' commits (before current/'s metadata file and before its
    // version hint, each also before the journal write naming it) left changes/ ahead at least
    // four times, and the next good run repaired it each time. At least: a run writes the files
    // of current/ its changes touch (copy-on-write per file), so its steps, and how many kills
    // land between the commits, vary with the products touched before it (5 when written).
    expect(seen.ahead).toBeGreaterThanOrEqual(4);
    expect(seen.repaired).toBe(seen.ahead);
  });
});
