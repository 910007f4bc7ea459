// The error for a 2xx answer that is not what the catalog API sends, worded the same for pages,
// finds and streams: the usual cause is a base URL pointing at something else (a proxy, a login page).
import { ApiError } from './errors.js';
import { describeRequest } from './request-summary.js';

/** A 2xx answer that is not what the catalog API sends (HTML, not JSON, not a page): not retried. */
export function notTheApi(
  endpoint: string,
  body: { filter?: unknown; sorting?: unknown; page?: unknown },
  status: number,
  what: string,
  cause?: unknown,
): ApiError {
  const request = describeRequest(body);
  return new ApiError(
    { status, endpoint, request, apiCode: 'invalid_response' },
    { message: `${endpoint} answered ${status} but ${what} (${request}); is CATALOG_BASE_URL the catalog API?`, cause },
  );
}
