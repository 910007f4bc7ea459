// Fault injection over loopback: each fault happens exactly as configured,
// deterministically from the seed, faults limited by `times` do not repeat on
// the retry, faults change at runtime, and the counters report them.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resourceSchemas } from '../../src/catalog/index.js';
import { Dataset, type SandboxFaults } from '../../src/sandbox/index.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

const dataset = new Dataset({ products: 400, seed: 21, profile: 'spec' });
let sb: TestSandbox;
beforeAll(async () => {
  sb = await startTestSandbox({ dataset });
});
afterAll(() => sb.close());

/** Reads a stream answer chunk by chunk, keeping what arrived before a failure. */
async function readStream(sandbox: TestSandbox, body: unknown = { filter: { createdAt: 0 }, sorting: { id: 'ASC' } }) {
  const res = await request(`${sandbox.url}/v4/products/stream`, {
    method: 'POST',
    headers: { authorization: sandbox.authorization, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const chunks: Buffer[] = [];
  let error: unknown;
  try {
    for await (const chunk of res.body) chunks.push(chunk as Buffer);
  } catch (err) {
    error = err;
  }
  const text = Buffer.concat(chunks).toString('utf8');
  const complete = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n').slice(0, -1);
  return { status: res.statusCode, error, text, lines: text === '' ? [] : complete };
}

async function withFaults(faults: SandboxFaults, fn: () => Promise<void>) {
  sb.setFaults(faults);
  sb.resetStats();
  try {
    await fn();
  } finally {
    sb.setFaults({});
  }
}

const brands = () => sb.post('/v4/brands/query', {});

describe('request faults', () => {
  it('errorRate 1 answers every API request with one of errorStatuses (error body included)', async () => {
    await withFaults({ errorRate: 1, errorStatuses: [503] }, async () => {
      for (let i = 0; i < 3; i++) {
        const answer = await brands();
        expect(answer.status).toBe(503);
        expect(answer.json().error).toMatchObject({ status: 503, code: 'service_unavailable' });
      }
      expect(sb.stats.faults.errors).toBe(3);
      // Admin routes are never faulted.
      expect((await sb.post('/_sandbox/stats', undefined, { method: 'GET' })).status).toBe(200);
    });
  });

  it('errorRate 0.3 fails about that fraction, the same requests for the same seed', async () => {
    const pattern = async (sandbox: TestSandbox) => {
      sandbox.setFaults({ errorRate: 0.3 });
      const statuses: number[] = [];
      for (let i = 0; i < 60; i++) statuses.push((await sandbox.post('/v4/brands/query', {})).status);
      sandbox.setFaults({});
      return statuses;
    };
    const twin = await startTestSandbox({ dataset });
    try {
      const a = await pattern(sb);
      const b = await pattern(twin);
      expect(a).toEqual(b);
      const failed = a.filter((s) => s !== 200);
      expect(failed.length).toBeGreaterThan(8);
      expect(failed.length).toBeLessThan(30);
      expect(new Set(failed)).toEqual(new Set([500, 503]));
    } finally {
      await twin.close();
    }
  });

  it('latencyMs delays every API answer', async () => {
    await withFaults({ latencyMs: 120, latencyJitterMs: 30 }, async () => {
      const started = performance.now();
      expect((await brands()).status).toBe(200);
      expect(performance.now() - started).toBeGreaterThanOrEqual(115);
      expect(sb.stats.faults.delayed).toBe(1);
    });
  });

  it('tooManyRequests {after: 2, count: 3} answers requests 3 to 5 with 429, once', async () => {
    await withFaults({ tooManyRequests: { after: 2, count: 3 } }, async () => {
      const statuses = [];
      for (let i = 0; i < 8; i++) statuses.push((await brands()).status);
      expect(statuses).toEqual([200, 200, 429, 429, 429, 200, 200, 200]);
      expect(sb.stats.faults.tooManyRequests).toBe(3);
      expect(sb.stats.rateLimited).toBe(0);
    });
  });

  it('resetRate 1 destroys the connection without an answer', async () => {
    await withFaults({ resetRate: 1 }, async () => {
      await expect(brands()).rejects.toThrow();
      expect(sb.stats.faults.resets).toBe(1);
    });
  });

  it('endpoints limits faults to the named endpoints', async () => {
    await withFaults({ errorRate: 1, endpoints: ['brands.query'] }, async () => {
      expect((await brands()).status).toBeGreaterThanOrEqual(500);
      expect((await sb.post('/v4/organizations/query', {})).status).toBe(200);
    });
  });
});

describe('stream faults', () => {
  it('streamCut ends the connection after exactly K lines, once; the retry is complete', async () => {
    await withFaults({ streamCut: { afterLines: 5 } }, async () => {
      const cut = await readStream(sb);
      expect(cut.status).toBe(200);
      expect(cut.error).toBeDefined();
      expect(cut.lines).toHaveLength(5);
      expect(cut.lines.map((l) => JSON.parse(l).meta.index)).toEqual([0, 1, 2, 3, 4]);
      const retry = await readStream(sb);
      expect(retry.error).toBeUndefined();
      expect(retry.lines).toHaveLength(400);
      expect(sb.stats.faults.streamCuts).toBe(1);
    });
  });

  it('malformedLine makes the line at that index invalid JSON; the stream goes on; once', async () => {
    await withFaults({ malformedLine: { atIndex: 3 } }, async () => {
      const bad = await readStream(sb);
      expect(bad.error).toBeUndefined();
      expect(bad.lines).toHaveLength(400);
      expect(() => JSON.parse(bad.lines[3]!)).toThrow();
      expect(JSON.parse(bad.lines[4]!).meta.index).toBe(4);
      const retry = await readStream(sb);
      expect(retry.lines.every((l) => JSON.parse(l))).toBe(true);
    });
  });

  it('errorLine sends {"error":...} at that index and ends the stream; twice with times: 2', async () => {
    await withFaults({ errorLine: { atIndex: 4, times: 2 } }, async () => {
      for (let attempt = 0; attempt < 2; attempt++) {
        const failed = await readStream(sb);
        expect(failed.error).toBeUndefined();
        expect(failed.lines).toHaveLength(5);
        expect(JSON.parse(failed.lines[4]!)).toEqual({
          error: { status: 500, code: 'internal_error', message: expect.stringContaining('index 4') },
        });
      }
      expect((await readStream(sb)).lines).toHaveLength(400);
    });
  });

  it('shortStream ends cleanly with fewer lines than meta.total, once', async () => {
    await withFaults({ shortStream: { dropLast: 3 } }, async () => {
      const short = await readStream(sb);
      expect(short.error).toBeUndefined();
      expect(short.lines).toHaveLength(397);
      expect(JSON.parse(short.lines.at(-1)!).meta).toEqual({ total: 400, index: 396 });
      expect((await readStream(sb)).lines).toHaveLength(400);
    });
  });

  it('a fault that cannot happen in a stream (too few lines) is not used up', async () => {
    await withFaults({ streamCut: { afterLines: 50 } }, async () => {
      const small = await readStream(sb, { filter: { id: ['P0000001', 'P0000002'] }, sorting: { id: 'ASC' } });
      expect(small.lines).toHaveLength(2);
      expect((await readStream(sb)).lines).toHaveLength(50);
    });
  });
});

describe('invalid records', () => {
  it('invalidRecordRate breaks the same products and media every time, in ways the schemas reject', async () => {
    await withFaults({ invalidRecordRate: 0.05 }, async () => {
      const read = async () =>
        (await sb.stream('/v4/products/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } })).lines.map(
          (l) => l.result,
        );
      const first = await read();
      const invalid = first.filter((p) => !resourceSchemas.product.safeParse(p).success);
      expect(invalid.length).toBeGreaterThan(5);
      expect(invalid.length).toBeLessThan(45);
      expect(invalid.some((p) => p.status === 'bogus')).toBe(true);
      expect(invalid.some((p) => p.eanGtin13 > 9_999_999_999_999)).toBe(true);
      const again = (await read()).filter((p) => !resourceSchemas.product.safeParse(p).success);
      expect(again.map((p) => p.id)).toEqual(invalid.map((p) => p.id));
      // Paged answers carry the same broken records.
      const page = await sb.query('/v4/products/query', {
        filter: { id: invalid.slice(0, 3).map((p) => p.id) },
        sorting: { id: 'ASC' },
        page: { no: 0, size: 10 },
      });
      expect(page.results.every((p: any) => !resourceSchemas.product.safeParse(p).success)).toBe(true);
      const media = (await sb.stream('/v4/media/stream', {})).lines.map((l) => l.result);
      expect(media.filter((m) => !resourceSchemas.media.safeParse(m).success).length).toBeGreaterThan(5);
      expect(sb.stats.faults.invalidRecords).toBeGreaterThan(invalid.length * 2);
    });
  });
});

describe('runtime control', () => {
  it('faults are set over the admin route too, and the stats count requests by endpoint and status', async () => {
    sb.resetStats();
    const set = await sb.post('/_sandbox/faults', { errorRate: 1, errorStatuses: [500] });
    expect(set.status).toBe(200);
    expect((await brands()).status).toBe(500);
    expect((await sb.post('/_sandbox/faults', { errorRat: 1 })).status).toBe(400);
    await sb.post('/_sandbox/faults', {});
    expect((await brands()).status).toBe(200);
    const stats = (await sb.post('/_sandbox/stats', undefined, { method: 'GET' })).json();
    expect(stats.byEndpoint['brands.query']).toEqual({ 200: 1, 500: 1 });
    expect(stats.dataset).toMatchObject({ products: 400, seed: 21 });
    expect(stats.memory.rss).toBeGreaterThan(0);
  });
});
