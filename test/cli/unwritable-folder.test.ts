// A sink path under /proc: Node's recursive mkdir loops forever there (mkdir answers ENOENT
// although the parent exists), so the run spun for minutes and, after a signal and its summary,
// the busy libuv thread kept the process alive. Folders are now made one level at a time
// (src/storage/make-folder.ts): the write fails at once, the run fails and the process exits.
// The test timeout is only a safety net; nothing here measures time.
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonLines, runCli, sandboxEnv, useSandboxWorkspace } from './cli-process.js';

describe.skipIf(!existsSync('/proc/self'))('a sink folder that cannot be made', { timeout: 120_000 }, () => {
  const shared = useSandboxWorkspace({ products: 30 });

  it('under /proc: the run fails on the first write and the process exits', async () => {
    const file = join(shared.ws.dir, 'proc.yml');
    await writeFile(
      file,
      'name: proc\nsource: { type: brands.query }\nsinks: [{ type: jsonl, path: /proc/catalog-streams-test/brands.jsonl }]\n',
    );
    const r = await runCli(['run', file], { env: sandboxEnv(shared.sandbox) });
    expect(r.code, r.stderr).toBe(1);
    const summary = jsonLines(r.stderr).find((l) => l.event === 'summary')!;
    expect(summary).toMatchObject({ status: 'failed' });
    expect(summary.error.message).toContain("mkdir '/proc/catalog-streams-test'");
  });
});
