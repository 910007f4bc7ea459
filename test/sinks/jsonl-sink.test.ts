import { existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AbortedError, ConfigError, SinkError } from '../../src/errors.js';
import type { OutputRecord } from '../../src/events.js';
import type { SinkStream } from '../../src/core/stage.js';
import { jsonlSink, sinkStages, stringifyJson } from '../../src/sinks/index.js';
import { testContext } from '../helpers/stage-context.js';
import { productRecords, randomBatches, tempDir } from './records.js';
import { failMidStream, waitClosed, waitFor } from './stream-harness.js';

function plainRecords(count: number) {
  return Array.from({ length: count }, (_, i) => ({
    id: `P${i}`,
    eanGtin13: String(i).padStart(13, '0'),
    name: { en: `Δ8-THC ${i}`, nl: i % 3 ? null : 'β-Caryophyllene' },
    price: i * 3,
    ok: i % 2 === 0,
    tags: i % 5 ? ['a', 'b'] : [],
  }));
}

const lines = (records: unknown[]) => records.map((r) => `${JSON.stringify(r)}\n`).join('');

/** The files under `dir`, without the dataset's hidden record of them (local-dataset.ts). */
async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && !/^\.catalog-streams\.[0-9a-f]{16}\.json$/.test(entry.name))
      out.push(join(entry.parentPath ?? (entry as unknown as { path: string }).path, entry.name).slice(dir.length + 1));
  }
  return out.sort();
}

function collectOutputs(ctx: ReturnType<typeof testContext>): OutputRecord[] {
  const seen: OutputRecord[] = [];
  ctx.events.on('output', (o) => seen.push(o));
  return seen;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('jsonl sink', () => {
  it('writes byte-exact JSON.stringify lines, resolving relative paths against ctx.baseDir', async () => {
    const dir = await tempDir();
    const ctx = testContext({ baseDir: dir });
    const events = collectOutputs(ctx);
    const records = plainRecords(500);
    const sink = jsonlSink({ path: 'out/{name}-{date}.jsonl' }, ctx);
    await pipeline(Readable.from(records), sink);
    const file = join(dir, 'out/test-2026-01-02.jsonl');
    expect(await readFile(file, 'utf8')).toBe(lines(records));
    expect(sink.outputs).toEqual([
      { kind: 'file', location: file, rows: 500, bytes: (await stat(file)).size, sink: 'jsonl' },
    ]);
    expect(events).toEqual(sink.outputs);
    expect(await listFiles(dir)).toEqual(['out/test-2026-01-02.jsonl']);
  });

  it('writes BigInt values as bare integers without loss', async () => {
    const dir = await tempDir();
    const record = {
      id: 'P1',
      serial: 12345678901234567890n,
      nested: { list: [1n, -9007199254740993n] },
      skip: undefined,
    };
    const sink = jsonlSink({ path: join(dir, 'big.jsonl') });
    await pipeline(Readable.from([record, { id: 'P2' }]), sink);
    const text = await readFile(join(dir, 'big.jsonl'), 'utf8');
    expect(text).toBe(
      '{"id":"P1","serial":12345678901234567890,"nested":{"list":[1,-9007199254740993]}}\n{"id":"P2"}\n',
    );
    expect(stringifyJson({ a: [undefined, () => 1], d: new Date(0), n: 1n })).toBe(
      '{"a":[null,null],"d":"1970-01-01T00:00:00.000Z","n":1}',
    );
  });

  it('gzips when the path ends in .gz, or when gzip: true', async () => {
    const dir = await tempDir();
    const records = plainRecords(3000);
    const gz = jsonlSink({ path: join(dir, 'a.jsonl.gz') });
    await pipeline(Readable.from(records), gz);
    const compressed = await readFile(join(dir, 'a.jsonl.gz'));
    expect(compressed[0]).toBe(0x1f);
    expect(gunzipSync(compressed).toString('utf8')).toBe(lines(records));
    expect(gz.outputs[0]).toMatchObject({ rows: 3000, bytes: compressed.byteLength });

    const forced = jsonlSink({ path: join(dir, 'b.jsonl'), gzip: true });
    await pipeline(Readable.from(records.slice(0, 10)), forced);
    expect(gunzipSync(await readFile(join(dir, 'b.jsonl'))).toString('utf8')).toBe(lines(records.slice(0, 10)));
  });

  it('rotates by rows into numbered parts', async () => {
    const dir = await tempDir();
    const records = plainRecords(2500);
    const sink = jsonlSink({ path: join(dir, 'p-{part}.jsonl'), maxRows: 1000 });
    await pipeline(randomBatches(records, 300), sink);
    expect(await listFiles(dir)).toEqual(['p-00000.jsonl', 'p-00001.jsonl', 'p-00002.jsonl']);
    expect(sink.outputs.map((o) => o.rows)).toEqual([1000, 1000, 500]);
    expect(await readFile(join(dir, 'p-00001.jsonl'), 'utf8')).toBe(lines(records.slice(1000, 2000)));
  });

  it('rotates by bytes: each part reaches maxBytes and passes it by less than one line; nothing lost or repeated', async () => {
    const dir = await tempDir();
    const records = [...productRecords(4000)];
    const maxBytes = 64 * 1024;
    const sink = jsonlSink({ path: join(dir, 'p-{part}.jsonl'), maxBytes: '64KiB' });
    await pipeline(randomBatches(records, 97, 7), sink);
    const expected = records.map((r) => `${stringifyJson(r)}\n`);
    const files = await listFiles(dir);
    expect(files.length).toBeGreaterThan(5);
    let all = '';
    for (const [i, name] of files.entries()) {
      const text = await readFile(join(dir, name), 'utf8');
      const size = Buffer.byteLength(text);
      expect(sink.outputs[i]).toMatchObject({ location: join(dir, name), bytes: size });
      if (i < files.length - 1) {
        const lastLine = text.slice(text.lastIndexOf('\n', text.length - 2) + 1);
        expect(size).toBeGreaterThanOrEqual(maxBytes);
        expect(size - Buffer.byteLength(lastLine)).toBeLessThan(maxBytes);
      } else {
        expect(size).toBeLessThanOrEqual(maxBytes + 1024);
      }
      all += text;
    }
    expect(all).toBe(expected.join(''));
    expect(sink.outputs.reduce((n, o) => n + o.rows, 0)).toBe(4000);
  });

  it('splits records into Hive partitions from a record field, null into the default partition', async () => {
    const dir = await tempDir();
    const records = [...productRecords(200)].map((r, i) => ({ ...r, status: i % 10 === 9 ? null : r.status }));
    const sink = jsonlSink({ path: join(dir, 'status={status}/part-{part}.jsonl') });
    await pipeline(Readable.from(records), sink);
    expect(await listFiles(dir)).toEqual([
      'status=__HIVE_DEFAULT_PARTITION__/part-00000.jsonl',
      'status=active/part-00000.jsonl',
      'status=inactive/part-00000.jsonl',
      'status=no_selection/part-00000.jsonl',
      'status=replaced/part-00000.jsonl',
    ]);
    const active = await readFile(join(dir, 'status=active/part-00000.jsonl'), 'utf8');
    expect(active).toBe(
      records
        .filter((r) => r.status === 'active')
        .map((r) => `${stringifyJson(r)}\n`)
        .join(''),
    );
    expect(sink.outputs.reduce((n, o) => n + o.rows, 0)).toBe(200);
  });

  it('closes the least recently used partition past maxOpenPartitions and continues it in a new part', async () => {
    const dir = await tempDir();
    const records = plainRecords(40).map((r, i) => ({ ...r, shard: i % 4 }));
    const sink = jsonlSink({ path: join(dir, 'shard={shard}/p-{part}.jsonl'), maxOpenPartitions: 2 });
    await pipeline(Readable.from(records), sink);
    const files = await listFiles(dir);
    // Round-robin over 4 shards with 2 open: every record of a shard lands in a new part.
    expect(files.filter((f) => f.startsWith('shard=0/'))).toHaveLength(10);
    for (let shard = 0; shard < 4; shard++) {
      let text = '';
      for (const f of files.filter((name) => name.startsWith(`shard=${shard}/`)))
        text += await readFile(join(dir, f), 'utf8');
      expect(text).toBe(lines(records.filter((r) => r.shard === shard)));
    }
  });

  it('fails clearly past maxOpenPartitions when the path has no {part}, leaving no file', async () => {
    const dir = await tempDir();
    const records = plainRecords(10).map((r, i) => ({ ...r, shard: i % 3 }));
    const sink = jsonlSink({ path: join(dir, 'shard={shard}/data.jsonl'), maxOpenPartitions: 2 });
    const failure = pipeline(Readable.from(records), sink);
    await expect(failure).rejects.toThrow(SinkError);
    await expect(failure).rejects.toThrow(/more than 2 partitions are open at once .* add \{part\}/);
    expect(await listFiles(dir)).toEqual([]);
  });

  it('writes "-" to stdout with backpressure and lists it as a stdout output', async () => {
    const chunks: Buffer[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation(((chunk: Uint8Array, callback?: unknown) => {
      chunks.push(Buffer.from(chunk));
      if (typeof callback === 'function') (callback as () => void)();
      return true;
    }) as typeof process.stdout.write);
    const records = plainRecords(1500);
    const sink = jsonlSink({ path: '-' });
    await pipeline(Readable.from(records), sink);
    vi.restoreAllMocks();
    expect(Buffer.concat(chunks).toString('utf8')).toBe(lines(records));
    expect(sink.outputs).toEqual([
      { kind: 'stdout', location: '-', rows: 1500, bytes: Buffer.byteLength(lines(records)), sink: 'jsonl' },
    ]);
  });

  it('honours a slow stdout (ctx.stdout): the sink waits for it', async () => {
    const slow = new PassThrough({ highWaterMark: 1024 });
    const received: Buffer[] = [];
    const ctx = testContext({ fields: { stdout: slow } });
    const records = plainRecords(3000);
    const sink = jsonlSink({ path: '-' }, ctx);
    const done = pipeline(Readable.from(records), sink);
    // Nobody reads yet: the backlog reaches the sink, which stops taking records long before the end.
    await waitFor(() => sink.writableNeedDrain, 'the sink to apply backpressure');
    await new Promise((r) => setTimeout(r, 50));
    expect(sink.writableNeedDrain).toBe(true);
    expect(slow.readableLength + slow.writableLength).toBeLessThan(Buffer.byteLength(lines(records)) / 2);
    slow.on('data', (c: Buffer) => received.push(c));
    await done;
    expect(Buffer.concat(received).toString('utf8')).toBe(lines(records));
  });

  it('shows only a hidden temp file while writing, and defers renames of rotated parts to the end', async () => {
    const dir = await tempDir();
    const sink = jsonlSink({ path: join(dir, 'p-{part}.jsonl'), maxRows: 100 });
    for (const r of plainRecords(250)) if (!sink.write(r)) await new Promise((resolve) => sink.once('drain', resolve));
    // Beside the temp files, the run's lock on the dataset (a template without {run} that each run replaces).
    const temps = async () => (await readdir(dir)).filter((f) => f !== '.publish.lock');
    await waitFor(async () => (await temps()).length === 3, 'the third part to open');
    expect(await readdir(dir)).toContain('.publish.lock');
    const during = await temps();
    expect(during.every((f) => /^\.p-0000[0-2]\.jsonl\.[0-9a-f]{6}-\d+-[0-9a-f]{8}\.tmp$/.test(f))).toBe(true);
    expect(during).toHaveLength(3);
    await new Promise<void>((resolve, reject) => sink.end((err?: Error | null) => (err ? reject(err) : resolve())));
    // The published parts, and the hidden record of them that the next run of the dataset reads.
    expect(await readdir(dir)).toEqual([
      expect.stringMatching(/^\.catalog-streams\.[0-9a-f]{16}\.json$/),
      'p-00000.jsonl',
      'p-00001.jsonl',
      'p-00002.jsonl',
    ]);
  });

  it('removes every temp file and leaves no final file when destroyed with an error mid-write', async () => {
    const dir = await tempDir();
    const ctx = testContext();
    const events = collectOutputs(ctx);
    const sink = jsonlSink({ path: join(dir, 'p-{part}.jsonl.gz'), maxRows: 500 }, ctx);
    const failure = await failMidStream(sink, plainRecords(1200), {
      until: async () => (await readdir(dir)).length >= 2,
      error: new Error('upstream API failed'),
    });
    expect(failure).toMatchObject({ message: 'upstream API failed' });
    expect(await readdir(dir)).toEqual([]);
    expect(sink.outputs).toEqual([]);
    expect(events).toEqual([]);
  });

  it('discards its output when ctx.signal aborts', async () => {
    const dir = await tempDir();
    const ctx = testContext();
    const sink = jsonlSink({ path: join(dir, 'data.jsonl') }, ctx);
    const source = new Readable({ objectMode: true, read() {} });
    const done = pipeline(source, sink);
    for (const r of plainRecords(100)) source.push(r);
    await new Promise((r) => setTimeout(r, 20));
    ctx.controller.abort();
    await expect(done).rejects.toThrow(AbortedError);
    await waitClosed(sink);
    expect(await readdir(dir)).toEqual([]);
  });

  it('writes an empty file when no record arrives', async () => {
    const dir = await tempDir();
    const sink = jsonlSink({ path: join(dir, 'empty.jsonl') });
    await pipeline(Readable.from([]), sink);
    expect(await readFile(join(dir, 'empty.jsonl'), 'utf8')).toBe('');
    expect(sink.outputs).toEqual([
      { kind: 'file', location: join(dir, 'empty.jsonl'), rows: 0, bytes: 0, sink: 'jsonl' },
    ]);
  });

  it('rejects non-object records with a sink error, leaving nothing behind', async () => {
    const dir = await tempDir();
    const sink = jsonlSink({ path: join(dir, 'x.jsonl') });
    await expect(pipeline(Readable.from([{ id: 1 }, 'oops']), sink)).rejects.toThrow(
      /expects plain object records, received string/,
    );
    await waitClosed(sink);
    expect(existsSync(join(dir, 'x.jsonl'))).toBe(false);
  });

  it('validates options strictly through the registry and the code API', () => {
    const ctx = testContext({ stages: sinkStages });
    expect(() => ctx.registry.create('sink', { type: 'jsonl', path: 'x.jsonl', maxRow: 5 }, ctx, 'sinks[0]')).toThrow(
      ConfigError,
    );
    expect(() => ctx.registry.create('sink', { type: 'jsonl', path: 'x.jsonl', maxRow: 5 }, ctx, 'sinks[0]')).toThrow(
      /maxRow/,
    );
    expect(() => ctx.registry.create('sink', { type: 'jsonl', path: 'x.jsonl', maxRows: 5 }, ctx, 'sinks[0]')).toThrow(
      /has no \{part\}.*use e\.g\. "x-\{part\}\.jsonl"/,
    );
    expect(() => jsonlSink({ path: '-', maxRows: 5 })).toThrow(/stdout/);
    expect(() => jsonlSink({ path: 'x-{part}.jsonl', maxBytes: '12 parsecs' })).toThrow(/byte size/);
    const sink = ctx.registry.create<SinkStream>(
      'sink',
      { type: 'jsonl', path: 'x-{part}.jsonl', maxBytes: '1MiB' },
      ctx,
    );
    expect(sink.writable).toBe(true);
    sink.destroy();
  });

  it('writes the codes of the pipeline schema that arrive as integers as padded strings, and nothing else changed', async () => {
    const dir = await tempDir();
    const code = (padTo: number) => ({ kind: 'string' as const, code: { digits: padTo, padTo } });
    const recordSchema = {
      fields: [
        { name: 'id', type: { kind: 'string' as const } },
        { name: 'eanGtin13', type: code(13) },
        { name: 'ean', type: { kind: 'list' as const, element: code(13) } },
        { name: 'cnk', type: code(7) },
        {
          name: 'links',
          type: {
            kind: 'list' as const,
            element: { kind: 'struct' as const, fields: [{ name: 'gtin', type: code(14) }] },
          },
        },
      ],
    };
    const ctx = testContext({ baseDir: dir, fields: { recordSchema } });
    const records = [
      {
        id: 'P1',
        eanGtin13: 65699514566,
        ean: [12345, '0000000054321'],
        cnk: '0012345',
        links: [{ gtin: 7, other: 1 }],
        price: 120,
      },
      { id: 'P2', eanGtin13: '0065699514566', ean: [], cnk: 12345, links: null, price: 5 },
      { id: 'P3', price: 7 },
    ];
    await pipeline(Readable.from(records), jsonlSink({ path: 'codes.jsonl' }, ctx));
    expect(await readFile(join(dir, 'codes.jsonl'), 'utf8')).toBe(
      lines([
        {
          id: 'P1',
          eanGtin13: '0065699514566',
          ean: ['0000000012345', '0000000054321'],
          cnk: '0012345',
          links: [{ gtin: '00000000000007', other: 1 }],
          price: 120,
        },
        { id: 'P2', eanGtin13: '0065699514566', ean: [], cnk: '0012345', links: null, price: 5 },
        { id: 'P3', price: 7 },
      ]),
    );
    // The records themselves are not changed (a tee shares them with other sinks).
    expect(records[0]!.eanGtin13).toBe(65699514566);
  });
});
