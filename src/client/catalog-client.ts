// CatalogClient: one per run. It owns the undici Pool (keep-alive sockets),
// HTTP Basic authentication, the User-Agent, the run's request budget (one
// RateLimiter per API key, shared by every source: key-pool.ts) and the retries,
// and turns every failure into a typed error. Sources never touch HTTP themselves.
//
// Why undici's own `Pool.request` and not Node's global fetch: reading a large
// NDJSON body through fetch with a consumer slower than the network cost ~13x
// the CPU of `undici.request` in our measurement (fetch's web-stream plumbing
// and buffer list dominate the profile).
//
// Why a retry loop of our own and not undici's RetryHandler / retry
// interceptor (undici 7.x, lib/handler/retry-handler.js), although its
// `retry` callback could host a per-attempt hook for the limiter:
// 1. A query page is one attempt = the request AND its whole body. When a
//    connection is reset or times out half-way through a page body, the page
//    must be asked for again. Once the response has started, RetryHandler can
//    only resume with a `Range` header, which our POST endpoints do not
//    support (it then throws "server does not support the range header"), so
//    a second retry layer would be needed around it, with two attempt budgets.
// 2. With `throwOnError: true` (its default) a retryable status destroys the
//    socket and the error body is dropped, so the final 429/503 error could not
//    carry the server's code and message; with `throwOnError: false` the
//    response stays paused on its socket while we back off and wait for the
//    limiter, holding a connection for up to the whole backoff.
// 3. Every attempt must take a slot from the shared limiter and be reported
//    (`request`, `retry`, `throttle` events, stats); in a loop that is one
//    await and three lines, with no handler plumbing to get wrong.
// The policy (what is retried, backoff with jitter, Retry-After, bounds) lives
// in retry-policy.ts with undici's option names; the loop is below.
//
// Streams: a retry happens only before the body starts. A stream cut after
// that is resumed by the NDJSON source (re-request, skip emitted indexes),
// which knows which records it already delivered.
//
// Credentials: one Authorization header per key, built once and kept in the key pool
// (key-pool.ts: one limiter per key; each attempt takes the key that frees first); errors and events are built from the endpoint, the request body, the
// status and the server's text, and that text is scrubbed of every key and
// secret before use (a server or proxy that echoes a header cannot leak it).
import { isUtf8 } from 'node:buffer';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool, type Dispatcher } from 'undici';
import {
  type EndpointName,
  type FindEndpointName,
  type PageRequest,
  type QueryRequest,
  DEFAULT_RATE_LIMIT_PER_MINUTE,
  endpoints,
  findEndpoints,
  getEndpoint,
  MAX_REACHABLE_RESULTS,
  type Environment,
  type Region,
  regionBaseUrl,
  regionLabel,
  regionsWithSandbox,
  toWireRequest,
  validateRegionRequest,
  validateRequest,
} from '../catalog/index.js';
import { AbortedError, CatalogStreamsError, ConfigError, RequestValidationError } from '../errors.js';
import { isPlainObject } from '../values.js';
import { Redactor } from '../redactor.js';
import { RunEvents } from '../events.js';
import { BODY_IDLE, BODY_TOO_SLOW, type BodyProblem, type GuardClock, guardBody } from './body-guard.js';
import { parseErrorBody } from './error-body.js';
import { parseJson } from './json-text.js';
import { isTruncatedJson, scanPage } from './page-scanner.js';
import {
  ApiError,
  AuthError,
  NetworkError,
  type NetworkFailure,
  RateLimitError,
  ResponseTooLargeError,
  truncate,
} from './errors.js';
import { notTheApi } from './invalid-response.js';
import { type ApiCredential, checkDistinct, pairCredentialLists } from './credentials.js';
import { type WarningOutput, warningEvents } from '../code-warnings.js';
import { KeyPool, type PooledKey } from './key-pool.js';
import type { RateLimiter } from './rate-limiter.js';
import { describeRequest } from './request-summary.js';
import { type RetryOptions, RetryPolicy, TRUNCATED_BODY, errorCodeOf } from './retry-policy.js';
import { defaultUserAgent } from './user-agent.js';
import { ServerClock } from './server-clock.js';

/** The paged endpoints of the endpoint table (catalog/endpoints): `products.query`, `brands.query`, ... */
export type QueryEndpointName = Extract<EndpointName, `${string}.query`>;
/** The NDJSON stream endpoints of the endpoint table: `products.stream`, `media.stream`. */
export type StreamEndpointName = Extract<EndpointName, `${string}.stream`>;

/** Whether a query or stream endpoint is a stream (the table's `mode`), narrowing the name. */
export function isStreamEndpoint(name: QueryEndpointName | StreamEndpointName): name is StreamEndpointName {
  return endpoints[name].mode === 'stream';
}

/**
 * How long a request may wait, never how long it may take: a healthy stream of the whole catalog
 * runs for tens of minutes (see body-guard.ts).
 */
export interface ClientTimeouts {
  /** Establishing a connection (TCP + TLS), ms (default 10 s). */
  connect?: number;
  /** From sending the request to the response headers, ms (default 60 s). */
  headers?: number;
  /** Longest gap without a byte of the body, ms (default 120 s; 0: none); a paused consumer does not count. */
  body?: number;
  /**
   * Least average speed of a body, bytes per second over `rateWindow` of waiting for it (default
   * 1024; 0: none): a body trickling in below it is treated as cut.
   */
  minBodyRate?: number;
  /** The span `minBodyRate` is averaged over, ms (default 300 s). */
  rateWindow?: number;
}

export interface CatalogClientOptions {
  /**
   * `https://host[/prefix]`, with or without a trailing `/v4`; the `/v4/...` paths are appended.
   * Optional with `region` (the region's API root).
   */
  baseUrl?: string;
  /**
   * A region preset (catalog/regions.ts): the base URL when `baseUrl` is not given, and the check
   * before every request that the region takes its filter (names and code formats).
   */
  region?: Region;
  /** With `region`: `production` (default) or `sandbox` (the vendor's sandbox, BE and FR only). */
  environment?: Environment;
  /**
   * The API key; a comma-separated list (`k1,k2,k3`, with as many secrets in `apiSecret`) gives
   * several keys, each with its own `rateLimit`. Or give `credentials` instead.
   */
  apiKey?: string;
  /** The API secret, or one per key of `apiKey`, comma-separated in the same order. */
  apiSecret?: string;
  /** Several key/secret pairs, each with its own `rateLimit` budget (instead of apiKey and apiSecret). */
  credentials?: readonly ApiCredential[];
  /** Where the key and secret came from, for the 401/403 message (default: CATALOG_API_KEY and CATALOG_API_SECRET). */
  credentialSource?: string;
  /** Requests per minute for each key (default 100); 0 or Infinity: unlimited. */
  rateLimit?: number;
  /** Length of the service's rolling rate-limit window, ms (default 60 000); for sandboxes with a shorter one. */
  rateLimitWindowMs?: number;
  /**
   * Results one paged query reaches, and where `meta.total` is capped (spec: 10000). Only for a
   * sandbox set up with a smaller window (to exercise slicing on less data): sources slice past it.
   */
  resultWindow?: number;
  /** Sockets kept open to the service (default 8, or 4 per key with more than two keys, at most 64). */
  connections?: number;
  timeouts?: ClientTimeouts;
  retry?: RetryOptions;
  /** The run's event bus (request, retry, throttle, warning); without it, a bus whose warnings go to `warnings`. */
  events?: RunEvents;
  /** Where the warnings go without `events` (default stderr, see setDefaultWarnings). */
  warnings?: WarningOutput;
  /** Aborts every request of this client (the run's signal). */
  signal?: AbortSignal;
  userAgent?: string;
  /**
   * Largest page body (a paged query's or a find's answer), bytes (default 256 MiB): past it the
   * request fails instead of holding a hostile or runaway body in memory. Streams are bounded per
   * line instead (maxLineLength).
   */
  maxPageBytes?: number;
  /** Random source for the backoff jitter (tests). */
  random?: () => number;
  /** The clock of the body timeouts (tests). */
  clock?: GuardClock;
}

export interface RequestOptions {
  signal?: AbortSignal;
  /**
   * Where this request's `request`/`retry`/`throttle` events go (default: the client's bus):
   * pipelines sharing one client each hear their own requests.
   */
  events?: RunEvents;
  /**
   * Waits for its key's next slot ahead of the requests already queued there: the request the
   * consumer is waiting for (a createdAt read's head lane, which the lanes after it wait on).
   */
  first?: boolean;
}

/** `CATALOG_RATE_LIMIT`: requests per minute of the credential, when the file's connection block does not say (0: no limit). */
export function envRateLimit(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env.CATALOG_RATE_LIMIT;
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) {
    throw new ConfigError(`CATALOG_RATE_LIMIT must be a number of requests per minute (0: no limit), got "${raw}"`, {
      path: 'CATALOG_RATE_LIMIT',
    });
  }
  return n === 0 ? Infinity : n;
}

/**
 * The record in a find answer: the live service wraps it as `{"product": record}` /
 * `{"media": record}` (F1); `{"result": record}` and a bare record (with an `id`) are read too.
 * `'none'` for a wrapper holding null (a public client takes it as not found); undefined for
 * anything else, which is never taken for a record.
 */
export function foundRecord(json: unknown, wrapper: 'product' | 'media'): object | 'none' | undefined {
  if (!isPlainObject(json)) return undefined;
  if (json.id === undefined) {
    const key = Object.hasOwn(json, wrapper) ? wrapper : Object.hasOwn(json, 'result') ? 'result' : undefined;
    if (key === undefined) return undefined;
    const inner = json[key];
    if (inner === null) return 'none';
    return isPlainObject(inner) && inner.id !== undefined && inner.id !== null ? inner : undefined;
  }
  return json.id !== null ? json : undefined;
}

/** `CATALOG_RESULT_WINDOW`: what `catalog-streams sandbox --result-window N` prints for its clients. */
export function envResultWindow(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env.CATALOG_RESULT_WINDOW;
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_REACHABLE_RESULTS) {
    throw new ConfigError(
      `CATALOG_RESULT_WINDOW must be an integer from 1 to ${MAX_REACHABLE_RESULTS} (the sandbox's --result-window), got "${raw}"`,
      { path: 'CATALOG_RESULT_WINDOW' },
    );
  }
  return n;
}

/** A request body as the client handles it inside (the typed one is QueryRequest<E>). */
export interface RequestBody {
  filter?: unknown;
  sorting?: unknown;
  page?: PageRequest;
}

export interface PageMeta {
  total: number;
  page?: { no: number; offset: number; size: number };
}

export type CatalogRecord = Record<string, unknown>;

export interface QueryPage<T = CatalogRecord> {
  meta: PageMeta;
  results: T[];
}

/** A page whose records are parsed one at a time, when asked for (see page-scanner.ts). */
export interface LazyPage<T = CatalogRecord> {
  meta: PageMeta;
  /** Records in the page. */
  readonly length: number;
  /**
   * Record `i` (an ApiError when its JSON is not valid). Parsed when asked for; a record asked for
   * ahead of its turn (after a later one, or before the first) is kept and is the very object its
   * next call returns, so whoever reads ahead must not change it; other calls parse again.
   */
  record(i: number): T;
  /** Done with the page: its bytes may be reused for another page (record() must not be called after). */
  release(): void;
  /** Whether record `i`'s bytes were not valid UTF-8: JSON decoding replaced them with U+FFFD. */
  invalidUtf8?(i: number): boolean;
}

/** A stream endpoint's body: raw NDJSON bytes, and the status (204: empty, nothing matched). */
export type CatalogStream = Readable & { readonly statusCode: number };

export interface ClientStats {
  /** HTTP attempts made (each retry counts). */
  requests: number;
  retries: number;
  /** 429 responses received. */
  throttles: number;
  /** Attempts by HTTP status; `network` for attempts that got no response. */
  byStatus: Record<string, number>;
}

const DEFAULT_TIMEOUTS: Required<ClientTimeouts> = {
  connect: 10_000,
  headers: 60_000,
  body: 120_000,
  minBodyRate: 1024,
  rateWindow: 300_000,
};
export const DEFAULT_MAX_PAGE_BYTES = 256 * 1024 * 1024;
/** Page buffers kept for reuse (LazyPage.release), and the size of a new one (a page of 250 products is ~1.5 MB). */
const PAGE_BUFFER_POOL = 8;
const PAGE_BUFFER_SIZE = 2 * 1024 * 1024;
const DEFAULT_CONNECTIONS = 8;
/**
 * Sockets per key when several keys share the client (at most MAX_DEFAULT_CONNECTIONS): a key's
 * budget is used only with as many requests on their way as its rate times the latency, so the
 * sockets follow the keys (issue 40: 8 sockets capped 8 and 16 keys below their budget).
 */
const CONNECTIONS_PER_KEY = 4;
const MAX_DEFAULT_CONNECTIONS = 64;
/** Weight of the latest successful attempt in the latency estimate (an exponential average). */
const LATENCY_WEIGHT = 0.2;
const MAX_ERROR_BODY = 64 * 1024;
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'ENETDOWN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
]);
const RESET = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH']);

/** What one failed attempt produced: an HTTP error status, or no usable response. */
type Failure =
  | { status: number; headers: Record<string, string | string[] | undefined>; text: string }
  | { status?: undefined; error: unknown };

export class CatalogClient {
  /** The base URL, as given minus any trailing slash (it never holds credentials). */
  readonly baseUrl: string;
  /** `host[:port]`, for messages. */
  readonly host: string;
  /** The host without port, for the retry policy's loopback rule. */
  readonly #hostname: string;
  readonly #credentialSource: string | undefined;
  readonly events: RunEvents;
  /** The first key's limiter (with one key, the run's budget); `limiters` has every key's. */
  readonly limiter: RateLimiter;
  readonly retryPolicy: RetryPolicy;
  readonly #keys: KeyPool;
  readonly stats: ClientStats = { requests: 0, retries: 0, throttles: 0, byStatus: {} };
  readonly #pool: Pool;
  readonly #pathPrefix: string;
  readonly #jsonHeaders: Record<string, string>;
  readonly #streamHeaders: Record<string, string>;
  readonly #redactor = new Redactor('[redacted]');
  readonly #timeouts: Required<ClientTimeouts>;
  readonly #maxPageBytes: number;
  readonly #clock: GuardClock | undefined;
  readonly #signal: AbortSignal | undefined;
  /** Released page buffers: a page's bytes are outside the JS heap, and reusing them keeps dead ones from piling up until a full GC. */
  readonly #pageBuffers: Buffer[] = [];
  /** The API's clock as its answers' `Date` headers tell it (server-clock.ts). */
  readonly serverClock = new ServerClock();
  #closing: Promise<void> | undefined;

  /** The region preset the client was made with: its requests are checked against the region's filters. */
  readonly region: Region | undefined;
  /** Sockets kept open to the service: requests beyond them wait for one. */
  readonly connections: number;
  #latencyMs: number | undefined;

  constructor(options: CatalogClientOptions) {
    const url = parseBaseUrl(presetBaseUrl(options));
    this.region = options.region;
    const credentials = credentialsOf(options);
    this.baseUrl = `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
    this.host = url.host;
    this.#hostname = url.hostname;
    this.#credentialSource = options.credentialSource;
    // `{base_url}` is the service root; tolerate a base URL that already ends in /v4.
    this.#pathPrefix = url.pathname.replace(/\/+$/, '').replace(/\/v4$/, '');
    this.events = options.events ?? warningEvents(options.warnings);
    this.#keys = new KeyPool(credentials, {
      perMinute: options.rateLimit ?? DEFAULT_RATE_LIMIT_PER_MINUTE,
      windowMs: options.rateLimitWindowMs,
    });
    this.limiter = this.#keys.limiters[0]!;
    this.retryPolicy = new RetryPolicy(options.retry, options.random);
    const resultWindow = options.resultWindow ?? MAX_REACHABLE_RESULTS;
    if (!Number.isInteger(resultWindow) || resultWindow < 1 || resultWindow > MAX_REACHABLE_RESULTS) {
      throw new ConfigError(`resultWindow must be an integer from 1 to ${MAX_REACHABLE_RESULTS}, got ${resultWindow}`, {
        path: 'resultWindow',
      });
    }
    this.resultWindow = resultWindow;
    this.#timeouts = { ...DEFAULT_TIMEOUTS, ...definedOnly(options.timeouts ?? {}) };
    this.#maxPageBytes = options.maxPageBytes ?? DEFAULT_MAX_PAGE_BYTES;
    if (!(this.#maxPageBytes > 0))
      throw new ConfigError(`maxPageBytes must be a positive number of bytes, got ${this.#maxPageBytes}`, {
        path: 'connection.maxPageBytes',
      });
    this.#clock = options.clock;
    this.#signal = options.signal;
    for (const c of credentials) {
      const token = Buffer.from(`${c.apiKey}:${c.apiSecret}`).toString('base64');
      for (const secret of [c.apiSecret, c.apiKey, token]) this.#redactor.add(secret);
    }
    // The Authorization header is the attempt's key's (#send).
    const common = {
      'content-type': 'application/json',
      'user-agent': options.userAgent ?? defaultUserAgent(),
    };
    this.#jsonHeaders = { ...common, accept: 'application/json' };
    // The live service's clients ask for its stream type (F1, docs/live-service.md);
    // the answer's Content-Type varies and is not relied on.
    this.#streamHeaders = {
      ...common,
      accept: 'application/x-json-stream, application/x-ndjson;q=0.9, application/json;q=0.5',
    };
    this.connections =
      options.connections ??
      Math.min(MAX_DEFAULT_CONNECTIONS, Math.max(DEFAULT_CONNECTIONS, CONNECTIONS_PER_KEY * credentials.length));
    this.#pool = new Pool(url.origin, {
      connections: this.connections,
      pipelining: 1,
      connect: { timeout: this.#timeouts.connect },
      headersTimeout: this.#timeouts.headers,
      // A backstop for error bodies, which are not guarded: success bodies fail at `body` in the guard.
      bodyTimeout: this.#timeouts.body > 0 ? this.#timeouts.body * 2 : 0,
    });
  }

  /**
   * The client of the environment: CATALOG_BASE_URL, CATALOG_API_KEY, CATALOG_API_SECRET,
   * CATALOG_RATE_LIMIT and CATALOG_RESULT_WINDOW (as `catalog-streams run` reads them),
   * with `overrides` on top.
   */
  static fromEnv(env: NodeJS.ProcessEnv = process.env, overrides: Partial<CatalogClientOptions> = {}): CatalogClient {
    const pick = (value: string | undefined, variable: string, what: string): string => {
      if (value) return value;
      throw new ConfigError(
        `${variable} is not set: export ${what} (or give it in the pipeline's connection block)`,
        { path: variable },
        { code: 'config.missing_env' },
      );
    };
    const rateLimit = overrides.rateLimit ?? envRateLimit(env);
    const resultWindow = overrides.resultWindow ?? envResultWindow(env);
    const { apiKey, apiSecret, credentials, ...rest } = overrides;
    // A region preset gives the base URL unless the caller does (over CATALOG_BASE_URL, as a pipeline file's region).
    const baseUrl =
      overrides.region !== undefined && overrides.baseUrl === undefined
        ? presetBaseUrl(overrides)
        : pick(
            overrides.baseUrl ?? env.CATALOG_BASE_URL,
            'CATALOG_BASE_URL',
            'the base URL of the catalog API (https://..., or the URL the sandbox prints)',
          );
    return new CatalogClient({
      ...rest,
      ...(rateLimit !== undefined ? { rateLimit } : {}),
      ...(resultWindow !== undefined ? { resultWindow } : {}),
      baseUrl,
      credentials:
        credentials ??
        pairCredentialLists(
          pick(apiKey ?? env.CATALOG_API_KEY, 'CATALOG_API_KEY', 'the API key of that environment'),
          pick(apiSecret ?? env.CATALOG_API_SECRET, 'CATALOG_API_SECRET', 'the API secret of that environment'),
          { keys: 'CATALOG_API_KEY', secrets: 'CATALOG_API_SECRET' },
        ),
    });
  }

  /** Results one paged query reaches (10000 unless a sandbox says less). */
  readonly resultWindow: number;

  /** Requests per minute each key's limiter allows (Infinity when unlimited). */
  get rateLimit(): number {
    return this.limiter.perMinute;
  }

  /** API keys the requests are spread over. */
  get keyCount(): number {
    return this.#keys.size;
  }

  /** Requests per minute of every key together: what durations are estimated with (Infinity when unlimited). */
  get budgetPerMinute(): number {
    return this.rateLimit * this.#keys.size;
  }

  /** Each key's limiter, in the order the keys were given. */
  get limiters(): RateLimiter[] {
    return this.#keys.limiters;
  }

  /**
   * How long a successful attempt takes, ms (an exponential average; undefined before the first):
   * with the budget, how many requests must be on their way to use it (sources/budget-in-flight.ts).
   */
  get latencyMs(): number | undefined {
    return this.#latencyMs;
  }

  /** Attempts made (or waiting) with each key, in key order. */
  get requestsByKey(): number[] {
    return this.#keys.started;
  }

  /** One page of a paged query endpoint: the whole body parsed as JSON. */
  async query<E extends QueryEndpointName, T = CatalogRecord>(
    endpoint: E,
    body: QueryRequest<E>,
    options: RequestOptions = {},
  ): Promise<QueryPage<T>> {
    // A body cut short rejects with a network error code, and one that ended cleanly before its
    // JSON did with TRUNCATED_BODY: both are retried like any failed attempt.
    return this.#exchange(endpoint, 'paged', body, options, async (_res, stream) => {
      const { buffer, length } = await this.#readBounded(endpoint, body, stream, Buffer.allocUnsafe(64 * 1024));
      const bytes = buffer.subarray(0, length);
      return this.#parsePage<T>(endpoint, body, bytes.toString('utf8'), bytes);
    });
  }

  /**
   * One page of a paged query endpoint, kept as bytes and split into records
   * that are parsed one by one when read: what the paged source uses, so that a
   * page's records are made only as they go down the pipeline (see page-scanner.ts).
   * The page's shape and meta are checked now; a record's JSON when it is read.
   */
  async queryLazy<E extends QueryEndpointName, T = CatalogRecord>(
    endpoint: E,
    body: QueryRequest<E>,
    options: RequestOptions = {},
  ): Promise<LazyPage<T>> {
    // Parsed inside the exchange, so that a truncated body is retried like a cut one.
    return this.#exchange(endpoint, 'paged', body, options, async (_res, stream) => {
      const { buffer, length } = await this.#readPooled(endpoint, body, stream);
      try {
        return this.lazyPage<T>(endpoint, body, buffer.subarray(0, length), () => this.#releasePageBuffer(buffer));
      } catch (err) {
        this.#releasePageBuffer(buffer);
        throw err;
      }
    });
  }

  /** A body read into a reused buffer (grown when a body is larger). */
  async #readPooled(
    endpoint: string,
    request: RequestBody,
    body: Readable,
  ): Promise<{ buffer: Buffer; length: number }> {
    const buffer = this.#pageBuffers.pop() ?? Buffer.allocUnsafe(PAGE_BUFFER_SIZE);
    return this.#readBounded(endpoint, request, body, buffer, (b) => this.#releasePageBuffer(b));
  }

  /** A body read into `buffer` (grown as needed), failing past maxPageBytes; `drop` is given the buffer on failure. */
  async #readBounded(
    endpoint: string,
    request: RequestBody,
    body: Readable,
    buffer: Buffer,
    drop: (buffer: Buffer) => void = () => {},
  ): Promise<{ buffer: Buffer; length: number }> {
    let length = 0;
    try {
      for await (const chunk of body as AsyncIterable<Buffer>) {
        if (length + chunk.length > this.#maxPageBytes) {
          throw new ResponseTooLargeError({
            endpoint,
            request: describeRequest(request),
            maxBytes: this.#maxPageBytes,
            host: this.host,
          });
        }
        if (length + chunk.length > buffer.length) {
          const grown = Buffer.allocUnsafe(
            Math.min(this.#maxPageBytes, Math.max(buffer.length * 2, length + chunk.length)),
          );
          buffer.copy(grown, 0, 0, length);
          buffer = grown;
        }
        chunk.copy(buffer, length);
        length += chunk.length;
      }
    } catch (err) {
      drop(buffer);
      throw err;
    }
    return { buffer, length };
  }

  #releasePageBuffer(buffer: Buffer): void {
    if (this.#pageBuffers.length < PAGE_BUFFER_POOL && !this.#pageBuffers.includes(buffer))
      this.#pageBuffers.push(buffer);
  }

  /**
   * A page's bytes as a LazyPage; an ApiError (not retried) when they are not a page.
   * `release` is called by the page's release() (or at once when the page is parsed whole).
   */
  lazyPage<T = CatalogRecord>(
    endpoint: QueryEndpointName,
    body: RequestBody,
    bytes: Buffer,
    release: () => void = () => {},
  ): LazyPage<T> {
    // A UTF-8 byte order mark is dropped, as a text decoder would.
    const b = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes;
    const scanned = scanPage(b);
    // Checked on the whole page at once (native, a fraction of the parse); per record only when it fails.
    const valid = isUtf8(b);
    let skeleton: QueryPage | undefined;
    if (scanned) {
      try {
        const json = parseJson(scanned.skeleton);
        if (isPage(json) && (json as QueryPage).results.length === 0) skeleton = json as QueryPage;
      } catch {
        // not JSON around the records: the whole-body parse below reports it
      }
    }
    if (!scanned || !skeleton) {
      const page = this.#parsePage<T>(endpoint, body, b.toString('utf8'), b);
      release();
      return {
        meta: page.meta,
        length: page.results.length,
        record: (i) => page.results[i]!,
        release: () => {},
        invalidUtf8: () => !valid,
      };
    }
    const { starts, ends } = scanned;
    let released = false;
    // Records read ahead of their turn (a reader looks at a page's last records before emitting
    // the page from its start): kept until their turn comes, so each is parsed once. Records read
    // in turn are not kept, so they die young (the reason the page is parsed lazily at all).
    const ahead = new Map<number, T>();
    let next = 0;
    return {
      meta: skeleton.meta,
      length: starts.length,
      release: () => {
        if (!released) release();
        released = true;
        ahead.clear();
      },
      invalidUtf8: (i) => !valid && !released && !isUtf8(b.subarray(starts[i], ends[i])),
      record: (i) => {
        if (released) throw new Error('LazyPage.record() after release()');
        const kept = ahead.get(i);
        if (kept !== undefined) {
          ahead.delete(i);
          next = i + 1;
          return kept;
        }
        try {
          const record = parseJson(b.toString('utf8', starts[i], ends[i])) as T;
          if (i === next) next = i + 1;
          else ahead.set(i, record);
          return record;
        } catch (err) {
          throw this.#invalidResponse(
            endpoint,
            body,
            200,
            `the response body is not valid JSON (record ${i} of the page)`,
            err,
          );
        }
      },
    };
  }

  /**
   * Parses a page's JSON text, checking it is a page: a TruncatedBodyError (retried) when the
   * JSON stops before its end, an ApiError (not retried) when it is not a page.
   */
  #parsePage<T = CatalogRecord>(
    endpoint: QueryEndpointName,
    body: RequestBody,
    text: string,
    bytes?: Uint8Array,
  ): QueryPage<T> {
    let json: unknown;
    try {
      json = parseJson(text);
    } catch (err) {
      if (isTruncatedJson(bytes ?? Buffer.from(text))) throw new TruncatedBodyError(endpoint, text.length);
      throw this.#invalidResponse(endpoint, body, 200, 'the response body is not valid JSON', err);
    }
    if (!isPage(json))
      throw this.#invalidResponse(endpoint, body, 200, 'the response is not a page ({meta: {total}, results: [...]})');
    return json as QueryPage<T>;
  }

  /**
   * The raw NDJSON body of a stream endpoint (bytes). 204 gives an empty stream.
   * Errors before the body are retried and typed here; a body cut later is the
   * reader's to resume.
   */
  stream<E extends StreamEndpointName>(
    endpoint: E,
    body: QueryRequest<E>,
    options: RequestOptions = {},
  ): Promise<CatalogStream> {
    return this.#exchange(endpoint, 'stream', body, options, async (res, stream) => {
      if (res.statusCode === 204) {
        await res.body.dump();
        return Object.assign(Readable.from([]), { statusCode: 204 });
      }
      const type = String(res.headers['content-type'] ?? '');
      if (/^text\/html\b/i.test(type)) {
        // A proxy's or a login page: not a stream that was cut, so not resumed.
        const start = await readLimited(stream, 200);
        throw notTheApi(
          endpoint,
          body,
          res.statusCode,
          `the response is an HTML page, not NDJSON (${describeStart(start)})`,
        );
      }
      return Object.assign(stream, { statusCode: res.statusCode });
    });
  }

  /**
   * Waits for requests in flight to finish (a stream body must be read or
   * destroyed first), then closes the sockets; requests still waiting for the
   * limiter are rejected.
   */
  close(): Promise<void> {
    this.#keys.close();
    return (this.#closing ??= this.#pool.close());
  }

  /** Ends everything now: requests in flight fail, waiting ones are rejected (a run being torn down). */
  destroy(reason: Error = new AbortedError('the catalog client was destroyed')): Promise<void> {
    this.#keys.close(reason);
    if (this.#pool.destroyed) return this.#closing ?? Promise.resolve();
    return (this.#closing = this.#pool.destroy(reason));
  }

  async #exchange<T>(
    endpoint: EndpointName,
    mode: 'paged' | 'stream',
    body: RequestBody,
    options: RequestOptions,
    consume: (res: Dispatcher.ResponseData, body: Readable) => Promise<T>,
  ): Promise<T> {
    const spec = getEndpoint(endpoint);
    if (!spec || spec.mode !== mode) {
      throw new ConfigError(`"${endpoint}" is not a ${mode === 'paged' ? 'paged query' : 'stream'} endpoint`, {
        path: 'endpoint',
      });
    }
    validateRequest(endpoint, body);
    if (this.region) validateRegionRequest(this.region, endpoint, body);
    const signal = combineSignals(this.#signal, options.signal);
    const request: Dispatcher.RequestOptions = {
      path: this.#pathPrefix + spec.path,
      method: 'POST',
      headers: mode === 'paged' ? this.#jsonHeaders : this.#streamHeaders,
      // A deprecated filter name (`kind`) is never sent: the service would refuse or ignore it.
      body: JSON.stringify(toWireRequest(endpoint, body).body),
      signal,
    };
    return this.#send(endpoint, request, body, options.events ?? this.events, signal, consume, options.first);
  }

  /**
   * One record by id from a find endpoint (GET /v4/products/find?id=..., /v4/media/find?id=...),
   * under the same rate budget and retries as every request; undefined when the service answers
   * 404 (no such record). See catalog/endpoints/find.ts for what the spec leaves open.
   */
  async find<T = CatalogRecord>(
    endpoint: FindEndpointName,
    id: string | number,
    options: RequestOptions = {},
  ): Promise<T | undefined> {
    const spec = findEndpoints[endpoint];
    if (!spec)
      throw new ConfigError(
        `"${endpoint}" is not a find endpoint; there are ${Object.keys(findEndpoints).join(', ')}`,
        { path: 'endpoint' },
      );
    const valid =
      spec.idKind === 'integer'
        ? (Number.isSafeInteger(id) && Number(id) >= 0) || (typeof id === 'string' && /^\d+$/.test(id))
        : typeof id === 'string' && id !== '';
    if (!valid) {
      throw new RequestValidationError(
        endpoint,
        spec.idParameter,
        `${JSON.stringify(id)} is not a ${spec.idKind === 'integer' ? 'non-negative integer' : 'non-empty string'} id`,
      );
    }
    const signal = combineSignals(this.#signal, options.signal);
    const request: Dispatcher.RequestOptions = {
      path: `${this.#pathPrefix}${spec.path}?${new URLSearchParams({ [spec.idParameter]: String(id) })}`,
      method: 'GET',
      headers: this.#jsonHeaders,
      signal,
    };
    const asked = { filter: { [spec.idParameter]: id } };
    try {
      const text = await this.#send(endpoint, request, asked, options.events ?? this.events, signal, async (_, b) => {
        const { buffer, length } = await this.#readBounded(endpoint, asked, b, Buffer.allocUnsafe(16 * 1024));
        return buffer.toString('utf8', 0, length);
      });
      let json: unknown;
      try {
        json = parseJson(text);
      } catch (err) {
        throw this.#invalidResponse(endpoint, asked, 200, 'the response body is not valid JSON', err);
      }
      const found = foundRecord(json, spec.resource === 'product' ? 'product' : 'media');
      if (found === 'none') return undefined;
      if (found === undefined)
        throw this.#invalidResponse(
          endpoint,
          asked,
          200,
          `the response is neither {"${spec.resource}": record}, {"result": record} nor a record with an id: ${truncate(text, 80)}`,
        );
      return found as T;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404 && err.apiCode !== 'invalid_response') return undefined;
      throw err;
    }
  }

  async #send<T>(
    endpoint: string,
    request: Dispatcher.RequestOptions,
    body: RequestBody,
    events: RunEvents,
    signal: AbortSignal | undefined,
    consume: (res: Dispatcher.ResponseData, body: Readable) => Promise<T>,
    first = false,
  ): Promise<T> {
    let waited = 0;
    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted) throw aborted(endpoint, signal);
      const key = await this.#keys.acquire(signal, first);
      const started = performance.now();
      let failure: Failure;
      let status: number | undefined;
      try {
        const res = await this.#pool.request({
          ...request,
          headers: { ...(request.headers as Record<string, string>), authorization: key.authorization },
        });
        status = res.statusCode;
        this.serverClock.observe(res.headers.date);
        if (status >= 200 && status < 300) {
          const value = await consume(res, this.#guard(endpoint, res.body));
          this.#recordAttempt(events, endpoint, status, started, attempt);
          return value;
        }
        failure = { status, headers: res.headers, text: await readLimited(res.body, MAX_ERROR_BODY) };
      } catch (err) {
        if (signal?.aborted) throw aborted(endpoint, signal, err);
        if (err instanceof CatalogStreamsError) {
          // Our own verdict on a response (e.g. not a page): final, not retried.
          if (status !== undefined) this.#recordAttempt(events, endpoint, status, started, attempt);
          throw err;
        }
        // No response, or its body broke off: a network failure of this attempt.
        failure = { error: err };
      }
      this.#recordAttempt(events, endpoint, failure.status ?? 'network', started, attempt);
      const delay = this.#retryDelay(failure, attempt, waited);
      if (delay === undefined) throw this.#toError(endpoint, body, failure, attempt, waited, key);
      this.#announceRetry(events, endpoint, failure, attempt, delay);
      waited += delay;
      if (failure.status === 429) {
        // The key's budget, not the request, is what has to wait: the key is held, and the
        // request asks again at once for whichever key frees first (the same one, if it is the only one).
        this.#keys.hold(key, delay);
        continue;
      }
      try {
        await sleep(delay, undefined, { signal });
      } catch (err) {
        throw aborted(endpoint, signal, err);
      }
    }
  }

  /** A success body that fails when the service stops sending or trickles (body-guard.ts). */
  #guard(endpoint: string, body: Readable): Readable {
    const { body: idleMs, minBodyRate, rateWindow } = this.#timeouts;
    return guardBody(body, {
      idleMs,
      minBytesPerSecond: minBodyRate,
      rateWindowMs: rateWindow,
      ...(this.#clock ? { clock: this.#clock } : {}),
      failure: (problem) => new SlowBodyError(endpoint, problem),
    });
  }

  /** Milliseconds to wait before the next attempt, or undefined when the policy says stop. */
  #retryDelay(failure: Failure, attempt: number, waited: number): number | undefined {
    const policy = this.retryPolicy;
    if (failure.status !== undefined) {
      if (!policy.isRetryableStatus(failure.status)) return undefined;
    } else if (!policy.isRetryableError(failure.error)) {
      return undefined;
    }
    const delay =
      (failure.status !== undefined ? policy.retryAfterMs(failure.headers['retry-after']) : undefined) ??
      policy.backoff(attempt);
    const limit = failure.status === undefined ? policy.attemptLimit(failure.error, this.#hostname) : undefined;
    return policy.allows(attempt, waited, delay, limit) ? delay : undefined;
  }

  #announceRetry(events: RunEvents, endpoint: string, failure: Failure, attempt: number, delayMs: number): void {
    this.stats.retries++;
    let reason: string;
    if (failure.status !== undefined) {
      const { apiCode } = parseErrorBody(failure.text);
      reason = `${failure.status}${apiCode ? ` ${this.#redact(apiCode)}` : ''}`;
      if (failure.status === 429) {
        this.stats.throttles++;
        events.emit('throttle', {
          endpoint,
          delayMs,
          retryAfter: this.retryPolicy.retryAfterMs(failure.headers['retry-after']) !== undefined,
        });
      }
    } else {
      reason = errorCodeOf(failure.error) ?? 'network error';
    }
    events.emit('retry', { endpoint, attempt, reason, delayMs });
  }

  #recordAttempt(
    events: RunEvents,
    endpoint: string,
    status: number | 'network',
    started: number,
    attempt: number,
  ): void {
    this.stats.requests++;
    this.stats.byStatus[status] = (this.stats.byStatus[status] ?? 0) + 1;
    const durationMs = performance.now() - started;
    if (typeof status === 'number' && status >= 200 && status < 300)
      this.#latencyMs =
        this.#latencyMs === undefined ? durationMs : this.#latencyMs + LATENCY_WEIGHT * (durationMs - this.#latencyMs);
    events.emit('request', {
      endpoint,
      status: status === 'network' ? 0 : status,
      durationMs: Math.round(durationMs),
      attempt,
    });
  }

  #toError(
    endpoint: string,
    body: RequestBody,
    failure: Failure,
    attempts: number,
    waitedMs: number,
    key: PooledKey,
  ): Error {
    const request = describeRequest(body);
    if (failure.status === undefined) {
      const errorCode = errorCodeOf(failure.error);
      return new NetworkError(
        {
          host: this.host,
          endpoint,
          failure: networkFailure(errorCode),
          errorCode,
          attempts,
          request,
          ...(failure.error instanceof SlowBodyError ? { detail: failure.error.detail } : {}),
        },
        { cause: this.#safeCause(failure.error) },
      );
    }
    const said = parseErrorBody(failure.text);
    const details = {
      status: failure.status,
      endpoint,
      request,
      attempts,
      apiCode: said.apiCode && this.#redact(said.apiCode),
      apiMessage: said.apiMessage && this.#redact(said.apiMessage),
      violations: said.violations && this.#redactor.redactValue(said.violations),
    };
    if (failure.status === 401 || failure.status === 403)
      return new AuthError({
        ...details,
        host: this.host,
        credentialSource: this.#credentialSource,
        keyIndex: key.index,
        keyCount: this.#keys.size,
      });
    if (failure.status === 429) return new RateLimitError({ ...details, waitedMs });
    return new ApiError(details);
  }

  #invalidResponse(endpoint: string, body: RequestBody, status: number, what: string, cause?: unknown): ApiError {
    return notTheApi(endpoint, body, status, what, cause);
  }

  /** Server-provided text without our credentials in it. */
  #redact(text: string): string {
    return this.#redactor.redact(text);
  }

  /** The original error as a cause, its message scrubbed (it is shown by util.inspect). */
  #safeCause(err: unknown): unknown {
    if (err instanceof Error && this.#redact(err.message) !== err.message) err.message = this.#redact(err.message);
    return err;
  }
}

/** The options' key/secret pairs: `credentials`, or apiKey and apiSecret (comma-separated lists of the same length). */
function credentialsOf(options: CatalogClientOptions): ApiCredential[] {
  if (options.credentials !== undefined) {
    if (options.apiKey !== undefined || options.apiSecret !== undefined)
      throw new ConfigError(
        'the catalog client takes either apiKey and apiSecret or credentials, not both: put every key in credentials',
        { path: 'connection.credentials' },
        { code: 'config.credentials' },
      );
    const list = [...options.credentials];
    if (list.length === 0)
      throw new ConfigError('credentials is an empty list: give at least one {apiKey, apiSecret}', {
        path: 'connection.credentials',
      });
    for (const [i, c] of list.entries()) {
      if (!c.apiKey || !c.apiSecret)
        throw new ConfigError(
          `credentials[${i}] (key ${i + 1} of ${list.length}) needs both an apiKey and an apiSecret`,
          { path: `connection.credentials[${i}]` },
          { code: 'config.credentials' },
        );
    }
    checkDistinct(list, 'credentials', { path: 'connection.credentials' });
    return list;
  }
  if (!options.apiKey)
    throw new ConfigError('the catalog client needs an API key (CATALOG_API_KEY)', { path: 'connection.apiKey' });
  if (!options.apiSecret)
    throw new ConfigError('the catalog client needs an API secret (CATALOG_API_SECRET)', {
      path: 'connection.apiSecret',
    });
  return pairCredentialLists(options.apiKey, options.apiSecret, {
    keys: 'apiKey',
    secrets: 'apiSecret',
    location: { path: 'connection.apiKey' },
  });
}

/** The base URL given, else the region's (in its environment); a ConfigError when there is neither. */
export function presetBaseUrl(options: Pick<CatalogClientOptions, 'baseUrl' | 'region' | 'environment'>): string {
  if (options.baseUrl !== undefined) return options.baseUrl;
  const { region, environment } = options;
  if (region === undefined) {
    if (environment !== undefined)
      throw new ConfigError(`environment "${environment}" needs a region: set region to one of be, fr, de, au, us`, {
        path: 'connection.environment',
      });
    throw new ConfigError('no base URL: give baseUrl, or region (be, fr, de, au, us) for its API', {
      path: 'connection.baseUrl',
    });
  }
  const url = regionBaseUrl(region, environment);
  if (url !== undefined) return url;
  throw new ConfigError(
    `region ${regionLabel(region)} has no ${environment} environment; the vendor has sandboxes for ${regionsWithSandbox().join(', ')} only: ` +
      'leave environment out (production), or use the embedded sandbox (run --sandbox)',
    { path: 'connection.environment' },
    { code: 'config.region' },
  );
}

function parseBaseUrl(baseUrl: string): URL {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new ConfigError('CATALOG_BASE_URL is not a valid URL (expected https://host[/path])', {
      path: 'connection.baseUrl',
    });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ConfigError(`CATALOG_BASE_URL must be an http(s) URL, got ${url.protocol}`, {
      path: 'connection.baseUrl',
    });
  }
  if (url.username || url.password) {
    // Never echo the URL: it holds credentials.
    throw new ConfigError(
      'CATALOG_BASE_URL must not contain credentials; give them in CATALOG_API_KEY and CATALOG_API_SECRET',
      { path: 'connection.baseUrl' },
    );
  }
  return url;
}

function isPage(json: unknown): boolean {
  if (!json || typeof json !== 'object') return false;
  const { meta, results } = json as { meta?: { total?: unknown }; results?: unknown };
  return (
    Array.isArray(results) &&
    !!meta &&
    typeof meta === 'object' &&
    Number.isInteger(meta.total) &&
    (meta.total as number) >= 0
  );
}

function networkFailure(code: string | undefined): NetworkFailure {
  if (code === undefined) return 'failed';
  if (UNREACHABLE.has(code)) return 'unreachable';
  if (code.includes('TIMEOUT') || code === 'ETIMEDOUT') return 'timeout';
  if (RESET.has(code)) return 'reset';
  if (code === TRUNCATED_BODY) return 'truncated';
  if (code === BODY_IDLE || code === BODY_TOO_SLOW) return 'timeout';
  return 'failed';
}

/** A success body the service stopped sending, or sent too slowly (code BODY_IDLE or BODY_TOO_SLOW): retried, or resumed. */
export class SlowBodyError extends Error {
  readonly code: string;
  /** What happened, with the limit and the option that sets it. */
  readonly detail: string;
  constructor(endpoint: string, problem: BodyProblem) {
    const detail =
      problem.kind === 'idle'
        ? `no byte of the response body came for ${seconds(problem.idleMs)} (connection.timeouts.body)`
        : `the response body came at ${Math.round((problem.bytes * 1000) / problem.windowMs)} bytes/s over ${seconds(problem.windowMs)}, ` +
          `below ${problem.minBytesPerSecond} bytes/s (connection.timeouts.minBodyRate over timeouts.rateWindow)`;
    super(`${endpoint}: ${detail}`);
    this.code = problem.kind === 'idle' ? BODY_IDLE : BODY_TOO_SLOW;
    this.detail = detail;
  }
}

function seconds(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${Math.round(ms)} ms`;
}

/** The start of a body for a message: tags and space runs squeezed. */
function describeStart(text: string): string {
  const plain = text.replace(/\s+/g, ' ').trim();
  return plain ? `it starts with ${JSON.stringify(plain.slice(0, 60))}` : 'empty';
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** A 2xx body that ended cleanly before its JSON did: a failed attempt (code TRUNCATED_BODY), retried. */
class TruncatedBodyError extends Error {
  readonly code = TRUNCATED_BODY;
  constructor(endpoint: string, length: number) {
    super(`${endpoint}: the response body ended after ${length} characters, before its JSON was complete`);
  }
}

function combineSignals(a: AbortSignal | undefined, b: AbortSignal | undefined): AbortSignal | undefined {
  if (!a) return b;
  if (!b) return a;
  return AbortSignal.any([a, b]);
}

function aborted(endpoint: string, signal: AbortSignal | undefined, cause?: unknown): AbortedError {
  return new AbortedError(`${endpoint}: the request was aborted`, { cause: signal?.reason ?? cause });
}

/** The start of an error body as text; the rest is discarded (and the socket freed). */
async function readLimited(body: Readable, max: number): Promise<string> {
  let text = '';
  try {
    for await (const chunk of body) {
      text += typeof chunk === 'string' ? chunk : (chunk as Buffer).toString('utf8');
      if (text.length >= max) break;
    }
  } catch {
    // A broken error body: the status is what counts.
  }
  return text;
}
