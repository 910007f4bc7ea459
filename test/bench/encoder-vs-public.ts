// Bench: the Parquet encoding step alone with our encoder (ParquetEncoder: the shredder's leaves
// written by hyparquet-writer's writeColumn) against hyparquet-writer's public API
// (PublicApiParquetEncoder: `ParquetWriter.write({ columnData })`, which shreds each leaf itself),
// over the same shaped rows (the bench chain's `be` products after its transforms,
// shaped by the parquet sink), snappy, in one process, runs alternated; CPU µs per row of each.
//
//   npx tsc -p tsconfig.json && node --expose-gc dist/test/bench/encoder-vs-public.js [products] [repeat]
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import type { ByteDestination } from '../../src/sinks/shared/byte-destination.js';
import type { PartEncoder } from '../../src/sinks/shared/part-encoder.js';
import { ParquetEncoder, type ParquetEncoderOptions } from '../../src/sinks/parquet/parquet-encoder.js';
import { type ShapedRow } from '../../src/sinks/shared/column-types.js';
import { chainRows } from '../sinks/chain-rows.js';
import { isMain } from './measure.js';
import { PublicApiParquetEncoder } from './public-parquet-encoder.js';

/** Counts the bytes it is given and drops them. */
export function countingDestination(): ByteDestination & { bytes: number } {
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

type Make = (dest: ByteDestination) => PartEncoder<ShapedRow>;

/** Encodes `rows` `times` times over; CPU µs per row and the file's bytes. */
async function timeEncoder(make: Make, rows: readonly ShapedRow[], times: number) {
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

/** The parquet sink's defaults (rowGroupRows 10,000, rowGroupBytes 16 MiB), snappy. */
const OPTIONS: ParquetEncoderOptions = { compression: 'snappy', rowGroupRows: 10_000, rowGroupBytes: 16 * 1024 * 1024 };

export async function encoderVsPublicBench(products = 5000, repeat = 5) {
  const dir = await mkdtemp(join(os.tmpdir(), 'bench-encoder-vs-public-'));
  try {
    const chain = await chainRows('be', products, dir);
    const rows = chain.shape(chain.records);
    const own: number[] = [];
    const pub: number[] = [];
    let bytes = { own: 0, public: 0 };
    for (let r = 0; r < repeat; r++) {
      const a = await timeEncoder((d) => new ParquetEncoder(d, chain.columns, OPTIONS), rows, 2);
      const b = await timeEncoder((d) => new PublicApiParquetEncoder(d, chain.columns, OPTIONS), rows, 2);
      own.push(a.usPerRow);
      pub.push(b.usPerRow);
      bytes = { own: a.bytes, public: b.bytes };
    }
    const fmt = (list: number[]) => list.map((v) => Math.round(v * 10) / 10);
    const median = (list: number[]) => [...list].sort((x, y) => x - y)[Math.floor(list.length / 2)]!;
    return {
      node: process.version,
      rows: rows.length,
      columns: chain.columns.length,
      ownUsPerRow: fmt(own),
      publicUsPerRow: fmt(pub),
      /** Our encoder's CPU / the public API's, run by run (the first run warms both up). */
      ratios: fmt(own.map((o, i) => (o / pub[i]!) * 100)).map((p) => `${p} %`),
      medianRatio: `${Math.round((median(own) / median(pub)) * 1000) / 10} %`,
      bytes,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) {
  const [products, repeat] = process.argv.slice(2).map(Number);
  console.log(JSON.stringify(await encoderVsPublicBench(products || undefined, repeat || undefined), null, 2));
}
