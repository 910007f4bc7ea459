// A state frame announcing more than MAX_FRAME_BYTES is refused at its header. Before, a 1 MB
// planted gzip whose first frame announced 0xFFFFFFF0 bytes made the reader buffer the whole
// inflated stream, copying it at every chunk: a core burned until the stall watchdog.
import { Readable } from 'node:stream';
import { createGunzip, gzipSync } from 'node:zlib';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { frameBody, MAX_FRAME_BYTES, readFrameBodies } from '../../src/sinks/table/sorted-records.js';

async function bodies(gzipped: Buffer): Promise<Buffer[]> {
  const gunzip = createGunzip();
  pipeline(Readable.from([gzipped]), gunzip).catch(() => {});
  const out: Buffer[] = [];
  for await (const body of readFrameBodies(gunzip)) out.push(body);
  return out;
}

describe('state frames, bounded', () => {
  it('refuses a frame announcing 0xFFFFFFF0 bytes at its header, naming the limit', async () => {
    const header = Buffer.alloc(4);
    header.writeUInt32LE(0xfffffff0, 0);
    // 64 MiB of zeros after the header: about 64 KB gzipped.
    const planted = gzipSync(Buffer.concat([header, Buffer.alloc(64 * 1024 * 1024)]));
    await expect(bodies(planted)).rejects.toMatchObject({
      code: 'table.state_limit',
      message: expect.stringContaining(`${0xfffffff0} bytes, over the limit of ${MAX_FRAME_BYTES} bytes`),
    });
  }, 20_000);

  it('still reads frames within the limit', async () => {
    const state = gzipSync(Buffer.concat([frameBody(Buffer.from('one')), frameBody(Buffer.alloc(100_000, 1))]));
    const read = await bodies(state);
    expect(read.map((b) => b.length)).toEqual([3, 100_000]);
  });
});
