// An error thrown by a transform's own code (issue 37, item 14): before, a custom stage that threw
// failed the run with only `error [error]: boom on purpose`. Now the error (`data.stage_failed`)
// names the stage's place in the file (transforms[i], file:line:column), its module, export and
// kind, the record's id and the line of the user's module that threw; the original is its cause.
// Sync and async throws alike, in a fused chain too; an error of ours (a contract error) is kept.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataError } from '../../src/errors.js';
import { RunEvents } from '../../src/events.js';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { RunFailedError, runPipeline } from '../../src/pipeline/runner.js';
import { map } from '../../src/transforms/index.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

// Each export throws on the third record it sees and says which one, for the test to compare.
const BOOM = `let syncSeen = 0;
let laterSeen = 0;
export function sync(record) {
  if (++syncSeen === 3) { globalThis.boomId = record.id; throw new Error('boom on purpose'); }
  return record;
}
export async function later(record) {
  await null;
  if (++laterSeen === 3) throw new TypeError('async boom');
  return record;
}
export const undef = () => undefined;
`;

describe('an error thrown in a stage names the stage, its place and the record', () => {
  let sandbox: TestSandbox;
  let dir: string;
  beforeAll(async () => {
    sandbox = await startTestSandbox({ products: 20 });
    dir = await mkdtemp(join(tmpdir(), 'stage-errors-'));
    await writeFile(join(dir, 'boom.mjs'), BOOM);
  });
  afterAll(async () => {
    await sandbox?.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function failure(exportName: string): Promise<RunFailedError> {
    const file = join(dir, 'p.yml');
    const text = `name: boom
source: { type: products.query, filter: { status: active }, sorting: { id: ASC }, pageSize: 10 }
transforms:
  - { type: pick, fields: [id, status] }
  - { type: custom, module: ./boom.mjs, export: ${exportName} }
sinks: [{ type: jsonl, path: out/boom.jsonl }]
`;
    const registry = createRegistry();
    const [loaded] = parsePipelines(text, registry, { env: {}, file });
    const error = await runPipeline(loaded!, {
      registry,
      connection: { baseUrl: sandbox.url, ...sandbox.credentials, rateLimit: Infinity },
      env: {},
      events: new RunEvents(),
    }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(RunFailedError);
    return error as RunFailedError;
  }

  it('a sync throw: module, export, kind, transforms[1] with its line, the record id, the frame', async () => {
    const err = await failure('sync');
    expect(err.code).toBe('data.stage_failed');
    const third = JSON.stringify((globalThis as { boomId?: string }).boomId);
    expect(third).toMatch(/^"P\d+"$/);
    expect(err.message).toBe(
      `transforms[1] (${join(dir, 'p.yml')}:5:5) custom: module "./boom.mjs" export "sync" (map) threw on record ${third}: boom on purpose (at ${join(dir, 'boom.mjs')}:4:64)`,
    );
    expect(err.summary.error).toMatchObject({ code: 'data.stage_failed', remedy: 'fix' });
    expect((err.cause as Error).cause).toBeInstanceOf(Error);
    expect(((err.cause as Error).cause as Error).message).toBe('boom on purpose');
  });

  it('an async rejection the same way', async () => {
    const err = await failure('later');
    expect(err.code).toBe('data.stage_failed');
    expect(err.message).toMatch(/^transforms\[1\] \(.*p\.yml:5:5\) /);
    expect(err.message).toMatch(/": async boom \(at .*boom\.mjs:9:\d+\)$/);
    expect(err.message).toContain('custom: module "./boom.mjs" export "later" (map) threw on record "');
  });

  it('an error of ours (a broken contract) keeps its code and message', async () => {
    const err = await failure('undef');
    expect(err.code).toBe('data.custom_contract');
    expect(err.message).toMatch(/^custom: module "\.\/boom\.mjs" export "undef": the map function returned undefined/);
  });

  it('in code (no runner): the stage and the record, without a place', async () => {
    const failed = await pipeline(
      Readable.from([{ id: 'a' }, { id: 'b' }]),
      map((r: { id: string }) => {
        if (r.id === 'b') throw new RangeError('no b');
        return r;
      }),
      new Writable({ objectMode: true, write: (_c, _e, cb) => cb() }),
    ).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failed).toBeInstanceOf(DataError);
    expect((failed as DataError).message).toMatch(
      /^map threw on record "b": no b \(at .*stage-errors\.test\.ts:\d+:\d+\)$/,
    );
  });
  it('a stop is not a stage failure: an AbortError from user code passes through unwrapped', async () => {
    const failed = await pipeline(
      Readable.from([{ id: 'a' }]),
      map(() => {
        throw new DOMException('the caller stopped', 'AbortError');
      }),
      new Writable({ objectMode: true, write: (_c, _e, cb) => cb() }),
    ).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failed).not.toBeInstanceOf(DataError);
    expect((failed as Error).name).toBe('AbortError');
  });
});
