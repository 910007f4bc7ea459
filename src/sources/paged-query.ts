// The generic paged reader behind every `*.query` source: it pages through one
// or more segments (the whole query, code-list chunks, createdAt windows) and
// emits their records in order.
//
// Backpressure: records are parsed and pushed only while the stream's buffer
// has room (`_read`), and pages are requested once the consumer has started
// reading, to keep `concurrency` pages in flight or waiting behind the page
// being emitted; so a slow consumer holds at most `concurrency` + 1 pages here
// (as bytes) plus what the Readable buffers. Several pages in flight keep the request budget busy
// while one response is slow; the rate limiter in the client decides when each
// actually starts. Results are emitted strictly in page order.
//
// Pages waiting for their turn are kept as bytes (outside the JS heap) and
// their records are parsed one at a time, as the stream's buffer takes them
// (CatalogClient.queryLazy): parsed a page at a time, 250 records waited for
// their turn long enough to be promoted to the old generation, and the page's
// text was a large string that only a full GC frees; together they set the
// process's peak RSS in the benchmark. A record now lives only while it goes
// down the pipeline.
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
import type { CatalogClient, CatalogRecord, LazyPage, QueryEndpointName, RequestBody } from '../client/index.js';
import type { PageSize, QueryRequest } from '../catalog/index.js';
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
  firstPage?: LazyPage;
  /** True when no segment follows (lets the source announce its exact total early). */
  last?: boolean;
}

/** Fetches page `no` of a segment body with `size` records per page. */
export type PageFetcher = (body: SourceBody, no: number, size: number) => Promise<LazyPage>;

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
  /** The page once fetched: parsed (page 0, a probe) or lazy (records parsed when emitted). */
  page?: LazyPage;
}

/** The page being emitted: its records go out one by one while the stream's buffer has room. */
interface OpenPage {
  job: PageJob;
  page: LazyPage;
  /** Index of the next record to emit. */
  next: number;
  /** Records pushed (repeats across code chunks are not). */
  pushed: number;
}

/**
 * The request for page `no` (of `size` records) of a segment. Bodies are built from validated
 * options and the client validates each request again, so the cast only names the endpoint.
 */
export function pageRequest(body: SourceBody, no: number, size: number): QueryRequest<'products.query'> {
  return { ...body, page: { no, size: size as PageSize } } as QueryRequest<'products.query'>;
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
  /** The consumer has asked for data (requests start only then). */
  #reading = false;
  #finished = false;
  #delivered = 0;
  #open: OpenPage | undefined;

  constructor(client: CatalogClient, endpoint: QueryEndpointName, segments: SegmentProducer, options: PagedQueryOptions) {
    super(endpoint, { ...options, events: options.events ?? client.events });
    this.#client = client;
    this.#pageSize = options.pageSize;
    this.#concurrency = Math.max(1, options.concurrency);
    this.#jobs = this.#generateJobs(segments((body, no, size) => this.#fetch(body, no, size)));
  }

  override _read(): void {
    this.#wantMore = true;
    this.#reading = true;
    this.#drain();
  }

  protected override onDestroy(): void {
    // Ends the generator at its current await; its errors are no longer of interest.
    void this.#jobs.return(undefined).catch(() => {});
  }

  /** A page kept as bytes, its records parsed when emitted (see CatalogClient.queryLazy). */
  #fetch(body: SourceBody, no: number, size: number): Promise<LazyPage> {
    return this.#client.queryLazy(this.endpoint as 'products.query', pageRequest(body, no, size), { signal: this.signal, events: this.events });
  }

  /** The page jobs in emission order; a job's request starts when the job is pulled. */
  async *#generateJobs(segments: AsyncIterable<Segment>): AsyncGenerator<PageJob> {
    for await (const segment of segments) {
      const state: SegmentState = { segment, delivered: 0 };
      // Page 0's total decides what follows.
      const first = segment.firstPage ? Promise.resolve(segment.firstPage) : this.#fetch(segment.body, 0, this.#pageSize);
      yield this.#track({ state, no: 0 }, first);
      const pages = Math.ceil((await first).meta.total / this.#pageSize);
      for (let no = 1; no < pages; no++) yield this.#track({ state, no }, this.#fetch(segment.body, no, this.#pageSize));
    }
  }

  #track(job: PageJob, request: Promise<LazyPage>): PageJob {
    request.then(
      (page) => {
        job.page = page;
        if (job.no === 0) this.#openSegment(job.state, page.meta.total);
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
    if (this.#pulling || this.#exhausted || this.destroyed || !this.#reading || this.#queue.length >= this.#concurrency) return;
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

  /** Emits the records of fetched pages, in page order, while the buffer has room. */
  #drain(): void {
    if (this.destroyed || this.#finished) return;
    try {
      while (this.#wantMore) {
        if (!this.#open) {
          const head = this.#queue[0];
          if (!head?.page) break;
          this.#queue.shift();
          this.#open = this.#openPage(head);
        }
        this.#wantMore = this.#emitRecords(this.#open);
        if (this.#open.next >= this.#open.page.length) {
          this.#closePage(this.#open);
          this.#open = undefined;
        }
      }
    } catch (err) {
      this.destroy(err as Error);
      return;
    }
    if (this.#exhausted && this.#queue.length === 0 && !this.#pulling && !this.#open) {
      this.#finish();
      return;
    }
    this.#pump();
  }

  /** Checks a page against its segment before any of its records goes out. */
  #openPage(job: PageJob): OpenPage {
    const { state, no } = job;
    const page = job.page!;
    job.page = undefined;
    const { label } = state.segment;
    const total = state.total ?? page.meta.total;
    const expected = Math.max(0, Math.min(this.#pageSize, total - no * this.#pageSize));
    if (page.meta.total !== total || page.length !== expected) {
      throw this.#mismatch(
        label,
        `page ${no}${label ? ` of ${label}` : ''} reported total ${page.meta.total} with ${page.length} records where total ${total} with ${expected} records was expected`,
      );
    }
    return { job, page, next: 0, pushed: 0 };
  }

  /** Pushes the page's next records until the buffer is full or the page is done; returns push()'s last answer. */
  #emitRecords(open: OpenPage): boolean {
    const { page, job } = open;
    const offset = job.no * this.#pageSize;
    const slice = job.state.segment.label;
    let ok = true;
    while (ok && open.next < page.length) {
      const i = open.next++;
      const record = page.record(i) as CatalogRecord;
      if (this.isRepeat(record)) continue;
      setOrigin(record, { endpoint: this.endpoint, page: job.no, index: offset + i, slice });
      open.pushed++;
      ok = this.push(record);
    }
    return ok;
  }

  /** Every record of the page went out: count it, report it, check the segment's total. */
  #closePage(open: OpenPage): void {
    const { job, page, pushed } = open;
    page.release();
    const { state, no } = job;
    const { label } = state.segment;
    const total = state.total ?? page.meta.total;
    state.delivered += page.length;
    this.#delivered += pushed;
    this.events.emit('page', { endpoint: this.endpoint, records: pushed, page: no, ...(label ? { slice: label } : {}) });
    if (state.delivered >= total && state.delivered !== total) throw this.#mismatch(label, `${label ?? 'the query'} delivered ${state.delivered} records where its total was ${total}`);
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

