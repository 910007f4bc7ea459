// `catalog-streams run … | head`: the reader closes stdout after a few lines. The pipeline writing
// to stdout stops as a producer in a shell pipeline would, without an error: exit 0 when stdout
// was all it wrote; exit 1 when it also wrote a file (discarded, cursor kept), since a scheduler
// must not count that run as delivered. A pipeline of the same file not writing to stdout is not
// affected and commits its outputs.
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { CLI, type CliResult, jsonLines, listFiles, sandboxEnv, workspace } from './cli-process.js';

const SOURCE = `source:
  type: products.query
  filter: { status: [active, replaced, inactive] }
  pageSize: 50
  sorting: { id: ASC }`;

/** Runs the CLI with stdout piped to a reader that closes it after the first line (`| head -1`). */
function runIntoHead(args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<CliResult & { firstLine: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let closed = false;
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString();
    if (!closed && out.includes('\n')) {
      closed = true;
      child.stdout.destroy();
    }
  });
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  return new Promise((resolve) =>
    child.once('close', (code, signal) =>
      resolve({ code, signal, stdout: out, stderr: err, firstLine: out.split('\n')[0]! }),
    ),
  );
}

describe('run … | head', { timeout: 120_000 }, () => {
  let sandbox: TestSandbox;
  let ws: { dir: string; remove(): Promise<void> };
  beforeAll(async () => {
    sandbox = await startTestSandbox({ products: 3000, rateLimit: 0 });
    ws = await workspace();
  });
  afterAll(async () => {
    await sandbox?.close();
    await ws?.remove();
  });

  it('stops the stdout pipeline quietly and exits 0; another pipeline of the file commits', async () => {
    const file = join(ws.dir, 'peek.yml');
    await writeFile(
      file,
      `name: peek\n${SOURCE}\nsinks:\n  - { type: jsonl, path: "-" }\n---\nname: keep\n${SOURCE}\nsinks:\n  - { type: jsonl, path: "out/keep.jsonl" }\n`,
    );
    const r = await runIntoHead(['run', file], sandboxEnv(sandbox), ws.dir);
    expect(JSON.parse(r.firstLine)).toMatchObject({ id: expect.any(String) });
    const lines = jsonLines(r.stderr);
    expect(
      lines.filter((l) => l.level === 'error'),
      r.stderr,
    ).toEqual([]);
    expect(lines.filter((l) => l.event === 'stdout.closed')).toHaveLength(1);
    const summaries = Object.fromEntries(lines.filter((l) => l.event === 'summary').map((l) => [l.pipeline, l]));
    expect(summaries.peek).toMatchObject({ status: 'aborted', error: { code: 'stdout.closed' } });
    expect(summaries.keep).toMatchObject({ status: 'succeeded' });
    expect(await listFiles(join(ws.dir, 'out'))).toEqual(['keep.jsonl']);
    expect(r.stderr).not.toMatch(/EPIPE/);
    expect(r.code, r.stderr).toBe(0);
  });

  it('exits 1 when the stopped pipeline also wrote a file, which it discards', async () => {
    const file = join(ws.dir, 'both.yml');
    await writeFile(
      file,
      `name: both\n${SOURCE}\nsinks:\n  - { type: jsonl, path: "-" }\n  - { type: jsonl, path: "both-out/all.jsonl" }\n`,
    );
    const r = await runIntoHead(['run', file], sandboxEnv(sandbox), ws.dir);
    const closed = jsonLines(r.stderr).filter((l) => l.event === 'stdout.closed');
    expect(closed, r.stderr).toHaveLength(1);
    expect(closed[0]!.message).toMatch(/other outputs were discarded/);
    expect(await listFiles(join(ws.dir, 'both-out'))).toEqual([]);
    expect(r.code, r.stderr).toBe(1);
  });
});
