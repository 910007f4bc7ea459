// The encoder (the shredder's leaves written by hyparquet-writer's writeColumn) against the
// encoder before the shredder (legacy-parquet-encoder.ts: hyparquet-writer's ParquetWriter
// shredding each leaf itself), on what the live-shaped products of parquet-shredder.test.ts
// rarely hold: strings whose UTF-16 and UTF-8 orders differ (U+FFFF against U+10000), lone
// surrogates, chunks of several pages, mostly distinct and mostly repeated strings, -0 and NaN,
// booleans past 16 values (RLE), row groups whose chunks decide on a dictionary by turns, in
// every compression: the same bytes. (It held our own column writer, removed with issue 38, to
// those bytes; test/sinks/parquet/parquet-spec.test.ts holds the files to the format.)
import { describe, expect, it } from 'vitest';
import type { ByteDestination } from '../../src/sinks/shared/byte-destination.js';
import { ParquetEncoder, type ParquetCompression } from '../../src/sinks/parquet/parquet-encoder.js';
import { type TypedColumn, type ShapedRow } from '../../src/sinks/shared/column-types.js';
import { ParquetEncoder as LegacyParquetEncoder } from './legacy-parquet-encoder.js';

function memoryDestination(): ByteDestination & { bytesOut(): Buffer } {
  const chunks: Uint8Array[] = [];
  return {
    kind: 'file',
    location: 'memory',
    get bytes() {
      return chunks.reduce((n, c) => n + c.length, 0);
    },
    write(chunk) {
      chunks.push(chunk);
    },
    async commit() {},
    async abort() {},
    bytesOut: () => Buffer.concat(chunks),
  };
}

/** A repeatable pseudo-random sequence in [0, 1). */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff;
    return s / 0x80000000;
  };
}

const COLUMNS: TypedColumn[] = [
  { name: 's', type: { kind: 'string' } },
  { name: 'l', type: { kind: 'list', element: { kind: 'string' } } },
  {
    name: 'st',
    type: {
      kind: 'struct',
      fields: [
        { name: 'a', type: { kind: 'string' } },
        { name: 'b', type: { kind: 'int64' } },
      ],
    },
  },
  { name: 'd', type: { kind: 'double' } },
  { name: 'bo', type: { kind: 'boolean' } },
  { name: 'i', type: { kind: 'int32' } },
  { name: 'j', type: { kind: 'json' } },
];

const STRINGS = [
  '\uFFFF',
  '\u{10000}',
  '\uD800',
  '\uDBFF',
  'a\uD800',
  'a\uDC00b',
  '\uE000',
  'é',
  '日本',
  '',
  '😀',
  '\uD83D',
];

function rows(count: number, distinct: boolean, long: boolean): ShapedRow[] {
  const next = random(count + (distinct ? 1 : 0) + (long ? 2 : 0));
  const pick = (r: number) => {
    const s = STRINGS[Math.floor(next() * STRINGS.length)]!;
    return (long ? 'y'.repeat(20) : '') + (distinct ? `${s}${r}` : s);
  };
  const maybe = <T>(value: () => T): T | null => (next() < 0.1 ? null : value());
  const out: ShapedRow[] = [];
  for (let r = 0; r < count; r++) {
    out.push({
      values: [
        maybe(() => pick(r)),
        maybe(() => Array.from({ length: Math.floor(next() * 4) }, () => (next() < 0.2 ? null : pick(r)))),
        maybe(() => ({ a: next() < 0.2 ? null : pick(r), b: next() < 0.2 ? null : BigInt(Math.floor(next() * 10)) })),
        maybe(() => (next() < 0.05 ? NaN : next() < 0.1 ? -0 : next())),
        maybe(() => next() < 0.5),
        maybe(() => Math.floor(next() * 100)),
        maybe(() => JSON.stringify({ k: pick(r) })),
      ],
      bytes: 100,
    });
  }
  return out;
}

async function encode(
  Encoder: typeof ParquetEncoder | typeof LegacyParquetEncoder,
  data: readonly ShapedRow[],
  compression: Exclude<ParquetCompression, 'zstd'>,
  rowGroupRows = 25_000,
): Promise<Buffer> {
  const dest = memoryDestination();
  const encoder = new Encoder(dest, COLUMNS, { compression, rowGroupRows, rowGroupBytes: 1e12 });
  for (const row of data) await encoder.write(row);
  await encoder.end();
  return dest.bytesOut();
}

describe('the encoder writes what hyparquet-writer writes shredding each leaf itself', () => {
  for (const [count, distinct, long] of [
    [3000, false, false],
    [3000, true, false],
    [60_000, true, true],
  ] as const) {
    it(`${count.toLocaleString('en-US')} rows, ${distinct ? 'mostly distinct' : 'repeated'} strings${long ? ', several pages per chunk' : ''}`, async () => {
      const data = rows(count, distinct, long);
      for (const compression of ['snappy', 'none', 'gzip'] as const) {
        const legacy = await encode(LegacyParquetEncoder, data, compression);
        const current = await encode(ParquetEncoder, data, compression);
        expect(current.equals(legacy), compression).toBe(true);
      }
    });
  }

  it('decides each chunk as hyparquet-writer does whatever the chunk before it decided', async () => {
    // Row groups of 400 rows whose strings are by turns repeated (dictionary kept), all distinct
    // (rejected by the sample), about two thirds distinct (passes the sample, rejected by the
    // full check), all null, and 1,500 rows (a sample of 1,000 of them).
    const kinds = ['repeated', 'distinct', 'repeated', 'mostly', 'repeated', 'null', 'repeated', 'distinct', 'mostly'];
    const data: ShapedRow[] = [];
    const next = random(11);
    kinds.forEach((kind, block) => {
      const size = block === 6 ? 1500 : 400;
      for (let r = 0; r < size; r++) {
        const text =
          kind === 'null'
            ? null
            : kind === 'repeated'
              ? STRINGS[r % 5]!
              : kind === 'distinct'
                ? `${STRINGS[r % STRINGS.length]}${block}-${r}`
                : next() < 0.66
                  ? `m${block}-${r}`
                  : 'same';
        const number = kind === 'null' ? null : kind === 'repeated' ? r % 3 : r + block * 1000;
        data.push({
          values: [
            text,
            text === null ? null : [text, text],
            { a: text, b: number === null ? null : BigInt(number) },
            number,
            null,
            number,
            null,
          ],
          bytes: 100,
        });
      }
    });
    for (const rowGroupRows of [400, 1500]) {
      const legacy = await encode(LegacyParquetEncoder, data, 'snappy', rowGroupRows);
      const current = await encode(ParquetEncoder, data, 'snappy', rowGroupRows);
      expect(current.equals(legacy), `row groups of ${rowGroupRows}`).toBe(true);
    }
    // 10,000 rows: the sample (1,000 of them) sees only distinct strings and rejects a dictionary
    // the whole chunk would keep (9,000 rows of one string), after a chunk that kept one.
    const sampled = (r: number) => Math.floor((Math.round((r * 999) / 9999) * 9999) / 999) === r;
    const wide: ShapedRow[] = [];
    for (const block of ['repeated', 'sampled', 'repeated']) {
      for (let r = 0; r < 10_000; r++) {
        const text = block === 'repeated' ? STRINGS[r % 5]! : sampled(r) ? `s${r}` : 'same';
        wide.push({ values: [text, null, null, null, null, null, null], bytes: 100 });
      }
    }
    const legacy = await encode(LegacyParquetEncoder, wide, 'snappy', 10_000);
    expect((await encode(ParquetEncoder, wide, 'snappy', 10_000)).equals(legacy)).toBe(true);
  });
});
