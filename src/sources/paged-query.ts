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
// (CatalogClient.queryLazy), so that a record lives only while it goes down the
// pipeline: records parsed ahead of their turn would survive into the old
// generation, and a page held as one string is freed only by a full GC.
//
// Page 0 of a segment is asked for alone: it tells the segment's total, and so
// how many pages follow (no request for an empty page past the end, which
// would waste budget). A segment may come with page 0 already fetched (the
// probe of a createdAt window), which is then reused rather than asked again.
//
// Data that changes while pages are read: offset paging shifts when records
// leave or enter the result before the offset (a record would be skipped or
// repeated without a sign). The reader keeps what it needs to see and repair it:
// - Every page reports the segment's total. A lower total than the reference
//   (the total the pages read so far were consistent with) means records left
//   the result: the reader goes back as many positions as records left, asks
//   for the pages from there again (discarding pages fetched under the old
//   state) and skips the records it already delivered (the ids of the last
//   delivered records are kept). A higher total means records entered: later
//   pages may repeat delivered records, which are skipped the same way.
// - This is exact when the result can only shrink during the run, which is
//   what incremental runs make sure of: their window is bounded
//   (`updatedSince: {from, until}`, until = the second before the run
//   started), so a record changed during the run leaves the window (it is the
//   next run's) and none can enter. The sorting must also keep the records'
//   order: `id` and `createdAt` never change; a sorting by a value that changes
//   (touchedAt, status, name...) is safe only inside such a bounded window, and
//   is refused for a query of several pages without one (source.unstable_sorting).
// - A page that contradicts its own total, or more re-reads in a row than the
//   reader can do safely, fail with a DataError asking to run again.
import type { CatalogClient, CatalogRecord, LazyPage, QueryEndpointName, RequestBody } from '../client/index.js';
import type { PageSize, QueryRequest } from '../catalog/index.js';
import { DataError } from '../errors.js';
import { compact } from '../client/request-summary.js';
import { setOrigin } from '../core/origin.js';
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

/**
 * A segment is `opening` until its page 0 arrives (its total unknown, no other page planned), then `paging`
 * (pages planned up to its reference total), then `complete` once its last page was emitted.
 */
type SegmentPhase = 'opening' | 'paging' | 'complete';

/** The source is `waiting` until the consumer first reads (no request before), then `reading`, then `finished`. */
type SourcePhase = 'waiting' | 'reading' | 'finished';

/** The job generator: `idle` (a job may be pulled), `pulling` one, or `exhausted` (every job was pulled). */
type JobsPhase = 'idle' | 'pulling' | 'exhausted';

interface SegmentState {
  segment: Segment;
  phase: SegmentPhase;
  /** Reference total: the pages accepted so far agree with it (set when page 0 arrives). */
  total?: number;
  /** Next page number to ask for. */
  nextNo: number;
  /** Bumped by a re-read: jobs of an older epoch are dropped unseen. */
  epoch: number;
  /** Re-reads since a page last delivered a new record. */
  rereadsWithoutProgress: number;
  /** Wakes the job generator when the plan changes (total known, re-read, more pages, done). */
  wake: () => void;
  changed: Promise<void>;
}

interface PageJob {
  state: SegmentState;
  no: number;
  epoch: number;
  /** The page once fetched (records parsed when emitted). */
  page?: LazyPage;
}

/** The page being emitted: its records go out one by one while the stream's buffer has room. */
interface OpenPage {
  job: PageJob;
  page: LazyPage;
  /** Index of the next record to emit. */
  next: number;
  /** Records pushed (repeats and records delivered before a re-read are not). */
  pushed: number;
}

/** Ids of the last delivered records remembered for re-reads; a re-read reaching further back fails. */
const RECENT_IDS = 5000;
/** Re-reads in a row without a new record before the source gives up. */
const MAX_REREADS_WITHOUT_PROGRESS = 20;
/** Sort keys a record never changes: offset paging over them only shifts when records leave or enter. */
const STABLE_SORT_KEYS = new Set(['id', 'createdAt']);

/**
 * The request for page `no` (of `size` records) of a segment. Bodies are built from validated
 * options and the client validates each request again, so the cast only names the endpoint.
 */
export function pageRequest<E extends QueryEndpointName>(body: SourceBody, no: number, size: number): QueryRequest<E> {
  // The body was checked against the endpoint's filters and sortings when the source was made (query-sources.ts).
  return { ...body, page: { no, size: size as PageSize } } as QueryRequest<E>;
}

export class PagedQuerySource extends CatalogSource {
  readonly #client: CatalogClient;
  readonly #pageSize: number;
  readonly #concurrency: number;
  readonly #jobs: AsyncGenerator<PageJob>;
  /** Jobs in page order: in flight, or fetched and waiting to be emitted. */
  #queue: PageJob[] = [];
  #phase: SourcePhase = 'waiting';
  #jobsPhase: JobsPhase = 'idle';
  /** The stream's buffer has room: push()'s last answer, set again by each _read. */
  #bufferHasRoom = false;
  #delivered = 0;
  #open: OpenPage | undefined;
  /** Ids of the last RECENT_IDS delivered records (insertion order = delivery order). */
  readonly #recent = new Set<unknown>();
  #rereads = 0;
  /** `endpoint`, with its type: the paged endpoint this source reads. */
  readonly #endpoint: QueryEndpointName;

  constructor(
    client: CatalogClient,
    endpoint: QueryEndpointName,
    segments: SegmentProducer,
    options: PagedQueryOptions,
  ) {
    super(endpoint, { ...options, events: options.events ?? client.events });
    this.#endpoint = endpoint;
    this.#client = client;
    this.#pageSize = options.pageSize;
    this.#concurrency = Math.max(1, options.concurrency);
    this.#jobs = this.#generateJobs(segments((body, no, size) => this.#fetch(body, no, size)));
  }

  /** Times pages were asked for again because records left the result while it was read. */
  get rereads(): number {
    return this.#rereads;
  }

  override _read(): void {
    this.#bufferHasRoom = true;
    if (this.#phase === 'waiting') this.#phase = 'reading';
    this.#drain();
  }

  protected override onDestroy(): void {
    // Ends the generator at its current await; its errors are no longer of interest.
    void this.#jobs.return(undefined).catch(() => {});
    for (const job of this.#queue) job.page?.release();
    this.#queue = [];
  }

  /** A page kept as bytes, its records parsed when emitted (see CatalogClient.queryLazy). */
  #fetch(body: SourceBody, no: number, size: number): Promise<LazyPage> {
    return this.#client.queryLazy(this.#endpoint, pageRequest(body, no, size), {
      signal: this.signal,
      events: this.events,
    });
  }

  /**
   * The page jobs in emission order; a job's request starts when the job is pulled. The plan
   * of a segment follows its state: pages up to its reference total, again from an earlier
   * page after a re-read; the next segment starts once this one is complete.
   */
  async *#generateJobs(segments: AsyncIterable<Segment>): AsyncGenerator<PageJob> {
    for await (const segment of segments) {
      // Re-reads stay inside a segment; repeats across segments (code chunks) are isRepeat's to count.
      this.#recent.clear();
      const state = newSegmentState(segment);
      const first = segment.firstPage
        ? Promise.resolve(segment.firstPage)
        : this.#fetch(segment.body, 0, this.#pageSize);
      state.nextNo = 1;
      yield this.#track({ state, no: 0, epoch: 0 }, first);
      while (state.phase !== 'complete') {
        const { total, nextNo: no } = state;
        if (state.phase === 'paging' && no * this.#pageSize < total!) {
          state.nextNo++;
          yield this.#track({ state, no, epoch: state.epoch }, this.#fetch(segment.body, no, this.#pageSize));
        } else {
          await state.changed;
        }
      }
    }
  }

  #track(job: PageJob, request: Promise<LazyPage>): PageJob {
    request.then(
      (page) => {
        if (this.destroyed || job.epoch !== job.state.epoch) return void page.release();
        job.page = page;
        if (job.state.phase === 'opening') {
          try {
            this.#openSegment(job.state, page);
          } catch (err) {
            this.destroy(err as Error);
            return;
          }
        }
        this.#drain();
      },
      (err: unknown) => this.destroy(err as Error),
    );
    return job;
  }

  /** Page 0 arrived: the segment's total is known, and so maybe the source's. */
  #openSegment(state: SegmentState, page: LazyPage): void {
    const total = page.meta.total;
    if (total > this.#pageSize) this.#checkSorting(state.segment);
    state.total = total;
    state.phase = 'paging';
    this.addSegmentTotal(total, !!state.segment.last);
    state.wake();
  }

  /** Offset paging over a sort value that changes is refused unless the window is bounded (see above). */
  #checkSorting(segment: Segment): void {
    const sorting = segment.body.sorting as Record<string, unknown> | undefined;
    const key = sorting ? Object.keys(sorting)[0] : undefined;
    if (key === undefined || STABLE_SORT_KEYS.has(key) || hasBoundedUpdatedSince(segment.body.filter)) return;
    throw new DataError(
      `${this.endpoint}: sorting ${compact(sorting)} orders by a value that changes while the pages are read ` +
        `(a record updated during the extract moves to another page and would be skipped or repeated), and this query has more than one page` +
        `${segment.label ? ` (${segment.label})` : ''}; sort by id or createdAt, or give the pipeline a state: (its runs read a bounded ` +
        `updatedSince window, in which any sorting is safe), or use a stream source`,
      { code: 'source.unstable_sorting' },
    );
  }

  /** Pulls more jobs while the buffer wants data and the window has room. */
  #pump(): void {
    if (
      this.#jobsPhase !== 'idle' ||
      this.#phase !== 'reading' ||
      this.destroyed ||
      this.#queue.length >= this.#concurrency
    )
      return;
    this.#jobsPhase = 'pulling';
    this.#jobs.next().then(
      (r) => {
        this.#jobsPhase = r.done ? 'exhausted' : 'idle';
        if (this.destroyed) return;
        if (!r.done) this.#queue.push(r.value);
        this.#drain();
      },
      (err: unknown) => {
        this.#jobsPhase = 'idle';
        this.destroy(err as Error);
      },
    );
  }

  /** Emits the records of fetched pages, in page order, while the buffer has room. */
  #drain(): void {
    if (this.destroyed || this.#phase === 'finished') return;
    try {
      while (this.#bufferHasRoom) {
        if (!this.#open) {
          const head = this.#queue[0];
          if (head && head.epoch !== head.state.epoch) {
            // Planned before a re-read (it can reach the queue after the re-read cleared it): its page is not wanted.
            this.#queue.shift();
            head.page?.release();
            continue;
          }
          if (!head?.page) break;
          this.#queue.shift();
          this.#open = this.#openPage(head);
          if (!this.#open) continue;
        }
        this.#bufferHasRoom = this.#emitRecords(this.#open);
        if (this.#open.next >= this.#open.page.length) {
          this.#closePage(this.#open);
          this.#open = undefined;
        }
      }
    } catch (err) {
      this.destroy(err as Error);
      return;
    }
    if (this.#jobsPhase === 'exhausted' && this.#queue.length === 0 && !this.#open) {
      this.#finish();
      return;
    }
    this.#pump();
  }

  /**
   * Checks a page against its segment before any of its records goes out; undefined when the
   * page is not to be emitted (fetched under an older state, or it showed that records left).
   */
  #openPage(job: PageJob): OpenPage | undefined {
    const { state, no } = job;
    const page = job.page!;
    job.page = undefined;
    if (job.epoch !== state.epoch) {
      page.release();
      return undefined;
    }
    const { label } = state.segment;
    const total = page.meta.total;
    const expected = Math.max(0, Math.min(this.#pageSize, total - no * this.#pageSize));
    if (page.length !== expected) {
      page.release();
      throw this.#mismatch(
        label,
        `page ${no}${label ? ` of ${label}` : ''} reported total ${total} with ${page.length} records where ${expected} records were expected`,
      );
    }
    const reference = state.total!;
    if (total < reference) {
      page.release();
      this.#reread(state, no, reference, total);
      return undefined;
    }
    if (total > reference) {
      // Records entered: later pages may repeat delivered ones (skipped), and there are more pages.
      state.total = total;
      state.wake();
    }
    return { job, page, next: 0, pushed: 0 };
  }

  /**
   * Page `no` reports `total`, fewer than the `reference` the pages before it agree with:
   * records left the result, so the undelivered records moved up to that many positions
   * forward. Ask again from the page holding the earliest position they can be at.
   */
  #reread(state: SegmentState, no: number, reference: number, total: number): void {
    const { label } = state.segment;
    const left = reference - total;
    const from = Math.max(0, no * this.#pageSize - left);
    const restartNo = Math.floor(from / this.#pageSize);
    const revisited = no * this.#pageSize - restartNo * this.#pageSize;
    if (revisited > RECENT_IDS) {
      throw this.#mismatch(
        label,
        `${left} records left ${label ?? 'the result'} while it was read, more than can be re-read safely`,
      );
    }
    if (++state.rereadsWithoutProgress > MAX_REREADS_WITHOUT_PROGRESS) {
      throw this.#mismatch(
        label,
        `records kept leaving ${label ?? 'the result'} while it was read (${MAX_REREADS_WITHOUT_PROGRESS} re-reads in a row without a new record)`,
      );
    }
    this.#rereads++;
    for (const job of this.#queue) if (job.state === state) job.page?.release();
    this.#queue = this.#queue.filter((job) => job.state !== state);
    state.epoch++;
    state.total = total;
    state.nextNo = restartNo;
    this.events.emit('info', {
      code: 'source.reread',
      message:
        `${this.endpoint}${label ? ` (${label})` : ''}: ${left} record(s) left the result while it was read (total ${reference} -> ${total}); ` +
        `asking again from page ${restartNo} and skipping the records already delivered`,
      page: restartNo,
      left,
    });
    if (total === 0) state.phase = 'complete';
    state.wake();
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
      if (this.#seenRecently(record) || this.isRepeat(record)) continue;
      setOrigin(record, { endpoint: this.endpoint, page: job.no, index: offset + i, slice });
      open.pushed++;
      ok = this.push(record);
    }
    return ok;
  }

  /** Whether the record was delivered lately (a re-read or a shifted page); else it is remembered. */
  #seenRecently(record: { id?: unknown }): boolean {
    const id = record.id;
    if (id === undefined) return false;
    if (this.#recent.has(id)) return true;
    this.#recent.add(id);
    if (this.#recent.size > RECENT_IDS) this.#recent.delete(this.#recent.values().next().value);
    return false;
  }

  /** Every record of the page went out: count it, report it, and see whether the segment is complete. */
  #closePage(open: OpenPage): void {
    const { job, page, pushed } = open;
    page.release();
    const { state, no } = job;
    const { label } = state.segment;
    this.#delivered += pushed;
    if (pushed > 0) state.rereadsWithoutProgress = 0;
    this.events.emit('page', {
      endpoint: this.endpoint,
      records: pushed,
      page: no,
      ...(label ? { slice: label } : {}),
    });
    if ((no + 1) * this.#pageSize >= state.total!) {
      state.phase = 'complete';
      state.wake();
    }
  }

  #finish(): void {
    this.#phase = 'finished';
    this.finish(this.#delivered);
  }

  /** `source.window_mismatch` for a slice (window or chunk), `source.total_mismatch` for a whole query. */
  #mismatch(label: string | undefined, what: string): DataError {
    return new DataError(`${this.endpoint}: ${what}: the data changed during the extract; run it again`, {
      code: label ? 'source.window_mismatch' : 'source.total_mismatch',
    });
  }
}

function newSegmentState(segment: Segment): SegmentState {
  const state = { segment, phase: 'opening', nextNo: 0, epoch: 0, rereadsWithoutProgress: 0 } as SegmentState;
  const arm = () => {
    state.changed = new Promise<void>((resolve) => {
      state.wake = () => {
        arm();
        resolve();
      };
    });
  };
  arm();
  return state;
}

/** Whether the filter (or a member of a top-level `and`) bounds updatedSince with `until`. */
export function hasBoundedUpdatedSince(filter: unknown): boolean {
  if (!filter || typeof filter !== 'object') return false;
  const f = filter as Record<string, unknown>;
  const since = f.updatedSince as { until?: unknown } | undefined;
  if (since && typeof since === 'object' && since.until !== undefined) return true;
  return Array.isArray(f.and) && f.and.some(hasBoundedUpdatedSince);
}

/** One segment for the whole query (the usual case). */
export function singleSegment(body: SourceBody): SegmentProducer {
  return async function* () {
    yield { body, last: true };
  };
}
