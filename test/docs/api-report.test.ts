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

  it('names a thing once, for what it does: the transforms users get carry dead-letter sinks, a dry-run estimate is not "plan"', async () => {
    const { readFile } = await import('node:fs/promises');
    const report = await readFile(`${REPO}/api/catalog-streams.api.md`, 'utf8');
    const main = report.slice(0, report.indexOf('## catalog-streams/sandbox'));
    // The package's factories come from pipeline/code-api.ts (made with the built-in sinks), not
    // the transform folder's bare ones, which no longer exist under the same name.
    for (const factory of ['validate', 'flattenLocales', 'normalizeCodes', 'pick', 'custom'])
      expect(main, factory).toContain(`// --- ${factory}\n// src/pipeline/code-api.ts\n`);
    expect(main).toContain('// --- estimateSource\n// src/sources/plan.ts\n');
    expect(main).not.toContain('// --- plan\n');
    const names = main.split('\n').filter((line) => line.startsWith('// --- '));
    expect(new Set(names).size).toBe(names.length);
  });
});
