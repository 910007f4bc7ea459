// A real node:http server on port 0 for precise fault cases: each test gives a
// handler; the server records every request (arrival time, headers, parsed
// body) so tests assert what really went over the wire.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface RecordedRequest {
  /** 1-based arrival number. */
  n: number;
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: any;
  /** performance.now() when the request arrived. */
  at: number;
}

export type Handler = (req: RecordedRequest, res: ServerResponse, raw: IncomingMessage) => void | Promise<void>;

export interface TestServer {
  url: string;
  port: number;
  requests: RecordedRequest[];
  handler: Handler;
  close(): Promise<void>;
}

export async function startTestServer(handler: Handler): Promise<TestServer> {
  const sockets = new Set<Socket>();
  const state: TestServer = { url: '', port: 0, requests: [], handler, close: async () => {} };
  const server: Server = createServer((raw, res) => {
    const at = performance.now();
    const chunks: Buffer[] = [];
    raw.on('data', (c: Buffer) => chunks.push(c));
    raw.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        // keep the text
      }
      const rec: RecordedRequest = {
        n: state.requests.length + 1,
        method: raw.method ?? '',
        url: raw.url ?? '',
        headers: raw.headers,
        body,
        at,
      };
      state.requests.push(rec);
      Promise.resolve(state.handler(rec, res, raw)).catch((err) => {
        res.destroy(err as Error);
      });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  state.url = `http://127.0.0.1:${port}`;
  state.port = port;
  state.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return state;
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A deterministic PRNG (mulberry32) for chunk sizes and data. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Writes `text` (or raw bytes) as a chunked body in random-size pieces (1 byte to `maxChunk`),
 * yielding between writes so the client sees them as separate reads. Stops
 * after `cutAfter` bytes by closing the connection (what was written is
 * flushed, the chunked body never terminated) when given.
 */
export async function writeInRandomChunks(
  res: ServerResponse,
  text: string | Buffer,
  random: () => number,
  opts: { maxChunk?: number; cutAfter?: number } = {},
): Promise<void> {
  const buf = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const max = opts.maxChunk ?? 64;
  let pos = 0;
  while (pos < buf.length) {
    if (opts.cutAfter !== undefined && pos >= opts.cutAfter) {
      res.socket?.end();
      return;
    }
    const size = 1 + Math.floor(random() * max);
    const end = Math.min(buf.length, pos + size, opts.cutAfter ?? Infinity);
    if (!res.write(buf.subarray(pos, end))) await new Promise((r) => res.once('drain', r));
    pos = end;
    if (random() < 0.3) await new Promise((r) => setImmediate(r));
  }
  if (opts.cutAfter !== undefined && pos >= opts.cutAfter && pos < buf.length) {
    res.socket?.end();
    return;
  }
  res.end();
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The error a promise rejects with; fails the test when it resolves. */
export async function failure(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the promise to reject');
}
