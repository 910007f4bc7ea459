// The mirror's own download pool: bounded concurrency and requests per second, apart from the
// CatalogClient's (downloads need no key and do not count against the API budget, live-facts-3
// A.2). It never holds a credential: every request carries only the User-Agent, Accept and the
// conditional headers, so neither the asset host nor a host it redirects to can receive one.
// A body goes straight into the destination the caller opens, hashed on the way; a wrong status,
// type, size or a short body is a failure and the caller discards the destination.
import { createHash } from 'node:crypto';
import { Agent, type Dispatcher, request } from 'undici';

export interface FetcherOptions {
  concurrency: number;
  requestsPerSecond: number;
  /** Whole exchange, headers to last byte, per attempt. */
  timeoutMs: number;
  maxBytes: number;
  userAgent: string;
  /** Attempts after the first for a transient failure (5xx, 429, network, timeout, short body). */
  retries: number;
  /** First backoff; doubled per attempt. */
  retryDelayMs: number;
}

export interface Validators {
  etag?: string | undefined;
  lastModified?: string | undefined;
}

/** Where a body goes: opened only once a 200 with the right type arrived. */
export interface BodySink {
  write(chunk: Uint8Array): void | Promise<void>;
}

export type FetchOutcome =
  | { kind: 'stored'; bytes: number; sha256: string; contentType: string; validators: Validators }
  | { kind: 'unchanged'; validators: Validators }
  | { kind: 'failed'; reason: string; transient: boolean; status?: number };

const MAX_REDIRECTS = 3;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

class FetchFailure extends Error {
  constructor(
    readonly reason: string,
    readonly transient: boolean,
    readonly status?: number,
  ) {
    super(reason);
  }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

/**
 * The run's signal plus each attempt's timeout. Not `AbortSignal.any([outer,
 * AbortSignal.timeout()])` per attempt: on Node 20 each call leaves a dependent signal on the
 * run's signal until a garbage collection and a timer that outlives the attempt, which at hundreds
 * of files per second cost more than the download's own bookkeeping. One listener on the run's
 * signal aborts every attempt in flight (16 listeners would trip Node's leak warning).
 */
class AttemptSignals {
  readonly #live = new Set<AbortController>();
  #outer: AbortSignal | undefined;
  readonly #onAbort = () => {
    for (const c of this.#live) c.abort(this.#outer?.reason);
  };

  open(outer: AbortSignal, timeoutMs: number): { signal: AbortSignal; done: () => void } {
    if (outer !== this.#outer) {
      this.#outer?.removeEventListener('abort', this.#onAbort);
      this.#outer = outer;
      outer.addEventListener('abort', this.#onAbort, { once: true });
    }
    const controller = new AbortController();
    if (outer.aborted) controller.abort(outer.reason);
    const timer = setTimeout(
      () => controller.abort(new DOMException(`no complete answer within ${timeoutMs} ms`, 'TimeoutError')),
      timeoutMs,
    );
    this.#live.add(controller);
    return {
      signal: controller.signal,
      done: () => {
        clearTimeout(timer);
        this.#live.delete(controller);
      },
    };
  }

  close(): void {
    this.#outer?.removeEventListener('abort', this.#onAbort);
    this.#outer = undefined;
  }
}

export class AssetFetcher {
  readonly #options: FetcherOptions;
  readonly #agent: Agent;
  #active = 0;
  readonly #waiting: Array<() => void> = [];
  #nextSlot = 0;
  readonly #signals = new AttemptSignals();

  constructor(options: FetcherOptions) {
    this.#options = options;
    this.#agent = new Agent({
      connections: options.concurrency,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
  }

  /** Runs `task` once a pool slot is free (at most `concurrency` at once). */
  async withSlot<T>(task: () => Promise<T>): Promise<T> {
    if (this.#active >= this.#options.concurrency) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#active++;
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#active--;
    }
  }

  /** Waits for the next request slot of the requests/s cap (spaced evenly, no burst). */
  async #pace(signal: AbortSignal): Promise<void> {
    const gap = 1000 / this.#options.requestsPerSecond;
    const now = performance.now();
    const at = Math.max(now, this.#nextSlot);
    this.#nextSlot = at + gap;
    if (at > now) await sleep(at - now, signal);
  }

  /** Fetches `url` with retries; `open` is called for each attempt that gets a good 200. */
  async fetch(
    url: string,
    expect: string,
    validators: Validators,
    open: (contentType: string) => Promise<BodySink & { discard(): Promise<void> }>,
    signal: AbortSignal,
  ): Promise<FetchOutcome> {
    for (let attempt = 0; ; attempt++) {
      const outcome = await this.#attempt(url, expect, validators, open, signal);
      if (outcome.kind !== 'failed' || !outcome.transient || attempt >= this.#options.retries || signal.aborted)
        return outcome;
      await sleep(Math.min(this.#options.retryDelayMs * 2 ** attempt, 30_000), signal);
    }
  }

  async #attempt(
    url: string,
    expect: string,
    validators: Validators,
    open: (contentType: string) => Promise<BodySink & { discard(): Promise<void> }>,
    outer: AbortSignal,
  ): Promise<FetchOutcome> {
    const { signal, done } = this.#signals.open(outer, this.#options.timeoutMs);
    let sink: (BodySink & { discard(): Promise<void> }) | undefined;
    try {
      const res = await this.#get(url, validators, signal);
      if (res.statusCode === 304) {
        await res.body.dump();
        return { kind: 'unchanged', validators: validatorsOf(res.headers, validators) };
      }
      checkStatus(res.statusCode);
      const contentType = checkType(res.headers['content-type'], expect);
      const declared = Number(res.headers['content-length'] ?? NaN);
      if (declared > this.#options.maxBytes)
        throw new FetchFailure(`${declared} bytes, over the cap of ${this.#options.maxBytes}`, false);
      sink = await open(contentType);
      const { bytes, sha256 } = await this.#copy(res.body, sink);
      if (Number.isFinite(declared) && bytes !== declared)
        throw new FetchFailure(`the body ended after ${bytes} of ${declared} bytes`, true);
      return { kind: 'stored', bytes, sha256, contentType, validators: validatorsOf(res.headers, {}) };
    } catch (err) {
      await sink?.discard().catch(() => {});
      if (err instanceof FetchFailure)
        return { kind: 'failed', reason: err.reason, transient: err.transient, status: err.status };
      if (outer.aborted) throw err;
      // Network errors, timeouts and bodies cut short: the next attempt (or run) may succeed.
      return { kind: 'failed', reason: (err as Error).message || String(err), transient: true };
    } finally {
      done();
    }
  }

  /** GET with redirects followed by hand (at most 3, http/https only), each hop as bare as the first. */
  async #get(url: string, validators: Validators, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
    let current = new URL(url);
    for (let hop = 0; ; hop++) {
      await this.#pace(signal);
      const headers: Record<string, string> = { 'user-agent': this.#options.userAgent, accept: '*/*' };
      if (validators.etag) headers['if-none-match'] = validators.etag;
      if (validators.lastModified) headers['if-modified-since'] = validators.lastModified;
      const res = await request(current, { dispatcher: this.#agent, method: 'GET', headers, signal });
      if (!REDIRECTS.has(res.statusCode)) return res;
      await res.body.dump();
      const location = res.headers.location;
      if (typeof location !== 'string' || hop >= MAX_REDIRECTS)
        throw new FetchFailure(`redirected ${hop + 1} times, or without a Location`, false, res.statusCode);
      current = new URL(location, current);
      if (current.protocol !== 'https:' && current.protocol !== 'http:')
        throw new FetchFailure(`redirected to a ${current.protocol} URL`, false, res.statusCode);
    }
  }

  async #copy(body: AsyncIterable<Uint8Array>, sink: BodySink): Promise<{ bytes: number; sha256: string }> {
    const hash = createHash('sha256');
    let bytes = 0;
    for await (const chunk of body) {
      bytes += chunk.byteLength;
      if (bytes > this.#options.maxBytes)
        throw new FetchFailure(`more than ${this.#options.maxBytes} bytes (the cap)`, false);
      hash.update(chunk);
      await sink.write(chunk);
    }
    return { bytes, sha256: hash.digest('hex') };
  }

  close(): Promise<void> {
    this.#signals.close();
    return this.#agent.close();
  }
}

function checkStatus(status: number): void {
  if (status === 200) return;
  const transient = status >= 500 || status === 429 || status === 408;
  const reason = status === 404 || status === 410 ? `HTTP ${status} (the file is gone)` : `HTTP ${status}`;
  throw new FetchFailure(reason, transient, status);
}

/** The served type must be the one asked for: an HTML error page saved as a JPEG is a failure. */
function checkType(header: string | string[] | undefined, expect: string): string {
  const type = String(header ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
  const ok = expect.endsWith('/') ? type.startsWith(expect) && type.length > expect.length : type === expect;
  if (!ok)
    throw new FetchFailure(
      `Content-Type ${type || '(none)'}, expected ${expect.endsWith('/') ? `${expect}*` : expect}`,
      true,
    );
  return type;
}

function validatorsOf(headers: Dispatcher.ResponseData['headers'], previous: Validators): Validators {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  return {
    etag: one(headers.etag) ?? previous.etag,
    lastModified: one(headers['last-modified']) ?? previous.lastModified,
  };
}
