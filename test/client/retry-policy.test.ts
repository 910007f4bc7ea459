// The retry policy on its own: what is retried, backoff growth and jitter,
// Retry-After parsing, and the attempt and wait bounds.
import { describe, expect, it } from 'vitest';
import { RetryPolicy, errorCodeOf } from '../../src/client/retry-policy.js';

describe('RetryPolicy', () => {
  it('retries 429 and 5xx gateways, never 400/401/403/404/422', () => {
    const p = new RetryPolicy();
    expect([429, 500, 502, 503, 504].map((s) => p.isRetryableStatus(s))).toEqual([true, true, true, true, true]);
    expect([400, 401, 403, 404, 422, 501].map((s) => p.isRetryableStatus(s))).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it('retries connection failures found on the error or its cause', () => {
    const p = new RetryPolicy();
    expect(p.isRetryableError(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe(true);
    expect(
      p.isRetryableError(
        new Error('wrapped', { cause: Object.assign(new Error('y'), { code: 'UND_ERR_HEADERS_TIMEOUT' }) }),
      ),
    ).toBe(true);
    expect(p.isRetryableError(Object.assign(new Error('x'), { code: 'ENOTFOUND' }))).toBe(false);
    expect(p.isRetryableError(new Error('no code'))).toBe(false);
    expect(errorCodeOf('not an error')).toBeUndefined();
  });

  it('backs off exponentially with equal jitter, capped at maxTimeout', () => {
    const low = new RetryPolicy({ minTimeout: 100, maxTimeout: 1000 }, () => 0);
    const high = new RetryPolicy({ minTimeout: 100, maxTimeout: 1000 }, () => 1);
    expect([1, 2, 3, 4, 5, 6].map((n) => low.backoff(n))).toEqual([50, 100, 200, 400, 500, 500]);
    expect([1, 2, 3, 4, 5, 6].map((n) => high.backoff(n))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('reads Retry-After as seconds or an HTTP date, and ignores it when disabled or unreadable', () => {
    const p = new RetryPolicy();
    expect(p.retryAfterMs('3')).toBe(3000);
    expect(p.retryAfterMs(['2'])).toBe(2000);
    expect(p.retryAfterMs(new Date(10_000 + 5_000).toUTCString(), 10_000)).toBe(5000);
    expect(p.retryAfterMs('soon')).toBeUndefined();
    expect(p.retryAfterMs(undefined)).toBeUndefined();
    expect(new RetryPolicy({ retryAfter: false }).retryAfterMs('3')).toBeUndefined();
  });

  it('allows another attempt only within maxAttempts and maxWaitMs', () => {
    const p = new RetryPolicy({ maxAttempts: 3, maxWaitMs: 1000 });
    expect(p.allows(1, 0, 500)).toBe(true);
    expect(p.allows(2, 500, 500)).toBe(true);
    expect(p.allows(3, 0, 1)).toBe(false);
    expect(p.allows(1, 600, 500)).toBe(false);
    expect(() => new RetryPolicy({ maxAttempts: 0 })).toThrow(RangeError);
  });
});
