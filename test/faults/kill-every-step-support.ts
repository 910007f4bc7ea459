// The kill-at-every-step machinery (issue 23), shared by test/faults/kill-every-step*.test.ts (the
// table sink on a local folder and on S3, taking turns over its steps; the Iceberg layout in two
// step ranges; the s3 sink): several files, so the suite's two workers run them side by side. See
// kill-every-step.test.ts's header for what is checked.
import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect } from 'vitest';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { S3RVER_CREDENTIALS, startS3Server, useS3rverEnvironment, type S3TestServer } from '../helpers/s3-server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { jsonLines, listFiles, runCli, runMain, sandboxEnv, workspace } from '../cli/cli-process.js';
import { icebergReferences, readIceberg } from '../helpers/iceberg-reader.js';

// Few products: what a kill can break depends on the steps, and the steps on the number of
// parts, not of rows. 30 products with maxRows 12 make the same three parts per run (and the
// same steps) as 250 with maxRows 100 did, for an eighth of the rows to serve, write and read
// back after each of the matrices' runs (issue 38 item 8).
const PRODUCTS = 30;
const TOUCHED = 7;
/** maxRows of every layout: three parts of the whole catalog per run. */
export const MAX_ROWS = 12;

export let sandbox: TestSandbox;
export let s3: S3TestServer;
export let ids: string[];

/** The sandbox (and, for the S3 layouts, an s3rver) of one test file, started before its tests. */
export function useKillFixtures(options: { s3: boolean }): void {
  let restoreEnv: (() => void) | undefined;
  beforeAll(async () => {
    [sandbox] = await Promise.all([
      startTestSandbox({ products: PRODUCTS, seed: 23 }),
      options.s3 ? startS3Server().then((server) => (s3 = server)) : undefined,
    ]);
    const all = await sandbox.query<{ id: string }>('/v4/products/query', {
      filter: { createdAt: { from: 0 } },
      sorting: { id: 'ASC' },
      page: { no: 0, size: 250 },
    });
    ids = all.results.map((r) => r.id).sort();
    expect(ids).toHaveLength(PRODUCTS);
    // The in-process good runs: the AWS SDK reads its region and credentials from process.env.
    if (options.s3) restoreEnv = useS3rverEnvironment(s3.endpoint);
  }, 60_000);
  afterAll(async () => {
    restoreEnv?.();
    await sandbox?.close();
    await s3?.stop();
  });
}

// No filter on a value that changes: the run's window is on createdAt, so a product touched just
// before the run (in the second the window ends) is still read (docs/changing-catalog.md).
export const SOURCE = `source: { type: products.query, filter: { createdAt: { from: 0 } }, sorting: { id: ASC } }`;

interface Storage {
  /** Every name under the dataset's root, relative, sorted (locally hidden files included). */
  list(): Promise<string[]>;
  read(rel: string): Promise<string | undefined>;
  /** A local path DuckDB can read for `rel` (downloaded from S3). */
  local(rel: string): Promise<string>;
}

export function localStorage(root: string): Storage {
  return {
    list: () => listFiles(root),
    read: async (rel) => (existsSync(join(root, rel)) ? readFile(join(root, rel), 'utf8') : undefined),
    local: async (rel) => join(root, rel),
  };
}

export function s3Storage(prefix: string, scratch: string): Storage {
  const read = async (rel: string) => {
    try {
      const res = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `${prefix}${rel}` }));
      return Buffer.from(await res.Body!.transformToByteArray());
    } catch {
      return undefined;
    }
  };
  return {
    async list() {
      const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }));
      return (listed.Contents ?? []).map((c) => c.Key!.slice(prefix.length)).sort();
    },
    read: async (rel) => (await read(rel))?.toString('utf8'),
    async local(rel) {
      const body = await read(rel);
      if (!body) return join(scratch, 'missing', rel);
      const file = join(scratch, `${Math.random().toString(36).slice(2)}.parquet`);
      await writeFile(file, body);
      return file;
    },
  };
}

export async function parquetIds(storage: Storage, rels: string[]): Promise<string[]> {
  if (rels.length === 0) return [];
  const files = await Promise.all(rels.map((r) => storage.local(r)));
  for (const f of files) expect(existsSync(f), `${f} listed by the manifest exists`).toBe(true);
  const { rows } = await duckdbQuery(`SELECT id FROM read_parquet([${files.map(sqlString).join(', ')}])`);
  return rows.map((r) => String(r.id)).sort();
}

async function changeRows(storage: Storage, rels: string[]): Promise<string[]> {
  if (rels.length === 0) return [];
  const files = await Promise.all(rels.map((r) => storage.local(r)));
  const { rows } = await duckdbQuery(
    `SELECT _change || ' ' || id AS row FROM read_parquet([${files.map(sqlString).join(', ')}])`,
  );
  return rows.map((r) => String(r.row)).sort();
}

interface TableFile {
  path: string;
  rows: number;
}
interface TableManifest {
  current: string;
  state: string;
  versions: Array<{ runId: string; rows: number; snapshot: TableFile[]; changes: TableFile[] }>;
}

/** A name as Spark writes its parts: table-like, but no run of the table wrote it. */
const SPARK = 'part-00000-6b1e9c52-3f0a-4d7e-9a51-2c8f1e0d4b7a-c000.snappy.parquet';
/** Files another tool or a person put in a hive table's folders. */
export const HIVE_FOREIGN: Record<string, string> = {
  [`snapshot/dt=2000-01-01/${SPARK}`]: 'spark part',
  [`changes/dt=2000-01-01/${SPARK}`]: 'spark change',
  'changes/README.md': 'change rows',
  '_table/other-tool.json': '{"tool":"other"}',
};
/** Files another engine or a person put in the Iceberg tables' folders. */
export const ICEBERG_FOREIGN: Record<string, string> = {
  'current/data/README.md': 'data of the current table',
  'current/metadata/other-tool.json': '{"tool":"other"}',
  'changes/data/00000-0-abc.parquet': 'spark file',
};

/**
 * Places `files` under the local root and, beside the root, a symlink to a victim folder outside
 * the lake; returns the check that all of it is untouched, byte for byte.
 */
export async function placeForeignLocal(root: string, files: Record<string, string>): Promise<() => Promise<void>> {
  for (const [rel, body] of Object.entries(files)) {
    await mkdir(dirname(join(root, rel)), { recursive: true });
    await writeFile(join(root, rel), body);
  }
  const victim = join(root, '../../victim');
  await mkdir(victim, { recursive: true });
  await writeFile(join(victim, 'victim.txt'), 'victim');
  await symlink(victim, `${root}-link`);
  return async () => {
    for (const [rel, body] of Object.entries(files)) expect(await readFile(join(root, rel), 'utf8'), rel).toBe(body);
    expect(await readFile(join(`${root}-link`, 'victim.txt'), 'utf8')).toBe('victim');
    expect(await readdir(victim)).toEqual(['victim.txt']);
  };
}

/**
 * What others put beside an s3 sink's objects: a README, and an object named exactly as the key
 * template names a part (`part-{part}.parquet`) but without the dataset's metadata.
 */
export const S3_SINK_FOREIGN: Record<string, string> = {
  'README.md': 'the flat extract, read by the BI team\n',
  'part-00000.parquet': 'PAR1 another tool wrote this PAR1',
};

/** Places `files` under an S3 prefix; returns the check that they are untouched. */
export async function placeForeignS3(prefix: string, files: Record<string, string>): Promise<() => Promise<void>> {
  for (const [rel, body] of Object.entries(files))
    await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: `${prefix}${rel}`, Body: body }));
  return async () => {
    for (const [rel, body] of Object.entries(files)) {
      const res = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `${prefix}${rel}` }));
      expect(await res.Body!.transformToString('utf8'), rel).toBe(body);
    }
  };
}

/**
 * The steps of one run: kill before step N, then a good run, for every N until a run completes.
 * A long matrix is cut in step ranges run by separate files (in parallel by the suite's two
 * workers): `fromStep` > 1 starts with a good run, so its first kill hits an incremental run after
 * a good one, as step `fromStep` does in the whole loop; `toStep` stops after the good run that
 * follows the kill before that step (each of the range's steps then had its kill).
 */
export async function killAtEveryStep(opts: {
  dir: string;
  pipeline: string;
  env: NodeJS.ProcessEnv;
  /** Checks what a reader sees after a kill or a good run; returns the runs now visible. */
  check(after: 'kill' | 'good', pending: ReadonlySet<string>, stderr: string): Promise<{ committed: string[] }>;
  /** Checks that what others placed in and beside the dataset (placed before the first run) is untouched. */
  untouched?: () => Promise<void>;
  /** The first step to kill before (default 1). */
  fromStep?: number;
  /** The last step to kill before; default: until a run has fewer steps. */
  toStep?: number;
  /**
   * Kill before every `every`-th step from `fromStep` on (default 1: each step). Two layouts of
   * one sink take turns with 2 (odd steps on one, even on the other): each step is still killed
   * once across them, with half the runs of killing every step on both.
   */
  every?: number;
}): Promise<number> {
  const file = join(opts.dir, 'pipeline.yml');
  await writeFile(file, opts.pipeline);
  const args = ['run', file, '--log-format', 'json'];
  // A kill needs a process of its own (the CLI, built in dist/); the good runs go in-process
  // (runMain), as the life test's do: starting the CLI is most of a run's time here, and a good
  // run still finds what a killed one left only in storage (no module of src/ keeps a table's
  // state between runs), so the matrices take about half the time (issue 38).
  const kill = (step: number, log: string) =>
    runCli(args, {
      cwd: opts.dir,
      env: { ...opts.env, CATALOG_STREAMS_TEST_KILL_AT_STEP: String(step), CATALOG_STREAMS_TEST_STEP_LOG: log },
    });
  const run = () => runMain(args, opts.env);
  let pending = new Set(ids);
  const seen = new Set<string>();
  const settle = async (after: 'kill' | 'good', stderr = '') => {
    await opts.untouched?.();
    const { committed } = await opts.check(after, pending, stderr);
    if (committed.some((r) => !seen.has(r))) pending = new Set();
    for (const r of committed) seen.add(r);
  };
  let round = 0;
  // Products the extract holds (a touched product of another status would not be in the table).
  const touch = () => {
    round++;
    const chosen = Array.from({ length: TOUCHED }, (_, i) => ids[(round * 37 + i * 29) % ids.length]!);
    for (const id of sandbox.touch(chosen).products) pending.add(id);
  };
  let killedRuns = 0;
  const fromStep = opts.fromStep ?? 1;
  if (fromStep > 1) {
    touch();
    const first = await run();
    expect(first.code, first.stderr).toBe(0);
    await settle('good', first.stderr);
  }
  for (let step = fromStep; step <= (opts.toStep ?? Infinity); step += opts.every ?? 1) {
    touch();
    const log = join(opts.dir, `steps-${step}.log`);
    const killed = await kill(step, log);
    if (killed.signal !== 'SIGKILL') {
      // The run had fewer steps than `step`: every step was tried.
      expect(killed.code, killed.stderr).toBe(0);
      await settle('good', killed.stderr);
      return killedRuns;
    }
    killedRuns++;
    const at = (await readFile(log, 'utf8')).trim().split('\n').at(-1);
    await settle('kill').catch((err: Error) => {
      throw new Error(`after a kill before step ${step} (${at}): ${err.message}`);
    });
    touch();
    const good = await run();
    expect(good.code, `the good run after a kill before step ${step} (${at}): ${good.stderr}`).toBe(0);
    await settle('good', good.stderr).catch((err: Error) => {
      throw new Error(`after the good run following a kill before step ${step} (${at}): ${err.message}`);
    });
  }
  return killedRuns;
}

/** The Iceberg layout (local folder) killed before the steps `fromStep`..`toStep`. */
export async function icebergKills(fromStep: number, toStep?: number) {
  const ws = await workspace('catalog-streams-kill-iceberg-');
  try {
    const root = join(ws.dir, 'lake/products');
    const check = icebergCheck(root, Object.keys(ICEBERG_FOREIGN));
    const killed = await killAtEveryStep({
      dir: ws.dir,
      pipeline: `name: kill-iceberg\n${SOURCE}\nsinks:\n  - { type: table, format: iceberg, keepSnapshots: 3, path: lake/products, key: id, maxRows: ${MAX_ROWS} }\n`,
      env: sandboxEnv(sandbox),
      check,
      untouched: await placeForeignLocal(root, ICEBERG_FOREIGN),
      fromStep,
      ...(toStep === undefined ? {} : { toStep }),
    });
    return { killed, seen: check.seen };
  } finally {
    await ws.remove();
  }
}

/** The table sink on S3 (s3rver) killed before every `every`-th step from `fromStep` on. */
export async function s3TableKills(steps: { fromStep: number; every: number }): Promise<number> {
  const ws = await workspace('catalog-streams-kill-s3table-');
  try {
    await mkdir(join(ws.dir, 'scratch'));
    return await killAtEveryStep({
      dir: ws.dir,
      pipeline: `name: kill-s3-table\n${SOURCE}\nsinks:\n  - { type: table, path: "s3://${s3.bucket}/lake/table", key: id, maxRows: ${MAX_ROWS} }\n`,
      env: s3Env(),
      check: tableCheck(s3Storage('lake/table/', join(ws.dir, 'scratch')), Object.keys(HIVE_FOREIGN)),
      untouched: await placeForeignS3('lake/table/', HIVE_FOREIGN),
      ...steps,
    });
  } finally {
    await ws.remove();
  }
}

/** The table's invariants; `pending`: ids touched since the last visible version. */
export function tableCheck(storage: Storage, foreign: readonly string[] = []) {
  const checkedVersions = new Map<string, string[]>();
  return async (after: 'kill' | 'good', pending: ReadonlySet<string>) => {
    const text = await storage.read('_table.json');
    if (text === undefined) {
      expect(after, 'a good run leaves a _table.json').toBe('kill');
      return { committed: [] };
    }
    const manifest = JSON.parse(text) as TableManifest;
    const current = manifest.versions.find((v) => v.runId === manifest.current)!;
    // A reader of the current version: the whole snapshot, one row per product.
    expect(
      await parquetIds(
        storage,
        current.snapshot.map((f) => f.path),
      ),
    ).toEqual(ids);
    expect(current.rows).toBe(ids.length);
    expect(await storage.read(manifest.state), `the state ${manifest.state} exists`).toBeDefined();
    // Every version's change rows: exactly what the oracle expects of it.
    for (const [index, version] of manifest.versions.entries()) {
      const rows = await changeRows(
        storage,
        version.changes.map((f) => f.path),
      );
      const known = checkedVersions.get(version.runId);
      if (known) {
        expect(rows, `version ${version.runId}'s changes are unchanged`).toEqual(known);
        continue;
      }
      // A version seen for the first time is the newest, and holds the ids touched since the one before.
      expect(index, `an unseen version ${version.runId} is the newest`).toBe(manifest.versions.length - 1);
      const expected = [...pending].map((id) => `${index === 0 ? 'insert' : 'update'} ${id}`).sort();
      expect(rows, `version ${version.runId}'s change rows`).toEqual(expected);
      checkedVersions.set(version.runId, rows);
    }
    if (after === 'good') {
      // Beside them: the foreign files (never removed) and the journal of each version's run
      // (its files are still listed); a killed run's journal went with its files.
      const listed = new Set([
        '_table.json',
        manifest.state,
        ...manifest.versions.flatMap((v) => [...v.snapshot, ...v.changes].map((f) => f.path)),
        ...foreign,
        ...manifest.versions.map((v) => `_journal/${v.runId}.json`),
      ]);
      const present = await storage.list();
      expect(
        present,
        `nothing but what _table.json lists; also: ${present.filter((p) => !listed.has(p)).join(', ')}`,
      ).toEqual([...listed].sort());
    }
    return { committed: manifest.versions.map((v) => v.runId) };
  };
}

/**
 * The Iceberg layout's invariants, read by icebird through the version hints as an engine would:
 * current/ is always a whole snapshot, one row per product; changes/ holds each committed run's
 * rows once. A kill between the two tables' commits may leave changes/ one run ahead of current/
 * (its rows are this run's pending ids); the next good run rolls it back and writes them again
 * under its own run id, so after a good run every run in changes/ is one current/ committed.
 */
export function icebergCheck(root: string, foreign: readonly string[] = []) {
  const checkedRuns = new Map<string, string[]>();
  const committedRuns: string[] = [];
  const seen = { ahead: 0, repaired: 0 };
  let aheadLeft = false;
  const check = async (after: 'kill' | 'good', pending: ReadonlySet<string>, stderr: string) => {
    if (after === 'good') {
      // The run after a kill that left changes/ ahead says that it rolled it back.
      const said = jsonLines(stderr).some((l) => l.event === 'table.repaired');
      expect(said, 'table.repaired told exactly when changes/ was ahead').toBe(aheadLeft);
      if (said) seen.repaired++;
      aheadLeft = false;
    }
    if (!existsSync(join(root, 'current/metadata/version-hint.text'))) {
      expect(after, 'a good run leaves current/').toBe('kill');
      return { committed: [] };
    }
    const current = await readIceberg(join(root, 'current'));
    expect(current.map((r) => String(r.id)).sort()).toEqual(ids);
    const runIds = [...new Set(current.map((r) => String(r._run_id ?? '')))];
    expect(runIds).toEqual(['']);
    const head = await icebergReferences(join(root, 'current'));
    const runId = head.currentRunId!;
    if (!committedRuns.includes(runId)) committedRuns.push(runId);
    const changes = await readIceberg(join(root, 'changes'));
    const byRun = new Map<string, string[]>();
    for (const r of changes) {
      const run = String(r._run_id);
      byRun.set(run, [...(byRun.get(run) ?? []), `${String(r._change)} ${String(r.id)}`]);
    }
    for (const [run, rows] of byRun) {
      rows.sort();
      const known = checkedRuns.get(run);
      if (known) {
        expect(rows, `run ${run}'s changes are unchanged`).toEqual(known);
        continue;
      }
      const first = checkedRuns.size === 0;
      const expected = [...pending].map((id) => `${first ? 'insert' : 'update'} ${id}`).sort();
      expect(rows, `run ${run}'s change rows`).toEqual(expected);
      if (committedRuns.includes(run)) checkedRuns.set(run, rows);
      else {
        expect(after, `changes/ ahead of current/ (run ${run}) only after a kill`).toBe('kill');
        seen.ahead++;
        aheadLeft = true;
      }
    }
    if (after === 'good') {
      expect([...byRun.keys()].every((run) => committedRuns.includes(run))).toBe(true);
      // Beside them: the foreign files, and journals: one per run whose change rows changes/
      // holds, and none that names no file left (a killed run's journal stays while the metadata
      // log still names a metadata file it wrote).
      const referenced = new Set<string>([head.state!, ...(head.positions ? [head.positions] : []), ...foreign]);
      for (const table of ['current', 'changes']) {
        const refs = await icebergReferences(join(root, table));
        for (const rel of refs.files) referenced.add(`${table}/${rel}`);
      }
      const all = await listFiles(root);
      const journals = all.filter((p) => p.startsWith('_journal/'));
      const present = all.filter((p) => !p.startsWith('_journal/'));
      expect(
        present,
        `nothing the tables do not reference; also: ${present.filter((p) => !referenced.has(p)).join(', ')}`,
      ).toEqual([...referenced].sort());
      for (const run of byRun.keys()) expect(journals).toContain(`_journal/${run}.json`);
      for (const journal of journals) {
        const { files } = JSON.parse(await readFile(join(root, journal), 'utf8')) as { files: string[] };
        expect(
          files.some((f) => !f.endsWith('version-hint.text') && present.includes(f)),
          `${journal} names a file still there`,
        ).toBe(true);
      }
    }
    return { committed: [runId] };
  };
  return Object.assign(check, { seen });
}

export function s3Env(): NodeJS.ProcessEnv {
  return sandboxEnv(sandbox, {
    AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
    AWS_REGION: 'us-east-1',
    S3_ENDPOINT: s3.endpoint,
  });
}
