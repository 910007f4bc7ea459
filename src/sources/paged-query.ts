// The generic paged reader behind every `*.query` source: it pages through one
// or more segments (the whole query, code-list chunks, createdAt windows) and
// emits their records in order.
//
// Backpressure: pages are requested from `_read` only, i.e. when the stream's
// buffer has room. At most `concurrency` pages are in flight or waiting to be
// emitted, so a slow consumer holds at most `concurrency` pages here plus what
// the Readable buffers. Several pages in flight keep the request budget busy
// while one response is slow; the rate limiter in the client decides when each
// actually starts. Results are emitted strictly in page order.
//
// Pages waiting for their turn are kept as JSON text and parsed when emitted:
// parsed early, their records outlive young-generation GC and get promoted,
// which doubled GC time in the benchmark; text is one object per page.
//
// Page 0 of a segment is asked for alone: it tells the segment's total, and so
// how many pages follow (no request for an empty page past the end, which
// would waste budget). A segment may come with page 0 already fetched (the
// probe of a createdAt window), which is then reused rather than asked again.
//
// Consistency: every page must report the segment's total and hold exactly the
// records its position promises, and a segment must deliver exactly its total.
// Data that changes while pages are read (a product added or removed under an
// `{id: ASC}` sorting) shifts later pages: a record would be skipped or repeated
// without a sign. These checks turn that into a DataError asking to re-run.
import type { CatalogClient, CatalogRecord, QueryEndpointName, QueryPage, RequestBody } from '../client/index.js';
import type { QueryRequest } from '../catalog/index.js';
import { DataError } from '../errors.js';
import { setOrigin } from './origin.js';
import { CatalogSource, type SourceRunOptions } from './source-stream.js';

/** A request body without `page`: what a segment sends. */
export type SourceBody = Omit<RequestBody, 'page'>;

export interface Segment {
  /** The request body without `page`. */
  body: SourceBody;
  /** Names the chunk or window in origins, events and errors (`createdAt 1420070400..1451606399`). */
  label?: string;
  /** Page 0, when it was fetched already (a window's probe). */
  firstPage?: QueryPage;
  /** True when no segment follows (lets the source announce its exact total early). */
  last?: boolean;
}

/** Fetches page `no` of a segment body with `size` records per page. */
export type PageFetcher = (body: SourceBody, no: number, size: number) => Promise<QueryPage>;

/** Produces the segments of a source lazily; it may fetch (probes) through `fetchPage`. */
export type SegmentProducer = (fetchPage: PageFetcher) => AsyncIterable<Segment>;

export interface PagedQueryOptions extends SourceRunOptions {
  pageSize: number;
  /** Page requests in flight or buffered (at least 1). */
  concurrency: number;
  /** Drop records whose id was delivered already (code chunks over multi-valued fields). */
  dedupe?: boolean;
}

interface SegmentState {
  segment: Segment;
  total?: number;
  delivered: number;
}

interface PageJob {
  state: SegmentState;
  no: number;
  /** The page once fetched: parsed (page 0, a probe) or still JSON text, parsed when emitted. */
  page?: QueryPage | string;
}

export class PagedQuerySource extends CatalogSource {
  readonly #client: CatalogClient;
  readonly #pageSize: number;
  readonly #concurrency: number;
  readonly #jobs: AsyncGenerator<PageJob>;
  /** Jobs in page order: in flight, or fetched and waiting to be emitted. */
  readonly #queue: PageJob[] = [];
  #pulling = false;
  #exhausted = false;
  #wantMore = false;
  #finished = false;
  #delivered = 0;

  constructor(client: CatalogClient, endpoint: QueryEndpointName, segments: SegmentProducer, options: PagedQueryOptions) {
    super(endpoint, { ...options, events: options.events ?? client.events });
    this.#client = client;
    this.#pageSize = options.pageSize;
    this.#concurrency = Math.max(1, options.concurrency);
    this.#jobs = this.#generateJobs(segments((body, no, size) => this.#fetch(body, no, size)));
  }

  override _read(): void {
    this.#wantMore = true;
    this.#drain();
  }

  protected override onDestroy(): void {
    // Ends the generator at its current await; its errors are no longer of interest.
    void this.#jobs.return(undefined).catch(() => {});
  }

  #fetch(body: SourceBody, no: number, size: number): Promise<QueryPage> {
    // Bodies are built from validated options; the client validates each request again.
    return this.#client.query(this.endpoint as 'products.query', { ...body, page: { no, size: size as 250 } } as QueryRequest<'products.query'>, { signal: this.signal });
  }

  /** A page as JSON text: pages waiting for their turn stay one string each (see CatalogClient.queryText). */
  #fetchText(body: SourceBody, no: number): Promise<string> {
    return this.#client.queryText(this.endpoint as 'products.query', { ...body, page: { no, size: this.#pageSize as 250 } } as QueryRequest<'products.query'>, {
      signal: this.signal,
    });
  }

  /** The page jobs in emission order; a job's request starts when the job is pulled. */
  async *#generateJobs(segments: AsyncIterable<Segment>): AsyncGenerator<PageJob> {
    for await (const segment of segments) {
      const state: SegmentState = { segment, delivered: 0 };
      // Page 0 is parsed on arrival (its total decides what follows).
      const first = segment.firstPage ? Promise.resolve(segment.firstPage) : this.#fetch(segment.body, 0, this.#pageSize);
      yield this.#track({ state, no: 0 }, first);
      // #track's handler has run by now (registered first): state.total is set.
      await first;
      const pages = Math.ceil(state.total! / this.#pageSize);
      for (let no = 1; no < pages; no++) yield this.#track({ state, no }, this.#fetchText(segment.body, no));
    }
  }

  #track(job: PageJob, request: Promise<QueryPage | string>): PageJob {
    request.then(
      (page) => {
        job.page = page;
        if (typeof page !== 'string') this.#openSegment(job.state, page.meta.total);
        this.#drain();
      },
      (err: unknown) => this.destroy(err as Error),
    );
    return job;
  }

  /** Page 0 arrived: the segment's total is known, and so maybe the source's. */
  #openSegment(state: SegmentState, total: number): void {
    state.total = total;
    this.addSegmentTotal(total, !!state.segment.last);
  }

  /** Pulls more jobs while the buffer wants data and the window has room. */
  #pump(): void {
    if (this.#pulling || this.#exhausted || this.destroyed || !this.#wantMore || this.#queue.length >= this.#concurrency) return;
    this.#pulling = true;
    this.#jobs.next().then(
      (r) => {
        this.#pulling = false;
        if (this.destroyed) return;
        if (r.done) this.#exhausted = true;
        else this.#queue.push(r.value);
        this.#drain();
      },
      (err: unknown) => {
        this.#pulling = false;
        this.destroy(err as Error);
      },
    );
  }

  /** Emits fetched pages at the head of the queue, in order, while the buffer has room. */
  #drain(): void {
    if (this.destroyed || this.#finished) return;
    while (this.#wantMore && this.#queue[0]?.page) {
      const job = this.#queue.shift()!;
      try {
        this.#wantMore = this.#emitPage(job);
      } catch (err) {
        this.destroy(err as Error);
        return;
      }
    }
    if (this.#exhausted && this.#queue.length === 0 && !this.#pulling) {
      this.#finish();
      return;
    }
    this.#pump();
  }

  #emitPage(job: PageJob): boolean {
    const { state, no } = job;
    const page = typeof job.page === 'string' ? this.#client.parsePage(this.endpoint as QueryEndpointName, state.segment.body, job.page) : job.page!;
    job.page = undefined;
    const { label } = state.segment;
    const total = state.total ?? page.meta.total;
    const offset = no * this.#pageSize;
    const expected = Math.max(0, Math.min(this.#pageSize, total - offset));
    if (page.meta.total !== total || page.results.length !== expected) {
      throw this.#mismatch(
        label,
        `page ${no}${label ? ` of ${label}` : ''} reported total ${page.meta.total} with ${page.results.length} records where total ${total} with ${expected} records was expected`,
      );
    }
    let ok = true;
    let pushed = 0;
    const results = page.results as CatalogRecord[];
    for (let i = 0; i < results.length; i++) {
      const record = results[i]!;
      if (this.isRepeat(record)) continue;
      setOrigin(record, { endpoint: this.endpoint, page: no, index: offset + i, ...(label ? { slice: label } : {}) });
      pushed++;
      ok = this.push(record);
    }
    state.delivered += results.length;
    this.#delivered += pushed;
    this.events.emit('page', { endpoint: this.endpoint, records: pushed, page: no, ...(label ? { slice: label } : {}) });
    if (state.delivered >= total && state.delivered !== total) throw this.#mismatch(label, `${label ?? 'the query'} delivered ${state.delivered} records where its total was ${total}`);
    return ok;
  }

  #finish(): void {
    this.#finished = true;
    this.finish(this.#delivered);
  }

  /** `source.window_mismatch` for a slice (window or chunk), `source.total_mismatch` for a whole query. */
  #mismatch(label: string | undefined, what: string): DataError {
    return new DataError(`${this.endpoint}: ${what}: the data changed during the extract; run it again`, {
      code: label ? 'source.window_mismatch' : 'source.total_mismatch',
    });
  }
}

/** One segment for the whole query (the usual case). */
export function singleSegment(body: SourceBody): SegmentProducer {
  return async function* () {
    yield { body, last: true };
  };
}

