// What is retried, how often and after how long. Pure: no timers, no I/O, so
// the policy is tested on its own and the client's retry loop stays short.
//
// The option names follow undici's RetryHandler (statusCodes, errorCodes,
// minTimeout/maxTimeout/timeoutFactor, retryAfter) so the policy reads the same
// as undici's; why the loop itself is ours and not undici's is explained in
// catalog-client.ts.
//
// - Retried: 429, 500, 502, 503, 504, and connection failures (reset, refused,
//   timeouts, a body cut short, idle or too slow (body-guard.ts), or ended cleanly before its JSON was complete). 400/401/403/404/422 are never retried: asking
//   again cannot change the answer.
// - 429: Retry-After when the server sends one (seconds or an HTTP date), else
//   exponential backoff; the caller also slows the shared limiter down.
// - Backoff: minTimeout * timeoutFactor^(n-1), capped at maxTimeout, with
//   "equal jitter" (half fixed, half random) so parallel requests that failed
//   together do not come back together, yet none comes back at once.
// - Bounds: at most maxAttempts attempts, and at most maxWaitMs of waiting in
//   total for one request, whichever comes first.
// - A refused connection (ECONNREFUSED) is nobody listening on that port: a
//   wrong port or a server that is not running, which backing off for a minute
//   rarely changes. To a loopback host (localhost, 127.0.0.0/8, ::1: a sandbox
//   or a local proxy) it is not retried at all; elsewhere (a load balancer
//   between two instances) it gets REFUSED_ATTEMPTS attempts at most. Before,
//   a wrong port took 8 attempts and 48 s to fail.

import { BODY_IDLE, BODY_TOO_SLOW } from './body-guard.js';

export interface RetryOptions {
  /** Attempts per request, the first included (default 8). */
  maxAttempts?: number;
  /** Total time one request may spend waiting between attempts (default 180 s). */
  maxWaitMs?: number;
  /** First backoff delay (default 500 ms). */
  minTimeout?: number;
  /** Largest backoff delay (default 30 s); Retry-After is honoured beyond it, within maxWaitMs. */
  maxTimeout?: number;
  /** Growth of the backoff per attempt (default 2). */
  timeoutFactor?: number;
  /** Honour a Retry-After header (default true). */
  retryAfter?: boolean;
  /** HTTP statuses retried (default 429, 500, 502, 503, 504). */
  statusCodes?: readonly number[];
  /** System and undici error codes retried (connection failures and timeouts). */
  errorCodes?: readonly string[];
}

/** Our code for a 2xx body that ended cleanly before its JSON did (see page-scanner.ts isTruncatedJson). */
export const TRUNCATED_BODY = 'CATALOG_BODY_TRUNCATED';

export const RETRY_STATUS_CODES: readonly number[] = [429, 500, 502, 503, 504];

/** Failures of the connection: the same request can succeed on another try. */
export const RETRY_ERROR_CODES: readonly string[] = [
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENETUNREACH',
  'ENETDOWN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  TRUNCATED_BODY,
  BODY_IDLE,
  BODY_TOO_SLOW,
];

/** Attempts a request refused by a host other than loopback gets, the first included. */
export const REFUSED_ATTEMPTS = 2;

/** localhost, 127.0.0.0/8 and ::1 (with or without brackets): a server on this machine. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h);
}

export const DEFAULT_RETRY_OPTIONS: Required<RetryOptions> = {
  maxAttempts: 8,
  maxWaitMs: 180_000,
  minTimeout: 500,
  maxTimeout: 30_000,
  timeoutFactor: 2,
  retryAfter: true,
  statusCodes: RETRY_STATUS_CODES,
  errorCodes: RETRY_ERROR_CODES,
};

export class RetryPolicy {
  readonly options: Required<RetryOptions>;
  readonly #random: () => number;

  constructor(options: RetryOptions = {}, random: () => number = Math.random) {
    this.options = { ...DEFAULT_RETRY_OPTIONS, ...definedOnly(options) };
    if (!(this.options.maxAttempts >= 1)) throw new RangeError('retry.maxAttempts must be at least 1');
    this.#random = random;
  }

  isRetryableStatus(status: number): boolean {
    return this.options.statusCodes.includes(status);
  }

  /** The error's code (or a cause's code) is a connection failure worth another try. */
  isRetryableError(err: unknown): boolean {
    const code = errorCodeOf(err);
    return code !== undefined && this.options.errorCodes.includes(code);
  }

  /** Attempts a request may have once it failed with `err` against `hostname` (see the top of this file). */
  attemptLimit(err: unknown, hostname: string): number {
    if (errorCodeOf(err) !== 'ECONNREFUSED') return this.options.maxAttempts;
    return isLoopbackHost(hostname) ? 1 : Math.min(REFUSED_ATTEMPTS, this.options.maxAttempts);
  }

  /** Backoff before attempt `failedAttempts + 1`, jittered. */
  backoff(failedAttempts: number): number {
    const { minTimeout, maxTimeout, timeoutFactor } = this.options;
    const base = Math.min(maxTimeout, minTimeout * timeoutFactor ** Math.max(0, failedAttempts - 1));
    return Math.round(base / 2 + (this.#random() * base) / 2);
  }

  /** Delay a Retry-After header asks for, in ms; undefined when absent, unreadable or disabled. */
  retryAfterMs(header: string | string[] | undefined, now: number = Date.now()): number | undefined {
    if (!this.options.retryAfter || header === undefined) return undefined;
    const value = (Array.isArray(header) ? header[0] : header)?.trim();
    if (!value) return undefined;
    if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
    const at = Date.parse(value);
    return Number.isNaN(at) ? undefined : Math.max(0, at - now);
  }

  /**
   * Whether attempt `failedAttempts + 1` may happen after waiting `delayMs` more (having waited `waitedMs`);
   * `attemptLimit` lowers maxAttempts for this failure (attemptLimit()).
   */
  allows(failedAttempts: number, waitedMs: number, delayMs: number, attemptLimit = this.options.maxAttempts): boolean {
    const limit = Math.min(attemptLimit, this.options.maxAttempts);
    return failedAttempts < limit && waitedMs + delayMs <= this.options.maxWaitMs;
  }
}

/** `code` of an error or of the first cause that has one (undici wraps system errors). */
export function errorCodeOf(err: unknown): string | undefined {
  for (
    let e: unknown = err, depth = 0;
    e && typeof e === 'object' && depth < 5;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
