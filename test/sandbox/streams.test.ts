// NDJSON framing of media/stream and products/stream over loopback: content
// type, one `{"meta":{"total","index"},"result"}` per line ending in "\n",
// indexes 0..total-1, parsing that survives any re-chunking (including splits
// inside multi-byte characters), 204 with an empty body when nothing matches,
// and a client that goes away mid-stream.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NDJSON_CONTENT_TYPE } from '../../src/sandbox/index.js';
import { parseNdjson, rechunk, startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let sb: TestSandbox;
beforeAll(async () => {
  sb = await startTestSandbox({ products: 600, seed: 4 });
});
afterAll(() => sb.close());

describe.each([
  [
    '/v4/media/stream',
    { filter: { product: Array.from({ length: 200 }, (_, i) => `P${String(i + 1).padStart(7, '0')}`) } },
  ],
  ['/v4/products/stream', { filter: { status: ['inactive', 'replaced'] }, sorting: { createdAt: 'DESC' } }],
] as const)('%s', (path, body) => {
  it('frames every record as one JSON line with meta.total and meta.index 0..total-1', async () => {
    const answer = await sb.post(path, body);
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe(NDJSON_CONTENT_TYPE);
    expect(answer.text.endsWith('\n')).toBe(true);
    const lines = answer.text.slice(0, -1).split('\n');
    const parsed = lines.map((l) => JSON.parse(l));
    const total = parsed[0].meta.total;
    expect(total).toBeGreaterThan(50);
    expect(parsed).toHaveLength(total);
    parsed.forEach((line, i) => {
      expect(Object.keys(line)).toEqual(['meta', 'result']);
      expect(line.meta).toEqual({ total, index: i });
    });
  });

  it('parses the same after re-chunking at random sizes (splits inside lines and characters)', async () => {
    const answer = await sb.post(path, body);
    const whole = parseNdjson([answer.body]);
    expect(answer.body.length).toBeGreaterThan(Buffer.byteLength(answer.text.replace(/[^\x00-\x7f]/g, ''))); // it has multi-byte characters
    for (const [max, seed] of [
      [3, 1],
      [17, 2],
      [100, 3],
      [5000, 4],
      [70_000, 5],
    ] as const) {
      expect(parseNdjson(rechunk(answer.body, max, seed))).toEqual(whole);
    }
  });

  it('answers the same bytes to the same request (stable order to resume by index)', async () => {
    const [a, b] = await Promise.all([sb.post(path, body), sb.post(path, body)]);
    expect(a.body.equals(b.body)).toBe(true);
  });
});

describe('empty results', () => {
  it.each([
    ['/v4/media/stream', { filter: { product: 'P9999999' } }],
    ['/v4/products/stream', { filter: { id: 'P9999999' }, sorting: { id: 'ASC' } }],
  ])('%s answers 204 with an empty body', async (path, body) => {
    const answer = await sb.post(path, body);
    expect(answer.status).toBe(204);
    expect(answer.body.length).toBe(0);
  });
});

describe('large streams', () => {
  it('streams a large result to a slow reader, and survives a client that leaves mid-stream', async () => {
    const big = await startTestSandbox({ products: 4000, seed: 4 });
    try {
      const res = await request(`${big.url}/v4/products/stream`, {
        method: 'POST',
        headers: { authorization: big.authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ filter: { createdAt: 0 }, sorting: { id: 'ASC' } }),
      });
      let received = 0;
      for await (const chunk of res.body) {
        received += (chunk as Buffer).length;
        await new Promise((r) => setTimeout(r, 2));
        if (received > 2_000_000) break; // leaving early destroys the connection
      }
      expect(received).toBeGreaterThan(2_000_000);
      const next = await big.stream('/v4/products/stream', {
        filter: { id: ['P0000001', 'P0004000'] },
        sorting: { id: 'DESC' },
      });
      expect(next.lines.map((l) => l.result.id)).toEqual(['P0004000', 'P0000001']);
    } finally {
      await big.close();
    }
  });
});
