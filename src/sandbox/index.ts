// The embedded Catalog API simulator: a real HTTP server (node:http) that
// serves a deterministic generated catalog the way ARCHITECTURE.md, API rules describes the
// public service. `startSandbox` is the in-process entry point; the CLI's
// `catalog-streams sandbox` command wraps it.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULT_RATE_LIMIT_PER_MINUTE, MAX_REACHABLE_RESULTS } from '../catalog/index.js';
import { AdminCredential, randomSecret } from './admin-credential.js';
import { Dataset, type DatasetOptions } from './dataset.js';
import type { SandboxFaults } from './faults.js';
import { type AssetFaults, type AssetHost, startAssetHost } from './asset-host.js';
import type { QueryCacheLimits } from './query-engine.js';
import type { SandboxChanges } from './changes.js';
import { PRODUCT_STATUSES } from './generate-products.js';
import {
  type AnswerRequest,
  type Credentials,
  DEFAULT_CREDENTIALS,
  type MutationResult,
  SandboxServer,
  type SandboxStats,
  type SandboxWork,
  type TouchRequest,
  type TouchResult,
} from './server.js';

export interface SandboxOptions extends DatasetOptions {
  /** TCP port; 0 (default) picks a free one. */
  port?: number;
  /** Interface to listen on; default 127.0.0.1. */
  host?: string;
  /** The sandbox credentials (default key `sandbox-key`, secret `sandbox-secret`). */
  credentials?: Partial<Credentials>;
  /** More accepted credentials, each with its own rate-limit budget (a client with several keys). */
  extraCredentials?: Credentials[];
  /**
   * The secret of the admin routes (`Authorization: Bearer <secret>`), which no API key opens;
   * default a random one (`adminSecret` of the sandbox returned).
   */
  adminSecret?: string;
  /** Requests per minute per credential (default 100); 0 or Infinity switches the limit off. */
  rateLimit?: number;
  /** Keep the arrival time of every admitted API request per credential (`requestTimes()`; tests). */
  recordRequestTimes?: boolean;
  /** Length of the rate-limit window in ms (default 60000); shorter windows make tests fast. */
  rateLimitWindowMs?: number;
  /** Send Retry-After on rate-limit 429s (the public service does not). */
  retryAfter?: boolean;
  /** Report products/query's true `meta.total` instead of capping it at the result window. */
  trueTotal?: boolean;
  /** Results products/query can reach (default and maximum 10000); smaller makes slicing tests cheap. */
  resultWindow?: number;
  /** Fault injection (all off by default); change at runtime with `setFaults`. */
  faults?: SandboxFaults;
  /** The catalog changing while it is read: changes at chosen requests, steady churn (changes.ts); `setChanges` at runtime. */
  changes?: SandboxChanges;
  /** Called just before each API query or stream request is answered (tests change the catalog there). */
  beforeAnswer?: (request: AnswerRequest) => void;
  /** Reuse a dataset built earlier (seed, products and bulkInstant options are then ignored). */
  dataset?: Dataset;
  /** Called with one line per answered request. */
  log?: (line: string) => void;
  /** Largest request body, bytes (default 1 MiB): 413 past it. */
  maxBodyBytes?: number;
  /**
   * Start the asset host serving the media files (a second server, its own port; `true` or its
   * faults). Off by default: media URLs then point at an unresolvable host, and the same seed
   * serves the same bytes (with the host on, URLs carry its port). The CLI's `sandbox` starts it.
   */
  assetHost?: AssetFaults | boolean;
  /** Bounds of the query cache: `maxEntries` (default 256), `maxBytes` (default 48 MiB, keys and results). */
  queryCache?: QueryCacheLimits;
}

export interface Sandbox {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:54321`; paths begin with /v4. */
  url: string;
  port: number;
  credentials: Credentials;
  /** The secret of the admin routes under /_sandbox/. */
  adminSecret: string;
  /** `Bearer <adminSecret>`: the Authorization header of the admin routes. */
  adminAuthorization: string;
  dataset: Dataset;
  /** The media files' host (undefined unless `assetHost`). */
  assets: AssetHost | undefined;
  /** A snapshot of the request counters. */
  readonly stats: SandboxStats;
  /** A snapshot of the work its CPU budgets bound: filter scans and churn draws. */
  readonly work: SandboxWork;
  /**
   * Arrival times (performance.now, ms) of the API requests admitted, one list per credential:
   * `credentials` first, then `extraCredentials` in order. Empty lists unless `recordRequestTimes`.
   */
  requestTimes(): number[][];
  resetStats(): void;
  setFaults(faults: SandboxFaults): void;
  /**
   * Moves meta.updatedAt of products (by id, or `{count}` chosen from the seed)
   * and media (`{media: [ids]}`) to `at` (default: now, unix seconds). `replaceMedia: [ids]`
   * gives media items new files (new URLs; they and their products move to `at`);
   * `expireMedia: [ids]` takes them out of the `available` set without moving any timestamp.
   */
  touch(target: string[] | TouchRequest, at?: number): TouchResult;
  /** Products created now (`pending` ones, or any hidden): createdAt and updatedAt move to `at`. */
  add(target: { ids?: string[]; count?: number }, at?: number): MutationResult;
  /** Products removed: they leave every result. */
  hide(target: { ids?: string[]; count?: number }): MutationResult;
  /** Removed products restored, keeping their createdAt; updatedAt moves to `at`. */
  reveal(target: { ids?: string[]; count?: number }, at?: number): MutationResult;
  /** Sets the status (and optionally `deleted`) of products; updatedAt moves to `at`. */
  setStatus(
    target: { ids?: string[]; count?: number; status: (typeof PRODUCT_STATUSES)[number]; deleted?: boolean },
    at?: number,
  ): MutationResult;
  /**
   * Products get a new version (updatedAt = `at`) that fails the schema, served so until they
   * change again (touch, status, reveal).
   */
  invalidate(target: { ids?: string[]; count?: number }, at?: number): MutationResult;
  setChanges(changes: SandboxChanges): void;
  close(): Promise<void>;
}

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const resultWindow = options.resultWindow ?? MAX_REACHABLE_RESULTS;
  if (!Number.isInteger(resultWindow) || resultWindow < 1 || resultWindow > MAX_REACHABLE_RESULTS) {
    throw new RangeError(`resultWindow must be an integer from 1 to ${MAX_REACHABLE_RESULTS}, got ${resultWindow}`);
  }
  const dataset = options.dataset ?? new Dataset({ ...options, resultWindow });
  const credentials: Credentials = {
    apiKey: options.credentials?.apiKey ?? DEFAULT_CREDENTIALS.apiKey,
    apiSecret: options.credentials?.apiSecret ?? DEFAULT_CREDENTIALS.apiSecret,
  };
  const admin = new AdminCredential(options.adminSecret ?? randomSecret());
  const assets = await startAssets(options, [credentials, ...(options.extraCredentials ?? [])], admin.secret);
  if (assets) dataset.assetBase = assets.url;
  const server = new SandboxServer(dataset, {
    credentials: [credentials, ...(options.extraCredentials ?? [])],
    adminSecret: admin.secret,
    rateLimit: options.rateLimit ?? DEFAULT_RATE_LIMIT_PER_MINUTE,
    rateLimitWindowMs: options.rateLimitWindowMs ?? 60_000,
    ...(options.recordRequestTimes ? { recordRequestTimes: true } : {}),
    retryAfter: options.retryAfter ?? false,
    trueTotal: options.trueTotal ?? false,
    resultWindow,
    faults: options.faults ?? {},
    changes: options.changes,
    beforeAnswer: options.beforeAnswer,
    log: options.log,
    ...(options.maxBodyBytes !== undefined ? { maxBodyBytes: options.maxBodyBytes } : {}),
    ...(options.queryCache ? { queryCache: options.queryCache } : {}),
  });
  const http = createServer(server.listener);
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      http.off('error', reject);
      resolve();
    });
  });
  const address = http.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    credentials,
    adminSecret: admin.secret,
    adminAuthorization: admin.authorization,
    dataset,
    assets,
    get stats() {
      return server.stats;
    },
    get work() {
      return server.work;
    },
    requestTimes: () => server.requestTimes(),
    resetStats: () => server.resetStats(),
    setFaults: (faults) => server.setFaults(faults),
    touch: (target, at) => server.touch(target, at),
    add: (target, at) => server.add(target, at),
    hide: (target) => server.hide(target),
    reveal: (target, at) => server.reveal(target, at),
    setStatus: (target, at) => server.setStatus(target, at),
    invalidate: (target, at) => server.invalidate(target, at),
    setChanges: (changes) => server.setChanges(changes),
    close: () =>
      (closing ??= new Promise<void>((resolve, reject) => {
        http.close((err) => (err ? reject(err) : resolve()));
        // Streams in progress and idle keep-alive connections would hold close() open.
        http.closeAllConnections();
      }).then(() => assets?.close())),
  };
}

/** The asset host, told every secret of the sandbox so that it can report one reaching it. */
function startAssets(
  options: SandboxOptions,
  credentials: Credentials[],
  admin: string,
): Promise<AssetHost | undefined> {
  if (!options.assetHost) return Promise.resolve(undefined);
  const secrets = [admin, ...credentials.flatMap((c) => [c.apiKey, c.apiSecret])];
  const faults = options.assetHost === true ? {} : options.assetHost;
  return startAssetHost({ host: options.host, faults, secrets });
}

export { Dataset, DEFAULT_PRODUCT_COUNT, DEFAULT_SEED, type DatasetOptions } from './dataset.js';
export { SandboxFaultsSchema, type SandboxFaults, type FaultStats } from './faults.js';
export {
  AssetHost,
  assetBytes,
  assetSha256,
  startAssetHost,
  type AssetFaults,
  type AssetHostOptions,
} from './asset-host.js';
export { SandboxChangesSchema, type SandboxChanges } from './changes.js';
export { ADMIN_SECRET_ENV, randomSecret } from './admin-credential.js';
export { MAX_FILTER_NODES, MAX_LEAF_TESTS, MAX_SEARCH_TESTS } from './filter-budget.js';
export { MAX_CHURN_PER_REQUEST } from './changes.js';
export {
  DEFAULT_CREDENTIALS,
  type AnswerRequest,
  type SandboxWork,
  type MutationResult,
  type Credentials,
  type SandboxStats,
  type TouchRequest,
  type TouchResult,
} from './server.js';
export { GENERATION_EPOCH, CATALOG_START, CATALOG_END, type BulkImport } from './timeline.js';
export { productIdOf, PRODUCT_STATUSES } from './generate-products.js';
export { NDJSON_CONTENT_TYPE } from './responses.js';
export {
  DEFAULT_PROFILE,
  PROFILE_ENV,
  SANDBOX_PROFILES,
  type SandboxProfile,
  isSandboxProfile,
  parseProfile,
} from './profiles.js';
