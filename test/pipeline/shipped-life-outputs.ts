// What each shipped pipeline file leaves behind, read the way a data engineer reads it, for
// shipped-pipelines-life.test.ts: every product output as id -> meta.updatedAt (unix seconds),
// its dead letters of a run, and what the model of the test expects of it after a run.
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { readIceberg } from '../helpers/iceberg-reader.js';
import type { S3TestServer } from '../helpers/s3-server.js';
import { listFiles } from '../cli/cli-process.js';

export type Versions = Map<string, number>;
export const ALL = ['active', 'replaced', 'inactive'] as const;

/**
 * How an output holds the catalog: `snapshot` (each run extracts everything, the output is the
 * last run's), `lake` (every run appends what it read; a reader keeps each id's newest version,
 * nothing is ever deleted), `table` (the table sink: incremental runs merge, full runs delete).
 */
export type Kind = 'snapshot' | 'lake' | 'table';

export interface ProductOutput {
  /** The pipeline's name (its summary line). */
  pipeline: string;
  kind: Kind;
  statuses: readonly string[];
  /** Only products with a photo (custom-transform's filter). */
  photos?: boolean;
  /** The pipeline validates: invalid products go to the dead letters, not the output. */
  validates: boolean;
  read(): Promise<Versions>;
  /** The ids in this run's dead letters. */
  deadLetters?(runId: string): Promise<string[]>;
  /** Whether those are this run's alone (a name with {run}); else a later run without any leaves them. */
  lettersPerRun?: boolean;
  /** A table's `delete` change rows of this run: their ids. */
  deleted?(runId: string): Promise<string[]>;
}

export interface Env {
  dir: string;
  s3: S3TestServer;
  prefix: string;
  scratch: string;
}

const today = () => new Date().toISOString().slice(0, 10);

async function parquetVersions(files: string[], newest = false): Promise<Versions> {
  if (files.length === 0) return new Map();
  const list = files.map(sqlString).join(', ');
  const { rows } = await duckdbQuery(
    `SELECT id, ${newest ? 'max' : 'any_value'}(epoch(meta_updated_at))::BIGINT AS u, count(*)::INTEGER AS n FROM read_parquet([${list}], hive_partitioning = false, union_by_name = true) GROUP BY id`,
  );
  const out: Versions = new Map();
  for (const r of rows) {
    // A snapshot holds each product once; a lake may hold several versions of one.
    if (!newest && r.n !== 1) throw new Error(`product ${String(r.id)} is ${String(r.n)} times in ${list}`);
    out.set(String(r.id), Number(r.u));
  }
  return out;
}

async function jsonlIds(text: string): Promise<string[]> {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const letter = JSON.parse(l) as { id?: unknown; record?: { id?: unknown } };
      return String(letter.id ?? letter.record?.id);
    })
    .sort();
}

async function localLetters(file: string): Promise<string[]> {
  return existsSync(file) ? jsonlIds(await readFile(file, 'utf8')) : [];
}

class S3Reader {
  constructor(readonly env: Env) {}

  async keys(prefix: string): Promise<string[]> {
    const out: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.env.s3.client.send(
        new ListObjectsV2Command({ Bucket: this.env.s3.bucket, Prefix: prefix, ContinuationToken: token }),
      );
      out.push(...(page.Contents ?? []).map((c) => c.Key!));
      token = page.NextContinuationToken;
    } while (token);
    return out.sort();
  }

  async get(key: string): Promise<Buffer | undefined> {
    try {
      const res = await this.env.s3.client.send(new GetObjectCommand({ Bucket: this.env.s3.bucket, Key: key }));
      return Buffer.from(await res.Body!.transformToByteArray());
    } catch {
      return undefined;
    }
  }

  /** The Parquet parts every `_manifest.json` under `prefix` lists, downloaded. */
  async manifestParts(prefix: string): Promise<string[]> {
    const files: string[] = [];
    for (const key of (await this.keys(prefix)).filter((k) => k.endsWith('/_manifest.json'))) {
      const manifest = JSON.parse((await this.get(key))!.toString()) as { files: Array<{ key: string }> };
      for (const f of manifest.files) {
        const body = await this.get(f.key);
        if (!body) throw new Error(`${key} lists ${f.key}, which is missing`);
        const file = join(this.env.scratch, `${files.length}-${Math.random().toString(36).slice(2)}.parquet`);
        await writeFile(file, body);
        files.push(file);
      }
    }
    return files;
  }

  async letters(key: string): Promise<string[]> {
    const body = await this.get(key);
    return body ? jsonlIds(gunzipSync(body).toString()) : [];
  }
}

interface HiveManifest {
  current: string;
  versions: Array<{ runId: string; snapshot: Array<{ path: string }>; changes: Array<{ path: string }> }>;
}

/** The ids of the `delete` rows of run `runId` in a local hive-layout table. */
async function tableDeletes(root: string, runId: string): Promise<string[]> {
  const manifest = JSON.parse(await readFile(join(root, '_table.json'), 'utf8')) as HiveManifest;
  const version = manifest.versions.find((v) => v.runId === runId)!;
  if (version.changes.length === 0) return [];
  const files = version.changes.map((f) => sqlString(join(root, f.path))).join(', ');
  const { rows } = await duckdbQuery(
    `SELECT id FROM read_parquet([${files}], hive_partitioning = false) WHERE _change = 'delete' ORDER BY id`,
  );
  return rows.map((r) => String(r.id));
}

/** The ids of the `delete` rows of run `runId` in an Iceberg table's changes/. */
async function icebergDeletes(root: string, runId: string): Promise<string[]> {
  const rows = await readIceberg(join(root, 'changes'));
  return rows
    .filter((r) => r._run_id === runId && r._change === 'delete')
    .map((r) => String(r.id))
    .sort();
}

/** The local table's current snapshot (through `_table.json`). */
async function tableSnapshot(root: string): Promise<Versions> {
  const file = join(root, '_table.json');
  if (!existsSync(file)) return new Map();
  const manifest = JSON.parse(await readFile(file, 'utf8')) as HiveManifest;
  const version = manifest.versions.find((v) => v.runId === manifest.current)!;
  return parquetVersions(version.snapshot.map((f) => join(root, f.path)));
}

async function icebergCurrent(root: string): Promise<Versions> {
  if (!existsSync(join(root, 'current/metadata'))) return new Map();
  const rows = await readIceberg(join(root, 'current'));
  const out: Versions = new Map();
  for (const r of rows) {
    const id = String(r.id);
    if (out.has(id)) throw new Error(`product ${id} is twice in the iceberg table`);
    const u = r.meta_updated_at;
    out.set(id, Math.floor((u instanceof Date ? u.getTime() : Number(u) / 1000) / 1000));
  }
  return out;
}

/** The product outputs of every shipped file, by file name; reference-data.yml and media-mirror.yml are checked on their own. */
export function productOutputs(env: Env): Record<string, ProductOutput[]> {
  const out = (rel: string) => join(env.dir, 'out', rel);
  const s3 = new S3Reader(env);
  const p = env.prefix;
  return {
    'custom-transform.yml': [
      {
        pipeline: 'products-price-bands',
        kind: 'snapshot',
        statuses: ['active'],
        photos: true,
        validates: false,
        read: () => parquetVersions([out('price-bands/price-bands.parquet')]),
      },
    ],
    'demo.yml': [
      {
        pipeline: 'demo-products',
        kind: 'snapshot',
        statuses: ALL,
        validates: true,
        read: () => parquetVersions([out(`demo/products/dt=${today()}/products.parquet`)]),
        deadLetters: () => localLetters(out('demo/rejected-products.jsonl')),
      },
    ],
    'products-csv.yml': [
      {
        pipeline: 'products-csv',
        kind: 'snapshot',
        statuses: ['active'],
        validates: true,
        read: async () => {
          const { rows } = await duckdbQuery(
            `SELECT id, epoch(meta_updated_at::TIMESTAMPTZ)::BIGINT AS u FROM read_csv(${sqlString(out('products-csv/products.csv'))}, header = true, all_varchar = true, allow_quoted_nulls = false)`,
          );
          const versions: Versions = new Map(rows.map((r) => [String(r.id), Number(r.u)]));
          if (versions.size !== rows.length) throw new Error('products.csv holds a product twice');
          return versions;
        },
        deadLetters: () => localLetters(out(`products-csv/rejected-${today()}.jsonl`)),
      },
    ],
    'products-iceberg.yml': [
      {
        pipeline: 'products-iceberg',
        kind: 'table',
        statuses: ALL,
        validates: true,
        read: () => icebergCurrent(out('products-iceberg')),
        deadLetters: (run) => localLetters(out(`products-iceberg/rejected/dt=${today()}/rejected-${run}.jsonl`)),
        lettersPerRun: true,
        deleted: (run) => icebergDeletes(out('products-iceberg'), run),
      },
    ],
    'products-lake-s3.yml': [
      {
        pipeline: 'products-lake',
        kind: 'snapshot',
        statuses: ALL,
        validates: true,
        read: async () => parquetVersions(await s3.manifestParts(`${p}/products/dt=${today()}/`)),
        deadLetters: (run) => s3.letters(`${p}/rejected/products/dt=${today()}/rejected-${run}.jsonl.gz`),
        lettersPerRun: true,
      },
    ],
    'products-nightly-s3.yml': [
      {
        pipeline: 'products-nightly-s3',
        kind: 'lake',
        statuses: ALL,
        validates: true,
        read: async () => parquetVersions(await s3.manifestParts(`${p}/products-nightly/dt=`), true),
        deadLetters: (run) => s3.letters(`${p}/products-nightly/rejected/dt=${today()}/run=${run}/rejected.jsonl.gz`),
        lettersPerRun: true,
      },
    ],
    'products-nightly.yml': [
      {
        pipeline: 'products-nightly',
        kind: 'lake',
        statuses: ALL,
        validates: true,
        read: async () => {
          const base = out('products-nightly');
          const files = (await listFiles(base)).filter((f) => /^dt=[^/]+\/products-[^/]+\.parquet$/.test(f));
          return parquetVersions(
            files.map((f) => join(base, f)),
            true,
          );
        },
        deadLetters: (run) => localLetters(out(`products-nightly/rejected/dt=${today()}/rejected-${run}.jsonl`)),
        lettersPerRun: true,
      },
    ],
    'products-table.yml': [
      {
        pipeline: 'products-table',
        kind: 'table',
        statuses: ALL,
        validates: true,
        read: () => tableSnapshot(out('products-table')),
        deadLetters: (run) => localLetters(out(`products-table/rejected/dt=${today()}/rejected-${run}.jsonl`)),
        lettersPerRun: true,
        deleted: (run) => tableDeletes(out('products-table'), run),
      },
    ],
    'reference-data.yml': [],
    // Files, not product rows: test/media/ checks what it stores; here it lives through the same runs and kill.
    'media-mirror.yml': [],
  };
}
