// Kill at every step (issue 23); what is checked is said at the top of kill-every-step.test.ts, the
// machinery is kill-every-step-support.ts. The Iceberg layout's steps are cut in two ranges, one per file,
// so the suite's two workers run them side by side: this file kills before steps 1 to 17 (the
// first on the table's first run), kill-every-step-iceberg-late.test.ts before 18 to the last.
import { describe, expect, it } from 'vitest';
import { icebergKills, useKillFixtures } from './kill-every-step-support.js';

useKillFixtures({ s3: false });

describe('kill -9 at every storage step of an Iceberg table, then a good run', () => {
  it('table sink, format: iceberg, local folder: steps 1 to 17', { timeout: 600_000 }, async () => {
    const { killed, seen } = await icebergKills(1, 17);
    // Every step of the range had its kill (a run has 33 or 34 steps).
    expect(killed).toBe(17);
    // The kills between the two tables' commits come later (kill-every-step-iceberg-late.test.ts).
    expect(seen).toEqual({ ahead: 0, repaired: 0 });
  });
});
