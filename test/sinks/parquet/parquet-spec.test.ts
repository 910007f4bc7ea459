// The Parquet files the encoder writes (the shredder's leaves through hyparquet-writer's
// writeColumn) held to the Parquet format, not to one library's bytes: read back by two readers,
// DuckDB and hyparquet, and every value must come back as written; the footer must say what the
// pages are (encodings, codec, several pages per chunk, statistics that order strings by their
// UTF-8 bytes as the spec's unsigned byte order asks, null counts). Every type the encoder writes
// is here: strings (UTF-8, lone surrogates as U+FFFD), int32, int64 past 2^53, decimals,
// doubles, booleans (PLAIN and RLE), timestamps in milliseconds and microseconds (the sinks'
// dates: the encoder has no DATE type), JSON text, lists, structs, lists of structs of lists,
// and nulls, empty lists and null elements at every level; in dictionary and PLAIN pages, one
// page and several per chunk, snappy (and gzip, none).
import { parquetMetadata, parquetReadObjects, readOffsetIndex } from 'hyparquet';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ByteDestination } from '../../../src/sinks/shared/byte-destination.js';
import { ParquetEncoder, type ParquetCompression } from '../../../src/sinks/parquet/parquet-encoder.js';
import { type TypedColumn, type ShapedRow } from '../../../src/sinks/shared/column-types.js';
import { duckdbQuery, sqlString } from '../../helpers/duckdb.js';

const COLUMNS: TypedColumn[] = [
  { name: 'id', type: { kind: 'int32' } },
  { name: 's', type: { kind: 'string' } },
  { name: 'i', type: { kind: 'int32' } },
  { name: 'j', type: { kind: 'int64' } },
  { name: 'dec', type: { kind: 'decimal' } },
  { name: 'd', type: { kind: 'double' } },
  { name: 'b', type: { kind: 'boolean' } },
  { name: 'tm', type: { kind: 'timestamp-millis' } },
  { name: 'tu', type: { kind: 'timestamp-micros' } },
  { name: 'js', type: { kind: 'json' } },
  { name: 'l', type: { kind: 'list', element: { kind: 'string' } } },
  { name: 'li', type: { kind: 'list', element: { kind: 'int64' } } },
  {
    name: 'st',
    type: {
      kind: 'struct',
      fields: [
        { name: 'a', type: { kind: 'string' } },
        {
          name: 'n',
          type: {
            kind: 'list',
            element: {
              kind: 'struct',
              fields: [
                { name: 'x', type: { kind: 'int64' } },
                { name: 'tags', type: { kind: 'list', element: { kind: 'string' } } },
              ],
            },
          },
        },
      ],
    },
  },
];

const STRINGS = ['', 'a', 'b', 'é', '日本', '😀', '\uFFFF', '\u{10000}', 'a\uD800', '\uDC00z', 'Zz', 'zz'];

/** A repeatable pseudo-random sequence in [0, 1). */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff;
    return s / 0x80000000;
  };
}

interface Shape {
  rows: number;
  /** Strings drawn from a dozen (dictionary pages) or each made distinct (PLAIN pages). */
  distinct: boolean;
  /** Characters added to each string of `s`: 1,000 makes a chunk of several 1 MiB pages. */
  pad: number;
}

function makeRows({ rows, distinct, pad }: Shape, seed: number): ShapedRow[] {
  const next = random(seed);
  const int = (n: number) => Math.floor(next() * n);
  const text = (r: number) => STRINGS[int(STRINGS.length)]! + (distinct ? `#${r}-${int(1e6)}` : '');
  const maybe = <T>(value: () => T): T | null => (next() < 0.15 ? null : value());
  const list = <T>(item: () => T): T[] | null => maybe(() => Array.from({ length: int(4) }, item));
  const out: ShapedRow[] = [];
  for (let r = 0; r < rows; r++) {
    const big = distinct ? BigInt(int(1e9)) * 2n ** 33n - 2n ** 62n : BigInt(int(5)) - 2n;
    out.push({
      values: [
        r,
        maybe(() => (pad ? 'p'.repeat(pad) : '') + text(r)),
        maybe(() => (distinct ? int(2 ** 32) - 2 ** 31 : int(7) - 3)),
        maybe(() => big),
        maybe(() => BigInt(distinct ? int(2e12) - 1e12 : int(9) * 25 - 100)),
        maybe(() => (distinct ? (next() - 0.5) * 10 ** int(12) : int(4) / 4)),
        maybe(() => next() < 0.5),
        maybe(() => 1_700_000_000_000n + BigInt(distinct ? int(1e9) : int(3))),
        maybe(() => 1_700_000_000_000_000n + BigInt(distinct ? int(1e12) : int(3))),
        // JSON.stringify escapes a lone surrogate (`\udc00`), which DuckDB refuses as JSON: valid text only.
        maybe(() => JSON.stringify({ k: utf8(text(r)), n: distinct ? r : int(3) })),
        list(() => maybe(() => text(r))),
        list(() => maybe(() => big)),
        maybe(() => ({
          a: maybe(() => text(r)),
          n: list(() => maybe(() => ({ x: maybe(() => big), tags: list(() => maybe(() => text(r))) }))),
        })),
      ],
      bytes: 200 + pad,
    });
  }
  return out;
}

async function encode(rows: readonly ShapedRow[], compression: ParquetCompression, rowGroupRows: number) {
  const chunks: Uint8Array[] = [];
  const dest: ByteDestination = {
    kind: 'file',
    location: 'memory',
    get bytes() {
      return chunks.reduce((n, c) => n + c.length, 0);
    },
    write: (chunk) => void chunks.push(chunk),
    async commit() {},
    async abort() {},
  };
  const encoder = new ParquetEncoder(dest, COLUMNS, { compression, rowGroupRows, rowGroupBytes: 1e12 });
  for (const row of rows) await encoder.write(row);
  await encoder.end();
  return Buffer.concat(chunks);
}

/** What a reader should give back for a string: UTF-8 has no lone surrogates (U+FFFD instead). */
const utf8 = (s: string) => Buffer.from(s, 'utf8').toString('utf8');

type Mapper = {
  string: (s: string) => unknown;
  int64: (v: bigint) => unknown;
  decimal: (v: bigint) => unknown;
  timestamp: (v: bigint) => unknown;
};

/** A written row as a reader returns it, each kind of value mapped as that reader maps it. */
function expected(row: ShapedRow, m: Mapper): Record<string, unknown> {
  const [id, s, i, j, dec, d, b, tm, tu, js, l, li, st] = row.values as [
    number,
    string | null,
    number | null,
    bigint | null,
    bigint | null,
    number | null,
    boolean | null,
    bigint | null,
    bigint | null,
    string | null,
    Array<string | null> | null,
    Array<bigint | null> | null,
    { a: string | null; n: Array<{ x: bigint | null; tags: Array<string | null> | null } | null> | null } | null,
  ];
  const or = <T>(v: T | null, f: (v: T) => unknown) => (v === null ? null : f(v));
  const strings = (list: Array<string | null> | null) => or(list, (v) => v.map((x) => or(x, m.string)));
  return {
    id,
    s: or(s, m.string),
    i,
    j: or(j, m.int64),
    dec: or(dec, m.decimal),
    d,
    b,
    tm: or(tm, m.timestamp),
    tu: or(tu, m.timestamp),
    js: or(js, m.string),
    l: strings(l),
    li: or(li, (v) => v.map((x) => or(x, m.int64))),
    st: or(st, (v) => ({
      a: or(v.a, m.string),
      n: or(v.n, (n) => n.map((e) => or(e, (e) => ({ x: or(e.x, m.int64), tags: strings(e.tags) })))),
    })),
  };
}

/** DuckDB's rows as JSON-safe values: integers, decimals and timestamps as text of their integer. */
async function readWithDuckdb(file: string): Promise<Record<string, unknown>[]> {
  const { rows } = await duckdbQuery(
    `SELECT id, s, i, j::VARCHAR AS j, (dec * 100)::BIGINT::VARCHAR AS dec, d, b,
       epoch_ms(tm)::VARCHAR AS tm, epoch_us(tu)::VARCHAR AS tu, js,
       l, list_transform(li, x -> x::VARCHAR) AS li,
       CASE WHEN st IS NULL THEN NULL ELSE {
         'a': st.a,
         'n': list_transform(st.n, e -> CASE WHEN e IS NULL THEN NULL ELSE {'x': e.x::VARCHAR, 'tags': e.tags} END)
       } END AS st
     FROM read_parquet(${sqlString(file)}) ORDER BY id`,
  );
  return rows;
}

const DUCKDB: Mapper = {
  string: utf8,
  int64: String,
  decimal: String,
  timestamp: String,
};

/** hyparquet's rows, timestamps kept as their integers and JSON as its text (its defaults are Date and a parse). */
async function readWithHyparquet(bytes: Buffer): Promise<Record<string, unknown>[]> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer;
  const rows = await parquetReadObjects({
    file,
    parsers: {
      timestampFromMilliseconds: (v: bigint) => v,
      timestampFromMicroseconds: (v: bigint) => v,
      jsonFromBytes: (v: Uint8Array) => v && Buffer.from(v).toString('utf8'),
    } as never,
    compressors: { GZIP: (input: Uint8Array) => new Uint8Array(gunzipSync(input)) },
  });
  // hyparquet gives a null group (struct or list) as undefined, or leaves it out of the row
  // object; a decimal comes as a float.
  return rows.map((row) => ({
    ...(nullsOf(row) as Record<string, unknown>),
    dec: row.dec === null ? null : Math.round((row.dec as number) * 100),
    l: nullsOf(row.l ?? null),
    li: nullsOf(row.li ?? null),
    st: nullsOf(row.st ?? null),
  }));
}

/** `value` with every undefined inside it (and itself) as null. */
function nullsOf(value: unknown): unknown {
  if (value === undefined) return null;
  if (Array.isArray(value)) return value.map(nullsOf);
  if (value && typeof value === 'object' && !(value instanceof Uint8Array))
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, nullsOf(v)]));
  return value;
}

const HYPARQUET: Mapper = {
  string: utf8,
  int64: (v) => v,
  decimal: Number,
  timestamp: (v) => v,
};

interface ChunkFacts {
  path: string;
  encodings: string[];
  codec: string;
  pages: number;
  min?: unknown;
  max?: unknown;
  nulls?: bigint;
}

/** What the footer and the offset indexes say of each column chunk (hyparquet's metadata reader). */
function chunkFacts(bytes: Buffer): ChunkFacts[][] {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer;
  const metadata = parquetMetadata(file);
  return metadata.row_groups.map((group) =>
    group.columns.map((column) => {
      const meta = column.meta_data!;
      const stats = meta.statistics;
      return {
        path: meta.path_in_schema.join('.'),
        encodings: [...meta.encodings].sort(),
        codec: meta.codec,
        pages: dataPages(file, column),
        ...(stats ? { min: stats.min_value, max: stats.max_value, nulls: stats.null_count } : {}),
      };
    }),
  );
}

/**
 * A chunk's data pages by its offset index (written, as the spec allows, only for a chunk of more
 * than one page), whose first page is the chunk's first data page and whose rows increase.
 */
function dataPages(
  file: ArrayBuffer,
  column: ReturnType<typeof parquetMetadata>['row_groups'][number]['columns'][number],
) {
  if (column.offset_index_offset === undefined) return 1;
  const view = new DataView(file, Number(column.offset_index_offset), column.offset_index_length);
  const pages = readOffsetIndex({ view, offset: 0 }).page_locations;
  expect(pages[0]!.offset).toBe(column.meta_data!.data_page_offset);
  expect(pages[0]!.first_row_index).toBe(0n);
  for (let p = 1; p < pages.length; p++) {
    expect(pages[p]!.first_row_index).toBeGreaterThan(pages[p - 1]!.first_row_index);
    expect(pages[p]!.offset).toBe(pages[p - 1]!.offset + BigInt(pages[p - 1]!.compressed_page_size));
  }
  return pages.length;
}

/** The least and greatest non-null value of column `c` over `rows`, strings in UTF-8 byte order. */
function bounds(rows: readonly ShapedRow[], c: number): [unknown, unknown] {
  const values = rows.map((r) => r.values[c]).filter((v) => v !== null && v !== undefined);
  const compare = (a: unknown, b: unknown) =>
    typeof a === 'string'
      ? Buffer.compare(Buffer.from(a), Buffer.from(b as string))
      : (a as number) < (b as number)
        ? -1
        : (a as number) > (b as number)
          ? 1
          : 0;
  const sorted = [...values].sort(compare);
  return [sorted[0], sorted.at(-1)];
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(os.tmpdir(), 'parquet-spec-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function roundTrip(name: string, rows: readonly ShapedRow[], compression: ParquetCompression, groups: number) {
  const bytes = await encode(rows, compression, Math.ceil(rows.length / groups));
  const file = join(dir, `${name}.parquet`);
  await writeFile(file, bytes);
  expect(await readWithDuckdb(file), `${name}: DuckDB`).toEqual(rows.map((r) => expected(r, DUCKDB)));
  expect(await readWithHyparquet(bytes), `${name}: hyparquet`).toEqual(rows.map((r) => expected(r, HYPARQUET)));
  return chunkFacts(bytes);
}

describe('Parquet files against the format, read back by DuckDB and hyparquet', () => {
  it('repeated values: dictionary pages, RLE booleans, in every compression', async () => {
    const rows = makeRows({ rows: 2_000, distinct: false, pad: 0 }, 1);
    for (const compression of ['snappy', 'gzip', 'none'] as const) {
      const facts = await roundTrip(`repeated-${compression}`, rows, compression, 2);
      const codec = { snappy: 'SNAPPY', gzip: 'GZIP', none: 'UNCOMPRESSED' }[compression];
      for (const chunk of facts.flat()) expect(chunk.codec, chunk.path).toBe(codec);
      const byPath = new Map(facts[0]!.map((c) => [c.path, c]));
      for (const path of ['s', 'i', 'j', 'dec', 'tm', 'l.list.element', 'st.n.list.element.tags.list.element'])
        expect(byPath.get(path)!.encodings, path).toEqual(['PLAIN', 'RLE_DICTIONARY']);
      expect(byPath.get('b')!.encodings).toEqual(['RLE']);
    }
  });

  it('distinct values: PLAIN pages and statistics in the spec order, several row groups', async () => {
    const rows = makeRows({ rows: 3_000, distinct: true, pad: 0 }, 2);
    const facts = await roundTrip('distinct', rows, 'snappy', 3);
    const size = Math.ceil(rows.length / 3);
    facts.forEach((group, g) => {
      const part = rows.slice(g * size, (g + 1) * size);
      const byPath = new Map(group.map((c) => [c.path, c]));
      for (const path of ['s', 'i', 'j', 'd', 'js', 'l.list.element'])
        expect(byPath.get(path)!.encodings, path).toEqual(['PLAIN']);
      // Statistics on the top-level scalar columns, hyparquet converting them by the column's type.
      for (const [path, c] of [
        ['s', 1],
        ['i', 2],
        ['j', 3],
        ['d', 5],
      ] as const) {
        const chunk = byPath.get(path)!;
        const [min, max] = bounds(part, c);
        expect([chunk.min, chunk.max], `${path} min/max, row group ${g}`).toEqual(
          typeof min === 'string' ? [utf8(min), utf8(max as string)] : [min, max],
        );
        expect(chunk.nulls, `${path} nulls`).toBe(BigInt(part.filter((r) => r.values[c] === null).length));
      }
      expect(byPath.get('js')!.min, 'no statistics on JSON').toBeUndefined();
    });
  });

  it('chunks of several pages, PLAIN and dictionary', async () => {
    // Strings of ~1 KB: 2,400 of them fill three 1 MiB PLAIN pages.
    const plain = makeRows({ rows: 2_400, distinct: true, pad: 1000 }, 3);
    const plainFacts = (await roundTrip('pages-plain', plain, 'snappy', 1))[0]!;
    expect(plainFacts.find((c) => c.path === 's')!.pages).toBeGreaterThanOrEqual(2);
    // Dictionary indexes are sized 4 bytes a value: lists of 100 make 300,000 values of a leaf,
    // more than two 1 MiB pages.
    const dictionary = Array.from({ length: 3_000 }, (_, r) => ({
      values: [
        r,
        ...[STRINGS[r % 7]!, r % 5, null, null, null, r % 3 === 0, null, null, null],
        Array.from({ length: 100 }, (_, k) => (k % 9 === 0 ? null : STRINGS[(r + k) % 7]!)),
        Array.from({ length: 100 }, (_, k) => BigInt((r * k) % 5)),
        null,
      ],
      bytes: 5000,
    }));
    const facts = (await roundTrip('pages-dictionary', dictionary, 'snappy', 1))[0]!;
    for (const path of ['l.list.element', 'li.list.element']) {
      const chunk = facts.find((c) => c.path === path)!;
      expect(chunk.encodings, path).toEqual(['PLAIN', 'RLE_DICTIONARY']);
      expect(chunk.pages, path).toBeGreaterThanOrEqual(2);
    }
  }, 120_000);
});
