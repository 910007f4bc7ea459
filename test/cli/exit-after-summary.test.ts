// Issue 25: after its summary the process stayed up until a second signal when something kept the
// event loop alive (a stuck file system call, a socket, a timer). Here a custom stage's module leaves
// such things behind; the process must still end, with the exit code its summary reported, and say
// the summary once.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type CliProcess,
  type CliResult,
  jsonLines,
  readJson,
  sandboxEnv,
  startCli,
  useSandboxWorkspace,
} from './cli-process.js';

/** The CLI's result, or a failure naming what it printed if it is still running long after any run of this size. */
async function ended(cli: CliProcess, patienceMs = 60_000): Promise<CliResult> {
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      cli.child.kill('SIGKILL');
      reject(new Error(`the CLI was still running after its run ended; stderr:\n${cli.stderr()}`));
    }, patienceMs);
  });
  try {
    return await Promise.race([cli.done, stuck]);
  } finally {
    clearTimeout(timer);
  }
}

// A ref'd timer, a listening server and a connected socket nobody ends: each keeps the loop alive on its own.
const PENDING = `import { createServer, connect } from 'node:net';
setInterval(() => {}, 1000);
const server = createServer(() => {}).listen(0, '127.0.0.1', () => {
  connect(server.address().port, '127.0.0.1');
});
`;

function pipeline(name: string, module: string): string {
  return `name: ${name}
source: { type: brands.query }
transforms:
  - { type: custom, module: ${module} }
sinks: [{ type: jsonl, path: out/${name}.jsonl }]
`;
}

describe('the process exits after its summary whatever is still pending', { timeout: 120_000 }, () => {
  const shared = useSandboxWorkspace({ products: 50 });

  it('a run that succeeds: exit 0, its summary once', async () => {
    const { dir } = shared.ws;
    await writeFile(join(dir, 'pending-ok.mjs'), `${PENDING}export default (r) => r;\n`);
    await writeFile(join(dir, 'pending-ok.yml'), pipeline('pending_ok', './pending-ok.mjs'));
    const summaryFile = join(dir, 'pending-ok.summary.json');
    const cli = startCli(['run', 'pending-ok.yml', '--summary-file', summaryFile], {
      cwd: dir,
      env: sandboxEnv(shared.sandbox),
    });
    const r = await ended(cli);
    expect(r.code, r.stderr).toBe(0);
    const summaries = jsonLines(r.stderr).filter((l) => l.event === 'summary');
    expect(summaries.map((s) => [s.pipeline, s.status])).toEqual([['pending_ok', 'succeeded']]);
    expect((await readJson(summaryFile)).exitCode).toBe(0);
  });

  it('a run that fails: exit 1, its failure summary once', async () => {
    const { dir } = shared.ws;
    // A map that returns nothing fails the run (custom.ts: a forgotten `return`).
    await writeFile(join(dir, 'pending-fail.mjs'), `${PENDING}export default () => undefined;\n`);
    await writeFile(join(dir, 'pending-fail.yml'), pipeline('pending_fail', './pending-fail.mjs'));
    const summaryFile = join(dir, 'pending-fail.summary.json');
    const cli = startCli(['run', 'pending-fail.yml', '--summary-file', summaryFile], {
      cwd: dir,
      env: sandboxEnv(shared.sandbox),
    });
    const r = await ended(cli);
    expect(r.code, r.stderr).toBe(1);
    expect(r.signal).toBeNull();
    const summaries = jsonLines(r.stderr).filter((l) => l.event === 'summary');
    expect(summaries.map((s) => [s.pipeline, s.status, s.level])).toEqual([['pending_fail', 'failed', 'error']]);
    expect((await readJson(summaryFile)).exitCode).toBe(1);
  });
});
