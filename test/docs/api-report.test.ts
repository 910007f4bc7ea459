// The public surface is deliberate: api/catalog-streams.api.md, written by `npm run api`, must match
// what dist/*.d.ts exports (the suite's tsc built it), so a new or changed export shows in review.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO } from '../cli/cli-process.js';

const run = promisify(execFile);

describe('the API report', () => {
  it('api/catalog-streams.api.md is current (run `npm run api` after changing the public API)', async () => {
    const result = await run(process.execPath, ['scripts/api-report.mjs', '--check'], { cwd: REPO }).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }),
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('lists the entry points and leaves internals out', async () => {
    const { readFile } = await import('node:fs/promises');
    const report = await readFile(`${REPO}/api/catalog-streams.api.md`, 'utf8');
    expect(report).toMatch(/^## catalog-streams \(\d+ exports\)$/m);
    expect(report).toMatch(/^## catalog-streams\/sandbox \(\d+ exports\)$/m);
    const main = report.slice(0, report.indexOf('## catalog-streams/sandbox'));
    expect(main).toContain('// --- runPipeline\n');
    for (const internal of ['startSandbox', 'createS3Client', 'RateLimiter', 'quoteUnsafeIntegers', 'notTheApi'])
      expect(main).not.toContain(`// --- ${internal}\n`);
  });
});
