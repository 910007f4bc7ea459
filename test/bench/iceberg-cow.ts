// Iceberg current/ copy-on-write per file (issue 41): simulated days over a synthetic catalog fed
// to the table sink in code. Day 0 is the first run; each later day an incremental run gets
// `--changes` of the catalog (updates of keys drawn uniformly, or `--skew` of them among the
// newest tenth of the ids, and new products with higher ids: a tenth of the changes), and one day
// is a full refresh that also drops a few products (deletes). For each run the bytes of data files
// written into current/ (added-files-size of its snapshot) against the table's size (what a full
// rewrite writes, total-files-size), with files added/replaced and the files in the table.
//
//   npx tsc -p tsconfig.json && node dist/test/bench/iceberg-cow.js [--products 100000] [--days 20]
//     [--changes 0.01] [--file-rows 1000] [--skew 0] [--seed 1]
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { tableSink } from '../../src/sinks/index.js';
import type { TableFilesReport } from '../../src/sinks/table/table-layout.js';
import { testContext } from '../helpers/stage-context.js';

const { values: args } = parseArgs({
  options: {
    products: { type: 'string', default: '100000' },
    days: { type: 'string', default: '20' },
    changes: { type: 'string', default: '0.01' },
    'file-rows': { type: 'string', default: '1000' },
    skew: { type: 'string', default: '0' },
    seed: { type: 'string', default: '1' },
  },
});
const PRODUCTS = Number(args.products);
const DAYS = Number(args.days);
const CHANGES = Number(args.changes);
const FILE_ROWS = Number(args['file-rows']);
const SKEW = Number(args.skew);
const FULL_DAY = Math.floor(DAYS / 2);

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

async function run(dir: string, day: number, records: Array<Record<string, unknown>>, incremental: boolean) {
  const ctx = testContext({ baseDir: dir, run: incremental ? { cursor: { previous: 1 } } : {} });
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
  return files;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-iceberg-cow-'));
  const catalog: Catalog = { versions: new Map(), next: PRODUCTS };
  for (let n = 0; n < PRODUCTS; n++) catalog.versions.set(n, 0);
  console.log(
    `iceberg current/ copy-on-write: ${PRODUCTS} products, ${DAYS} days, ${CHANGES * 100} % changed a day, fileRows ${FILE_ROWS}, skew ${SKEW}, full refresh on day ${FULL_DAY}`,
  );
  console.log('day mode          files +added -replaced  bytes written  table bytes  written/table');
  const ratios: number[] = [];
  for (let day = 0; day <= DAYS; day++) {
    let records: Array<Record<string, unknown>>;
    let mode: string;
    if (day === 0) {
      mode = 'first';
      records = [...catalog.versions].map(([n, v]) => product(n, v));
    } else if (day === FULL_DAY) {
      mode = 'full';
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
    const f = await run(dir, day, records, mode === 'incremental');
    const ratio = f.bytesWritten / f.bytesInTable;
    if (mode === 'incremental') ratios.push(ratio);
    console.log(
      `${String(day).padStart(3)} ${mode.padEnd(11)} ${String(f.filesInTable).padStart(6)} ${String(f.filesAdded).padStart(6)} ${String(f.filesRemoved).padStart(9)}  ${String(f.bytesWritten).padStart(13)}  ${String(f.bytesInTable).padStart(11)}  ${(ratio * 100).toFixed(1).padStart(12)} %`,
    );
  }
  const mean = ratios.reduce((a, b) => a + b, 0) / ratios.length;
  const state = (await readFile(join(dir, 'table/current/metadata/version-hint.text'), 'utf8')).trim();
  console.log(
    `incremental runs: bytes written into current/ = ${(mean * 100).toFixed(1)} % of a full rewrite on average (max ${(Math.max(...ratios) * 100).toFixed(1)} %); target <= 5 %; metadata version ${state}`,
  );
  await rm(dir, { recursive: true, force: true });
}

await main();
