// Kill at every step on S3 (s3rver): the table sink, killed before its odd steps in turn with a
// good run after each; the local folder layout (kill-every-step.test.ts) takes the even ones, so
// each step of the table sink is killed once across the two layouts. What is checked is said at
// the top of kill-every-step.test.ts, the machinery is kill-every-step-support.ts; the s3 sink is
// in kill-every-step-s3-sink.test.ts.
import { describe, expect, it } from 'vitest';
import { s3TableKills, useKillFixtures } from './kill-every-step-support.js';

useKillFixtures({ s3: true });

describe('kill -9 at every other storage step of a table on S3, then a good run', () => {
  it('table sink on S3 (s3rver): the odd steps', { timeout: 600_000 }, async () => {
    // An incremental run has 21 steps here (the first 19): the kills before steps 1 to 21.
    expect(await s3TableKills({ fromStep: 1, every: 2 })).toBeGreaterThanOrEqual(10);
  });
});
