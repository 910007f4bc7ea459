// Fault matrix, hostile folders: a symlink planted at a temp file name is never followed. Someone
// who may create files in the folder of `--summary-file`, `--metrics-file`, the state file or a
// lock links the name a write will use to a file of the user's (a victim); the write must neither
// overwrite the victim nor leave the final name as a link to it, nor remove the planted link.
// The CLI runs in-process, so the pid in the names of earlier versions (`.<file>.<pid>.tmp`) is
// known; the state and lock names had a random part, which the test fixes through node:crypto.
import * as crypto from 'node:crypto';
import { lstat, mkdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { fileLockBackend } from '../../src/core/lock.js';
import { openStateStore, type PipelineState } from '../../src/pipeline/state.js';
import { runMain, sandboxEnv, useSandboxWorkspace } from '../cli/cli-process.js';

// randomBytes passes through unless a test fixes the bytes of the next call.
vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:crypto')>();
  return { ...actual, randomBytes: vi.fn(actual.randomBytes) };
});

const FIXED = 0xab;
const HOST = crypto.createHash('sha256').update(hostname()).digest('hex').slice(0, 6);

/** The next randomBytes(n) returns n bytes of FIXED: the temp names of the next write are known. */
function fixNextRandomBytes() {
  vi.mocked(crypto.randomBytes).mockImplementationOnce(((size: number) => Buffer.alloc(size, FIXED)) as never);
}

const VICTIM_TEXT = 'the victim: nobody may write here\n';

/** Plants a symlink at each name, pointing at a fresh victim file; returns the victim. */
async function plant(names: string[], victim: string): Promise<string> {
  await mkdir(dirname(victim), { recursive: true });
  await writeFile(victim, VICTIM_TEXT);
  for (const name of names) {
    await mkdir(dirname(name), { recursive: true });
    await symlink(victim, name);
  }
  return victim;
}

/** The victim is unchanged, the planted links are still there, and `file` is a regular file. */
async function expectUntouched(victim: string, links: string[], file: string) {
  expect(await readFile(victim, 'utf8')).toBe(VICTIM_TEXT);
  for (const link of links) expect(await readlink(link), link).toBe(victim);
  expect((await lstat(file)).isFile(), `${file} is a regular file`).toBe(true);
}

describe('symlinks planted at temp file names', () => {
  const shared = useSandboxWorkspace({ products: 120 });

  it('--summary-file and --metrics-file: the victim is unchanged, the outputs are regular files', async () => {
    const ws = shared.ws.dir;
    await writeFile(
      join(ws, 'p.yml'),
      'name: planted\nsource: { type: products.query, filter: { status: active } }\n' +
        'sinks:\n  - { type: jsonl, path: "out/products-{run}.jsonl" }\nstate: { path: .state/planted.json }\n',
    );
    const summary = join(ws, 'reports/summary.json');
    const metrics = join(ws, 'textfile/catalog-streams.prom');
    // The names earlier versions wrote to: `.<file>.<pid>.tmp` beside the file.
    const oldTemp = (file: string) => join(dirname(file), `.${basename(file)}.${process.pid}.tmp`);
    const links = [oldTemp(summary), oldTemp(metrics)];
    const victim = await plant(links, join(ws, 'home/precious.txt'));

    const result = await runMain(
      ['run', join(ws, 'p.yml'), '--summary-file', summary, '--metrics-file', metrics, '--quiet'],
      sandboxEnv(shared.sandbox),
    );
    expect(result.code, result.stderr).toBe(0);
    await expectUntouched(victim, links, summary);
    await expectUntouched(victim, links, metrics);
    expect(JSON.parse(await readFile(summary, 'utf8'))).toMatchObject({ exitCode: 0 });
    expect(await readFile(metrics, 'utf8')).toContain('catalog_streams_exit_code{pipeline="planted"} 0');
  });

  const state: PipelineState = {
    version: 1,
    pipeline: 'planted',
    cursor: 1_700_000_000,
    updatedAt: '2026-01-02T03:04:05.000Z',
  };

  it('the state file: the victim is unchanged, the state is a regular file', async () => {
    const store = openStateStore('.state/links.json', { baseDir: shared.ws.dir });
    const file = store.location;
    const hex = (n: number) => Buffer.alloc(n, FIXED).toString('hex');
    // Earlier `<file>.<pid>.<6 hex>.tmp` (or 8 hex), and today's name for the same bytes (which is
    // skipped for a fresh one: its open with O_EXCL finds the link and fails).
    const links = [
      `${file}.${process.pid}.${hex(3)}.tmp`,
      `${file}.${process.pid}.${hex(4)}.tmp`,
      join(dirname(file), `.${basename(file)}.${HOST}-${process.pid}-${hex(4)}.tmp`),
    ];
    const victim = await plant(links, join(shared.ws.dir, 'home/state-victim.txt'));
    fixNextRandomBytes();
    await store.write(state);
    await expectUntouched(victim, links, file);
    expect(await store.read()).toEqual(state);
  });

  it('a lock file, created and rewritten: the victim is unchanged, the lock is a regular file', async () => {
    const lockPath = join(shared.ws.dir, '.state/links.json.lock');
    const hex = Buffer.alloc(4, FIXED).toString('hex');
    // Earlier `<lock>.<8 hex>.tmp`, and today's name for the same bytes.
    const links = [
      `${lockPath}.${hex}.tmp`,
      join(dirname(lockPath), `.${basename(lockPath)}.${HOST}-${process.pid}-${hex}.tmp`),
    ];
    const victim = await plant(links, join(shared.ws.dir, 'home/lock-victim.txt'));
    const backend = fileLockBackend(lockPath);
    fixNextRandomBytes();
    expect(await backend.create('{"runId":"a"}')).toBe(true);
    await expectUntouched(victim, links, lockPath);
    fixNextRandomBytes();
    await backend.replace('{"runId":"b"}');
    await expectUntouched(victim, links, lockPath);
    expect(await backend.read()).toBe('{"runId":"b"}');
  });
});
