// The sandbox's error answers (ARCHITECTURE.md, API rules): `{"error":{status, code, message}}`,
// plus `violations` on 422. Turns the issues `checkRequest` finds into one
// answer: structural problems (unknown key, bad page, offset past the result
// window, more than 1000 codes, unknown filter or sorting name, malformed
// filter tree) are 400; a value a known filter or sorting does not accept
// (status `no_selection`, direction `UP`) is 422 with every such violation.
import { type EndpointSpec, type FilterIssue, MAX_CODES_PER_FILTER, formatPath } from '../catalog/index.js';
import type { Path } from './query-engine.js';

export interface Violation {
  path: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly violations?: Violation[],
  ) {
    super(message);
  }

  body(): { error: { status: number; code: string; message: string; violations?: Violation[] } } {
    return {
      error: {
        status: this.status,
        code: this.code,
        message: this.message,
        ...(this.violations ? { violations: this.violations } : {}),
      },
    };
  }
}

export const ERROR_CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'authentication.not_authenticated',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'validation_failed',
  429: 'too_many_requests',
  500: 'internal_error',
  503: 'service_unavailable',
};

export function apiError(status: number, message: string, code = ERROR_CODES[status] ?? 'error'): ApiError {
  return new ApiError(status, code, message);
}

export const RESULT_WINDOW_EXCEEDED = 'result_window_exceeded';

const valueAt = (root: unknown, path: Path): unknown =>
  path.reduce<unknown>(
    (v, k) => (v !== null && typeof v === 'object' ? (v as Record<string | number, unknown>)[k] : undefined),
    root,
  );

/** `bad_request` or `validation_failed` for one issue of `checkRequest`. */
function isValueViolation(spec: EndpointSpec, body: unknown, issue: FilterIssue): boolean {
  const [root, ...rest] = issue.path;
  if (root === 'sorting') return typeof rest[0] === 'string' && Object.hasOwn(spec.sortings, rest[0]);
  if (root !== 'filter') return false;
  // Walk past the combinators to the leaf filter's name.
  let k = 0;
  while (k < rest.length) {
    if ((rest[k] === 'and' || rest[k] === 'or') && typeof rest[k + 1] === 'number') k += 2;
    else if (rest[k] === 'not') k += 1;
    else break;
  }
  const name = rest[k];
  if (typeof name !== 'string' || !Object.hasOwn(spec.filters, name)) return false;
  const leafPath = ['filter', ...rest.slice(0, k + 1)];
  const value = valueAt(body, leafPath);
  // A code list over the limit is a structural problem (the request must be split).
  if (spec.codeFilters.includes(name) && Array.isArray(value) && value.length > MAX_CODES_PER_FILTER) return false;
  return true;
}

/**
 * The error answer for a request `checkRequest` found issues in. `resultWindow`
 * is the number of results a capped endpoint can reach (10000, or less when the
 * sandbox is configured so).
 */
export function requestError(
  spec: EndpointSpec,
  body: unknown,
  issues: FilterIssue[],
  resultWindow: number,
): ApiError | undefined {
  const page = (body as { page?: { no?: unknown; size?: unknown } } | null)?.page;
  const offset = Number.isInteger(page?.no) && typeof page?.size === 'number' ? (page.no as number) * page.size : 0;
  const pastWindow =
    spec.capped && offset >= resultWindow && issues.every((i) => i.path[0] !== 'page' || i.path[1] === 'no');
  if (pastWindow && issues.every((i) => i.path[0] === 'page')) {
    return apiError(
      400,
      `page.no: offset ${offset} is past the ${resultWindow} results this endpoint can reach; narrow the filter (for example by createdAt windows) or use products/stream`,
      RESULT_WINDOW_EXCEEDED,
    );
  }
  const structural = issues.filter((i) => !isValueViolation(spec, body, i));
  if (structural.length) {
    const first = structural[0]!;
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
    return apiError(400, `${formatPath(first.path) || 'body'}: ${first.message}${more}`);
  }
  if (!issues.length) return undefined;
  const violations = issues.map((i) => ({ path: formatPath(i.path), message: i.message }));
  return new ApiError(
    422,
    'validation_failed',
    `${violations[0]!.path}: ${violations[0]!.message}${violations.length > 1 ? ` (and ${violations.length - 1} more)` : ''}`,
    violations,
  );
}
