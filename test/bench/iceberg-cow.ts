// Iceberg current/ row deltas (issue 41): simulated days over a synthetic catalog fed to the table
// sink in code. Day 0 is the first run; each later day an incremental run gets `--changes` of the
// catalog (updates of keys drawn uniformly, or `--skew` of them among the newest tenth of the ids,
// and new products with higher ids: a tenth of the changes); one day is a full read (no cursor, as
// after fullReadEvery) and one a full refresh (--full-refresh), both dropping a few products
// (deletes: position deletes on the full read, a rewrite on the refresh). For each run the bytes
// of data and delete files written into current/ (added-files-size of its snapshot) against the
// table's size (total-files-size) and against what the full refresh wrote (a full rewrite), with
// files added/replaced, delete files and position deletes in the table.
//
// With --verify, icebird reads current/ after every run and compares it with the catalog of that
// day (ids and values), then reads every earlier version (time travel) against its day's.
//
//   npx tsc -p tsconfig.json && node dist/test/bench/iceberg-cow.js [--products 100000] [--days 20]
//     [--changes 0.01] [--file-rows 1000] [--skew 0] [--seed 1] [--verify]
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { tableSink } from '../../src/sinks/index.js';
import type { TableFilesReport } from '../../src/sinks/table/table-layout.js';
import { testContext } from '../helpers/stage-context.js';
import { readIceberg } from '../helpers/iceberg-reader.js';

const { values: args } = parseArgs({
  options: {
    products: { type: 'string', default: '100000' },
    days: { type: 'string', default: '20' },
    changes: { type: 'string', default: '0.01' },
    'file-rows': { type: 'string', default: '1000' },
    skew: { type: 'string', default: '0' },
    seed: { type: 'string', default: '1' },
    verify: { type: 'boolean', default: false },
  },
});
const PRODUCTS = Number(args.products);
const DAYS = Number(args.days);
const CHANGES = Number(args.changes);
const FILE_ROWS = Number(args['file-rows']);
const SKEW = Number(args.skew);
const FULL_DAY = Math.floor(DAYS / 2);
/** A full read (no cursor): its changes and deletes written as a row delta. */
const READ_DAY = Math.max(1, Math.floor(DAYS / 4));

let seed = Number(args.seed);
/** A small deterministic generator (mulberry32): the same days for the same seed. */
function random(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

const WORDS = ['tablet', 'cream', 'forte', 'plus', 'junior', 'spray', 'gel', 'drops', 'caps', 'retard', 'mite'];
const columns = { id: 'string', name: 'string', price: 'int64', status: 'string', updatedAt: 'timestamp' } as const;

function product(n: number, version: number): Record<string, unknown> {
  const words = Array.from({ length: 4 }, (_, i) => WORDS[(n * 7 + i * 3 + version) % WORDS.length]).join(' ');
  return {
    id: `P${String(n).padStart(8, '0')}`,
    name: `${words} ${n % 997} mg`,
    price: 100 + ((n * 31 + version * 17) % 5000),
    status: version % 5 === 0 ? 'active' : 'inactive',
    updatedAt: 1_700_000_000 + version * 86_400,
    description: `${words} `.repeat(3 + (n % 5)),
  };
}

interface Catalog {
  versions: Map<number, number>;
  next: number;
}

/** Day d's changes: updated and new products (their numbers); applied to the catalog. */
function changeDay(catalog: Catalog, day: number): number[] {
  const count = Math.max(1, Math.round(catalog.versions.size * CHANGES));
  const keys = [...catalog.versions.keys()];
  const changed = new Set<number>();
  for (let i = 0; i < count; i++) {
    if (i % 10 === 9) {
      changed.add(catalog.next++);
      continue;
    }
    const recent = random() < SKEW;
    const from = recent ? Math.floor(keys.length * 0.9) : 0;
    changed.add(keys[from + Math.floor(random() * (keys.length - from))]!);
  }
  for (const n of changed) catalog.versions.set(n, day);
  return [...changed];
}

async function run(dir: string, day: number, records: Array<Record<string, unknown>>, mode: string) {
  const ctx = testContext({ baseDir: dir, run: mode === 'incremental' ? { cursor: { previous: 1 } } : {} });
  if (mode === 'full refresh') ctx.mode = { ...ctx.mode, fullRefresh: true };
  ctx.run.id = `run-${String(day).padStart(2, '0')}`;
  ctx.run.startedAt = new Date(Date.UTC(2026, 10, 1 + day, 2));
  const infos: Array<Record<string, unknown>> = [];
  ctx.events.on('info', (e) => infos.push(e as Record<string, unknown>));
  await pipeline(
    Readable.from(records),
    tableSink(
      { path: 'table', format: 'iceberg', key: 'id', columns, fileRows: FILE_ROWS, deletes: { maxRatio: 0.5 } },
      ctx,
    ),
  );
  const files = infos.find((e) => e.code === 'table.files')?.files as TableFilesReport;
  const meta = JSON.parse(
    await readFile(
      join(
        dir,
        `table/current/metadata/v${(await readFile(join(dir, 'table/current/metadata/version-hint.text'), 'utf8')).trim()}.metadata.json`,
      ),
      'utf8',
    ),
  ) as { 'current-snapshot-id': number; snapshots: Array<{ 'snapshot-id': number; summary: Record<string, string> }> };
  const summary = meta.snapshots.find((s) => s['snapshot-id'] === meta['current-snapshot-id'])!.summary;
  return {
    ...files,
    deleteFiles: Number(summary['total-delete-files']),
    positionDeletes: Number(summary['total-position-deletes']),
  };
}

/** A row as the catalog model says it, and as icebird read it: the values the sink was given. */
function expectedRow(n: number, version: number): string {
  const p = product(n, version);
  return `${String(p.id)}|${String(p.name)}|${String(p.price)}|${String(p.status)}`;
}

function readRow(r: Record<string, unknown>): string {
  return `${String(r.id)}|${String(r.name)}|${String(r.price)}|${String(r.status)}`;
}

/** Fails the bench when `current/` (or version `metadataFileName`) does not hold exactly `versions`. */
async function verify(dir: string, versions: ReadonlyMap<number, number>, label: string, metadataFileName?: string) {
  const rows = await readIceberg(join(dir, 'table/current'), metadataFileName ? { metadataFileName } : {});
  const got = rows.map(readRow).sort();
  const want = [...versions].map(([n, v]) => expectedRow(n, v)).sort();
  const first = got.findIndex((g, i) => g !== want[i]);
  if (got.length !== want.length || first >= 0)
    throw new Error(
      `${label}: current/ holds ${got.length} rows, the catalog ${want.length}; first difference at #${first}: ${got[first]} vs ${want[first]}`,
    );
}

const hint = async (dir: string) =>
  `v${(await readFile(join(dir, 'table/current/metadata/version-hint.text'), 'utf8')).trim()}.metadata.json`;

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-iceberg-cow-'));
  const catalog: Catalog = { versions: new Map(), next: PRODUCTS };
  for (let n = 0; n < PRODUCTS; n++) catalog.versions.set(n, 0);
  console.log(
    `iceberg current/ row deltas: ${PRODUCTS} products, ${DAYS} days, ${CHANGES * 100} % changed a day, fileRows ${FILE_ROWS}, skew ${SKEW}, full read on day ${READ_DAY}, full refresh on day ${FULL_DAY}`,
  );
  console.log('day mode          files +added -replaced  deletes (files)  bytes written  table bytes  written/table');
  const written: Array<{ mode: string; bytes: number; ratio: number }> = [];
  const versions: Array<{ day: number; metadata: string; catalog: Map<number, number> }> = [];
  for (let day = 0; day <= DAYS; day++) {
    let records: Array<Record<string, unknown>>;
    let mode: string;
    if (day === 0) {
      mode = 'first';
      records = [...catalog.versions].map(([n, v]) => product(n, v));
    } else if (day === FULL_DAY || day === READ_DAY) {
      mode = day === FULL_DAY ? 'full refresh' : 'full read';
      changeDay(catalog, day);
      // A few products gone: the full run infers their deletes.
      const keys = [...catalog.versions.keys()];
      for (let i = 0; i < Math.max(1, Math.round(keys.length * CHANGES * 0.1)); i++)
        catalog.versions.delete(keys[Math.floor(random() * keys.length)]!);
      records = [...catalog.versions].map(([n, v]) => product(n, v));
    } else {
      mode = 'incremental';
      records = changeDay(catalog, day).map((n) => product(n, catalog.versions.get(n)!));
    }
    const f = await run(dir, day, records, mode);
    if (args.verify) {
      await verify(dir, catalog.versions, `day ${day}`);
      versions.push({ day, metadata: await hint(dir), catalog: new Map(catalog.versions) });
    }
    const ratio = f.bytesWritten / f.bytesInTable;
    written.push({ mode, bytes: f.bytesWritten, ratio });
    const deletes = `${f.positionDeletes} (${f.deleteFiles})`;
    console.log(
      `${String(day).padStart(3)} ${mode.padEnd(12)} ${String(f.filesInTable).padStart(5)} ${String(f.filesAdded).padStart(6)} ${String(f.filesRemoved).padStart(9)}  ${deletes.padStart(15)}  ${String(f.bytesWritten).padStart(13)}  ${String(f.bytesInTable).padStart(11)}  ${(ratio * 100).toFixed(1).padStart(12)} %`,
    );
  }
  const incremental = written.filter((w) => w.mode === 'incremental');
  const full = written.find((w) => w.mode === 'full refresh')!.bytes;
  const share = incremental.map((w) => w.bytes / full);
  const mean = share.reduce((a, b) => a + b, 0) / share.length;
  const ofTable = incremental.reduce((a, w) => a + w.ratio, 0) / incremental.length;
  for (const v of versions) await verify(dir, v.catalog, `day ${v.day} read back later`, v.metadata);
  if (args.verify)
    console.log(
      `verified: current/ equal to the catalog after each of the ${versions.length} runs, and each earlier version (time travel) equal to its day's`,
    );
  const state = (await readFile(join(dir, 'table/current/metadata/version-hint.text'), 'utf8')).trim();
  console.log(
    `incremental runs: bytes written into current/ (data and delete files) = ${(mean * 100).toFixed(2)} % of the full refresh's rewrite on average (max ${(Math.max(...share) * 100).toFixed(2)} %; ${(ofTable * 100).toFixed(2)} % of the table's bytes); target <= 5 %; metadata version ${state}`,
  );
  await rm(dir, { recursive: true, force: true });
}

await main();
