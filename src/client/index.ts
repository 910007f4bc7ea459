// The HTTP client of the catalog API: one CatalogClient per run.
export * from './catalog-client.js';
export * from './errors.js';
export { RateLimiter, type RateLimiterOptions } from './rate-limiter.js';
export { type ApiCredential, pairCredentialLists } from './credentials.js';
export {
  RetryPolicy,
  type RetryOptions,
  DEFAULT_RETRY_OPTIONS,
  RETRY_ERROR_CODES,
  RETRY_STATUS_CODES,
} from './retry-policy.js';
export { describeRequest } from './request-summary.js';
export { notTheApi } from './invalid-response.js';
export { parseJson, quoteUnsafeIntegers } from './json-text.js';
export { BODY_IDLE, BODY_TOO_SLOW, type GuardClock } from './body-guard.js';
