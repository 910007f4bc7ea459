// Fault matrix, symlinked folders (issue 36, item 2): no listing, read, write or removal under a
// table, dataset or state root follows a symbolic link (storage/no-symlink.ts). Someone who may
// write inside a root replaces one of the toolkit's folders by a link to files of someone else
// (the victims, always OUTSIDE the root): the next run must fail with `storage.symlink` naming the
// link, and every victim must be unchanged byte for byte. Before, the run listed, wrote and removed
// through the link. The root itself may be a link (a lake moved onto a bigger disk): that works.
import { createHash } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { newRunId } from '../../src/core/run-id.js';
import type { SinkStream } from '../../src/core/stage.js';
import { openStateStore, type PipelineState } from '../../src/pipeline/state.js';
import { jsonlSink, tableSink } from '../../src/sinks/index.js';
import { runMain, sandboxEnv, useSandboxWorkspace } from '../cli/cli-process.js';
import { testContext, type TestContext } from '../helpers/stage-context.js';
import { tempDir } from '../sinks/records.js';

type Warning = { code: string; message: string };

/** A context for one run: its own run id and start time, its warnings collected. */
function runContext(dir: string, startedAt: string): { ctx: TestContext; warnings: Warning[] } {
  const ctx = testContext({ baseDir: dir });
  ctx.run.id = newRunId(new Date(startedAt));
  ctx.run.startedAt = new Date(startedAt);
  const warnings: Warning[] = [];
  ctx.events.on('warning', (w) => warnings.push(w));
  return { ctx, warnings };
}

const columns = { id: 'string', status: 'string', price: 'int64' } as const;
const records = (count: number, price = 1) =>
  Array.from({ length: count }, (_, i) => ({ id: `P${i}`, status: i % 2 ? 'draft' : 'active', price: i * price }));

/** Runs `sink` over `count` records; the error it failed with, or undefined. */
async function feed(sink: SinkStream, count: number, price = 1): Promise<Error | undefined> {
  return pipeline(Readable.from(records(count, price)), sink).then(
    () => undefined,
    (err: unknown) => err as Error,
  );
}

/** Every entry under `dir` (links as their target, files as a hash of their bytes): compared whole. */
async function tree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (at: string, rel: string): Promise<void> => {
    for (const name of (await readdir(at)).sort()) {
      const file = join(at, name);
      const info = await lstat(file);
      const key = `${rel}${name}`;
      if (info.isSymbolicLink()) out[key] = `-> ${await readlink(file)}`;
      else if (info.isDirectory()) await walk(file, `${key}/`);
      else
        out[key] = createHash('sha256')
          .update(await readFile(file))
          .digest('hex');
    }
  };
  await walk(dir, '');
  return out;
}

/** The run failed with `storage.symlink`, naming the link. */
function expectRefusedLink(err: Error | undefined, link: string): void {
  expect(err, 'the run fails').toBeDefined();
  expect(err).toMatchObject({ code: 'storage.symlink' });
  expect(err!.message).toContain(link);
}

/** Replaces the folder `folder` by a link to `target` (relative, as an operator or attacker would). */
async function replaceByLink(folder: string, target: string): Promise<void> {
  await rm(folder, { recursive: true, force: true });
  await symlink(target, folder);
}

describe('hive table: a folder of the table replaced by a link to another table', () => {
  /** Tables a (the one attacked) and b (the victim, outside a's root), one run each. */
  async function twoTables() {
    const dir = await tempDir('symlinked-hive-');
    for (const path of ['lake/a', 'lake/b']) {
      const { ctx } = runContext(dir, '2026-05-01T02:00:00Z');
      expect(await feed(tableSink({ path, columns }, ctx), 6)).toBeUndefined();
    }
    return { dir, a: join(dir, 'lake/a'), b: join(dir, 'lake/b') };
  }

  it.each(['snapshot', '_table'])(
    "a's %s/ -> b's: the rerun fails naming the link, b is unchanged byte for byte",
    async (folder) => {
      const { dir, a, b } = await twoTables();
      await replaceByLink(join(a, folder), `../b/${folder}`);
      const before = await tree(b);
      const rerun = runContext(dir, '2026-05-01T05:00:00Z');
      const err = await feed(tableSink({ path: 'lake/a', columns }, rerun.ctx), 4, 3);
      expect(await tree(b)).toEqual(before);
      expectRefusedLink(err, join(a, folder));
    },
  );
});

describe('iceberg table: current/data -> ../../../outside', () => {
  it('the rerun neither removes nor writes anything outside; it fails naming the link', async () => {
    const dir = await tempDir('symlinked-iceberg-');
    const table = join(dir, 'lake/ice');
    const options = { path: 'lake/ice', key: 'id', format: 'iceberg', columns } as const;
    const first = runContext(dir, '2026-05-01T02:00:00Z');
    expect(await feed(tableSink(options, first.ctx), 6)).toBeUndefined();
    const outside = join(dir, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'report.parquet'), 'PAR1 somebody else’s report PAR1');
    await writeFile(join(outside, 'victim.txt'), 'not the table’s\n');
    // The table's own data files move along, as `mv data ../../outside && ln -s` would leave them.
    for (const name of await readdir(join(table, 'current/data')))
      await rename(join(table, 'current/data', name), join(outside, name));
    await replaceByLink(join(table, 'current/data'), '../../../outside');
    const before = await tree(outside);

    const rerun = runContext(dir, '2026-05-01T05:00:00Z');
    const err = await feed(tableSink(options, rerun.ctx), 4, 3);
    expect(await tree(outside)).toEqual(before);
    expectRefusedLink(err, join(table, 'current/data'));
  });

  it('current/ itself as a link to another folder is refused too', async () => {
    const dir = await tempDir('symlinked-iceberg-current-');
    const table = join(dir, 'lake/ice');
    const options = { path: 'lake/ice', key: 'id', format: 'iceberg', columns } as const;
    expect(await feed(tableSink(options, runContext(dir, '2026-05-01T02:00:00Z').ctx), 6)).toBeUndefined();
    await rename(join(table, 'current'), join(dir, 'elsewhere'));
    await symlink('../../elsewhere', join(table, 'current'));
    const before = await tree(join(dir, 'elsewhere'));
    const err = await feed(tableSink(options, runContext(dir, '2026-05-01T05:00:00Z').ctx), 4, 3);
    expect(await tree(join(dir, 'elsewhere'))).toEqual(before);
    expectRefusedLink(err, join(table, 'current'));
  });
});

describe('local dataset: a partition folder that is a link', () => {
  const path = 'out/status={status}/part-{part}.jsonl';

  it('with a forged dataset record listing a file behind it: refused before the first record, the file outside stays', async () => {
    const dir = await tempDir('symlinked-dataset-');
    expect(await feed(jsonlSink({ path }, runContext(dir, '2026-05-01T02:00:00Z').ctx), 6)).toBeUndefined();
    const outside = join(dir, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'part-00000.jsonl'), '{"id":"someone else’s"}\n');
    await symlink('../outside', join(dir, 'out/status=archived'));
    const recordName = (await readdir(join(dir, 'out'))).find((n) => n.startsWith('.catalog-streams.'))!;
    const record = JSON.parse(await readFile(join(dir, 'out', recordName), 'utf8'));
    record.files.push('status=archived/part-00000.jsonl');
    await writeFile(join(dir, 'out', recordName), JSON.stringify(record));
    const before = await tree(outside);

    const err = await feed(jsonlSink({ path }, runContext(dir, '2026-05-01T05:00:00Z').ctx), 6);
    expect(await tree(outside)).toEqual(before);
    expectRefusedLink(err, join(dir, 'out/status=archived'));
  });

  it('a partition the run writes: nothing is written through the link, the file there stays', async () => {
    const dir = await tempDir('symlinked-dataset-write-');
    expect(await feed(jsonlSink({ path }, runContext(dir, '2026-05-01T02:00:00Z').ctx), 6)).toBeUndefined();
    const outside = join(dir, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'part-00000.jsonl'), '{"id":"someone else’s"}\n');
    await replaceByLink(join(dir, 'out/status=draft'), '../outside');
    const before = await tree(outside);

    const err = await feed(jsonlSink({ path }, runContext(dir, '2026-05-01T05:00:00Z').ctx), 6);
    expect(await tree(outside)).toEqual(before);
    expectRefusedLink(err, join(dir, 'out/status=draft'));
  });
});

describe('local dataset: a dt={date} folder that is a link', () => {
  it('the run date renders it as a fixed name, yet it is a partition folder: refused, the file there stays', async () => {
    const dir = await tempDir('symlinked-dataset-date-');
    const outside = join(dir, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'part-00000.jsonl'), '{"id":"someone else’s"}\n');
    await mkdir(join(dir, 'out'));
    await symlink('../outside', join(dir, 'out/dt=2026-05-01'));
    const before = await tree(outside);
    const run = runContext(dir, '2026-05-01T05:00:00Z');
    const err = await feed(jsonlSink({ path: 'out/dt={date}/part-{part}.jsonl' }, run.ctx), 6);
    expect(await tree(outside)).toEqual(before);
    expectRefusedLink(err, join(dir, 'out/dt=2026-05-01'));
  });
});

describe('state: the folder of a relative state.path is a link', () => {
  const shared = useSandboxWorkspace({ products: 40 });
  // A state of the same pipeline name kept elsewhere (written before states named their host and
  // source, so only the name is checked): before, the run took its cursor and replaced it.
  const victimState: PipelineState = {
    version: 1,
    pipeline: 'linked',
    cursor: 1_700_000_000,
    updatedAt: '2026-05-01T00:00:00.000Z',
  };

  it('a run fails with storage.symlink before the first request; the state outside is not replaced or locked', async () => {
    const ws = shared.ws.dir;
    await writeFile(
      join(ws, 'linked.yml'),
      'name: linked\nsource: { type: products.query, filter: { status: active } }\n' +
        'sinks:\n  - { type: jsonl, path: "out/linked-{run}.jsonl" }\nstate: { path: .linked-state/linked.json }\n',
    );
    const outside = join(ws, 'outside-state');
    await mkdir(outside, { recursive: true });
    await writeFile(join(outside, 'linked.json'), `${JSON.stringify(victimState)}\n`);
    await symlink(outside, join(ws, '.linked-state'));
    const before = await tree(outside);

    const result = await runMain(['run', join(ws, 'linked.yml'), '--quiet'], sandboxEnv(shared.sandbox));
    expect(await tree(outside)).toEqual(before);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('storage.symlink');
    expect(result.stderr).toContain(join(ws, '.linked-state'));
  });

  it('the store refuses the read, the lock and the write alike', async () => {
    const dir = await tempDir('symlinked-state-');
    const outside = join(dir, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'p.json'), `${JSON.stringify(victimState)}\n`);
    await symlink('../outside', join(dir, 'state'));
    const before = await tree(outside);
    const state = { ...victimState, pipeline: 'p', cursor: 1_800_000_000 };
    const inside = openStateStore('state/p.json', { baseDir: dir });
    await expect(inside.read()).rejects.toMatchObject({ code: 'storage.symlink' });
    await expect(inside.lock({ runId: 'r', pipeline: 'p' }, () => {})).rejects.toMatchObject({
      code: 'storage.symlink',
    });
    await expect(inside.write(state)).rejects.toMatchObject({ code: 'storage.symlink' });
    expect(await tree(outside)).toEqual(before);
  });
});

describe('a root that is itself a link works', () => {
  it('lake -> a folder elsewhere: hive and iceberg tables, a dataset and a state under it run twice', async () => {
    const dir = await tempDir('symlinked-root-');
    const big = join(dir, 'mnt/big/lake');
    await mkdir(big, { recursive: true });
    await symlink(big, join(dir, 'lake'));
    for (const startedAt of ['2026-05-01T02:00:00Z', '2026-05-01T05:00:00Z']) {
      const ctx = () => runContext(dir, startedAt).ctx;
      expect(await feed(tableSink({ path: 'lake/hive', columns }, ctx()), 6)).toBeUndefined();
      expect(
        await feed(tableSink({ path: 'lake/ice', key: 'id', format: 'iceberg', columns }, ctx()), 6),
      ).toBeUndefined();
      expect(await feed(jsonlSink({ path: 'lake/out/status={status}/part-{part}.jsonl' }, ctx()), 6)).toBeUndefined();
    }
    expect(await readdir(big)).toEqual(expect.arrayContaining(['hive', 'ice', 'out']));
    expect((await lstat(join(big, 'hive/_table.json'))).isFile()).toBe(true);
    expect(await readdir(join(big, 'out'))).toEqual(expect.arrayContaining(['status=active', 'status=draft']));
    // A state whose path names the link's target absolutely: the operator's explicit choice.
    const state = openStateStore(join(dir, 'lake/state/p.json'), { baseDir: dir });
    const lock = await state.lock({ runId: 'r', pipeline: 'p' }, () => {});
    await state.write({ version: 1, pipeline: 'p', cursor: 5, updatedAt: '2026-05-01T00:00:00.000Z' });
    expect(await state.read()).toMatchObject({ cursor: 5 });
    await lock?.release();
    expect((await lstat(join(big, 'state/p.json'))).isFile()).toBe(true);
  });
});
