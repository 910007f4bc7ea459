import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ products: 30, rateLimit: 0, assetHost: true });
});
afterAll(() => sandbox.close());

const sha = (b: ArrayBuffer) => createHash('sha256').update(Buffer.from(b)).digest('hex');

/** A product with a photo or frontal, as the API serves it. */
async function firstProduct(): Promise<any> {
  const auth = `Basic ${btoa(`${sandbox.credentials.apiKey}:${sandbox.credentials.apiSecret}`)}`;
  for (let i = 1; i <= 30; i++) {
    const res = await fetch(`${sandbox.url}/v4/products/find?id=P${String(i).padStart(7, '0')}`, {
      headers: { authorization: auth },
    });
    const json = (await res.json()) as any;
    const product = json.product ?? json;
    if (product.photos?.length || product.frontals?.length) return product;
  }
  throw new Error('no product with a photo');
}

describe('sandbox asset host', () => {
  it('serves the URLs the catalog carries, in the live shape, from another origin', async () => {
    const product = await firstProduct();
    const url: string = (product.photos[0] ?? product.frontals[0]).formats.thumbnail;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/media\/thumbnail\/[0-9a-f]{24}\.(jpeg|png)$/);
    expect(new URL(url).origin).toBe(sandbox.assets!.url);
    expect(new URL(url).origin).not.toBe(new URL(sandbox.url).origin);
    const res = await fetch(url);
    expect(res.status).toBe(200);
    const body = await res.arrayBuffer();
    expect(sha(body)).toBe(sandbox.assets!.sha256(new URL(url).pathname));
    expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]+"$/);
    expect(res.headers.get('last-modified')).toBeTruthy();
    const again = await fetch(url, { headers: { 'if-none-match': res.headers.get('etag')! } });
    expect(again.status).toBe(304);
    expect(sandbox.assets!.downloads(new URL(url).pathname)).toBe(1);
  });

  it('serves magic bytes per type and brochures as PDFs', async () => {
    const host = sandbox.assets!.url;
    const magic = async (path: string) => Buffer.from(await (await fetch(`${host}${path}`)).arrayBuffer());
    expect((await magic('/media/large/0a.jpeg')).subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
    expect((await magic('/media/large/0a.webp')).subarray(8, 12).toString()).toBe('WEBP');
    expect((await magic('/media/large/0a.png')).subarray(1, 4).toString()).toBe('PNG');
    expect((await magic('/media/brochures/0a.pdf')).subarray(0, 5).toString()).toBe('%PDF-');
    const res = await fetch(`${host}/media/brochures/0a.pdf`);
    expect(res.headers.get('content-type')).toBe('application/pdf');
  });

  it('records a request that carries the API key or an Authorization header', async () => {
    const host = sandbox.assets!.url;
    sandbox.assets!.resetStats();
    await fetch(`${host}/media/large/0b.jpeg`);
    expect(sandbox.assets!.credentialed).toBe(0);
    await fetch(`${host}/media/large/0b.jpeg`, { headers: { authorization: 'Basic eA==' } });
    await fetch(`${host}/media/large/0b.jpeg`, { headers: { 'x-key': sandbox.credentials.apiKey } });
    expect(sandbox.assets!.credentialed).toBe(2);
  });

  it('injects faults: 503 window, HTML page, removed item, redirect, truncated body', async () => {
    const assets = sandbox.assets!;
    const host = assets.url;
    try {
      assets.faults = { unavailable: true };
      expect((await fetch(`${host}/media/large/0c.jpeg`)).status).toBe(503);
      assets.faults = { htmlRate: 1 };
      const html = await fetch(`${host}/media/large/0c.jpeg`);
      expect(html.headers.get('content-type')).toMatch(/^text\/html/);
      assets.faults = { redirectRate: 1 };
      const moved = await fetch(`${host}/media/large/0c.jpeg`, { redirect: 'manual' });
      expect(moved.status).toBe(302);
      expect(new URL(moved.headers.get('location')!).origin).toBe(assets.otherUrl);
      expect((await fetch(moved.headers.get('location')!)).status).toBe(200);
      assets.faults = { truncateRate: 1 };
      await expect(fetch(`${host}/media/large/0c.jpeg`).then((r) => r.arrayBuffer())).rejects.toThrow();
      assets.faults = {};
      assets.remove('/media/large/0c.jpeg');
      expect((await fetch(`${host}/media/large/0c.jpeg`)).status).toBe(404);
    } finally {
      assets.faults = {};
    }
  });
});
