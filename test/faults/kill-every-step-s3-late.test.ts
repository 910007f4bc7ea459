// Kill at every step (issue 23); what is checked is said at the top of kill-every-step.test.ts, the
// machinery is kill-every-step-support.ts. Steps 11 to the last of the table sink on S3 (the first range
// is in kill-every-step-s3.test.ts): a good run first, then a kill before each step in turn.
import { describe, expect, it } from 'vitest';
import { s3TableKills, useKillFixtures } from './kill-every-step-support.js';

useKillFixtures({ s3: true });

describe('kill -9 at every late storage step of a table on S3, then a good run', () => {
  it('table sink on S3 (s3rver): steps 11 to the last', { timeout: 600_000 }, async () => {
    // With the first range's 10: at least 8 kills in all, as before the cut.
    expect(await s3TableKills(11)).toBeGreaterThanOrEqual(1);
  });
});
