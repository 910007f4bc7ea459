// Typed errors of the HTTP client and the sources that read its responses.
// Each carries a stable `code` and says what failed, where (endpoint, a short
// description of the request, the host) and what to check. Messages are built
// only from the endpoint name, the request body (filters never hold
// credentials), the status and what the server sent back; the client redacts
// its credentials from server text before it gets here, so no error, log line
// or event can carry a key or a secret.
import { CatalogStreamsError } from '../errors.js';

/** What the server said in an error body, as far as it said anything. */
export interface ApiErrorBody {
  /** `error.code` of the body, e.g. `too_many_requests`. */
  apiCode?: string;
  /** `error.message` of the body, or the start of a non-JSON body. */
  apiMessage?: string;
  /** 422: the `violations` array, as sent. */
  violations?: unknown[];
}

export interface ApiErrorDetails extends ApiErrorBody {
  status: number;
  /** Endpoint name, e.g. `products.query`. */
  endpoint: string;
  /** Short description of the request, e.g. `filter {status: active} page 3`. */
  request?: string;
  /** Attempts made (1 when not retried). */
  attempts?: number;
}

/** The service answered with an error status (or an unreadable success body). */
export class ApiError extends CatalogStreamsError {
  readonly status: number;
  readonly apiCode: string | undefined;
  readonly apiMessage: string | undefined;
  readonly endpoint: string;
  readonly request: string | undefined;
  readonly violations: unknown[] | undefined;
  readonly attempts: number;

  constructor(details: ApiErrorDetails, options: ErrorOptions & { code?: string; message?: string } = {}) {
    super(
      options.code ?? `api.${details.apiCode ?? details.status}`,
      options.message ?? apiErrorMessage(details),
      options,
    );
    this.status = details.status;
    this.apiCode = details.apiCode;
    this.apiMessage = details.apiMessage;
    this.endpoint = details.endpoint;
    this.request = details.request;
    this.violations = details.violations;
    this.attempts = details.attempts ?? 1;
  }
}

/**
 * 401/403: the credentials were refused. Never retried. With several keys the run fails at the
 * first key refused (ARCHITECTURE.md, Several keys), named by position, never by value.
 */
export class AuthError extends ApiError {
  /** 1-based position of the refused key in its list (1 with a single key). */
  readonly keyNumber: number;
  /** Keys the client was given. */
  readonly keyCount: number;

  constructor(
    details: ApiErrorDetails & { host: string; credentialSource?: string; keyIndex?: number; keyCount?: number },
  ) {
    const count = details.keyCount ?? 1;
    const number = (details.keyIndex ?? 0) + 1;
    const which = count > 1 ? `key ${number} of ${count}` : 'the credentials';
    const what =
      details.status === 401
        ? `the catalog API at ${details.host} rejected ${which} (401${details.apiCode ? ` ${details.apiCode}` : ''}) for ${details.endpoint}`
        : `${count > 1 ? `${which} is` : 'the credentials are'} not allowed to use ${details.endpoint} at ${details.host} (403${details.apiCode ? ` ${details.apiCode}` : ''})`;
    const source = details.credentialSource ?? 'CATALOG_API_KEY and CATALOG_API_SECRET';
    const check = count > 1 ? `check entry ${number} of ${source}` : `check ${source}`;
    const several =
      count > 1
        ? `; a run fails when any of its keys is refused: fix that key, or remove it from the list (its secret too)`
        : '';
    super(details, {
      code: details.status === 401 ? 'auth.unauthorized' : 'auth.forbidden',
      message:
        `${what}: ${check}, and that they belong to the environment of ` +
        `CATALOG_BASE_URL (credentials are environment-specific: production keys do not work on the sandbox, nor the reverse)${several}`,
    });
    this.keyNumber = number;
    this.keyCount = count;
  }
}

/** 429 still answered after every retry the policy allowed. */
export class RateLimitError extends ApiError {
  constructor(details: ApiErrorDetails & { waitedMs: number }) {
    super(details, {
      code: 'api.rate_limited',
      message:
        `${details.endpoint} was still rate limited (429) after ${details.attempts ?? 1} attempts and ${Math.round(details.waitedMs / 1000)} s of waiting` +
        `${details.request ? ` (${details.request})` : ''}: another client may be using the same credentials; lower connection.rateLimit or try again later`,
    });
  }
}

export type NetworkFailure = 'unreachable' | 'timeout' | 'reset' | 'truncated' | 'failed';

/** The service could not be reached, or the connection failed or timed out. */
export class NetworkError extends CatalogStreamsError {
  readonly host: string;
  readonly endpoint: string;
  readonly failure: NetworkFailure;
  /** The system or undici error code, e.g. `ECONNREFUSED`, `UND_ERR_HEADERS_TIMEOUT`. */
  readonly errorCode: string | undefined;
  readonly attempts: number;

  constructor(
    details: {
      host: string;
      endpoint: string;
      failure: NetworkFailure;
      errorCode?: string;
      attempts: number;
      request?: string;
      /** What timed out, with the limit and its option (a body that went idle or too slow). */
      detail?: string;
    },
    options: ErrorOptions = {},
  ) {
    super(`network.${details.failure}`, networkMessage(details), options);
    this.host = details.host;
    this.endpoint = details.endpoint;
    this.failure = details.failure;
    this.errorCode = details.errorCode;
    this.attempts = details.attempts;
  }
}

export type StreamProblem =
  | 'malformed_line'
  | 'line_too_long'
  | 'index_gap'
  | 'short'
  | 'error_line'
  | 'total_changed'
  | 'empty'
  | 'resume_exhausted'
  | 'resume_not_exact'
  | 'out_of_order'
  | 'repeated_id';

/**
 * An NDJSON stream broke its contract (bad line, index gap, too few lines, an error line, a record
 * out of its sorting's order or sent twice), or a cut stream could not be resumed
 * (resume_exhausted; resume_not_exact: not without risking a gap).
 */
export class StreamProtocolError extends CatalogStreamsError {
  readonly endpoint: string;
  readonly problem: StreamProblem;
  /** The `meta.index` expected at the point of failure (the line's index when it is known). */
  readonly index: number | undefined;
  /** `error_line`: what the error line said. */
  readonly apiError: (ApiErrorBody & { status?: number }) | undefined;

  constructor(
    details: {
      endpoint: string;
      problem: StreamProblem;
      index?: number;
      apiError?: ApiErrorBody & { status?: number };
    },
    message: string,
    options: ErrorOptions = {},
  ) {
    super(`stream.${details.problem}`, `${details.endpoint}: ${message}`, options);
    this.endpoint = details.endpoint;
    this.problem = details.problem;
    this.index = details.index;
    this.apiError = details.apiError;
  }
}

function apiErrorMessage(d: ApiErrorDetails): string {
  const code = d.apiCode ? ` ${d.apiCode}` : '';
  const said = d.apiMessage ? `: ${d.apiMessage}` : '';
  const req = d.request ? ` (${d.request})` : '';
  const violations = d.violations?.length
    ? `; violations: ${d.violations.slice(0, 5).map(formatViolation).join('; ')}${d.violations.length > 5 ? ` (and ${d.violations.length - 5} more)` : ''}`
    : '';
  const retried = d.attempts && d.attempts > 1 ? ` after ${d.attempts} attempts` : '';
  return `${d.endpoint} failed with ${d.status}${code}${said}${req}${violations}${retried}`;
}

/** `filter.status: not allowed` from the usual shapes of a violation, else compact JSON. */
export function formatViolation(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    const where = o.path ?? o.propertyPath ?? o.field ?? o.property;
    const what = o.message ?? o.title ?? o.reason;
    if (what !== undefined)
      return `${where !== undefined ? `${Array.isArray(where) ? where.join('.') : String(where)}: ` : ''}${String(what)}`;
  }
  return truncate(JSON.stringify(v) ?? String(v), 200);
}

function networkMessage(d: {
  host: string;
  endpoint: string;
  failure: NetworkFailure;
  errorCode?: string;
  attempts: number;
  request?: string;
  detail?: string;
}): string {
  const code = d.detail ? ` (${d.detail})` : d.errorCode ? ` (${d.errorCode})` : '';
  const tries = d.attempts > 1 ? ` after ${d.attempts} attempts` : '';
  switch (d.failure) {
    case 'unreachable':
      return `cannot reach the catalog API at ${d.host}${code} for ${d.endpoint}${tries}: check CATALOG_BASE_URL (host, port, https), your network, proxy and firewall`;
    case 'timeout':
      return `the catalog API at ${d.host} timed out${code} on ${d.endpoint}${tries}: the service may be slow or overloaded; raise connection.timeouts (pipeline file) or try again later`;
    case 'truncated':
      return `the catalog API at ${d.host} ended the response to ${d.endpoint}${d.request ? ` (${d.request})` : ''} before its JSON was complete${tries}: a proxy or the service cut the body short; try again later`;
    case 'reset':
      return `the connection to the catalog API at ${d.host} was reset${code} during ${d.endpoint}${tries}: check your network or proxy, then try again`;
    default:
      return `the request to the catalog API at ${d.host} failed${code} during ${d.endpoint}${tries}`;
  }
}

/** A page body larger than the client's maxPageBytes: not retried (asking again gets the same body). */
export class ResponseTooLargeError extends CatalogStreamsError {
  readonly endpoint: string;
  readonly maxBytes: number;
  constructor(details: { endpoint: string; request?: string; maxBytes: number; host: string }) {
    super(
      'api.response_too_large',
      `${details.endpoint} at ${details.host} answered with a body larger than ${formatBytes(details.maxBytes)} (connection.maxPageBytes)` +
        `${details.request ? ` (${details.request})` : ''}; the request was stopped there instead of holding the body in memory: ` +
        `a page of 250 products is about 1.5 MB, so check CATALOG_BASE_URL and the filter, or raise connection.maxPageBytes if the answer is expected to be that large`,
    );
    this.endpoint = details.endpoint;
    this.maxBytes = details.maxBytes;
  }
}

function formatBytes(n: number): string {
  if (n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

export function truncate(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}
