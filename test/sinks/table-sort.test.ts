// The table sink's external sort: every key once (its last arrival), in one total key order
// (numbers by value, bigints with them, strings by code unit after numbers), whatever the
// spill size; bigints and nested values survive the spill files, as the bytes a state frame holds.
// What a full run's delete check adds: the sort read twice, keys read from a body without decoding
// the record, and the records the check found merged into the extract's.
import { describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import { deserialize, serialize } from 'node:v8';
import {
  compareKeys,
  ExternalSort,
  frameBody,
  keyOfBody,
  mergeSorted,
  readFrameBodies,
  SortedRecord,
  type Key,
} from '../../src/sinks/table/sorted-records.js';
import { tempDir } from './records.js';

function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('compareKeys', () => {
  it('orders numbers and bigints by value, then strings by code unit', () => {
    const keys: Key[] = ['P10', 2, 'P9', 10n, -1, 'a', 'B', 3.5, 9007199254740993n];
    expect([...keys].sort(compareKeys)).toEqual([-1, 2, 3.5, 10n, 9007199254740993n, 'B', 'P10', 'P9', 'a']);
  });
});

describe('ExternalSort', () => {
  it.each([200, 5_000, 1 << 24])(
    'spilling every %i bytes: each key once, the last arrival, sorted',
    async (bufferBytes) => {
      const sort = new ExternalSort(await tempDir('table-sort-'), bufferBytes);
      const rnd = random(bufferBytes);
      const last = new Map<Key, Record<string, unknown>>();
      for (let i = 0; i < 3000; i++) {
        const k = Math.floor(rnd() * 900);
        const key: Key = k % 3 === 0 ? k : k % 3 === 1 ? `P${String(k).padStart(7, '0')}` : BigInt(k) * 10n ** 16n;
        const record = { n: i, code: BigInt(i) * 9007199254740993n, nested: [{ a: i % 7 }], none: null };
        await sort.add(key, record);
        last.set(key, record);
      }
      const out: Array<{ key: Key; record: Record<string, unknown> }> = [];
      for await (const entry of sort.sorted()) out.push(entry);
      expect(out.map((e) => e.key)).toEqual([...last.keys()].sort(compareKeys));
      for (const { key, record } of out) expect(record).toEqual(last.get(key));
    },
  );
});

describe('the bytes the sort carries', () => {
  it('are the state frame body, v8.serialize([key, record]), through spills and merge passes', async () => {
    // 200 bytes: a run per record or two, more runs than one merge pass takes.
    const sort = new ExternalSort(await tempDir('table-sort-'), 200);
    const records = new Map<Key, Record<string, unknown>>();
    for (let i = 0; i < 300; i++) {
      const key: Key = i % 2 === 0 ? i : `P${i}`;
      const record = { id: key, code: BigInt(i) * 9007199254740993n, name: 'é'.repeat(i % 5), list: [{ a: i }] };
      records.set(key, record);
      await sort.add(key, record);
    }
    let count = 0;
    for await (const entry of sort.sorted()) {
      expect(Buffer.from(entry.body).equals(serialize([entry.key, records.get(entry.key)]))).toBe(true);
      expect(deserialize(entry.body)).toEqual([entry.key, records.get(entry.key)]);
      count++;
    }
    expect(count).toBe(300);
  });

  it('frames split back into their bodies whatever the chunks', async () => {
    const values = [
      [1, { a: 1n }],
      ['x', { b: 'y'.repeat(70_000) }],
      [2, {}],
    ];
    const bytes = Buffer.concat(values.map((v) => frameBody(serialize(v))));
    // Chunks of 7 bytes: frames and even length prefixes cut anywhere.
    const chunks = () =>
      Readable.from(Array.from({ length: Math.ceil(bytes.length / 7) }, (_, i) => bytes.subarray(i * 7, i * 7 + 7)));
    const bodies: Buffer[] = [];
    for await (const b of readFrameBodies(chunks())) bodies.push(b);
    expect(bodies.map((b) => deserialize(b))).toEqual(values);
    await expect(async () => {
      for await (const _ of readFrameBodies(Readable.from([bytes.subarray(0, bytes.length - 1)]))) void _;
    }).rejects.toThrow(/ends inside a record/);
  });
});

describe('merge passes', () => {
  it('report progress while they write (the run counts it against its stall timeout)', async () => {
    const reported: number[] = [];
    // 200 bytes: more runs than one pass merges, so passes write every record before the first comes out.
    const sort = new ExternalSort(await tempDir('table-sort-'), 200, (written) => reported.push(written));
    for (let i = 0; i < 3000; i++) await sort.add(i, { n: i });
    let count = 0;
    for await (const _ of sort.sorted()) count++;
    expect(count).toBe(3000);
    expect(reported.length).toBeGreaterThan(0);
    expect(reported.every((n) => n > 0 && n % 1024 === 0)).toBe(true);
  });
});

describe('a full run checking its deletes', () => {
  it('reads the sort twice, merge passes done once', async () => {
    const sort = new ExternalSort(await tempDir('table-sort-'), 200);
    for (let i = 0; i < 2000; i++) await sort.add(i % 700, { n: i });
    const keys = async () => {
      const out: Key[] = [];
      for await (const entry of sort.sorted()) out.push(entry.key);
      return out;
    };
    const first = await keys();
    expect(first).toEqual(Array.from({ length: 700 }, (_, i) => i));
    expect(await keys()).toEqual(first);
    await expect(sort.add(1, {})).rejects.toThrow(/after sorted/);
  });

  it('reads the key of a state frame body without decoding the record, at any offset of its chunk', () => {
    const keys: Key[] = ['P0000001', 'Δ8-THC', '日本', '', 42, -7, 3.5, 2 ** 40, 9007199254740993n, 'x'.repeat(300)];
    for (const key of keys) {
      for (const pad of ['', 'a', 'ab', 'abc']) {
        const body = serialize([key, { pad, nested: [{ a: 1n }] }]);
        // A body is a view into a larger chunk when it comes out of a state file.
        const chunk = Buffer.concat([Buffer.from(pad), body, Buffer.from('tail')]);
        expect(keyOfBody(chunk.subarray(pad.length, pad.length + body.length))).toBe(key);
      }
    }
    // Not an array of two: decoded whole.
    expect(() => keyOfBody(serialize({ not: 'a frame' }))).not.toThrow();
  });

  it("merges the found records into the extract's: each key once, the found one where both have it", async () => {
    const records = (keys: Key[], tag: string) =>
      (async function* () {
        for (const key of keys) yield new SortedRecord(key, serialize([key, { tag }]));
      })();
    const out: string[] = [];
    for await (const { next, from } of mergeSorted(
      records([1, 3, 'a', 'c'], 'extract'),
      records([2, 3, 'b', 'd'], 'found'),
    ))
      out.push(`${String(next.key)} ${from} ${String(next.record.tag)}`);
    expect(out).toEqual([
      '1 a extract',
      '2 b found',
      '3 both found',
      'a a extract',
      'b b found',
      'c a extract',
      'd b found',
    ]);
    const alone: string[] = [];
    for await (const { next, from } of mergeSorted(records([1, 2], 'extract'), undefined))
      alone.push(`${next.key} ${from}`);
    expect(alone).toEqual(['1 a', '2 a']);
  });
});
