// The readers behind a local sink's schema-change report (issue 37 item 10): a Parquet footer's
// key/value metadata (sinks/parquet/parquet-footer.ts) and a CSV header line (sinks/csv/csv-header.ts),
// read from a file anyone may have put at the path. Whatever the bytes, they answer "not known"
// (undefined) rather than throwing, looping or reading past their limits.
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parquetKeyValues } from '../../src/sinks/parquet/parquet-footer.js';
import { publishedParquetSchema } from '../../src/sinks/parquet/parquet-encoding.js';
import { csvHeaderColumns, csvPublishedSchema, splitCsvLine } from '../../src/sinks/csv/csv-header.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'schema-readback-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const COLUMNS = [
  { name: 'id', type: 'VARCHAR' },
  { name: '_extra', type: 'JSON' },
];

function parquetFile(kv: Array<{ key: string; value: string }>): Buffer {
  const bytes = parquetWriteBuffer({
    columnData: [{ name: 'id', data: ['a', 'b', 'c'], type: 'STRING' }],
    kvMetadata: kv,
  });
  return Buffer.from(bytes);
}

async function put(name: string, body: Buffer | string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, body);
  return file;
}

describe('a Parquet footer read back', () => {
  const ours = parquetFile([
    { key: 'catalog-streams.schema-hash', value: '0123456789abcdef' },
    { key: 'catalog-streams.schema', value: JSON.stringify(COLUMNS) },
  ]);

  it("gives this toolkit's {hash, columns}; another writer's file gives nothing", async () => {
    expect(await publishedParquetSchema(await put('ours.parquet', ours))).toEqual({
      hash: '0123456789abcdef',
      columns: COLUMNS,
    });
    const foreign = await put('foreign.parquet', parquetFile([{ key: 'writer', value: 'spark' }]));
    expect(await parquetKeyValues(foreign)).toEqual(new Map([['writer', 'spark']]));
    expect(await publishedParquetSchema(foreign)).toBeUndefined();
  });

  it('garbage or truncated files, a link, a folder: undefined, never a throw', async () => {
    const cases: Array<Buffer | string> = ['', 'PAR1', 'PAR1 somebody else’s report PAR1', Buffer.alloc(4096, 0xff)];
    // Every cut of the tail loses the magic number or the footer's length.
    for (let cut = 1; cut < 200; cut += 7) cases.push(ours.subarray(0, ours.length - cut));
    for (const [n, body] of cases.entries())
      expect(await publishedParquetSchema(await put(`case-${n}.parquet`, body)), `case ${n}`).toBeUndefined();
    const link = join(dir, 'link.parquet');
    await symlink(join(dir, 'ours.parquet'), link);
    expect(await publishedParquetSchema(link)).toBeUndefined();
    expect(await publishedParquetSchema(dir)).toBeUndefined();
    expect(await publishedParquetSchema(join(dir, 'missing.parquet'))).toBeUndefined();
  });

  it('a footer with any one byte changed: a schema, or nothing (no throw, no hang)', async () => {
    const footerLength = ours.readUInt32LE(ours.length - 8);
    let read = 0;
    for (let i = ours.length - 8 - footerLength; i < ours.length - 8; i++) {
      const changed = Buffer.from(ours);
      changed[i] = changed[i]! ^ 0xa5;
      const schema = await publishedParquetSchema(await put('changed.parquet', changed));
      if (schema === undefined) continue;
      expect(schema).toEqual({ hash: expect.any(String), columns: expect.anything() });
      read++;
    }
    // Bytes of the row group's statistics and the like do not matter to the key/value metadata.
    expect(read).toBeGreaterThan(0);
  });

  it('a footer longer than the limit is not read', async () => {
    expect(await parquetKeyValues(await put('limit.parquet', ours), 16)).toBeUndefined();
  });
});

describe('a CSV header read back', () => {
  it('splits quoted fields; unclosed quotes are no header', () => {
    expect(splitCsvLine('a,"b,c","d""e",,_extra', ',')).toEqual(['a', 'b,c', 'd"e', '', '_extra']);
    expect(splitCsvLine('a;b', ';')).toEqual(['a', 'b']);
    expect(splitCsvLine('a,"b', ',')).toBeUndefined();
    expect(splitCsvLine('a,"b"c', ',')).toBeUndefined();
  });

  it('plain and gzip files of this toolkit (the header ends with _extra); anything else gives nothing', async () => {
    const text = 'id,name_en,_extra\r\n1,x,\r\n';
    expect(await csvHeaderColumns(await put('plain.csv', text), ',')).toEqual(['id', 'name_en', '_extra']);
    expect(await csvHeaderColumns(await put('zipped.csv.gz', gzipSync(text)), ',')).toEqual([
      'id',
      'name_en',
      '_extra',
    ]);
    // Truncated gzip: the header line is inflated from what is there.
    const truncated = gzipSync(`${text}${'2,y,\r\n'.repeat(1000)}`);
    expect(await csvHeaderColumns(await put('cut.csv.gz', truncated.subarray(0, 12)), ',')).toBeUndefined();
    expect(await csvHeaderColumns(await put('foreign.csv', 'id,name\r\n1,x\r\n'), ',')).toBeUndefined();
    expect(await csvHeaderColumns(await put('garbage.csv', Buffer.alloc(2048, 0x8b)), ',')).toBeUndefined();
    expect(
      await csvHeaderColumns(await put('bomb.csv.gz', gzipSync(Buffer.alloc(4 << 20, 0x41))), ','),
    ).toBeUndefined();
    expect(await csvHeaderColumns(await put('long.csv', `${'x'.repeat(64)},_extra\n`), ',', 32)).toBeUndefined();
    const link = join(dir, 'link.csv');
    await symlink(join(dir, 'plain.csv'), link);
    expect(await csvHeaderColumns(link, ',')).toBeUndefined();
  });

  it("types the names as this run does: a column only the file has gets '', and there is no hash", async () => {
    const file = await put('old.csv', 'id,gone,_extra\r\n');
    expect(await csvPublishedSchema(file, ',', COLUMNS)).toEqual({
      hash: '',
      columns: [
        { name: 'id', type: 'VARCHAR' },
        { name: 'gone', type: '' },
        { name: '_extra', type: 'JSON' },
      ],
    });
  });
});
