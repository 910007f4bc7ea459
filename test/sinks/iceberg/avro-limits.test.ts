// An Avro file planted where the table keeps its manifests is read within limits (AVRO_LIMITS):
// a block may not announce more records than its bytes can hold, deflate blocks inflate to a
// bounded size, and the file itself is read only up to its byte limit. Before, an 80-byte file
// (schema "null", one block of 2^40 records) grew the run until V8 aborted.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import avro from 'avsc';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decodeAvroFile, readAvro } from '../../../src/sinks/table/iceberg/manifests.js';
import { LocalObjectStore } from '../../../src/storage/object-store.js';

const longType = avro.Type.forSchema('long');
const mapType = avro.Type.forSchema({ type: 'map', values: 'bytes' });
const RECORD = { type: 'record', name: 'r', fields: [{ name: 'a', type: 'long' }] };

/** An Avro object container: `blocks` as they are (count and bytes chosen by the test). */
function avroFile(schema: unknown, codec: 'null' | 'deflate', blocks: Array<{ count: number; data: Buffer }>): Buffer {
  const sync = randomBytes(16);
  const header = mapType.toBuffer({
    'avro.schema': Buffer.from(JSON.stringify(schema)),
    'avro.codec': Buffer.from(codec),
  });
  const parts = [Buffer.from('Obj\x01', 'latin1'), header, sync];
  for (const b of blocks) parts.push(longType.toBuffer(b.count), longType.toBuffer(b.data.length), b.data, sync);
  return Buffer.concat(parts);
}

const records = (n: number) =>
  Buffer.concat(Array.from({ length: n }, (_, i) => avro.Type.forSchema(RECORD as avro.Schema).toBuffer({ a: i })));

describe('Avro files of an Iceberg table, read within limits', () => {
  it('refuses a tiny file whose block announces 2^40 records of schema "null"', () => {
    const planted = avroFile('null', 'null', [{ count: 2 ** 40, data: Buffer.alloc(0) }]);
    expect(planted.length).toBeLessThan(100);
    expect(() => decodeAvroFile(planted, 'metadata/snap-1.avro')).toThrow(
      expect.objectContaining({ code: 'iceberg.avro_limit', message: expect.stringContaining('metadata/snap-1.avro') }),
    );
  });

  it('refuses a header announcing 2^40 entries before reading one', () => {
    const planted = Buffer.concat([Buffer.from('Obj\x01', 'latin1'), longType.toBuffer(2 ** 40), Buffer.alloc(40)]);
    expect(() => decodeAvroFile(planted, 'metadata/planted.avro')).toThrow(
      expect.objectContaining({ code: 'iceberg.avro_limit', message: expect.stringContaining(`${2 ** 40} entries`) }),
    );
  });

  it('refuses a block announcing more records than its bytes can hold (count x minimum record size)', () => {
    const planted = avroFile(RECORD, 'null', [{ count: 1_000_000, data: records(3) }]);
    expect(() => decodeAvroFile(planted, 'm.avro')).toThrow(
      expect.objectContaining({ code: 'iceberg.avro_limit', message: expect.stringContaining('1000000 records') }),
    );
  });

  it('stops inflating a deflate block at the limit', () => {
    // 4 MiB of zeros deflate to a few KB; the limit here is 1 MiB.
    const bomb = deflateRawSync(Buffer.alloc(4 * 1024 * 1024));
    const planted = avroFile(RECORD, 'deflate', [{ count: 1, data: bomb }]);
    expect(() => decodeAvroFile(planted, 'm.avro', { fileBytes: 1024 * 1024, inflatedBytes: 1024 * 1024 })).toThrow(
      expect.objectContaining({ code: 'iceberg.avro_limit', message: expect.stringContaining('1048576 bytes') }),
    );
  });

  it('still reads files within the limits, null and deflate blocks', () => {
    const file = avroFile(RECORD, 'null', [{ count: 3, data: records(3) }]);
    expect(decodeAvroFile(file, 'm.avro').records).toEqual([{ a: 0 }, { a: 1 }, { a: 2 }]);
    const deflated = avroFile(RECORD, 'deflate', [
      { count: 2, data: deflateRawSync(records(2)) },
      { count: 3, data: deflateRawSync(records(3)) },
    ]);
    expect(decodeAvroFile(deflated, 'm.avro').records).toHaveLength(5);
  });

  describe('read from the store', () => {
    let dir: string;
    beforeEach(async () => {
      dir = await mkdtemp(join(tmpdir(), 'avro-limits-'));
    });
    afterEach(() => rm(dir, { recursive: true, force: true }));

    it('reads a file only up to its byte limit', async () => {
      await writeFile(join(dir, 'big.avro'), avroFile(RECORD, 'null', [{ count: 5000, data: records(5000) }]));
      const store = new LocalObjectStore(dir);
      await expect(readAvro(store, 'big.avro', { fileBytes: 4096, inflatedBytes: 4096 })).rejects.toMatchObject({
        code: 'iceberg.avro_limit',
        message: expect.stringContaining('4096 bytes'),
      });
      expect((await readAvro(store, 'big.avro')).records).toHaveLength(5000);
    });
  });
});
