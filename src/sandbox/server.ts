// The sandbox's HTTP layer (node:http): routing, Basic authentication, the
// per-credential rate limit, fault injection, request validation with
// `checkRequest`, and paged or streamed answers from the query engine. Order
// of checks for an API request: unknown path 404, wrong method 405, missing or
// wrong credentials 401, over the rate limit 429, injected faults, then the
// body (413, 415, invalid JSON 400), the filter's CPU budget (422), then the
// request itself (400/422).
// Admin routes under /_sandbox/ need the admin credential (admin-credential.ts),
// never an API key (403), and are neither rate limited nor faulted. A filter
// past the CPU budget (filter-budget.ts) is refused before any record is
// scanned.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import {
  DEFAULT_PAGE_SIZE,
  ENDPOINT_NAMES,
  type EndpointSpec,
  MAX_REACHABLE_RESULTS,
  checkRequest,
  timesNotInSeconds,
  formatPath,
  getEndpoint,
  isEmptyObject,
} from '../catalog/index.js';
import { AdminCredential } from './admin-credential.js';
import { ApiError, apiError, requestError } from './api-errors.js';
import { filterBudgetIssue } from './filter-budget.js';
import { nestedDeeperThan } from '../values.js';
import type { Dataset } from './dataset.js';
import { FaultInjector, type FaultStats, type SandboxFaults } from './faults.js';
import { ChangeSchedule, type SandboxChanges } from './changes.js';
import { MediaCollection } from './media-collection.js';
import { ProductCollection } from './product-collection.js';
import { type Collection, FilterValueError, QueryCache, type QueryCacheLimits } from './query-engine.js';
import { unitFloat } from './random.js';
import { RollingWindowLimiter } from './rate-limiter.js';
import { referenceCollections } from './reference-collections.js';
import { findJson, findRoutes, sendFound } from './find-route.js';
import { profileFilterIssues } from './live-filters.js';
import { taxonomyCollections } from './taxonomy-collections.js';
import { regionalCollections } from './regional-reference.js';
import { Utf8Chunks, sendError, sendJson, sendJsonChunks, sendTruncatedJson, writeNdjson } from './responses.js';
import { SALT } from './timeline.js';
import { PRODUCT_STATUSES } from './generate-products.js';

export interface Credentials {
  apiKey: string;
  apiSecret: string;
}

export const DEFAULT_CREDENTIALS: Credentials = { apiKey: 'sandbox-key', apiSecret: 'sandbox-secret' };
/** Default bound of a request body: 1000 codes of 14 digits are ~17 KB, so 1 MiB is generous and a shared sandbox stays small. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/**
 * Levels of objects and arrays a request body may have. A filter tree nests a few levels; zod and
 * the filter compiler recurse, so a 100,000-deep filter overflowed the stack and answered 500.
 */
export const MAX_BODY_DEPTH = 64;

export interface ServerSettings {
  credentials: Credentials[];
  /** The secret of the admin routes (`Authorization: Bearer <secret>`), separate from every API key. */
  adminSecret: string;
  /** Requests per window for each credential. */
  rateLimit: number;
  rateLimitWindowMs: number;
  /** Keep the arrival time of every admitted API request, per credential (`requestTimes`; tests). */
  recordRequestTimes?: boolean;
  retryAfter: boolean;
  trueTotal: boolean;
  resultWindow: number;
  faults: SandboxFaults;
  /** The catalog changing while it is read (changes.ts). */
  changes?: SandboxChanges;
  log?: (line: string) => void;
  /** Largest request body, bytes (default 1 MiB): 413 past it. */
  maxBodyBytes?: number;
  /** Bounds of the query cache (entries and bytes, LRU). */
  queryCache?: QueryCacheLimits;
  /**
   * Called just before an API query or stream request is answered (after authentication, the
   * rate limit and faults), with the endpoint, the request body and the request's number among
   * that endpoint's (0-based): tests change the catalog at an exact point of a read with it.
   */
  beforeAnswer?: (request: AnswerRequest) => void;
}

/** Work the sandbox did for its requests: what its CPU budgets bound (tests measure them). */
export interface SandboxWork {
  /** Queries evaluated (query cache misses). */
  evaluations: number;
  /** Records a filter was tested on: the collection's size per filtered evaluation. */
  recordsFiltered: number;
  /** Churn changes drawn (changes.ts), at most MAX_CHURN_PER_REQUEST per request. */
  churnDraws: number;
}

export interface AnswerRequest {
  endpoint: string;
  body: unknown;
  n: number;
}

export interface SandboxStats {
  /** Every HTTP request received, admin routes included. */
  requests: number;
  /**
   * Requests by endpoint name (`products.query`, `admin`, `unknown`) and HTTP
   * status; status 0 counts answers that never completed (a stream cut, a reset,
   * a client that left).
   */
  byEndpoint: Record<string, Record<number, number>>;
  /** 429 answers from the rate limiter (injected bursts are in `faults.tooManyRequests`). */
  rateLimited: number;
  /**
   * Per credential, in the order they were configured (never by key): API requests the rate limit
   * admitted, and those it answered 429.
   */
  byCredential: { admitted: number; rateLimited: number }[];
  faults: FaultStats;
  /** What the query cache holds. */
  cache: { entries: number; bytes: number };
}

export interface TouchRequest {
  ids?: string[];
  count?: number;
  media?: number[];
  /** Media ids whose files are replaced (new URLs), updatedAt moved to `at` with the products they are linked to. */
  replaceMedia?: number[];
  /** Media ids that leave the `available` set; no timestamp moves (an `availableUntil` passing). */
  expireMedia?: number[];
}

const TouchBody = z.strictObject({
  ids: z.array(z.string()).optional(),
  count: z.int().nonnegative().optional(),
  media: z.array(z.int()).optional(),
  replaceMedia: z.array(z.int()).optional(),
  expireMedia: z.array(z.int()).optional(),
  at: z.int().nonnegative().optional(),
});

const MutationBody = z.strictObject({
  ids: z.array(z.string()).optional(),
  count: z.int().nonnegative().optional(),
  at: z.int().nonnegative().optional(),
});

const StatusBody = MutationBody.extend({
  status: z.enum(PRODUCT_STATUSES),
  deleted: z.boolean().optional(),
});

/** What hide / reveal / status changed. */
export interface MutationResult {
  /** Product ids changed, in id order. */
  products: string[];
  /** Their updatedAt (reveal, status; unix seconds), or when they disappeared (hide). */
  at: number;
}

export interface TouchResult {
  /** Product ids touched, in id order. */
  products: string[];
  /** Media ids touched. */
  media: number[];
  /** The updatedAt they were given (unix seconds; never below a record's createdAt). */
  at: number;
}

const collectionOf = (ds: Dataset): Record<string, Collection> => {
  const products = new ProductCollection(ds);
  return {
    'products.query': products,
    'products.stream': products,
    'media.stream': new MediaCollection(ds),
    ...referenceCollections(ds),
    ...taxonomyCollections(ds),
    ...regionalCollections(ds),
  };
};

export class SandboxServer {
  readonly faults: FaultInjector;
  readonly changes: ChangeSchedule;
  readonly #answered = new Map<string, number>();
  readonly #limiter: RollingWindowLimiter;
  readonly #collections: Record<string, Collection>;
  readonly #cache: QueryCache;
  readonly #byPath = new Map<string, EndpointSpec>(ENDPOINT_NAMES.map((n) => [getEndpoint(n)!.path, getEndpoint(n)!]));
  readonly #authorizations: Map<string, Credentials>;
  readonly #adminCredential: AdminCredential;
  /** Position of each credential (by key) in the settings. */
  readonly #positions: Map<string, number>;
  #counters = this.#freshCounters();
  #requestTimes: number[][] = [];
  #touches = 0;
  /** Products whose current version fails the schema (`invalidate`), until they change again. */
  readonly #broken = new Set<number>();

  constructor(
    readonly dataset: Dataset,
    readonly settings: ServerSettings,
  ) {
    this.faults = new FaultInjector(dataset.seed, settings.faults);
    this.changes = new ChangeSchedule(dataset.seed, settings.changes);
    this.#limiter = new RollingWindowLimiter(settings.rateLimit, settings.rateLimitWindowMs);
    this.#collections = collectionOf(dataset);
    this.#cache = new QueryCache(settings.queryCache);
    this.#authorizations = new Map(
      settings.credentials.map((c) => [`Basic ${Buffer.from(`${c.apiKey}:${c.apiSecret}`).toString('base64')}`, c]),
    );
    this.#positions = new Map(settings.credentials.map((c, i) => [c.apiKey, i]));
    this.#adminCredential = new AdminCredential(settings.adminSecret);
    this.#counters = this.#freshCounters();
    this.#requestTimes = settings.credentials.map(() => []);
  }

  #freshCounters() {
    return {
      requests: 0,
      rateLimited: 0,
      byEndpoint: {} as Record<string, Record<number, number>>,
      byCredential: (this.settings?.credentials ?? []).map(() => ({ admitted: 0, rateLimited: 0 })),
    };
  }

  /**
   * Arrival times (performance.now, ms) of the API requests the rate limit admitted, one list per
   * credential in configured order; empty unless `recordRequestTimes` was set.
   */
  requestTimes(): number[][] {
    return this.#requestTimes.map((t) => [...t]);
  }

  get work(): SandboxWork {
    return { ...this.#cache.work, churnDraws: this.changes.churnDraws };
  }

  get stats(): SandboxStats {
    const byEndpoint = Object.fromEntries(Object.entries(this.#counters.byEndpoint).map(([k, v]) => [k, { ...v }]));
    return {
      requests: this.#counters.requests,
      byEndpoint,
      rateLimited: this.#counters.rateLimited,
      byCredential: this.#counters.byCredential.map((c) => ({ ...c })),
      faults: { ...this.faults.stats },
      cache: this.#cache.size,
    };
  }

  resetStats(): void {
    this.#counters = this.#freshCounters();
    this.#requestTimes = this.settings.credentials.map(() => []);
    Object.assign(this.faults.stats, Object.fromEntries(Object.keys(this.faults.stats).map((k) => [k, 0])));
  }

  setFaults(faults: SandboxFaults): void {
    this.faults.set(faults);
  }

  setChanges(changes: SandboxChanges): void {
    this.changes.set(changes);
  }

  /** Makes the changes the schedule holds for this request, then lets a test hook make its own. */
  #changeBeforeAnswer(endpoint: string, body: unknown): void {
    const due = this.changes.due(endpoint, body);
    if (due.add > 0) this.add({ count: due.add });
    if (due.remove > 0) this.hide({ count: due.remove });
    if (due.touch > 0) this.touch({ count: due.touch });
    if (due.status > 0) this.#flipStatus(due.status);
    const n = this.#answered.get(endpoint) ?? 0;
    this.#answered.set(endpoint, n + 1);
    this.settings.beforeAnswer?.({ endpoint, body, n });
  }

  /** `count` products change status: active ones become inactive, the others active. */
  #flipStatus(count: number): void {
    const ds = this.dataset;
    const picked = this.#pick('status', { count }, (i) => !ds.hidden.has(i));
    const active = PRODUCT_STATUSES.indexOf('active');
    const at = Math.floor(Date.now() / 1000);
    const toInactive = picked.filter((i) => ds.status[i] === active);
    const toActive = picked.filter((i) => ds.status[i] !== active);
    if (toInactive.length) ds.setProductStatus(toInactive, PRODUCT_STATUSES.indexOf('inactive'), undefined, at);
    if (toActive.length) ds.setProductStatus(toActive, active, undefined, at);
  }

  /** Moves updatedAt of the given products (or `count` products chosen from the seed) and media. */
  touch(target: string[] | TouchRequest, at = Math.floor(Date.now() / 1000)): TouchResult {
    const ds = this.dataset;
    const request = Array.isArray(target) ? { ids: target } : target;
    const indexes = new Set<number>();
    for (const id of request.ids ?? []) {
      const i = ds.productIndex(id);
      if (i < 0) throw new RangeError(`touch: no product "${id}"`);
      indexes.add(i);
    }
    const wanted = indexes.size + Math.min(request.count ?? 0, ds.productCount - indexes.size);
    // Chosen with a fresh draw per touch call, spread over the whole id range.
    for (let k = 0; indexes.size < wanted; k++)
      indexes.add(Math.floor(ds.productCount * unitFloat(ds.seed, SALT.touch, this.#touches, k)));
    const media = request.media ?? [];
    const replaced = request.replaceMedia ?? [];
    const expired = request.expireMedia ?? [];
    for (const id of [...media, ...replaced, ...expired])
      if (!Number.isInteger(id) || id < 1 || id > ds.mediaCount) throw new RangeError(`touch: no media ${id}`);
    this.#touches++;
    const sorted = [...indexes].sort((a, b) => a - b);
    this.#repair(sorted);
    ds.touchProducts(sorted, at);
    ds.touchMedia(
      media.map((id) => id - 1),
      at,
    );
    if (replaced.length > 0)
      ds.replaceMedia(
        replaced.map((id) => id - 1),
        at,
      );
    if (expired.length > 0) ds.expireMedia(expired.map((id) => id - 1));
    return { products: sorted.map((i) => ds.productId(i)), media: [...new Set([...media, ...replaced])], at };
  }

  /**
   * The products named by `ids` plus `count` more drawn from the seed among `eligible` (in id
   * order; default every product), each call drawing afresh: deterministic for a seed and a
   * sequence of calls.
   */
  #pick(verb: string, request: { ids?: string[]; count?: number }, eligible: (i: number) => boolean): number[] {
    const ds = this.dataset;
    const chosen = new Set<number>();
    for (const id of request.ids ?? []) {
      const i = ds.productIndex(id);
      if (i < 0) throw new RangeError(`${verb}: no product "${id}"`);
      if (!eligible(i))
        throw new RangeError(`${verb}: product "${id}" ${verb === 'reveal' ? 'is not hidden' : 'is hidden'}`);
      chosen.add(i);
    }
    const wanted = request.count ?? 0;
    if (wanted > 0) {
      const pool: number[] = [];
      for (let i = 0; i < ds.productCount; i++) if (eligible(i) && !chosen.has(i)) pool.push(i);
      for (let k = 0; k < wanted && pool.length > 0; k++) {
        const j = Math.floor(pool.length * unitFloat(ds.seed, SALT.touch, this.#touches, k));
        chosen.add(pool[j]!);
        pool[j] = pool[pool.length - 1]!;
        pool.pop();
      }
    }
    this.#touches++;
    return [...chosen].sort((a, b) => a - b);
  }

  /** Products disappear from every result (as deletions do: the API sends no event). */
  hide(request: { ids?: string[]; count?: number }, at = Math.floor(Date.now() / 1000)): MutationResult {
    const ds = this.dataset;
    const indexes = this.#pick('hide', request, (i) => !ds.hidden.has(i));
    ds.hideProducts(indexes);
    return { products: indexes.map((i) => ds.productId(i)), at };
  }

  /** Hidden products come (back) as new ones, updated at `at`: the way to insert products. */
  reveal(request: { ids?: string[]; count?: number }, at = Math.floor(Date.now() / 1000)): MutationResult {
    const ds = this.dataset;
    const indexes = this.#pick('reveal', request, (i) => ds.hidden.has(i));
    this.#repair(indexes);
    ds.revealProducts(indexes, at);
    return { products: indexes.map((i) => ds.productId(i)), at };
  }

  /** Products created at `at` (default now): pending or hidden ones come in with createdAt and updatedAt = `at`. */
  add(request: { ids?: string[]; count?: number }, at = Math.floor(Date.now() / 1000)): MutationResult {
    const ds = this.dataset;
    const indexes = this.#pick('reveal', request, (i) => ds.hidden.has(i));
    ds.createProducts(indexes, at);
    return { products: indexes.map((i) => ds.productId(i)), at };
  }

  /** Sets the status (and optionally `deleted`) of products, updated at `at`. */
  setStatus(
    request: { ids?: string[]; count?: number; status: (typeof PRODUCT_STATUSES)[number]; deleted?: boolean },
    at = Math.floor(Date.now() / 1000),
  ): MutationResult {
    const ds = this.dataset;
    const indexes = this.#pick('status', request, (i) => !ds.hidden.has(i));
    this.#repair(indexes);
    ds.setProductStatus(indexes, PRODUCT_STATUSES.indexOf(request.status), request.deleted, at);
    return { products: indexes.map((i) => ds.productId(i)), at };
  }

  /**
   * Products get a new version, updated at `at`, that fails the schema (served broken as
   * `faults.corrupt` breaks a record: status "bogus" or a 14-digit eanGtin13) until they change
   * again (touch, status, reveal): a supplier's bad edit, for dead-letter tests of given products.
   */
  invalidate(request: { ids?: string[]; count?: number }, at = Math.floor(Date.now() / 1000)): MutationResult {
    const ds = this.dataset;
    const indexes = this.#pick('invalidate', request, (i) => !ds.hidden.has(i));
    ds.touchProducts(indexes, at);
    for (const i of indexes) this.#broken.add(i);
    return { products: indexes.map((i) => ds.productId(i)), at };
  }

  /** Their next version is valid again. */
  #repair(indexes: Iterable<number>): void {
    for (const i of indexes) this.#broken.delete(i);
  }

  #count(endpoint: string, status: number): void {
    const e = (this.#counters.byEndpoint[endpoint] ??= {});
    e[status] = (e[status] ?? 0) + 1;
  }

  /** The node:http request listener. */
  readonly listener = (req: IncomingMessage, res: ServerResponse): void => {
    const started = performance.now();
    this.#counters.requests++;
    let endpointName = 'unknown';
    res.on('finish', () => {
      this.#count(endpointName, res.statusCode);
      this.settings.log?.(`${req.method} ${req.url} ${res.statusCode} ${(performance.now() - started).toFixed(1)}ms`);
    });
    res.on('close', () => {
      if (!res.writableFinished) this.#count(endpointName, 0);
    });
    const path = (req.url ?? '/').split('?')[0]!;
    const run = async () => {
      if (path.startsWith('/_sandbox/')) {
        endpointName = 'admin';
        return this.#admin(req, res, path);
      }
      const find = findRoutes.get(path);
      if (find) {
        endpointName = find.name;
        if (req.method !== 'GET') {
          req.resume();
          return sendError(res, apiError(405, `${find.path} takes GET, not ${req.method}`), { allow: 'GET' });
        }
        if (!(await this.#admit(req, res, find.name))) return;
        return sendFound(res, findJson(this.dataset, find, new URL(req.url ?? '/', 'http://sandbox').searchParams));
      }
      const spec = this.#byPath.get(path);
      if (!spec) {
        req.resume();
        return sendError(
          res,
          apiError(
            404,
            `no endpoint at ${req.method} ${path}; the sandbox serves POST ${[...this.#byPath.keys()].join(', ')}`,
          ),
        );
      }
      endpointName = spec.name;
      if (!this.#collections[spec.name]) {
        // A regional reference table another region's service does not have (profiles.ts REGIONAL_TABLES).
        req.resume();
        return sendError(
          res,
          apiError(
            404,
            `${spec.path} is not served by the "${this.dataset.profile}" profile (a table of other regions)`,
          ),
        );
      }
      return this.#api(req, res, spec);
    };
    run().catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const error =
        err instanceof ApiError
          ? err
          : apiError(500, `the sandbox failed: ${err instanceof Error ? err.message : String(err)}`);
      sendError(res, error);
    });
  };

  #authenticate(req: IncomingMessage): Credentials {
    const credentials = this.#authorizations.get(req.headers.authorization ?? '');
    if (!credentials) {
      req.resume();
      throw apiError(
        401,
        req.headers.authorization
          ? 'the API key or secret is not valid for this environment'
          : 'missing credentials: send HTTP Basic authentication with the API key and secret',
      );
    }
    return credentials;
  }

  async #api(req: IncomingMessage, res: ServerResponse, spec: EndpointSpec): Promise<void> {
    if (req.method !== 'POST') {
      req.resume();
      return sendError(res, apiError(405, `${spec.path} takes POST, not ${req.method}`), { allow: 'POST' });
    }
    if (!(await this.#admit(req, res, spec.name))) return;
    const body = await readJsonBody(req, this.settings.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
    this.#changeBeforeAnswer(spec.name, body);
    return this.#query(res, spec, body);
  }

  /** Authentication, the rate limit and injected faults; false when the request was answered (or cut) already. */
  async #admit(req: IncomingMessage, res: ServerResponse, endpoint: string): Promise<boolean> {
    const credentials = this.#authenticate(req);
    const rate = this.#limiter.take(credentials.apiKey);
    const position = this.#positions.get(credentials.apiKey)!;
    const counted = this.#counters.byCredential[position]!;
    if (rate.allowed) {
      counted.admitted++;
      if (this.settings.recordRequestTimes) this.#requestTimes[position]!.push(performance.now());
    } else {
      counted.rateLimited++;
      this.#counters.rateLimited++;
      req.resume();
      const headers: Record<string, string> = this.settings.retryAfter
        ? { 'retry-after': String(Math.max(1, Math.ceil(rate.retryAfterMs / 1000))) }
        : {};
      sendError(
        res,
        apiError(
          429,
          `more than ${this.#limiter.limit} requests in ${this.#limiter.windowMs / 1000} s for this API key`,
        ),
        headers,
      );
      return false;
    }
    const { fault, delayMs } = this.faults.onRequest(endpoint);
    if (delayMs > 0) await sleep(delayMs);
    if (fault.kind === 'reset') {
      req.socket.destroy();
      return false;
    }
    if (fault.kind === 'tooManyRequests') {
      req.resume();
      sendError(res, apiError(429, 'too many requests (injected fault)'));
      return false;
    }
    if (fault.kind === 'status') {
      req.resume();
      sendError(res, apiError(fault.status, `injected fault: the service answered ${fault.status}`));
      return false;
    }
    return true;
  }

  async #query(res: ServerResponse, spec: EndpointSpec, body: Record<string, unknown>): Promise<void> {
    // The CPU budget first: counting nodes is cheaper than validating thousands of them.
    const collection = this.#collections[spec.name]!;
    const overBudget = body.filter === undefined ? undefined : filterBudgetIssue(body.filter, collection.size());
    if (overBudget)
      throw new ApiError(422, 'validation_failed', `filter: ${overBudget}`, [{ path: 'filter', message: overBudget }]);
    // The spec gives page.size a default of 100; checkRequest insists on it, so fill it in.
    const page = body.page;
    if (page && typeof page === 'object' && !Array.isArray(page) && !('size' in page))
      body.page = { ...page, size: DEFAULT_PAGE_SIZE };
    // A filter name the profile's service does not know is refused as the service would (400).
    const unknown = profileFilterIssues(this.dataset.profile, spec, body.filter);
    if (unknown.length) throw apiError(400, `${formatPath(unknown[0]!.path)}: ${unknown[0]!.message}`);
    const issues = checkRequest(spec.name, body);
    // The client accepts ISO dates and sends seconds; a date on the wire is the client's bug.
    if (issues.length === 0)
      issues.push(...timesNotInSeconds(spec.filters, body.filter, ['filter'], spec.filterAliases));
    const window = Math.min(this.settings.resultWindow, MAX_REACHABLE_RESULTS);
    const error = requestError(spec, body, issues, window);
    if (error) throw error;
    const sorting = (body.sorting ?? spec.defaultSorting) as Record<string, unknown> | undefined;
    let matches: Uint32Array;
    try {
      // `{}` is the empty filter where the spec shows no filters (catalog/endpoints/index.ts filtersNotShown).
      const filter = spec.filtersNotShown && isEmptyObject(body.filter) ? undefined : body.filter;
      matches = this.#cache.get(collection, { filter, sorting });
    } catch (err) {
      if (err instanceof FilterValueError) {
        const path = formatPath(err.path);
        throw new ApiError(422, 'validation_failed', `${path}: ${err.message}`, [{ path, message: err.message }]);
      }
      throw err;
    }
    const resource = spec.resource === 'product' ? 'product' : spec.resource === 'media' ? 'media' : undefined;
    const recordJson = (i: number) => {
      const json = collection.json(i);
      const broken = resource === 'product' ? this.#broken.has(i) : false;
      return resource && (broken || this.faults.isInvalid(resource, i)) ? this.faults.corrupt(resource, i, json) : json;
    };
    if (spec.mode === 'stream') {
      if (matches.length === 0) {
        res.writeHead(204);
        res.end();
        return;
      }
      const plan = this.faults.planStream(spec.name, matches.length);
      return writeNdjson(res, { total: matches.length, recordJson: (k) => recordJson(matches[k]!) }, plan);
    }
    const requested = body.page as { no: number; size: number } | undefined;
    const total = spec.capped && !this.settings.trueTotal ? Math.min(matches.length, window) : matches.length;
    // A capped endpoint without `page` (media/query) still reaches only the first results of the window.
    let slice = spec.capped ? matches.subarray(0, window) : matches;
    let meta = `{"total":${total}}`;
    if (requested) {
      const offset = requested.no * requested.size;
      const end = Math.min(offset + requested.size, matches.length, spec.capped ? window : Infinity);
      slice = matches.subarray(Math.min(offset, end), end);
      meta = `{"total":${total},"page":{"no":${requested.no},"offset":${offset},"size":${requested.size}}}`;
    }
    const out = new Utf8Chunks();
    out.write(`{"meta":${meta},"results":[`);
    for (let k = 0; k < slice.length; k++) out.write(k ? `,${recordJson(slice[k]!)}` : recordJson(slice[k]!));
    out.write(']}');
    if (this.faults.truncatesPage(spec.name)) return sendTruncatedJson(res, out.finish());
    sendJsonChunks(res, 200, out.finish(), {}, out.pool);
  }

  /** The admin credential opens the admin routes; an API key is known but not allowed there (403). */
  #authenticateAdmin(req: IncomingMessage): void {
    const header = req.headers.authorization;
    const access = this.#adminCredential.check(header);
    if (access === 'admin') return;
    req.resume();
    const how =
      'send Authorization: Bearer <admin secret> (printed by `catalog-streams sandbox`, or set with --admin-secret or CATALOG_SANDBOX_ADMIN_SECRET)';
    if (header && this.#authorizations.has(header))
      throw apiError(403, `the admin routes (/_sandbox/*) take the sandbox's admin credential, not an API key: ${how}`);
    throw apiError(
      401,
      access === 'missing'
        ? `missing credentials: the admin routes (/_sandbox/*) take the admin credential: ${how}`
        : `the admin credential is not valid for this sandbox: ${how}`,
    );
  }

  async #admin(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    this.#authenticateAdmin(req);
    const route = `${req.method} ${path}`;
    switch (route) {
      case 'GET /_sandbox/stats':
        req.resume();
        return sendJson(res, 200, this.#adminStats());
      case 'POST /_sandbox/touch': {
        const { at, ...target } = await this.#adminBody(req, TouchBody, 'touch');
        return answerOr400(res, () => this.touch(target, at));
      }
      case 'POST /_sandbox/add':
      case 'POST /_sandbox/hide':
      case 'POST /_sandbox/reveal':
      case 'POST /_sandbox/invalidate': {
        const verb = path.slice('/_sandbox/'.length) as 'add' | 'hide' | 'reveal' | 'invalidate';
        const { at, ...target } = await this.#adminBody(req, MutationBody, verb);
        return answerOr400(res, () => this.#mutate(verb, target, at));
      }
      case 'POST /_sandbox/status': {
        const { at, ...target } = await this.#adminBody(req, StatusBody, 'status');
        return answerOr400(res, () => this.setStatus(target, at));
      }
      case 'POST /_sandbox/faults':
      case 'POST /_sandbox/changes':
        return this.#adminSettings(req, res, path.endsWith('/faults'));
      default:
        req.resume();
        throw apiError(
          404,
          `no admin route ${route}; there are GET /_sandbox/stats, POST /_sandbox/touch, POST /_sandbox/add, POST /_sandbox/hide, POST /_sandbox/reveal, POST /_sandbox/invalidate, POST /_sandbox/status, POST /_sandbox/faults, POST /_sandbox/changes`,
        );
    }
  }

  /** GET /_sandbox/stats: the request counters, the dataset's size and version, the process memory. */
  #adminStats(): object {
    const ds = this.dataset;
    const memory = process.memoryUsage();
    return {
      ...this.stats,
      dataset: { seed: ds.seed, products: ds.productCount, media: ds.mediaCount, version: ds.version },
      memory: {
        rss: memory.rss,
        heapUsed: memory.heapUsed,
        external: memory.external,
        arrayBuffers: memory.arrayBuffers,
      },
    };
  }

  /** An admin route's JSON body checked against `schema`; a 400 naming each bad field, prefixed with `verb`. */
  async #adminBody<T extends z.ZodType>(req: IncomingMessage, schema: T, verb: string): Promise<z.output<T>> {
    const parsed = schema.safeParse(await readJsonBody(req, this.settings.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES));
    if (!parsed.success)
      throw apiError(
        400,
        `${verb}: ${parsed.error.issues.map((i) => `${formatPath(i.path as (string | number)[]) || 'body'}: ${i.message}`).join('; ')}`,
      );
    return parsed.data;
  }

  #mutate(
    verb: 'add' | 'hide' | 'reveal' | 'invalidate',
    target: { ids?: string[]; count?: number },
    at: number | undefined,
  ): MutationResult {
    if (verb === 'hide') return this.hide(target, at);
    if (verb === 'add') return this.add(target, at);
    if (verb === 'invalidate') return this.invalidate(target, at);
    return this.reveal(target, at);
  }

  /** POST /_sandbox/faults and /_sandbox/changes: replace the configuration, answer the one now in force. */
  async #adminSettings(req: IncomingMessage, res: ServerResponse, faults: boolean): Promise<void> {
    const body = await readJsonBody(req, this.settings.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
    try {
      if (faults) this.setFaults(body as SandboxFaults);
      else this.setChanges(body as SandboxChanges);
    } catch (err) {
      throw apiError(400, `${faults ? 'faults' : 'changes'}: ${err instanceof Error ? err.message : String(err)}`);
    }
    return sendJson(res, 200, faults ? { faults: this.faults.config } : { changes: this.changes.config });
  }
}

/** Answers 200 with what `act` returns; its error (a target the dataset does not have) becomes a 400. */
function answerOr400(res: ServerResponse, act: () => unknown): void {
  try {
    return sendJson(res, 200, act());
  } catch (err) {
    throw apiError(400, err instanceof Error ? err.message : String(err));
  }
}

/**
 * Reads and parses a JSON object body: 413 past `maxBytes` (told by Content-Length before reading,
 * else when the bytes get there), 415 for a non-JSON content type, 400 for invalid JSON, 422 for a
 * body nested past MAX_BODY_DEPTH.
 */
async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<Record<string, unknown>> {
  const type = req.headers['content-type'];
  const tooLarge = () => apiError(413, `the request body is larger than ${maxBytes} bytes`);
  if (Number(req.headers['content-length']) > maxBytes) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw tooLarge();
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  if (type !== undefined && !/^application\/(.+\+)?json\b/i.test(type)) {
    throw apiError(415, `send the body as JSON with Content-Type: application/json (got "${type}")`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw apiError(400, `the request body is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw apiError(400, 'body: the request body must be a JSON object');
  const deep = Object.keys(value).find((k) =>
    nestedDeeperThan((value as Record<string, unknown>)[k], MAX_BODY_DEPTH - 1),
  );
  if (deep !== undefined) {
    const message = `nested more than ${MAX_BODY_DEPTH} levels deep (filters nest a few levels)`;
    throw new ApiError(422, 'validation_failed', `${deep}: ${message}`, [{ path: deep, message }]);
  }
  return value as Record<string, unknown>;
}
