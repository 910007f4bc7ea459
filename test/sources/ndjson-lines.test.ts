// NdjsonLines: the stream reader's line splitter (it replaced split2 behind a PassThrough tap);
// the same lines as split2's `/\r?\n/` split, whatever the chunk boundaries.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { LINE_OVERFLOW, NdjsonLines } from '../../src/sources/ndjson-lines.js';

async function linesOf(chunks: Buffer[], maxLength = 1000) {
  const seen: Buffer[] = [];
  const events: string[] = [];
  const splitter = new NdjsonLines({
    maxLength,
    onChunk: (c) => seen.push(c),
    onEnd: () => events.push('end'),
  });
  const lines: string[] = [];
  splitter.on('data', (line: string) => {
    lines.push(line);
    events.push('line');
  });
  await pipeline(Readable.from(chunks, { objectMode: false }), splitter);
  return { lines, seen, events };
}

/** Every way of cutting `text` into two chunks (bytes, so a character may be cut too). */
function cuts(text: string): Buffer[][] {
  const bytes = Buffer.from(text);
  return Array.from({ length: bytes.length + 1 }, (_, i) => [bytes.subarray(0, i), bytes.subarray(i)]);
}

describe('NdjsonLines', () => {
  it('splits at \\n and drops one \\r before it, wherever the chunks are cut (characters too)', async () => {
    const text = '{"a":"é€"}\r\n{"b":1}\n\n{"c":"𝄞"}\r\r\nlast';
    for (const chunks of cuts(text)) {
      const { lines } = await linesOf(chunks);
      expect(lines).toEqual(['{"a":"é€"}', '{"b":1}', '', '{"c":"𝄞"}\r', 'last']);
    }
  });

  it('delivers no piece after a final newline, and shows every chunk before the end', async () => {
    const chunks = [Buffer.from('{"a":1}\n{"b"'), Buffer.from(':2}\n')];
    const { lines, seen, events } = await linesOf(chunks);
    expect(lines).toEqual(['{"a":1}', '{"b":2}']);
    expect(Buffer.concat(seen).toString()).toBe('{"a":1}\n{"b":2}\n');
    expect(events).toEqual(['line', 'line', 'end']);
  });

  it('tells the end before the piece after the last newline (the reader judges that piece knowing the body ended)', async () => {
    const { events } = await linesOf([Buffer.from('{"a":1}\n{"b":')]);
    expect(events).toEqual(['line', 'end', 'line']);
  });

  it('fails with LINE_OVERFLOW when an unfinished line outgrows maxLength; a complete longer line passes', async () => {
    await expect(linesOf([Buffer.from('x'.repeat(11))], 10)).rejects.toThrow(LINE_OVERFLOW);
    const { lines } = await linesOf([Buffer.from(`${'x'.repeat(20)}\nab`)], 10);
    expect(lines).toEqual(['x'.repeat(20), 'ab']);
  });
});
