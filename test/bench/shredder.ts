// Bench: the Parquet encoding alone, over the bench chain's rows (the `be` profile's products
// after the chain's transforms, shaped by the parquet sink), in one process: the encoder before
// the compiled shredder (test/sinks/legacy-parquet-encoder.ts) against the current one (its walk
// a tree of closures), runs alternated, CPU per row of each; and each compression of the current one (file bytes, CPU).
//
//   npx tsc -p tsconfig.json && node --expose-gc dist/test/bench/shredder.js [products] [repeat]
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import type { ByteDestination } from '../../src/sinks/shared/byte-destination.js';
import { ParquetEncoder, zstdCompressor, type ParquetCompression } from '../../src/sinks/parquet/parquet-encoder.js';
import { type TypedColumn, type ShapedRow } from '../../src/sinks/shared/column-types.js';
import { chainRows } from '../sinks/chain-rows.js';
import { ParquetEncoder as LegacyParquetEncoder } from '../sinks/legacy-parquet-encoder.js';
import { isMain } from './measure.js';

function countingDestination(): ByteDestination {
  let bytes = 0;
  return {
    kind: 'file',
    location: 'memory',
    get bytes() {
      return bytes;
    },
    write(chunk) {
      bytes += chunk.length;
    },
    async commit() {},
    async abort() {},
  };
}

/** Encodes `rows` `times` times over; returns CPU µs per row and the file's bytes. */
async function timeEncoder(
  make: (dest: ByteDestination) => { write(row: ShapedRow): void | Promise<void>; end(): Promise<void> },
  rows: readonly ShapedRow[],
  times: number,
): Promise<{ usPerRow: number; bytes: number }> {
  globalThis.gc?.();
  const cpu0 = process.cpuUsage();
  let bytes = 0;
  for (let t = 0; t < times; t++) {
    const dest = countingDestination();
    const encoder = make(dest);
    for (const row of rows) await encoder.write(row);
    await encoder.end();
    bytes = dest.bytes;
  }
  const cpu = process.cpuUsage(cpu0);
  return { usPerRow: (cpu.user + cpu.system) / (rows.length * times), bytes };
}

const options = (compression: ParquetCompression) => ({
  compression,
  rowGroupRows: 10_000,
  rowGroupBytes: 16 * 1024 * 1024,
});

export async function shredderBench(products = 5000, repeat = 5): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(os.tmpdir(), 'bench-shredder-'));
  try {
    const chain = await chainRows('be', products, dir);
    const rows = chain.shape(chain.records);
    const columns: readonly TypedColumn[] = chain.columns;
    const legacy: number[] = [];
    const current: number[] = [];
    for (let r = 0; r < repeat; r++) {
      current.push((await timeEncoder((d) => new ParquetEncoder(d, columns, options('snappy')), rows, 2)).usPerRow);
      legacy.push(
        (
          await timeEncoder(
            (d) =>
              new LegacyParquetEncoder(
                d,
                columns,
                options('snappy') as { compression: 'snappy'; rowGroupRows: number; rowGroupBytes: number },
              ),
            rows,
            2,
          )
        ).usPerRow,
      );
    }
    const compressions: Record<string, { usPerRow: number[]; bytes: number }> = {};
    const available = (['snappy', 'gzip', 'zstd', 'none'] as const).filter((c) => c !== 'zstd' || zstdCompressor());
    for (let r = 0; r < repeat; r++) {
      for (const compression of available) {
        const run = await timeEncoder((d) => new ParquetEncoder(d, columns, options(compression)), rows, 1);
        (compressions[compression] ??= { usPerRow: [], bytes: run.bytes }).usPerRow.push(run.usPerRow);
      }
    }
    const fmt = (list: number[]) => list.map((v) => Math.round(v * 10) / 10);
    return {
      node: process.version,
      rows: rows.length,
      columns: columns.length,
      legacyUsPerRow: fmt(legacy),
      currentUsPerRow: fmt(current),
      ratios: fmt(current.map((c, i) => (c / legacy[i]!) * 100)).map((p) => `${p} %`),
      compressions: Object.fromEntries(
        Object.entries(compressions).map(([name, c]) => [name, { usPerRow: fmt(c.usPerRow), bytes: c.bytes }]),
      ),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) {
  const [products, repeat] = process.argv.slice(2).map(Number);
  console.log(JSON.stringify(await shredderBench(products || undefined, repeat || undefined), null, 2));
}
