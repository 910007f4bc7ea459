// The row delta of an Iceberg current/ snapshot (delta-files.ts) over plain arrays: unchanged rows
// keep their file and position, updated and inserted rows go to the run's files, replaced and
// deleted rows become position deletes sorted by file and position; a file past the deleted share,
// or small files once there are enough of them, are rewritten (their rows copied, their deletes
// dropped); positions that do not add up to the state's rows are refused. And the positions file
// round-trips, checked against the snapshot's rows.
import { describe, expect, it } from 'vitest';
import { DeltaFiles, SMALL_FILES } from '../../../src/sinks/table/delta-files.js';
import { decodePositions, encodePositions, type MergePositions } from '../../../src/sinks/table/merge-positions.js';
import type { ShapedRow } from '../../../src/sinks/shared/column-types.js';
import type { RowOrigin } from '../../../src/sinks/table/table-merge.js';

class ArrayPart {
  readonly values: unknown[] = [];
  constructor(readonly name: string) {}
  readonly encoder = {
    rows: 0,
    write: (row: ShapedRow) => {
      this.values.push(row.values[0]);
      this.encoder.rows++;
    },
    end: () => Promise.resolve(),
  };
  path(): string {
    return this.name;
  }
  bytes(): number {
    return this.values.length;
  }
}

/** Files a (4 rows: k0..k3) and b (4 rows: k4..k7), every row live: positions in key order. */
function previous(deleted: { a?: number; b?: number } = {}): MergePositions {
  return {
    filesKey: 'k',
    files: [
      { path: 'a', rows: 4, bytes: 40, deleted: deleted.a ?? 0 },
      { path: 'b', rows: 4, bytes: 40, deleted: deleted.b ?? 0 },
    ],
    deleteFiles: [{ path: 'old-deletes', rows: 1, bytes: 10, refs: ['a'] }],
    positions: Uint32Array.from([0, 0, 0, 1, 0, 2, 0, 3, 1, 0, 1, 1, 1, 2, 1, 3]),
  };
}

async function run(prev: MergePositions | undefined, steps: Array<[string, RowOrigin] | 'delete'>, fileRows = 4) {
  const deletes: Array<Array<{ path: string; pos: number }>> = [];
  const files = new DeltaFiles(prev, fileRows, (n) => Promise.resolve(new ArrayPart(`new${n}`)), {
    write: (rows) => {
      deletes.push([...rows]);
      return Promise.resolve({ path: 'run-deletes', rows: rows.length, bytes: rows.length });
    },
  });
  for (const step of steps)
    if (step === 'delete') files.deleted();
    else await files.row({ values: [step[0]], bytes: 1 }, step[1]);
  const result = await files.end();
  return { result, deletes, written: files.written.map((p) => p.values) };
}

const pairs = (p: Uint32Array) => Array.from({ length: p.length / 2 }, (_, i) => `${p[2 * i]}:${p[2 * i + 1]}`);

describe('DeltaFiles: position deletes for current/', () => {
  it('keeps unchanged rows where they are; changes go to new files and position deletes', async () => {
    const { result, deletes, written } = await run(previous(), [
      ['k0', 'unchanged'],
      ['k1', 'unchanged'],
      'delete', // k2
      ['k3', 'unchanged'],
      ['k35', 'inserted'],
      ['k4', 'updated'],
      ['k5', 'unchanged'],
      ['k6', 'unchanged'],
      ['k7', 'updated'],
    ]);
    expect(written).toEqual([['k35', 'k4', 'k7']]);
    // Sorted by file, then position.
    expect(deletes).toEqual([
      [
        { path: 'a', pos: 2 },
        { path: 'b', pos: 0 },
        { path: 'b', pos: 3 },
      ],
    ]);
    expect(result.files.map((f) => `${f.path} ${f.rows} ${f.deleted}`)).toEqual(['a 4 1', 'b 4 2', 'new0 3 0']);
    expect(pairs(result.positions)).toEqual(['0:0', '0:1', '0:3', '2:0', '2:1', '1:1', '1:2', '2:2']);
    expect(result.deleteFiles.map((d) => `${d.path} ${d.refs.join(',')}`)).toEqual([
      'old-deletes a',
      'run-deletes a,b',
    ]);
    expect(result.addedDeletes).toBe('run-deletes');
  });

  it('rewrites a file past the deleted share: its rows copied, its deletes and the file gone', async () => {
    // a has 1 of 4 rows deleted (25 % > 20 %): k1 is the deleted one, 3 rows left.
    const prev = previous({ a: 1 });
    prev.positions = Uint32Array.from([0, 0, 0, 2, 0, 3, 1, 0, 1, 1, 1, 2, 1, 3]);
    const { result, deletes, written } = await run(prev, [
      ['k0', 'unchanged'],
      ['k2', 'updated'],
      'delete', // k3
      ['k4', 'unchanged'],
      ['k5', 'unchanged'],
      ['k6', 'unchanged'],
      ['k7', 'unchanged'],
    ]);
    expect(written).toEqual([['k0', 'k2']]);
    expect(deletes).toEqual([]);
    expect(result.files.map((f) => f.path)).toEqual(['b', 'new0']);
    // The old delete file named only a: gone with it.
    expect(result.deleteFiles).toEqual([]);
    expect(pairs(result.positions)).toEqual(['1:0', '1:1', '0:0', '0:1', '0:2', '0:3']);
  });

  it(`compacts small files once there are ${SMALL_FILES} of them`, async () => {
    const n = SMALL_FILES;
    const prev: MergePositions = {
      filesKey: 'k',
      files: Array.from({ length: n }, (_, i) => ({ path: `s${i}`, rows: 1, bytes: 1, deleted: 0 })),
      deleteFiles: [],
      positions: Uint32Array.from(Array.from({ length: n }, (_, i) => [i, 0]).flat()),
    };
    const steps = Array.from({ length: n }, (_, i): [string, RowOrigin] => [`k${i}`, 'unchanged']);
    const { result, written } = await run(prev, steps, 10);
    expect(written).toEqual([steps.map((s) => s[0])]);
    expect(result.files.map((f) => f.path)).toEqual(['new0']);
    // One fewer small file: none is rewritten.
    const fewer = {
      ...prev,
      files: prev.files.slice(1),
      positions: prev.positions.slice(2).map((v, i) => (i % 2 ? v : v - 1)),
    };
    const kept = await run(fewer, steps.slice(1), 10);
    expect(kept.written).toEqual([]);
    expect(kept.result.files).toHaveLength(n - 1);
  });

  it('refuses positions that do not add up to the merge state', async () => {
    await expect(run(previous(), [['k0', 'unchanged']])).rejects.toMatchObject({ code: 'table.manifest' });
  });

  it('a positions file round-trips and is checked against the snapshot rows', () => {
    const p = previous();
    const bytes = encodePositions(p);
    const back = decodePositions(bytes, 8, 'here');
    expect(back.files).toEqual(p.files);
    expect(pairs(back.positions)).toEqual(pairs(p.positions));
    expect(() => decodePositions(bytes, 7, 'here')).toThrow(/positions for 7 rows/);
  });
});
