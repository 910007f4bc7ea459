// The sandbox's asset host: the media files the catalog's image and brochure URLs point at, on
// its own HTTP server (its own port, so a different origin from the API, as the live service's
// `assets.<region>...` host is). Downloads need no key there (live-facts-3 A.2), so this host
// records any request that carries one: a client must never send its API credentials here.
//
// Bytes are derived from the URL path alone (small, valid-looking files: the format's magic
// bytes, then deterministic filler), so the same URL always serves the same bytes and a test can
// ask the host for the sha256 it serves. Faults (503 windows, slow or truncated bodies, an HTML
// page instead of the image, 404 for a removed item, a redirect to another host) are chosen per
// path by a hash, so a rerun meets the same faults until they are switched off.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Where the generated catalog's media URLs point when no asset host runs (not resolvable). */
export const DEFAULT_ASSET_BASE = 'https://assets.catalog-sandbox.test';

export interface AssetFaults {
  /** A 503 window: every file answers 503 while true. */
  unavailable?: boolean;
  /** Share (0..1) of paths answering 503 (a partial outage). */
  unavailableRate?: number;
  /** Share of paths whose body stops after half its declared length. */
  truncateRate?: number;
  /** Share of paths answered with an HTML error page, status 200, `text/html`. */
  htmlRate?: number;
  /** Share of paths redirected (302) to the host's second origin, which serves the same bytes. */
  redirectRate?: number;
  /** Milliseconds between the first and second half of every body (a slow body). */
  slowBodyMs?: number;
  /** Milliseconds before every answer (the bench's 10 ms per file). */
  latencyMs?: number;
}

export interface AssetHostOptions {
  /** Interface to listen on; default 127.0.0.1. */
  host?: string;
  faults?: AssetFaults;
  /** Header values that must never reach this host (the API key and secret). */
  secrets?: readonly string[];
}

export interface AssetRequestRecord {
  path: string;
  status: number;
  /** An Authorization header, or a header or query value holding one of the secrets. */
  credentialed: boolean;
}

const CONTENT_TYPES: Record<string, string> = {
  jpeg: 'image/jpeg',
  jpg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
  pdf: 'application/pdf',
};

/** The deterministic bytes served for `path` (a URL path such as `/media/large/<hex>.webp`). */
export function assetBytes(path: string): Buffer | undefined {
  const ext = /\.([a-z]+)$/.exec(path)?.[1];
  if (ext === undefined || CONTENT_TYPES[ext] === undefined || !path.startsWith('/media/')) return undefined;
  const seed = createHash('sha256').update(path).digest();
  const size = (ext === 'pdf' ? 4000 : 300) + (seed.readUInt16BE(0) % 1500);
  const filler = Buffer.alloc(size);
  // Counter-mode sha256 of the path: deterministic, cheap at these sizes.
  for (let off = 0, n = 0; off < size; off += 32, n++)
    createHash('sha256').update(seed).update(String(n)).digest().copy(filler, off);
  return Buffer.concat([magic(ext, size), filler, trailer(ext)]);
}

function magic(ext: string, size: number): Buffer {
  if (ext === 'png') return Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (ext === 'pdf') return Buffer.from('%PDF-1.4\n');
  if (ext === 'webp') {
    const riff = Buffer.from('RIFF\0\0\0\0WEBPVP8 ');
    riff.writeUInt32LE(size + 8, 4);
    return riff;
  }
  return Buffer.from([0xff, 0xd8, 0xff, 0xe0]);
}

function trailer(ext: string): Buffer {
  if (ext === 'pdf') return Buffer.from('\n%%EOF\n');
  if (ext === 'jpeg' || ext === 'jpg') return Buffer.from([0xff, 0xd9]);
  return Buffer.alloc(0);
}

export const assetContentType = (path: string): string | undefined =>
  CONTENT_TYPES[/\.([a-z]+)$/.exec(path)?.[1] ?? ''];

/** The sha256 (hex) of what the host serves at `path`. */
export function assetSha256(path: string): string | undefined {
  const bytes = assetBytes(path);
  return bytes && createHash('sha256').update(bytes).digest('hex');
}

/** A stable number in [0, 1) per path and fault, so each fault hits the same paths on every run. */
function share(path: string, fault: string): number {
  return createHash('sha256').update(`${fault}:${path}`).digest().readUInt32BE(0) / 2 ** 32;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class AssetHost {
  faults: AssetFaults;
  readonly #secrets: readonly string[];
  readonly #removed = new Set<string>();
  readonly #records: AssetRequestRecord[] = [];
  #halfSent = 0;
  readonly #servers: Server[] = [];
  #url = '';
  #otherUrl = '';

  constructor(options: AssetHostOptions = {}) {
    this.faults = options.faults ?? {};
    this.#secrets = (options.secrets ?? []).filter((s) => s.length > 0);
  }

  /** Base URL of the host, no trailing slash (`http://127.0.0.1:PORT`). */
  get url(): string {
    return this.#url;
  }

  /** The second origin redirects point at. */
  get otherUrl(): string {
    return this.#otherUrl;
  }

  async start(host = '127.0.0.1'): Promise<this> {
    this.#url = await this.#listen(host);
    this.#otherUrl = await this.#listen(host);
    return this;
  }

  async #listen(host: string): Promise<string> {
    const server = createServer((req, res) => void this.#answer(req, res));
    this.#servers.push(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, () => resolve());
    });
    const address = server.address() as AddressInfo;
    return `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  }

  /** The item is gone: its paths answer 404 from now on. */
  remove(path: string): void {
    this.#removed.add(path);
  }

  /** The sha256 (hex) of what this host serves at `path`, undefined for a removed or unknown one. */
  sha256(path: string): string | undefined {
    return this.#removed.has(path) ? undefined : assetSha256(path);
  }

  /** Every request answered so far, in order. */
  get requests(): readonly AssetRequestRecord[] {
    return this.#records;
  }

  /** Bodies sent whole with status 200 (a 304 or a fault is not a download). */
  downloads(path?: string): number {
    return this.#records.filter((r) => r.status === 200 && (path === undefined || r.path === path)).length;
  }

  /** Requests that carried credentials (must stay 0). */
  get credentialed(): number {
    return this.#records.filter((r) => r.credentialed).length;
  }

  resetStats(): void {
    this.#records.length = 0;
  }

  #credentialed(req: IncomingMessage): boolean {
    if (req.headers.authorization !== undefined) return true;
    const values = [...Object.values(req.headers).flat(), req.url ?? ''].map(String);
    return this.#secrets.some((s) => values.some((v) => v.includes(s)));
  }

  async #answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const record: AssetRequestRecord = { path, status: 0, credentialed: this.#credentialed(req) };
    this.#records.push(record);
    const f = this.faults;
    if (f.latencyMs) await sleep(f.latencyMs);
    const bytes = this.#removed.has(path) ? undefined : assetBytes(path);
    const status = this.#status(path, bytes, req);
    record.status = status;
    if (status !== 200) return this.#short(res, status, path, bytes);
    if (share(path, 'html') < (f.htmlRate ?? 0)) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return void res.end('<html><body>Maintenance</body></html>');
    }
    res.writeHead(200, {
      'content-type': assetContentType(path)!,
      'content-length': bytes!.length,
      etag: etagOf(bytes!),
      'last-modified': LAST_MODIFIED,
    });
    await this.#body(res, path, bytes!);
  }

  #status(path: string, bytes: Buffer | undefined, req: IncomingMessage): number {
    const f = this.faults;
    if (bytes === undefined) return 404;
    if (f.unavailable || share(path, '503') < (f.unavailableRate ?? 0)) return 503;
    if (share(path, 'redirect') < (f.redirectRate ?? 0) && req.socket.localPort === this.#port(this.#url)) return 302;
    if (req.headers['if-none-match'] === etagOf(bytes)) return 304;
    return 200;
  }

  #port(url: string): number {
    return Number(new URL(url).port);
  }

  #short(res: ServerResponse, status: number, path: string, bytes: Buffer | undefined): void {
    if (status === 302) res.writeHead(302, { location: `${this.#otherUrl}${path}` });
    else if (status === 304) res.writeHead(304, { etag: etagOf(bytes!), 'last-modified': LAST_MODIFIED });
    else if (status === 503) res.writeHead(503, { 'content-type': 'text/plain', 'retry-after': '1' });
    else res.writeHead(status, { 'content-type': 'text/plain' });
    res.end(status >= 400 ? `${status}\n` : undefined);
  }

  async #body(res: ServerResponse, path: string, bytes: Buffer): Promise<void> {
    const half = bytes.subarray(0, bytes.length >> 1);
    this.#halfSent++;
    try {
      res.write(half);
      if (this.faults.slowBodyMs) await sleep(this.faults.slowBodyMs);
      // A truncated body: the declared length is never reached, the connection just ends.
      if (share(path, 'truncate') < (this.faults.truncateRate ?? 0)) return void res.destroy();
      res.end(bytes.subarray(half.length));
    } finally {
      this.#halfSent--;
    }
  }

  /** Bodies whose first half is sent and whose rest is not yet: downloads in the middle of their bodies. */
  get bodiesInProgress(): number {
    return this.#halfSent;
  }

  async close(): Promise<void> {
    await Promise.all(
      this.#servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve());
            s.closeAllConnections();
          }),
      ),
    );
  }
}

const LAST_MODIFIED = new Date(Date.UTC(2025, 0, 1)).toUTCString();
const etagOf = (bytes: Buffer) => `"${createHash('sha256').update(bytes).digest('hex').slice(0, 20)}"`;

export async function startAssetHost(options: AssetHostOptions = {}): Promise<AssetHost> {
  return new AssetHost(options).start(options.host);
}
