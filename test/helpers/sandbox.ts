// Starts the embedded sandbox on port 0 for a test, with small request helpers
// over real HTTP (undici). Any test can use it: `const sb = await
// startTestSandbox({products: 2000}); ... await sb.close()`. The rate limit is
// off unless the test asks for one, so suites do not wait on it. Tests get the
// `spec` profile (the documented shapes their assertions are written against)
// unless they ask for another; test/cli/profiles.test.ts runs the live ones.
import { StringDecoder } from 'node:string_decoder';
import { request } from 'undici';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/index.js';

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  text: string;
  /** The body parsed as JSON (throws when it is not JSON). */
  json<T = any>(): T;
}

export interface PostOptions {
  /** Authorization header; default the sandbox credentials (the admin credential on /_sandbox/); null sends none. */
  authorization?: string | null;
  headers?: Record<string, string>;
  /** Send this text as the body instead of JSON.stringify(body). */
  rawBody?: string;
  method?: 'POST' | 'GET' | 'PUT' | 'DELETE';
}

export interface TestSandbox extends Sandbox {
  /** `Basic ...` for the sandbox credentials. */
  authorization: string;
  /** POSTs `body` as JSON to `path` (`/v4/products/query`) and reads the whole answer. */
  post(path: string, body?: unknown, options?: PostOptions): Promise<HttpAnswer>;
  /** POSTs to a paged endpoint, expects 200, returns the parsed body. */
  query<T = any>(
    path: string,
    body?: unknown,
  ): Promise<{ meta: { total: number; page?: { no: number; offset: number; size: number } }; results: T[] }>;
  /** POSTs to a stream endpoint, expects 200 or 204, returns the parsed lines. */
  stream<T = any>(
    path: string,
    body?: unknown,
  ): Promise<{ status: number; lines: { meta: { total: number; index: number }; result: T }[] }>;
}

export function basicAuthorization(apiKey: string, apiSecret: string): string {
  return `Basic ${Buffer.from(`${apiKey}:${apiSecret}`).toString('base64')}`;
}

export async function startTestSandbox(options: SandboxOptions = {}): Promise<TestSandbox> {
  const sandbox = await startSandbox({ rateLimit: 0, profile: 'spec', ...options, port: options.port ?? 0 });
  const authorization = basicAuthorization(sandbox.credentials.apiKey, sandbox.credentials.apiSecret);
  const post = async (path: string, body?: unknown, opts: PostOptions = {}): Promise<HttpAnswer> => {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...opts.headers };
    // The admin routes take the sandbox's admin credential, never an API key.
    const byDefault = path.startsWith('/_sandbox/') ? sandbox.adminAuthorization : authorization;
    const auth = opts.authorization === undefined ? byDefault : opts.authorization;
    if (auth !== null) headers.authorization = auth;
    const method = opts.method ?? 'POST';
    const payload = opts.rawBody ?? (body === undefined ? undefined : JSON.stringify(body));
    const res = await request(`${sandbox.url}${path}`, {
      method,
      headers,
      body: method === 'GET' ? undefined : payload,
    });
    const buffer = Buffer.from(await res.body.arrayBuffer());
    const text = buffer.toString('utf8');
    return { status: res.statusCode, headers: res.headers, body: buffer, text, json: () => JSON.parse(text) };
  };
  const expectStatus = (answer: HttpAnswer, path: string, ok: number[]) => {
    if (!ok.includes(answer.status)) throw new Error(`${path} answered ${answer.status}: ${answer.text.slice(0, 500)}`);
  };
  // The sandbox is the prototype, so its `stats` getter stays live.
  return Object.assign(Object.create(sandbox) as Sandbox, {
    authorization,
    post,
    async query(path: string, body?: unknown) {
      const answer = await post(path, body ?? {});
      expectStatus(answer, path, [200]);
      return answer.json();
    },
    async stream(path: string, body?: unknown) {
      const answer = await post(path, body ?? {});
      expectStatus(answer, path, [200, 204]);
      return { status: answer.status, lines: parseNdjson([answer.body]) as any[] };
    },
  }) as TestSandbox;
}

/**
 * Parses NDJSON delivered in arbitrary chunks (split anywhere, even inside a
 * multi-byte character), as a client must. Throws on a line that is not JSON
 * or on a last line without its newline.
 */
export function parseNdjson(chunks: Iterable<Buffer>): unknown[] {
  const decoder = new StringDecoder('utf8');
  const out: unknown[] = [];
  let pending = '';
  for (const chunk of chunks) {
    const text = decoder.write(chunk);
    // Only the new text can hold the next newline: keeps tiny chunks linear.
    if (!text.includes('\n')) {
      pending += text;
      continue;
    }
    pending += text;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      out.push(JSON.parse(pending.slice(0, nl)));
      pending = pending.slice(nl + 1);
    }
  }
  pending += decoder.end();
  if (pending.length) throw new Error(`NDJSON ends with an unterminated line: ${pending.slice(0, 80)}`);
  return out;
}

/** Splits a buffer into chunks of random sizes in [1, maxSize] (deterministic for a seed). */
export function rechunk(buffer: Buffer, maxSize: number, seed = 1): Buffer[] {
  const out: Buffer[] = [];
  let state = seed >>> 0 || 1;
  for (let at = 0; at < buffer.length;) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    const size = 1 + (state % maxSize);
    out.push(buffer.subarray(at, at + size));
    at += size;
  }
  return out;
}

/** Every product id the sandbox serves now, sorted (one page of at most 100: small catalogs). */
export async function servedProductIds(sandbox: TestSandbox): Promise<string[]> {
  const all = await sandbox.query<{ id: string }>('/v4/products/query', {
    filter: { createdAt: { from: 0 } },
    sorting: { id: 'ASC' },
    page: { no: 0, size: 100 },
  });
  return all.results.map((r) => r.id).sort();
}

/** Two seconds ago: inside the next run's window, which ends the second before that run started. */
export const beforeNow = (): number => Math.floor(Date.now() / 1000) - 2;
