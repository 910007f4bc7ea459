// An adversarial Product Catalog API v4 for tests: `POST /v4/products/query` and
// `POST /v4/products/stream` over node:http on 127.0.0.1, a random port. Written from the spec
// (catalog-api-v4.md) and the live facts alone, sharing no code with src/sandbox: the sandbox
// answers as our code expects, this server answers anything the spec and the live service allow.
//
//   const api = await startAdversarialApi({ seed: 1, catalog: { products: 500 } });
//   const client = new CatalogClient({ baseUrl: api.url, ...api.credentials, rateLimit: 0 });
//   ... read ...; const o = oracle(api.log, { filter }); checkDelivery(o, records); await api.close();
//
// Adversarial, seeded and deterministic from `seed` (given the same requests in the same order):
// - ties in every sorting but `id` are shuffled anew for every request;
// - its own clock (`clockOffsetMs`): the `Date` header and every createdAt/updatedAt it assigns;
// - churn at any moment: before each answer, the `schedule`'s changes for that request number,
//   `beforeAnswer`'s, and `touchEvery`'s (products touched every X ms of the server's clock);
//   creations, touches, status changes, removals (many at once), restores (old createdAt);
// - `lyingTotal`: meta.total lower by k on one page number's (or one request number's) first answer(s);
// - `streamDuplicate`: a stream sends record N twice, the second in place of record N+1.
// Every change and every answer goes to `log` (adversarial-state.ts); adversarial-oracle.ts
// tells from it what a run must have delivered.
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CatalogShape, type ProductState, prng, productRecord } from './adversarial-catalog.js';
import { type Violation, compileFilter, compileSorting, sortProducts } from './adversarial-query.js';
import { AdversarialState, type ChangeBatch, type EventLog, type RequestEntry } from './adversarial-state.js';

export interface AnswerContext {
  /** Request number (0-based, over both endpoints, in arrival order). */
  n: number;
  endpoint: RequestEntry['endpoint'];
  body: Record<string, unknown>;
  page?: { no: number; size: number };
  /** Make changes here: they land before this request is answered. */
  state: AdversarialState;
}

export interface AdversarialApiOptions {
  seed: number;
  catalog: CatalogShape;
  /** The server's clock is the machine's plus this (ms; -5000: five seconds behind). */
  clockOffsetMs?: number;
  /** `stable`: ties in creation order (to compare against); default `random`, drawn per request. */
  tieOrder?: 'random' | 'stable';
  /** Changes made before request n is answered (n counts requests to both endpoints from 0). */
  schedule?: ReadonlyMap<number, ChangeBatch>;
  /** Changes chosen by what is asked (a page number, a filter); called after the schedule's. */
  beforeAnswer?: (ctx: AnswerContext) => void;
  /** `count` products touched every `ms` of the server's clock (applied before each answer). */
  touchEvery?: { ms: number; count: number };
  /** meta.total `by` lower than the truth on the first `times` (default 1) answers for page `pageNo`. */
  lyingTotal?: { pageNo?: number; request?: number; by: number; times?: number };
  /** The first `times` (default 1) streams send record `index` twice, the second at index + 1. */
  streamDuplicate?: { index: number; times?: number };
  /** Whether a restore sets updatedAt to now (default false: it comes back as it was). */
  restoreTouches?: boolean;
  /** Results a products query reaches and where meta.total is capped (spec §8: 10000). */
  resultWindow?: number;
}

export interface AdversarialApi {
  url: string;
  credentials: { apiKey: string; apiSecret: string };
  log: EventLog;
  state: AdversarialState;
  /** The server's clock, ms. */
  now(): number;
  /** Requests answered to one endpoint (or all). */
  requestCount(endpoint?: RequestEntry['endpoint']): number;
  close(): Promise<void>;
}

const PAGE_SIZES = [10, 50, 100, 250];
const CREDENTIALS = { apiKey: 'adversary-key', apiSecret: 'adversary-secret' };
/** At most this many `touchEvery` ticks are caught up at once (a server left idle for long). */
const MAX_TICKS = 1000;

export async function startAdversarialApi(options: AdversarialApiOptions): Promise<AdversarialApi> {
  const offset = options.clockOffsetMs ?? 0;
  const now = () => Date.now() + offset;
  const state = new AdversarialState(options.catalog, options.seed, now, options.restoreTouches);
  const handler = new Handler(options, state, now);
  const server = createServer((req, res) => {
    handler.handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, now, 500, errorBody(500, 'internal', String(error)));
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    credentials: { ...CREDENTIALS },
    log: state.log,
    state,
    now,
    requestCount: (endpoint) => state.log.requests.filter((r) => !endpoint || r.endpoint === endpoint).length,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

class Handler {
  #lastTick: number;
  #lies = 0;
  #duplicates = 0;

  constructor(
    private readonly o: AdversarialApiOptions,
    private readonly state: AdversarialState,
    private readonly now: () => number,
  ) {
    this.#lastTick = now();
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const endpoint =
      req.url === '/v4/products/query'
        ? 'products.query'
        : req.url === '/v4/products/stream'
          ? 'products.stream'
          : 'other';
    if (endpoint === 'other' || req.method !== 'POST')
      return send(res, this.now, 404, errorBody(404, 'not_found', `no ${req.method} ${req.url}`));
    if (req.headers.authorization !== basic())
      return send(res, this.now, 401, errorBody(401, 'unauthorized', 'Invalid API key or secret.'));
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return send(res, this.now, 400, errorBody(400, 'bad_request', 'The body is not JSON.'));
    }
    if (!body || typeof body !== 'object' || Array.isArray(body))
      return this.#refuse(res, endpoint, body, [{ path: '', message: 'must be an object' }]);
    // Everything from here to the answer is synchronous: the changes land between two answers.
    const n = this.state.log.requests.length;
    this.state.request = n;
    this.#churn(n, endpoint, body);
    if (endpoint === 'products.query') this.#query(res, n, body);
    else this.#stream(res, n, body);
    this.state.request = n + 1;
  }

  #churn(n: number, endpoint: RequestEntry['endpoint'], body: Record<string, unknown>): void {
    const every = this.o.touchEvery;
    if (every) {
      for (let ticks = 0; this.#lastTick + every.ms <= this.now() && ticks < MAX_TICKS; ticks++) {
        this.#lastTick += every.ms;
        this.state.touch(every.count);
      }
      if (this.#lastTick + every.ms <= this.now()) this.#lastTick = this.now();
    }
    const batch = this.o.schedule?.get(n);
    if (batch) this.state.apply(batch);
    const page = body.page as { no: number; size: number } | undefined;
    this.o.beforeAnswer?.({
      n,
      endpoint,
      body,
      ...(page && typeof page === 'object' ? { page } : {}),
      state: this.state,
    });
  }

  #select(body: Record<string, unknown>, v: Violation[], n: number, fallbackSorting?: unknown): ProductState[] {
    if (body.filter === undefined) v.push({ path: 'filter', message: 'is required' });
    const match = compileFilter(body.filter, 'filter', v);
    const sorter = compileSorting(body.sorting ?? fallbackSorting, v);
    if (v.length) return [];
    const ties = this.o.tieOrder === 'stable' ? undefined : prng((this.o.seed * 1_000_003) ^ (n * 2_654_435_761));
    return sortProducts(this.state.visible().filter(match), sorter, ties);
  }

  #query(res: ServerResponse, n: number, body: Record<string, unknown>): void {
    const v: Violation[] = [];
    const page = pageOf(body.page, v);
    const window = this.o.resultWindow ?? 10_000;
    if (page && page.no * page.size >= window)
      v.push({ path: 'page.no', message: `past the ${window} results a query reaches; use the stream endpoint` });
    const sorted = this.#select(body, v, n);
    if (v.length || !page) return this.#refuse(res, 'products.query', body, v);
    const offset = page.no * page.size;
    const results = sorted.slice(offset, Math.min(offset + page.size, window));
    let reported = Math.min(sorted.length, window);
    const lie = this.o.lyingTotal;
    let lied: string | undefined;
    const lying = lie && (lie.pageNo !== undefined ? page.no === lie.pageNo : n === lie.request);
    if (lie && lying && this.#lies < (lie.times ?? 1)) {
      this.#lies++;
      reported = Math.max(0, reported - lie.by);
      lied = `meta.total ${lie.by} lower`;
    }
    const meta = { total: reported, page: { no: page.no, offset, size: page.size } };
    this.#logAnswer({
      n,
      endpoint: 'products.query',
      body,
      status: 200,
      total: sorted.length,
      reportedTotal: reported,
      page: meta.page,
      ids: results.map((p) => p.id),
      ...(lied ? { lie: lied } : {}),
    });
    send(res, this.now, 200, { meta, results: results.map(productRecord) });
  }

  #stream(res: ServerResponse, n: number, body: Record<string, unknown>): void {
    const v: Violation[] = [];
    const sorted = this.#select(body, v, n, { id: 'ASC' });
    if (v.length) return this.#refuse(res, 'products.stream', body, v);
    const lines = sorted.slice();
    const dup = this.o.streamDuplicate;
    let lied: string | undefined;
    if (dup && dup.index + 1 < lines.length && this.#duplicates < (dup.times ?? 1)) {
      this.#duplicates++;
      lines[dup.index + 1] = lines[dup.index]!;
      lied = `record ${dup.index} sent again at index ${dup.index + 1}`;
    }
    this.#logAnswer({
      n,
      endpoint: 'products.stream',
      body,
      status: lines.length ? 200 : 204,
      total: sorted.length,
      reportedTotal: sorted.length,
      ids: lines.map((p) => p.id),
      ...(lied ? { lie: lied } : {}),
    });
    if (lines.length === 0) return send(res, this.now, 204);
    const text = lines
      .map((p, index) => `${JSON.stringify({ meta: { total: lines.length, index }, result: productRecord(p) })}\n`)
      .join('');
    res.sendDate = false;
    res.writeHead(200, { Date: new Date(this.now()).toUTCString(), 'Content-Type': 'application/x-ndjson' });
    res.end(text);
  }

  #refuse(res: ServerResponse, endpoint: RequestEntry['endpoint'], body: unknown, v: Violation[]): void {
    const violations = v.length ? v : [{ path: 'page', message: 'is required' }];
    this.#logAnswer({ n: this.state.log.requests.length, endpoint, body, status: 422, ids: [] });
    send(res, this.now, 422, {
      error: { status: 422, code: 'validation_failed', message: 'Invalid request body.', violations },
    });
  }

  #logAnswer(entry: Omit<RequestEntry, 'at'>): void {
    this.state.log.requests.push({ ...entry, at: this.now() });
  }
}

/** `page`: listed as required (spec §4.2); `size` one of 10, 50, 100, 250 (default 100). */
function pageOf(value: unknown, v: Violation[]): { no: number; size: number } | undefined {
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    v.push({ path: 'page', message: 'is required: {no, size}' });
    return undefined;
  }
  const { no, size = 100 } = value as { no?: unknown; size?: unknown };
  if (!Number.isSafeInteger(no) || (no as number) < 0) v.push({ path: 'page.no', message: 'must be an integer >= 0' });
  if (!PAGE_SIZES.includes(size as number))
    v.push({ path: 'page.size', message: `must be one of ${PAGE_SIZES.join(', ')}` });
  return v.length ? undefined : { no: no as number, size: size as number };
}

function basic(): string {
  return `Basic ${Buffer.from(`${CREDENTIALS.apiKey}:${CREDENTIALS.apiSecret}`).toString('base64')}`;
}

function errorBody(status: number, code: string, message: string) {
  return { error: { status, code, message } };
}

/** Every answer carries the server's own Date, never the machine's. */
function send(res: ServerResponse, now: () => number, status: number, body?: unknown): void {
  res.sendDate = false;
  const headers: Record<string, string> = { Date: new Date(now()).toUTCString() };
  if (body === undefined) {
    res.writeHead(status, headers);
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(text)),
  });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
