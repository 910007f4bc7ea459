// Incremental state: a local file written atomically (temp + rename, nothing
// half-written, nothing left behind), clear messages for a corrupt or invalid
// file, and the same store on S3 (s3://bucket/key) against a real s3rver.
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { openStateStore, type PipelineState } from '../../src/pipeline/state.js';
import { startS3Server, useS3rverEnvironment, type S3TestServer } from '../helpers/s3-server.js';

const state = (cursor: number): PipelineState => ({
  version: 1,
  pipeline: 'nightly',
  cursor,
  updatedAt: '2026-01-02T03:04:05.000Z',
  lastRun: {
    runId: 'r1',
    startedAt: '2026-01-02T03:00:00.000Z',
    finishedAt: '2026-01-02T03:04:05.000Z',
    records: 12,
    source: 'products.query',
  },
});

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'state-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('local state file', () => {
  it('reads nothing before the first run, then what was written; relative to the base folder', async () => {
    const store = openStateStore('.state/nightly.json', { baseDir: dir });
    expect(store.location).toBe(join(dir, '.state/nightly.json'));
    expect(await store.read()).toBeUndefined();
    await store.write(state(1_700_000_000));
    expect(await store.read()).toEqual(state(1_700_000_000));
    await store.write(state(1_700_000_500));
    expect(await store.read()).toEqual(state(1_700_000_500));
    // Replaced by rename: no temp file beside it.
    expect(await readdir(join(dir, '.state'))).toEqual(['nightly.json']);
    expect(JSON.parse(await readFile(store.location, 'utf8'))).toEqual(state(1_700_000_500));
  });

  it('a failed write is a clear error and leaves no temp file', async () => {
    await writeFile(join(dir, 'a-file'), 'x');
    const underFile = openStateStore('a-file/s.json', { baseDir: dir });
    await expect(underFile.write(state(1))).rejects.toThrow(
      new RegExp(`^cannot write state ${join(dir, 'a-file/s.json')}: .*(ENOTDIR|EEXIST)`),
    );
    // The rename fails when the location is a folder: the temp file beside it is removed.
    await mkdir(join(dir, 'busy', 's.json'), { recursive: true });
    await writeFile(join(dir, 'busy', 's.json', 'keep'), 'x');
    const onFolder = openStateStore('busy/s.json', { baseDir: dir });
    await expect(onFolder.write(state(2))).rejects.toMatchObject({ code: 'state.write', exitCode: 1 });
    expect(await readdir(join(dir, 'busy'))).toEqual(['s.json']);
  });

  it.each([
    ['{"version":1,', /^state .*corrupt\.json is not valid JSON; fix it, or delete it and run with --full-refresh$/],
    [
      '{"version":1,"pipeline":"x","cursor":-5,"updatedAt":"t"}',
      /^state .*corrupt\.json: cursor: .*; fix it, or delete it and run with --full-refresh$/,
    ],
    [
      '{"version":2,"pipeline":"x","cursor":5,"updatedAt":"t"}',
      /^state .*corrupt\.json: version: .*; fix it, or delete it and run with --full-refresh$/,
    ],
  ])('a corrupt file is a clear error: %s', async (text, message) => {
    await writeFile(join(dir, 'corrupt.json'), text);
    const store = openStateStore('corrupt.json', { baseDir: dir });
    await expect(store.read()).rejects.toThrow(message);
    await expect(store.read()).rejects.toMatchObject({ code: 'state.corrupt', exitCode: 1 });
  });

  it('s3 locations need the s3://bucket/key form', () => {
    expect(() => openStateStore('s3:/bucket/key', { baseDir: dir })).toThrow(ConfigError);
    expect(() => openStateStore('s3://bucket-only', { baseDir: dir })).toThrow(
      '"s3://bucket-only" is not of the form s3://bucket/key',
    );
  });
});

describe('state on S3 (s3rver)', () => {
  let server: S3TestServer;
  let restore: () => void;
  beforeAll(async () => {
    server = await startS3Server({ bucket: 'lake' });
    restore = useS3rverEnvironment(server.endpoint);
  });
  afterAll(async () => {
    restore?.();
    await server?.stop();
  });

  it('reads nothing at first, then the object written with one PUT', async () => {
    const store = openStateStore('s3://lake/state/nightly.json', { baseDir: dir });
    expect(store.location).toBe('s3://lake/state/nightly.json');
    expect(await store.read()).toBeUndefined();
    await store.write(state(1_700_000_000));
    expect(await store.read()).toEqual(state(1_700_000_000));
    await store.write(state(1_700_000_900));
    expect(await store.read()).toEqual(state(1_700_000_900));
    const puts = (await server.requestLog()).filter((r) => r.key === 'state/nightly.json' && r.op === 'PutObject');
    expect(puts).toHaveLength(2);
  });

  it('an unknown bucket is a clear error naming the location and what to check', async () => {
    const store = openStateStore('s3://no-such-bucket/state.json', { baseDir: dir });
    await expect(store.write(state(1))).rejects.toThrow(
      /^cannot write state s3:\/\/no-such-bucket\/state\.json: .*\(check AWS credentials, region and S3_ENDPOINT\)$/,
    );
  });
});
