// Dates as people write them in a pipeline file (issue 25), through the built CLI: `validate`
// accepts ISO dates and date-times in time filters, refuses a bad one naming the file, line,
// field path, value and both accepted forms, and a dry run plans such a pipeline.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { cleanEnv, runCli, sandboxEnv, workspace } from './cli-process.js';

const pipeline = (filter: string) => `name: iso-dates
source:
  type: products.query
  filter:
${filter}
  sorting: { id: ASC }
sinks:
  - { type: jsonl, path: out/products.jsonl }
`;

const GOOD = pipeline(`    and:
      - updatedSince: "2024-01-01"
      - createdAt: { from: 2015-01-01, until: "2025-12-31T23:59:59+01:00" }`);

describe('ISO dates in a pipeline file', () => {
  let ws: Awaited<ReturnType<typeof workspace>>;
  let sandbox: TestSandbox;
  beforeAll(async () => {
    ws = await workspace('catalog-streams-iso-');
    sandbox = await startTestSandbox({ products: 300 });
    await writeFile(join(ws.dir, 'good.yml'), GOOD);
    await writeFile(join(ws.dir, 'bad.yml'), pipeline('    updatedSince: { from: "2024-13-01" }'));
    await writeFile(join(ws.dir, 'ms.yml'), pipeline('    updatedSince: 1704067200000'));
  });
  afterAll(async () => {
    await sandbox?.close();
    await ws?.remove();
  });

  it('validate accepts updatedSince "2024-01-01" and a createdAt range in ISO', async () => {
    const { code, stderr } = await runCli(['validate', 'good.yml', '--log-format', 'pretty'], {
      cwd: ws.dir,
      env: cleanEnv(),
    });
    expect(stderr).not.toMatch(/error/i);
    expect(code).toBe(0);
  });

  it('validate refuses a bad date naming the field path, the value and both forms', async () => {
    const { code, stderr } = await runCli(['validate', 'bad.yml', '--log-format', 'pretty'], {
      cwd: ws.dir,
      env: cleanEnv(),
    });
    expect(code).toBe(2);
    expect(stderr).toContain(
      'source.filter.updatedSince.from: "2024-13-01" is not a date; write 2024-01-31, 2024-01-31T12:00:00Z or unix seconds',
    );
    const ms = await runCli(['validate', 'ms.yml', '--log-format', 'pretty'], { cwd: ws.dir, env: cleanEnv() });
    expect(ms.code).toBe(2);
    expect(ms.stderr).toContain('source.filter.updatedSince: 1704067200000 looks like milliseconds');
  });

  it('run --dry-run plans the pipeline (the sandbox took the dates as seconds)', async () => {
    const { code, stdout, stderr } = await runCli(['run', 'good.yml', '--dry-run', '--log-format', 'pretty'], {
      cwd: ws.dir,
      env: sandboxEnv(sandbox),
    });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^pipeline iso-dates: products\.query\n {2}[\d,]+ records? in 1 slice/);
  });
});
