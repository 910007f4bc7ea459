// Files planted where a table keeps its own metadata are read within limits, and the run fails
// with a code naming the file and the limit. Before: an 80-byte manifest list (schema "null", a
// block of 2^40 records) made every later run of an Iceberg table grow until V8 aborted (no
// summary), and a planted state whose first frame announced 0xFFFFFFF0 bytes burned a core until
// the stall watchdog. The shipped pipelines, run by the built CLI.
import { randomBytes } from 'node:crypto';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import type { RunSummary } from '../../src/pipeline/runner.js';
import { readJson, runCli, sandboxEnv, useSandboxWorkspace } from './cli-process.js';

/** The 80-byte Avro file: schema "null", one block announcing 2^40 records in no bytes. */
function nullRecordsBomb(): Buffer {
  const long = avro.Type.forSchema('long');
  const header = avro.Type.forSchema({ type: 'map', values: 'bytes' }).toBuffer({
    'avro.schema': Buffer.from('"null"'),
    'avro.codec': Buffer.from('null'),
  });
  const sync = randomBytes(16);
  return Buffer.concat([
    Buffer.from('Obj\x01', 'latin1'),
    header,
    sync,
    long.toBuffer(2 ** 40),
    long.toBuffer(0),
    sync,
  ]);
}

describe('metadata planted in a table folder', () => {
  const shared = useSandboxWorkspace({ products: 40 });
  const run = async (pipeline: string, env: NodeJS.ProcessEnv, n: string) => {
    const summaryFile = join(shared.ws.dir, `summary-${n}.json`);
    const result = await runCli(['run', pipeline, '--quiet', '--summary-file', summaryFile], {
      cwd: shared.ws.dir,
      env: { ...sandboxEnv(shared.sandbox), ...env },
    });
    return { ...result, summary: (await readJson<{ pipelines: RunSummary[] }>(summaryFile)).pipelines[0]! };
  };

  it('an Iceberg manifest list of 2^40 "null" records fails the run with iceberg.avro_limit', async () => {
    const env = { ICEBERG_PATH: join(shared.ws.dir, 'ice'), ICEBERG_STATE: join(shared.ws.dir, 'ice-state.json') };
    const first = await run('pipelines/products-iceberg.yml', env, 'ice-1');
    expect(first.code, first.stderr).toBe(0);
    const metadata = join(shared.ws.dir, 'ice', 'current', 'metadata');
    const lists = (await readdir(metadata)).filter((name) => name.startsWith('snap-'));
    expect(lists.length).toBeGreaterThan(0);
    for (const name of lists) await writeFile(join(metadata, name), nullRecordsBomb());

    const second = await run('pipelines/products-iceberg.yml', env, 'ice-2');
    expect(second.code, second.stderr).toBe(1);
    expect(second.summary.error).toMatchObject({
      code: 'iceberg.avro_limit',
      message: expect.stringContaining('snap-'),
    });
  }, 90_000);

  it('a table state whose first frame announces 0xFFFFFFF0 bytes fails the run with table.state_limit', async () => {
    const env = { TABLE_PATH: join(shared.ws.dir, 'hive'), TABLE_STATE: join(shared.ws.dir, 'hive-state.json') };
    const first = await run('pipelines/products-table.yml', env, 'hive-1');
    expect(first.code, first.stderr).toBe(0);
    const stateDir = join(shared.ws.dir, 'hive', '_table');
    const states = (await readdir(stateDir)).filter((name) => name.startsWith('state-'));
    expect(states).toHaveLength(1);
    const header = Buffer.alloc(4);
    header.writeUInt32LE(0xfffffff0, 0);
    await writeFile(join(stateDir, states[0]!), gzipSync(Buffer.concat([header, Buffer.alloc(64 * 1024 * 1024)])));

    const second = await run('pipelines/products-table.yml', env, 'hive-2');
    expect(second.code, second.stderr).toBe(1);
    expect(second.summary.error).toMatchObject({
      code: 'table.state_limit',
      message: expect.stringContaining(`over the limit of ${64 * 1024 * 1024} bytes`),
    });
  }, 90_000);
});
