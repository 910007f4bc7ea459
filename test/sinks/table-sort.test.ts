// The table sink's external sort: every key once (its last arrival), in one total key order
// (numbers by value, bigints with them, strings by code unit after numbers), whatever the
// spill size; bigints and nested values survive the spill files.
import { describe, expect, it } from 'vitest';
import { compareKeys, ExternalSort, type Key } from '../../src/sinks/table/sorted-records.js';
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
