// The table sink's format: iceberg outside the 20 days (table-iceberg-history.test.ts): on S3
// (s3rver, read back by icebird through the bucket), schema evolution (a column added keeps
// every other field id; the earlier snapshot still reads without it), the folder of one layout
// refused by the other, options that do not fit, and `catalog-streams history` over the
// snapshots.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunFailedError } from '../../src/pipeline/runner.js';
import { readTableVersions } from '../../src/pipeline/run-history.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { startS3Server, useS3rverEnvironment, type S3TestServer } from '../helpers/s3-server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { readIceberg, readIcebergMetadata } from '../helpers/iceberg-reader.js';
import { startIcebergRestServer, type IcebergRestServer } from '../helpers/iceberg-rest-server.js';
import { tempDir } from './records.js';
import { dayTime, pipelineYaml, TableDays } from './table-harness.js';

let sandbox: TestSandbox;
let ids: string[];
beforeAll(async () => {
  sandbox = await startTestSandbox({ products: 300, seed: 41 });
  const days = new TableDays(sandbox, '', '');
  ids = (await days.visible()).map((p) => String(p.id)).sort();
});
afterAll(async () => {
  await sandbox?.close();
});

/** The harness pipeline with `format: iceberg` and `extra` lines added to the table sink. */
function icebergYaml(tablePath: string, extra = ''): string {
  const yaml = pipelineYaml(tablePath).replace(
    `    path: "${tablePath}"\n`,
    `    path: "${tablePath}"\n    format: iceberg\n${extra}`,
  );
  expect(yaml).toContain('format: iceberg');
  return yaml;
}

async function failure(run: Promise<unknown>): Promise<RunFailedError> {
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RunFailedError);
  return err as RunFailedError;
}

describe('table sink, format: iceberg on S3 (s3rver)', () => {
  let s3: S3TestServer;
  let restore: () => void;
  beforeAll(async () => {
    s3 = await startS3Server({ bucket: 'lake' });
    restore = useS3rverEnvironment(s3.endpoint);
  });
  afterAll(async () => {
    restore?.();
    await s3?.stop();
  });

  const objects = async (bucket: string, key: string) => {
    try {
      const res = await s3.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return await res.Body!.transformToByteArray();
    } catch {
      return undefined;
    }
  };

  it('a first and an incremental run: both tables read back through the bucket, locations under the prefix', async () => {
    const dir = await tempDir('table-iceberg-s3-');
    const days = new TableDays(sandbox, dir, icebergYaml('s3://lake/ice/products'));
    await days.write();
    const first = await days.run(dayTime(0));
    expect(first.status).toBe('succeeded');
    const touched = await days.mutate('touch', { count: 5, at: Math.floor(dayTime(1, 1).getTime() / 1000) });
    const second = await days.run(dayTime(1));
    expect(second.status).toBe('succeeded');

    const current = await readIceberg('s3://lake/ice/products/current', { objects });
    expect(current.map((r) => String(r.id)).sort()).toEqual(ids);
    const changes = await readIceberg('s3://lake/ice/products/changes', { objects });
    expect(
      changes
        .filter((r) => r._run_id === second.runId)
        .map((r) => `${String(r._change)} ${String(r.id)}`)
        .sort(),
    ).toEqual(touched.map((id) => `update ${id}`).sort());
    expect(changes.filter((r) => r._run_id === first.runId)).toHaveLength(ids.length);

    const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: 'lake', Prefix: 'ice/products/' }));
    const keys = (listed.Contents ?? []).map((o) => o.Key!);
    const metadata = JSON.parse(
      Buffer.from((await objects('lake', 'ice/products/current/metadata/v2.metadata.json'))!).toString('utf8'),
    );
    expect(metadata.location).toBe('s3://lake/ice/products/current');
    expect(metadata.snapshots).toHaveLength(2);
    // Only the current state, the runs' journals and the tables' own folders; no lock left.
    expect(keys.filter((k) => !/^ice\/products\/(current|changes)\/(data|metadata)\//.test(k)).sort()).toEqual([
      `ice/products/_journal/${first.runId}.json`,
      `ice/products/_journal/${second.runId}.json`,
      `ice/products/_table/positions-${second.runId}.bin.gz`,
      `ice/products/_table/state-${second.runId}.v8.gz`,
    ]);
  }, 120_000);
});

describe('table sink, format: iceberg with a REST catalog (spec-following test server)', () => {
  let catalog: IcebergRestServer;
  let restoreEnv: () => void;
  beforeAll(async () => {
    catalog = await startIcebergRestServer({ clients: { 'lake-writer': 'writer-secret-1234' } });
    const saved = process.env.ICEBERG_REST_CREDENTIAL;
    process.env.ICEBERG_REST_CREDENTIAL = 'lake-writer:writer-secret-1234';
    restoreEnv = () => {
      if (saved === undefined) delete process.env.ICEBERG_REST_CREDENTIAL;
      else process.env.ICEBERG_REST_CREDENTIAL = saved;
    };
  });
  afterAll(async () => {
    restoreEnv?.();
    await catalog?.close();
  });

  /** A table as the catalog holds it, read by icebird from the metadata file the catalog names. */
  const read = (dir: string, name: string) => {
    const stored = catalog.table(['lake', 'nightly'], name)!;
    expect(stored, `the catalog has lake.nightly.${name}`).toBeDefined();
    const table = join(dir, 'lake/products', name === 'products' ? 'current' : 'changes');
    return readIceberg(table, { metadataFileName: stored.metadataLocation.split('/').at(-1)! });
  };

  it('commits both tables through the catalog; a failed commit publishes nothing and the next run catches up', async () => {
    const dir = await tempDir('table-iceberg-rest-');
    const days = new TableDays(
      sandbox,
      dir,
      icebergYaml('lake/products', `    catalog: { type: rest, uri: "${catalog.url}", namespace: [lake, nightly] }\n`),
    );
    await days.write();
    const first = await days.run(dayTime(4));
    expect(first.status).toBe('succeeded');
    expect((await read(dir, 'products')).map((r) => String(r.id)).sort()).toEqual(ids);
    expect(await read(dir, 'products_changes')).toHaveLength(ids.length);
    // The files-only pointer is not written: the catalog is the commit point.
    await expect(readFile(join(dir, 'lake/products/current/metadata/version-hint.text'))).rejects.toThrow();

    // The catalog refuses the next run's transaction: nothing moves, the run fails with the code.
    const touched = await days.mutate('touch', { count: 4, at: Math.floor(dayTime(5, 1).getTime() / 1000) });
    const versions = () => ['products', 'products_changes'].map((n) => catalog.table(['lake', 'nightly'], n)!.version);
    const before = versions();
    catalog.failNextCommit({ status: 409 });
    const refused = await failure(days.run(dayTime(5)));
    expect(refused.code).toBe('iceberg.commit_conflict');
    expect(versions()).toEqual(before);
    const transactions = catalog.requests.filter((r) => r.path.endsWith('/transactions/commit'));
    expect(transactions.at(-1)!.status).toBe(409);

    // The next run (the cursor was kept) brings the touched products as updates, once.
    const next = await days.run(dayTime(6));
    expect(next.status).toBe('succeeded');
    const changes = await read(dir, 'products_changes');
    expect(
      changes
        .filter((r) => r._run_id === next.runId)
        .map((r) => `${String(r._change)} ${String(r.id)}`)
        .sort(),
    ).toEqual(touched.map((id) => `update ${id}`).sort());
    expect(changes.filter((r) => r._run_id === refused.summary.runId)).toEqual([]);
    expect(versions().map((v, i) => v - before[i]!)).toEqual([1, 1]);
  }, 120_000);
});

describe('table sink, format: iceberg: schema, layouts and options', () => {
  it('a column added to the schema adds a field: the others keep their ids, earlier snapshots read as written', async () => {
    const dir = await tempDir('table-iceberg-evolve-');
    const narrow = icebergYaml('lake/products').replace(
      /- \{ type: pick, fields: \[[^\]]*\] \}/,
      '- { type: pick, fields: [id, status, meta.updatedAt] }',
    );
    const days = new TableDays(sandbox, dir, narrow);
    await days.write();
    expect((await days.run(dayTime(10))).status).toBe('succeeded');
    const root = join(dir, 'lake/products/current');
    const before = await readIcebergMetadata(root);
    const wide = new TableDays(sandbox, dir, icebergYaml('lake/products'));
    await wide.write();
    expect((await wide.run(dayTime(11), { full: true })).status).toBe('succeeded');
    const after = await readIcebergMetadata(root);

    type Field = { id: number; name: string };
    const fields = (m: Record<string, any>): Field[] =>
      m.schemas.find((s: { 'schema-id': number }) => s['schema-id'] === m['current-schema-id']).fields;
    const was = new Map(fields(before).map((f) => [f.name, f.id]));
    const now = fields(after);
    for (const f of now) if (was.has(f.name)) expect(f.id, f.name).toBe(was.get(f.name));
    const added = now.filter((f) => !was.has(f.name));
    expect(added.map((f) => f.name).sort()).toEqual(['brands', 'deleted', 'publicPrice']);
    for (const f of added) expect(f.id).toBeGreaterThan(before['last-column-id']);
    expect(after.schemas).toHaveLength(2);

    const rows = await readIceberg(root);
    expect(rows).toHaveLength(ids.length);
    expect(rows.every((r) => typeof r.deleted === 'boolean')).toBe(true);
    // The first run's snapshot, read as it was written (time travel to its metadata file).
    const old = await readIceberg(root, { metadataFileName: 'v1.metadata.json' });
    expect(old).toHaveLength(ids.length);
    expect(Object.keys(old[0]!).sort()).toEqual(['_extra', 'id', 'meta_updatedAt', 'status']);

    // catalog-streams history reads the versions from current/'s snapshots.
    const [loaded] = parsePipelines(await readFile(join(dir, 'products-table.yml'), 'utf8'), wide.registry, {
      file: join(dir, 'products-table.yml'),
    });
    const tables = await readTableVersions(loaded!);
    expect(tables).toHaveLength(1);
    expect(tables[0]!.location).toBe(join(root, 'metadata/version-hint.text'));
    expect(tables[0]!.versions.map((v) => [v.mode, v.rows, v.counts.inserted])).toEqual([
      ['first', ids.length, ids.length],
      ['full', ids.length, 0],
    ]);
  }, 120_000);

  it("one layout's folder is refused by the other, before anything is written", async () => {
    // Each pipeline in a folder of its own (its own state), the tables in one shared folder.
    const lake = await tempDir('table-iceberg-layouts-');
    const at = async (tablePath: string, yaml: (p: string) => string) => {
      const days = new TableDays(sandbox, await tempDir('table-iceberg-layout-run-'), yaml(join(lake, tablePath)));
      await days.write();
      return days;
    };
    const hive = await at('hive', (p) => pipelineYaml(p));
    expect((await hive.run(dayTime(12))).status).toBe('succeeded');
    const onHive = await at('hive', (p) => icebergYaml(p));
    const refused = await failure(onHive.run(dayTime(13)));
    expect(refused.code).toBe('table.layout_mismatch');
    expect(refused.message).toContain('_table.json');

    const ice = await at('ice', (p) => icebergYaml(p));
    expect((await ice.run(dayTime(12))).status).toBe('succeeded');
    const onIce = await at('ice', (p) => pipelineYaml(p));
    const refused2 = await failure(onIce.run(dayTime(13)));
    expect(refused2.code).toBe('table.layout_mismatch');
    expect(refused2.message).toContain('format: iceberg');
  }, 120_000);

  it('timestamps: raw keeps the record timestamps as longs; _changed_at is still a timestamptz', async () => {
    const dir = await tempDir('table-iceberg-raw-');
    const days = new TableDays(sandbox, dir, icebergYaml('lake/raw', '    timestamps: raw\n'));
    await days.write();
    const summary = await days.run(dayTime(14));
    expect(summary.status).toBe('succeeded');
    const metadata = await readIcebergMetadata(join(dir, 'lake/raw/changes'));
    const types = new Map(
      (metadata.schemas.at(-1).fields as Array<{ name: string; type: unknown }>).map((f) => [f.name, f.type]),
    );
    expect([types.get('meta_updatedAt'), types.get('_changed_at')]).toEqual(['long', 'timestamptz']);
    const [row] = await readIceberg(join(dir, 'lake/raw/changes'));
    expect(row!._changed_at).toEqual(dayTime(14));
  }, 60_000);

  it('millisecond timestamps and a catalog without format: iceberg are refused', async () => {
    const dir = await tempDir('table-iceberg-options-');
    const millis = new TableDays(sandbox, dir, icebergYaml('lake/a', '    timestamps: millis\n'));
    await millis.write();
    const a = await failure(millis.run(dayTime(0)));
    expect(a.exitCode).toBe(2);
    expect(a.message).toContain('microseconds');
    const hiveCatalog = new TableDays(
      sandbox,
      dir,
      pipelineYaml('lake/b').replace(
        '    path: "lake/b"\n',
        '    path: "lake/b"\n    catalog: { type: rest, uri: "http://127.0.0.1:9/", namespace: lake }\n',
      ),
    );
    await hiveCatalog.write();
    const b = await failure(hiveCatalog.run(dayTime(0)));
    expect(b.exitCode).toBe(2);
    expect(b.message).toContain('catalog: is an option of format: iceberg');
  }, 60_000);
});
