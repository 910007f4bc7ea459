// Atomic local writes (src/storage/local-file.ts): the file appears whole under its final name;
// a write that fails throws StorageError (`storage.write_failed`) naming the file and what to do,
// keeps the system's error as its cause, and leaves no temp file; an exclusive create reports an
// existing file as `false`. The lock file backend and a full disk: the example
// (`ENOSPC: no space left on device, write` naming nothing, a 0-byte temp file left behind).
import * as fsPromises from 'node:fs/promises';
import { chmod, lstat, mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { fileLockBackend } from '../../src/core/lock.js';
import { StorageError } from '../../src/errors.js';
import { createFileExclusive, parseTempName, tempPathFor, writeFileAtomic } from '../../src/storage/local-file.js';

// `open` passes through unless a test makes the next temp file's writes fail (a full disk).
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  return { ...actual, open: vi.fn(actual.open) };
});

/** The next file opened gets a handle whose writeFile fails as on a full disk (after the file exists). */
function diskFullOnNextOpen() {
  const open = vi.mocked(fsPromises.open);
  const real = open.getMockImplementation()!;
  open.mockImplementationOnce(async (...args: Parameters<typeof fsPromises.open>) => {
    const handle = await real(...args);
    handle.writeFile = () =>
      Promise.reject(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }));
    return handle;
  });
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'local-file-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));
afterEach(() => {
  vi.mocked(fsPromises.open).mockClear();
});

describe('writeFileAtomic', () => {
  it('creates the folder, writes the file whole, replaces it, and leaves no temp file', async () => {
    const file = join(dir, 'ok/nested/summary.json');
    await writeFileAtomic(file, '{"a":1}\n');
    await writeFileAtomic(file, '{"a":2}\n');
    expect(await readFile(file, 'utf8')).toBe('{"a":2}\n');
    expect(await readdir(join(dir, 'ok/nested'))).toEqual(['summary.json']);
  });

  it('opens its temp file exclusively (wx) under a name with a random part, beside the file', async () => {
    const file = join(dir, 'flags/x.prom');
    await writeFileAtomic(file, 'x 1\n', { mode: 0o640 });
    const calls = vi.mocked(fsPromises.open).mock.calls;
    expect(calls).toHaveLength(1);
    const [temp, flags, mode] = calls[0]!;
    expect(flags).toBe('wx');
    expect(mode).toBe(0o640);
    expect(parseTempName(String(temp).slice(join(dir, 'flags/').length))).toMatchObject({
      finalName: 'x.prom',
      pid: process.pid,
    });
    expect((await stat(file)).mode & 0o777 & ~0o640).toBe(0);
    expect(tempPathFor(file)).not.toBe(tempPathFor(file));
  });

  it('a parent that is a file: storage.write_failed naming the file, the cause kept, no temp file', async () => {
    await writeFile(join(dir, 'a-file'), 'x');
    const file = join(dir, 'a-file/s.json');
    const error = await writeFileAtomic(file, 'data').catch((err: unknown) => err);
    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ code: 'storage.write_failed', exitCode: 1, operation: 'write', file });
    expect((error as Error).message).toMatch(
      new RegExp(`^cannot write ${file}: creating the folder ${join(dir, 'a-file')} failed \\((EEXIST|ENOTDIR)`),
    );
    expect((error as Error).message).toContain('is a file, not a folder; fix the path');
    expect((error as Error).cause).toMatchObject({ code: expect.stringMatching(/^(EEXIST|ENOTDIR)$/) });
    expect(await readdir(dir)).not.toContainEqual(expect.stringMatching(/\.tmp$/));
  });

  it('a rename that fails (a folder under the final name): the temp file it wrote is removed', async () => {
    const file = join(dir, 'busy/s.json');
    await mkdir(join(file, 'inside'), { recursive: true });
    const error = await writeFileAtomic(file, 'data').catch((err: unknown) => err);
    expect(error).toMatchObject({ code: 'storage.write_failed', file });
    expect((error as Error).message).toMatch(
      new RegExp(
        `^cannot write ${file}: renaming the temp file \\.s\\.json\\.[0-9a-f]{6}-${process.pid}-[0-9a-f]{8}\\.tmp over it failed`,
      ),
    );
    expect((error as Error).message).toContain(`${file} is unchanged; ${file} is a folder`);
    expect(await readdir(join(dir, 'busy'))).toEqual(['s.json']);
  });

  it('a full disk while writing the temp file: names the file, says to free space, leaves no 0-byte temp', async () => {
    const file = join(dir, 'full/state.json');
    await writeFileAtomic(file, 'before');
    diskFullOnNextOpen();
    const error = await writeFileAtomic(file, 'after').catch((err: unknown) => err);
    expect(error).toMatchObject({ code: 'storage.write_failed', file });
    expect((error as Error).message).toMatch(
      new RegExp(`^cannot write ${file}: writing the temp file \\.state\\.json\\..*\\.tmp beside it failed \\(ENOSPC`),
    );
    expect((error as Error).message).toContain('free disk space');
    expect(await readdir(join(dir, 'full'))).toEqual(['state.json']);
    expect(await readFile(file, 'utf8')).toBe('before');
  });

  it('a folder it may not write to: the error says which folder to check', async () => {
    if (process.getuid?.() === 0) return; // root ignores permission bits
    const locked = join(dir, 'locked');
    await mkdir(locked);
    await chmod(locked, 0o500);
    try {
      await expect(writeFileAtomic(join(locked, 'm.prom'), 'x')).rejects.toThrow(
        `check that this user may create files in ${locked}`,
      );
    } finally {
      await chmod(locked, 0o700);
    }
  });
});

describe('createFileExclusive', () => {
  it('creates the file once; a second create returns false and leaves the first content', async () => {
    const file = join(dir, 'excl/x.lock');
    expect(await createFileExclusive(file, 'first')).toBe(true);
    expect(await createFileExclusive(file, 'second')).toBe(false);
    expect(await readFile(file, 'utf8')).toBe('first');
    expect(await readdir(join(dir, 'excl'))).toEqual(['x.lock']);
  });
});

describe('the lock file backend', () => {
  it('a full disk while taking a lock: names the lock file and what to do, leaves no temp file', async () => {
    const lockPath = join(dir, 'locks/.state/s.json.lock');
    diskFullOnNextOpen();
    const error = await fileLockBackend(lockPath)
      .create('{"runId":"r"}')
      .catch((err: unknown) => err);
    expect(error).toMatchObject({ code: 'storage.write_failed', operation: 'create', file: lockPath });
    expect((error as Error).message).toMatch(new RegExp(`^cannot create ${lockPath}: .*ENOSPC.*free disk space`));
    expect(await readdir(join(dir, 'locks/.state'))).toEqual([]);
  });

  it('create, replace and remove keep the lock semantics, and the lock is a regular file', async () => {
    const backend = fileLockBackend(join(dir, 'locks/b.lock'));
    expect(await backend.create('one')).toBe(true);
    expect(await backend.create('two')).toBe(false);
    await backend.replace('three');
    expect(await backend.read()).toBe('three');
    expect((await lstat(backend.location)).isFile()).toBe(true);
    await backend.remove();
    expect(await backend.read()).toBeUndefined();
    expect(await readdir(join(dir, 'locks'))).not.toContainEqual(expect.stringMatching(/\.tmp$/));
  });
});
