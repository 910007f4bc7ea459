// Column chunks of the leaf kinds the encoder writes, byte for byte as hyparquet-writer's
// `writeColumn` writes them (test/sinks/parquet-shredder.test.ts compares whole files).
//
// Why not its writer: for a product row group (268 leaves) its generic code was about a fifth
// of the chain's CPU. It slices the values and levels of every page, unconverts every value,
// writes every byte through a DataView with a bounds check (levels, pages, its snappy output),
// and makes a TextEncoder per string value of a PLAIN page. Here the same decisions are taken on
// the leaf's arrays as the shredder filled them: the same dictionary sample and win check, the
// same page boundaries and statistics (strings in code point order, compared by code unit until
// a surrogate is involved), levels and pages written into scratch buffers reused from chunk to
// chunk, strings written as UTF-8 straight into the page (Buffer#write: lone surrogates become
// U+FFFD as with TextEncoder), and snappy as the same algorithm writing into a preallocated
// array. Page headers and the footer stay hyparquet-writer's own thrift.
//
// Anything else (a value of an unexpected type, an INT64 out of range) goes to `writeColumn`,
// which writes or rejects it as it always did.
import type { SchemaElement } from 'hyparquet-writer';
import { writeColumn } from 'hyparquet-writer/src/column.js';
import { writePageHeader } from 'hyparquet-writer/src/datapage.js';
import type { ColumnEncoder, PageIndexes, Writer } from 'hyparquet-writer/src/types.js';

type Chunk = PageIndexes['chunk'];
type MetaData = NonNullable<Chunk['meta_data']>;
type Statistics = NonNullable<MetaData['statistics']> & { nan_count?: bigint | undefined };
type Encoding = MetaData['encodings'][number];

/** A growing byte buffer for one page's parts, reused from page to page. */
class Scratch {
  buf: Buffer = Buffer.allocUnsafe(64 * 1024);
  at = 0;

  ensure(more: number): void {
    if (this.at + more <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + more));
    this.buf.copy(grown, 0, 0, this.at);
    this.buf = grown;
  }

  u8(value: number): void {
    this.ensure(1);
    this.buf[this.at++] = value;
  }

  u32(value: number): void {
    this.ensure(4);
    const b = this.buf;
    let at = this.at;
    b[at++] = value & 0xff;
    b[at++] = (value >>> 8) & 0xff;
    b[at++] = (value >>> 16) & 0xff;
    b[at++] = (value >>> 24) & 0xff;
    this.at = at;
  }

  varint(value: number): void {
    this.ensure(5);
    while ((value & ~0x7f) !== 0) {
      this.buf[this.at++] = (value & 0x7f) | 0x80;
      value >>>= 7;
    }
    this.buf[this.at++] = value;
  }

  bytes(value: Uint8Array): void {
    this.ensure(value.length);
    this.buf.set(value, this.at);
    this.at += value.length;
  }

  /** A length-prefixed UTF-8 string (Parquet PLAIN BYTE_ARRAY). */
  string(value: string): void {
    this.ensure(value.length * 3 + 4);
    const start = this.at + 4;
    const length = this.buf.write(value, start, 'utf8');
    this.u32(length);
    this.at = start + length;
  }

  view(): Buffer {
    return this.buf.subarray(0, this.at);
  }
}

const levels = new Scratch();
const page = new Scratch();
const dictionaryScratch = new Scratch();
/** Booleans as 0/1 and dictionary indexes of the non-null values of a page. */
let ints = new Int32Array(64 * 1024);
function intsOf(n: number): Int32Array {
  if (ints.length < n) ints = new Int32Array(Math.max(n, ints.length * 2));
  return ints;
}
/** Each value's dictionary index, -1 for a null. */
let indexScratch = new Int32Array(64 * 1024);

/**
 * hyparquet-writer's RLE / bit-packed hybrid (encoding.js) over `values[start..end)`: runs of 8
 * or more equal values as RLE, the rest in groups of 8, bit-packed, the last group padded with 0.
 */
function writeHybrid(out: Scratch, values: ArrayLike<number>, start: number, end: number, bitWidth: number): number {
  const before = out.at;
  let pendingGroups = 0;
  let packedStart = 0;
  let i = start;
  while (i < end) {
    const first = values[i]!;
    let run = 1;
    while (i + run < end && values[i + run] === first) run++;
    if (run >= 8) {
      if (pendingGroups) {
        writePacked(out, values, packedStart, end, pendingGroups, bitWidth);
        pendingGroups = 0;
      }
      out.varint(run << 1);
      const width = (bitWidth + 7) >> 3;
      for (let j = 0; j < width; j++) out.u8((first >> (j << 3)) & 0xff);
      i += run;
    } else {
      if (pendingGroups === 0) packedStart = i;
      pendingGroups++;
      i += 8;
    }
  }
  if (pendingGroups) writePacked(out, values, packedStart, end, pendingGroups, bitWidth);
  return out.at - before;
}

function writePacked(
  out: Scratch,
  values: ArrayLike<number>,
  start: number,
  end: number,
  groups: number,
  bitWidth: number,
): void {
  out.varint((groups << 1) | 1);
  if (bitWidth === 0) return;
  out.ensure(groups * bitWidth + 1);
  const b = out.buf;
  let at = out.at;
  const mask = (1 << bitWidth) - 1;
  let buffer = 0;
  let bits = 0;
  const total = groups * 8;
  for (let i = 0; i < total; i++) {
    const idx = start + i;
    const v = idx < end ? values[idx]! & mask : 0;
    buffer |= v << bits;
    bits += bitWidth;
    while (bits >= 8) {
      b[at++] = buffer & 0xff;
      buffer >>>= 8;
      bits -= 8;
    }
  }
  if (bits > 0) b[at++] = buffer & 0xff;
  out.at = at;
}

// --- snappy: hyparquet-writer's snappy.js (snappyjs, MIT, Zhipeng Jia), the same steps and
// output, written into one preallocated array instead of a byte at a time through a DataView.
const MAX_HASH_TABLE_BITS = 14;
const MAX_OFFSET = 0xffff;
const hashTables: Array<Uint32Array | undefined> = [];
let snappyOut = new Uint8Array(64 * 1024);

function load32(a: Uint8Array, p: number): number {
  return a[p]! + (a[p + 1]! << 8) + (a[p + 2]! << 16) + (a[p + 3]! << 24);
}

function equals32(a: Uint8Array, p: number, q: number): boolean {
  return a[p] === a[q] && a[p + 1] === a[q + 1] && a[p + 2] === a[q + 2] && a[p + 3] === a[q + 3];
}

/** A literal of `length` bytes from `input` at `ip`, written at `o`; returns the new end. */
function emitLiteral(out: Uint8Array, o: number, input: Uint8Array, ip: number, length: number): number {
  if (length <= 60) out[o++] = (length - 1) << 2;
  else {
    const value = length - 1;
    const bytes = value < 0x100 ? 1 : value < 0x10000 ? 2 : value < 0x1000000 ? 3 : 4;
    out[o++] = (59 + bytes) << 2;
    for (let i = 0; i < bytes; i++) out[o++] = (value >>> (i * 8)) & 0xff;
  }
  if (length < 16) for (let i = 0; i < length; i++) out[o++] = input[ip + i]!;
  else {
    out.set(input.subarray(ip, ip + length), o);
    o += length;
  }
  return o;
}

/** A copy of `length` bytes from `offset` back, as copies of at most 64 bytes; returns the new end. */
function emitCopy(out: Uint8Array, o: number, offset: number, length: number): number {
  while (length >= 68) {
    out[o++] = 2 + ((64 - 1) << 2);
    out[o++] = offset & 0xff;
    out[o++] = (offset >>> 8) & 0xff;
    length -= 64;
  }
  if (length > 64) {
    out[o++] = 2 + ((60 - 1) << 2);
    out[o++] = offset & 0xff;
    out[o++] = (offset >>> 8) & 0xff;
    length -= 60;
  }
  if (length < 12 && offset < 2048) {
    out[o++] = 1 + ((length - 4) << 2) + ((offset >>> 8) << 5);
    out[o++] = offset & 0xff;
  } else {
    out[o++] = 2 + ((length - 1) << 2);
    out[o++] = offset & 0xff;
    out[o++] = (offset >>> 8) & 0xff;
  }
  return o;
}

/** Snappy-compressed `input`, valid until the next call. */
export function snappyCompressInto(input: Uint8Array): Uint8Array {
  const n = input.length;
  const most = 32 + n + Math.ceil(n / 6) + 5;
  if (snappyOut.length < most) snappyOut = new Uint8Array(Math.max(most, snappyOut.length * 2));
  const out = snappyOut;
  let o = 0;
  let len = n;
  while ((len & ~0x7f) !== 0) {
    out[o++] = (len & 0x7f) | 0x80;
    len >>>= 7;
  }
  out[o++] = len;

  let bits = 1;
  while (1 << bits <= n && bits <= MAX_HASH_TABLE_BITS) bits++;
  bits--;
  const shift = 32 - bits;
  const table = (hashTables[bits] ??= new Uint32Array(1 << bits));
  table.fill(0);

  let nextEmit = 0;
  const INPUT_MARGIN = 15;
  if (n >= INPUT_MARGIN) {
    const ipLimit = n - INPUT_MARGIN;
    let ip = 1;
    let nextHash = Math.imul(load32(input, ip), 0x1e35a7bd) >>> shift;
    let candidate = 0;
    outer: for (;;) {
      let skip = 32;
      let nextIp = ip;
      do {
        ip = nextIp;
        const h = nextHash;
        const between = skip >>> 5;
        skip++;
        nextIp = ip + between;
        if (ip > ipLimit) break outer;
        nextHash = Math.imul(load32(input, nextIp), 0x1e35a7bd) >>> shift;
        candidate = table[h]!;
        table[h] = ip;
      } while (ip - candidate > MAX_OFFSET || !equals32(input, ip, candidate));

      o = emitLiteral(out, o, input, nextEmit, ip - nextEmit);
      do {
        const base = ip;
        let matched = 4;
        while (ip + matched < n && input[ip + matched] === input[candidate + matched]) matched++;
        ip += matched;
        o = emitCopy(out, o, base - candidate, matched);
        nextEmit = ip;
        if (ip >= ipLimit) break outer;
        table[Math.imul(load32(input, ip - 1), 0x1e35a7bd) >>> shift] = ip - 1;
        const h = Math.imul(load32(input, ip), 0x1e35a7bd) >>> shift;
        candidate = table[h]!;
        table[h] = ip;
      } while (ip - candidate <= MAX_OFFSET && equals32(input, ip, candidate));
      ip++;
      nextHash = Math.imul(load32(input, ip), 0x1e35a7bd) >>> shift;
    }
  }
  if (nextEmit < n) o = emitLiteral(out, o, input, nextEmit, n - nextEmit);
  return out.subarray(0, o);
}

// --- statistics and dictionaries, as column.js and dictionary.js decide them

/** hyparquet-writer's string order for statistics: UTF-8 byte order, i.e. code points, a lone surrogate as U+FFFD. */
function compareStrings(left: string, right: string): number {
  if (left === right) return 0;
  const length = Math.min(left.length, right.length);
  let i = 0;
  while (i < length && left.charCodeAt(i) === right.charCodeAt(i)) i++;
  if (i < length) {
    const a = left.charCodeAt(i);
    const b = right.charCodeAt(i);
    // Below the surrogates code units order as code points; the rest takes the exact walk.
    if (a < 0xd800 && b < 0xd800) return a - b;
  } else if (i === length) {
    const before = i > 0 ? left.charCodeAt(i - 1) : 0;
    if (before < 0xd800 || before > 0xdbff) return left.length - right.length;
  }
  if (i > 0) {
    const prev = left.charCodeAt(i - 1);
    if (prev >= 0xd800 && prev <= 0xdbff) i--;
  }
  while (i < left.length && i < right.length) {
    const a = codePointAt(left, i);
    const b = codePointAt(right, i);
    if (a !== b) return a - b;
    i += a > 0xffff ? 2 : 1;
  }
  return left.length - right.length;
}

function codePointAt(s: string, i: number): number {
  const code = s.codePointAt(i) ?? 0xfffd;
  return code >= 0xd800 && code <= 0xdfff ? 0xfffd : code;
}

function hashBytes(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return h >>> 0;
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** How one leaf's chunks are written; made once per file. */
export interface LeafWriter {
  element: SchemaElement;
  pathInSchema: string[];
  maxDefinitionLevel: number;
  maxRepetitionLevel: number;
  stats: boolean;
  codec: MetaData['codec'];
  compress: ((input: Uint8Array) => Uint8Array) | undefined;
  /** hyparquet-writer's description of the same column, for what this writer leaves to it. */
  encoder: ColumnEncoder;
  /** Whether the leaf's last chunk with values kept a dictionary (the order dictionaryOf works in). */
  keptDictionary?: boolean;
}

type Kind = 'string' | 'bytes' | 'int32' | 'int64' | 'double' | 'boolean';

function kindOf(element: SchemaElement): Kind | undefined {
  switch (element.type) {
    case 'BYTE_ARRAY':
      return element.converted_type === 'UTF8' ? 'string' : undefined;
    case 'INT32':
      return element.converted_type === undefined && element.logical_type === undefined ? 'int32' : undefined;
    case 'INT64':
      return 'int64';
    case 'DOUBLE':
      return 'double';
    case 'BOOLEAN':
      return 'boolean';
    default:
      return undefined;
  }
}

/** Whether `value` (not null) is what a leaf of `kind` writes as is; otherwise writeColumn takes the chunk. */
function accepts(kind: Kind, value: unknown): boolean {
  switch (kind) {
    case 'string':
    case 'bytes':
      return typeof value === 'string' || value instanceof Uint8Array;
    case 'int32':
      return typeof value === 'number' && Number.isSafeInteger(value) && value >= -2147483648 && value <= 2147483647;
    case 'int64':
      return typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX;
    case 'double':
      return typeof value === 'number';
    case 'boolean':
      return typeof value === 'boolean';
  }
}

function valueSize(kind: Kind, value: unknown): number {
  switch (kind) {
    case 'string':
    case 'bytes':
      return typeof value === 'string' ? value.length : (value as Uint8Array).byteLength;
    case 'int32':
      return 4;
    case 'int64':
    case 'double':
      return 8;
    case 'boolean':
      return 0.125;
  }
}

const sampleSizes = new Map<unknown, number>();
const valueIndex = new Map<unknown, number>();
const hashBuckets = new Map<number, number[]>();

/**
 * dictionary.js's useDictionary for an OPTIONAL column with no size cap: the sample spread over
 * the chunk, rejection above 90 % distinct sampled bytes, then the dictionary kept only if it and
 * its indexes at most halve the PLAIN bytes. Returns the dictionary (indexes in `indexScratch`).
 *
 * `likely`: the leaf's previous chunk kept its dictionary. Most chunks decide as their leaf's last
 * one did (in the bench chain 1,435 of 2,542 chunks kept one), and a kept dictionary needs the
 * full pass anyway, so that pass comes first and the sample is read from its indexes instead of a
 * `Map` of its own (a string's `Map` lookup was most of this function's cost). Both orders give
 * the same answer: the sample's positions, order and sums are the same. Byte arrays sample by
 * hash, collisions and all, so they keep the sample first.
 */
function dictionaryOf(kind: Kind, values: readonly unknown[], n: number, likely: boolean): unknown[] | undefined {
  if (kind === 'boolean') return undefined;
  let full: FullDictionary;
  if (likely && kind !== 'bytes') {
    full = fullDictionary(kind, values, n);
    if (!sampleAccepts(indexSample(kind, n, full.sizes))) return undefined;
  } else {
    if (!sampleAccepts(valueSample(kind, values, n))) return undefined;
    full = fullDictionary(kind, values, n);
  }
  return fullAccepts(full) ? full.dictionary : undefined;
}

const sampleCount = (n: number) => Math.min(n, 1000);
const samplePosition = (i: number, n: number, size: number) =>
  size === 1 ? 0 : Math.floor((i * (n - 1)) / (size - 1));
const prefixOf = (kind: Kind) => (kind === 'string' || kind === 'bytes' ? 4 : 0);

/** The sampled bytes: of each distinct value once, and of all. */
interface Sample {
  distinct: number;
  total: number;
}

function sampleAccepts({ distinct, total }: Sample): boolean {
  return total > 0 && distinct / total <= 0.9;
}

function valueSample(kind: Kind, values: readonly unknown[], n: number): Sample {
  const prefix = prefixOf(kind);
  const size = sampleCount(n);
  const sample = { distinct: 0, total: 0 };
  sampleSizes.clear();
  for (let i = 0; i < size; i++) {
    const value = values[samplePosition(i, n, size)];
    // A null weighs nothing in either sum; most leaves of a product are mostly null.
    if (value == null) continue;
    const key = value instanceof Uint8Array ? hashBytes(value) : value;
    let bytes = sampleSizes.get(key);
    if (bytes === undefined) {
      bytes = valueSize(kind, value) + prefix;
      sampleSizes.set(key, bytes);
      sample.distinct += bytes;
    }
    sample.total += bytes;
  }
  sampleSizes.clear();
  return sample;
}

/** The same sample read from the full pass's indexes (`indexScratch`) and the dictionary's value sizes. */
function indexSample(kind: Kind, n: number, sizes: readonly number[]): Sample {
  const prefix = prefixOf(kind);
  const size = sampleCount(n);
  const indexes = indexScratch;
  if (seenScratch.length < sizes.length) seenScratch = new Uint8Array(Math.max(sizes.length, seenScratch.length * 2));
  const seen = seenScratch;
  seen.fill(0, 0, sizes.length);
  const sample = { distinct: 0, total: 0 };
  for (let i = 0; i < size; i++) {
    const index = indexes[samplePosition(i, n, size)]!;
    if (index < 0) continue;
    const bytes = sizes[index]! + prefix;
    if (seen[index] === 0) {
      seen[index] = 1;
      sample.distinct += bytes;
    }
    sample.total += bytes;
  }
  return sample;
}

let seenScratch = new Uint8Array(1024);

interface FullDictionary {
  kind: Kind;
  dictionary: unknown[];
  /** Each dictionary value's size (UTF-16 length for strings, as dictionary.js counts it). */
  sizes: number[];
  dictSize: number;
  totalSize: number;
  nonNull: number;
}

/** Every distinct non-null value in first-seen order, each value's index in `indexScratch` (-1: null). */
function fullDictionary(kind: Kind, values: readonly unknown[], n: number): FullDictionary {
  if (indexScratch.length < n) indexScratch = new Int32Array(Math.max(n, indexScratch.length * 2));
  const indexes = indexScratch;
  const dictionary: unknown[] = [];
  const sizes: number[] = [];
  let dictSize = 0;
  let totalSize = 0;
  let nonNull = 0;
  valueIndex.clear();
  hashBuckets.clear();
  for (let i = 0; i < n; i++) {
    const value = values[i];
    if (value == null) {
      indexes[i] = -1;
      continue;
    }
    nonNull++;
    let index: number | undefined;
    if (value instanceof Uint8Array) {
      totalSize += value.byteLength;
      const hash = hashBytes(value);
      const bucket = hashBuckets.get(hash);
      if (bucket) {
        for (const j of bucket) {
          if (bytesEqual(dictionary[j] as Uint8Array, value)) {
            index = j;
            break;
          }
        }
      }
      if (index === undefined) {
        dictSize += value.byteLength;
        index = dictionary.length;
        dictionary.push(value);
        sizes.push(value.byteLength);
        if (bucket) bucket.push(index);
        else hashBuckets.set(hash, [index]);
      }
    } else {
      index = valueIndex.get(value);
      if (index === undefined) {
        const size = valueSize(kind, value);
        totalSize += size;
        dictSize += size;
        index = dictionary.length;
        dictionary.push(value);
        sizes.push(size);
        valueIndex.set(value, index);
      } else totalSize += sizes[index]!;
    }
    indexes[i] = index;
  }
  valueIndex.clear();
  hashBuckets.clear();
  return { kind, dictionary, sizes, dictSize, totalSize, nonNull };
}

/** The dictionary and its indexes at most halve the PLAIN bytes. */
function fullAccepts({ kind, dictionary, dictSize, totalSize, nonNull }: FullDictionary): boolean {
  const prefix = prefixOf(kind);
  const bitWidth = Math.ceil(Math.log2(dictionary.length));
  const indexSize = Math.ceil((nonNull * bitWidth) / 8);
  const plainSize = totalSize + nonNull * prefix;
  const dictionaryValueSize = dictSize + dictionary.length * prefix;
  return 2 * (dictionaryValueSize + indexSize) <= plainSize;
}

/** PLAIN values (nulls skipped) of `values[start..end)` into `out`. */
function writePlain(out: Scratch, kind: Kind, values: readonly unknown[], start: number, end: number): void {
  switch (kind) {
    case 'string':
    case 'bytes':
      for (let i = start; i < end; i++) {
        const v = values[i];
        if (v == null) continue;
        if (typeof v === 'string') out.string(v);
        else {
          out.u32((v as Uint8Array).length);
          out.bytes(v as Uint8Array);
        }
      }
      return;
    case 'int32':
      out.ensure((end - start) * 4);
      for (let i = start; i < end; i++) {
        const v = values[i];
        if (v == null) continue;
        out.at = out.buf.writeInt32LE(v as number, out.at);
      }
      return;
    case 'int64':
      out.ensure((end - start) * 8);
      for (let i = start; i < end; i++) {
        const v = values[i];
        if (v == null) continue;
        out.at = out.buf.writeBigInt64LE(v as bigint, out.at);
      }
      return;
    case 'double':
      out.ensure((end - start) * 8);
      for (let i = start; i < end; i++) {
        const v = values[i];
        if (v == null) continue;
        out.at = out.buf.writeDoubleLE(v as number, out.at);
      }
      return;
    case 'boolean': {
      let current = 0;
      let k = 0;
      for (let i = start; i < end; i++) {
        const v = values[i];
        if (v == null) continue;
        if (v) current |= 1 << (k & 7);
        if ((k & 7) === 7) {
          out.u8(current);
          current = 0;
        }
        k++;
      }
      if (k % 8) out.u8(current);
      return;
    }
  }
}

/**
 * Writes one column chunk of `n` values and their levels (the shredder's arrays, read from 0 to
 * `n`; `repetitionLevels` only read for a leaf inside a list) as writeColumn would with
 * `offsetIndex` on, no column index and no bloom filter; `plain` is its `encoding: 'PLAIN'`.
 */
export function writeLeafChunk(
  writer: Writer,
  leaf: LeafWriter,
  values: readonly unknown[],
  definitionLevels: readonly number[],
  repetitionLevels: readonly number[],
  n: number,
  plain: boolean,
): PageIndexes {
  const { element } = leaf;
  const kind = kindOf(element);
  const type = element.type!;

  // One pass: the values' types (anything unexpected goes to writeColumn) and the statistics.
  let supported = kind !== undefined;
  let nulls = 0;
  let min: unknown = undefined;
  let max: unknown = undefined;
  let nans = 0;
  /** At least the UTF-8 bytes of the byte-array values (3 per UTF-16 unit). */
  let byteBound = 0;
  if (supported) {
    const stats = leaf.stats;
    for (let i = 0; i < n; i++) {
      const v = values[i];
      if (v == null) {
        nulls++;
        continue;
      }
      if (!accepts(kind!, v)) {
        supported = false;
        break;
      }
      if (typeof v === 'string') byteBound += v.length * 3;
      else if (v instanceof Uint8Array) byteBound += v.length;
      if (!stats) continue;
      if (typeof v === 'string') {
        if (min === undefined || compareStrings(v, min as string) < 0) min = v;
        if (max === undefined || compareStrings(v, max as string) > 0) max = v;
      } else if (v instanceof Uint8Array) {
        supported = false; // byte statistics: as rare as they are, writeColumn's
        break;
      } else {
        if (typeof v === 'number' && Number.isNaN(v)) {
          nans++;
          continue;
        }
        if (min === undefined || (v as number) < (min as number)) min = v;
        if (max === undefined || (v as number) > (max as number)) max = v;
      }
    }
  }
  if (!supported) {
    const encoder = plain ? { ...leaf.encoder, encoding: 'PLAIN' as const } : leaf.encoder;
    return writeColumn({
      writer,
      column: encoder,
      pageData: {
        values: values.slice(0, n) as never,
        definitionLevels: definitionLevels.slice(0, n),
        repetitionLevels: leaf.maxRepetitionLevel > 0 ? repetitionLevels.slice(0, n) : [],
        maxDefinitionLevel: leaf.maxDefinitionLevel,
      },
    });
  }
  let statistics: Statistics | undefined;
  if (leaf.stats) {
    if (min === 0) min = -0;
    if (max === 0) max = 0;
    statistics = {
      min_value: min as Statistics['min_value'],
      max_value: max as Statistics['max_value'],
      null_count: BigInt(nulls),
      nan_count: type === 'DOUBLE' ? BigInt(nans) : undefined,
    };
  }

  const offsetStart = writer.offset;
  let uncompressedSize = 0;
  const encodings: Encoding[] = [];
  const compress = leaf.compress;
  let dictionary_page_offset: bigint | undefined;
  // An all-null chunk has no dictionary (dictionaryOf would sample 1,000 nulls to say so).
  const dictionary = plain || nulls === n ? undefined : dictionaryOf(kind!, values, n, leaf.keptDictionary === true);
  if (!plain && nulls < n) leaf.keptDictionary = dictionary !== undefined;
  let encoding: Encoding;
  if (dictionary) {
    dictionary_page_offset = BigInt(writer.offset);
    const d = dictionaryScratch;
    d.at = 0;
    writePlain(d, kind!, dictionary, 0, dictionary.length);
    const bytes = d.view();
    const compressed = compress ? compress(bytes) : bytes;
    const headerStart = writer.offset;
    writePageHeader(writer, {
      type: 'DICTIONARY_PAGE',
      uncompressed_page_size: bytes.length,
      compressed_page_size: compressed.length,
      dictionary_page_header: { num_values: dictionary.length, encoding: 'PLAIN' },
    });
    uncompressedSize += writer.offset - headerStart + bytes.length;
    writer.appendBytes(compressed);
    encodings.push('PLAIN');
    encoding = 'RLE_DICTIONARY';
  } else {
    encoding = plain ? 'PLAIN' : type === 'BOOLEAN' && n > 16 ? 'RLE' : 'PLAIN';
  }
  encodings.push(encoding);

  // Pages end at a row boundary once their values' estimated bytes reach the page size.
  const repeated = leaf.maxRepetitionLevel > 0;
  const boundaries: number[] = [];
  const bound = dictionary
    ? 4 * (n - nulls)
    : kind === 'string' || kind === 'bytes'
      ? byteBound
      : (n - nulls) * valueSize(kind!, 0);
  if (bound < PAGE_SIZE) {
    // No page can reach the page size: one page, without sizing every value.
    if (n > 0) boundaries.push(n);
  } else {
    let start = 0;
    let accumulated = 0;
    const indexes = indexScratch;
    for (let i = 0; i < n; i++) {
      const v = values[i];
      // A PLAIN string is sized by its UTF-8 bytes (writeColumn sizes the encoded values), a
      // dictionary's string by its UTF-16 length (dictionary.js sizes the strings).
      const size =
        v == null
          ? 0
          : dictionary
            ? indexes[i]! >= 0
              ? 4
              : 0
            : typeof v === 'string'
              ? Buffer.byteLength(v, 'utf8')
              : valueSize(kind!, v);
      accumulated += size;
      if (accumulated >= PAGE_SIZE && i > start && (!repeated || repetitionLevels[i] === 0)) {
        boundaries.push(i);
        start = i;
        accumulated = size;
      }
    }
    if (start < n) boundaries.push(n);
  }

  const data_page_offset = BigInt(writer.offset);
  const pageLocations: Array<{ offset: bigint; compressed_page_size: number; first_row_index: bigint }> = [];
  let firstRow = 0n;
  let prevStart = 0;
  const maxDef = leaf.maxDefinitionLevel;
  let start = 0;
  for (const end of boundaries) {
    const pageOffset = writer.offset;
    levels.at = 0;
    let numRows = 0;
    let repLength = 0;
    if (repeated) {
      for (let i = start; i < end; i++) if (repetitionLevels[i] === 0) numRows++;
      repLength = writeHybrid(levels, repetitionLevels, start, end, Math.ceil(Math.log2(leaf.maxRepetitionLevel + 1)));
    } else numRows = end - start;
    let numNulls = 0;
    for (let i = start; i < end; i++) if (definitionLevels[i]! < maxDef) numNulls++;
    const defLength = writeHybrid(levels, definitionLevels, start, end, Math.ceil(Math.log2(maxDef + 1)));

    page.at = 0;
    if (dictionary) {
      const indexes = indexScratch;
      const nonNull = intsOf(end - start);
      let k = 0;
      let maxValue = 0;
      for (let i = start; i < end; i++) {
        const index = indexes[i]!;
        if (index < 0) continue;
        nonNull[k++] = index;
        if (index > maxValue) maxValue = index;
      }
      const bitWidth = Math.ceil(Math.log2(maxValue + 1));
      page.u8(bitWidth);
      writeHybrid(page, nonNull, 0, k, bitWidth);
    } else if (encoding === 'RLE') {
      const bits = intsOf(end - start);
      let k = 0;
      for (let i = start; i < end; i++) {
        const v = values[i];
        if (v != null) bits[k++] = v ? 1 : 0;
      }
      page.u32(0);
      const length = writeHybrid(page, bits, 0, k, 1);
      page.buf.writeUInt32LE(length, 0);
    } else {
      writePlain(page, kind!, values, start, end);
    }
    const pageBytes = page.view();
    const compressed = compress ? compress(pageBytes) : pageBytes;
    const headerStart = writer.offset;
    writePageHeader(writer, {
      type: 'DATA_PAGE_V2',
      uncompressed_page_size: levels.at + pageBytes.length,
      compressed_page_size: levels.at + compressed.length,
      data_page_header_v2: {
        num_values: end - start,
        num_nulls: numNulls,
        num_rows: numRows,
        encoding,
        definition_levels_byte_length: defLength,
        repetition_levels_byte_length: repLength,
        is_compressed: true,
      },
    });
    const headerSize = writer.offset - headerStart;
    writer.appendBytes(levels.view());
    writer.appendBytes(compressed);
    uncompressedSize += headerSize + levels.at + pageBytes.length;

    if (repeated) {
      for (let i = prevStart + 1; i <= start; i++) if (repetitionLevels[i] === 0) firstRow++;
    } else firstRow = BigInt(start);
    pageLocations.push({
      offset: BigInt(pageOffset),
      compressed_page_size: writer.offset - pageOffset,
      first_row_index: firstRow,
    });
    prevStart = start;
    start = end;
  }

  let encoding_stats: MetaData['encoding_stats'];
  if (leaf.stats) {
    encoding_stats = [];
    if (dictionary_page_offset !== undefined)
      encoding_stats.push({ page_type: 'DICTIONARY_PAGE', encoding: 'PLAIN', count: 1 });
    encoding_stats.push({ page_type: 'DATA_PAGE_V2', encoding, count: boundaries.length });
  }
  return {
    chunk: {
      meta_data: {
        type,
        encodings,
        path_in_schema: leaf.pathInSchema,
        codec: leaf.codec,
        num_values: BigInt(n),
        total_compressed_size: BigInt(writer.offset - offsetStart),
        total_uncompressed_size: BigInt(uncompressedSize),
        data_page_offset,
        dictionary_page_offset,
        statistics,
        encoding_stats,
        geospatial_statistics: undefined,
      },
      file_offset: BigInt(offsetStart),
    },
    columnIndex: undefined,
    offsetIndex: { page_locations: pageLocations },
    bloomFilter: undefined,
  } as PageIndexes;
}

/** hyparquet-writer's page size for the encoder's chunks (the boundary of getPageBoundaries). */
export const PAGE_SIZE = 1024 * 1024;
