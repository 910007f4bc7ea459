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
// A catalog that changes while it is read (docs: reading a changing catalog): offset
// paging shifts when records leave the result before the offset, and a page fetched
// after such a shift starts past records that were never delivered. The sources
// make the result one that nothing can enter during the run (query-sources.ts:
// createdAt up to the second before the run, and updatedSince likewise where the
// filter or sorting reads a value that changes), so that `meta.total` can only drop
// and each drop bounds how far any record moved. Then, for two pages emitted one
// after the other, X ending at position x1 and Y starting at y0, no record present
// for the whole run lies between them as long as
//   y0 <= x1 - max(0, total(X) - total(Y))
// (if Y was fetched before X, its positions are the older, larger ones: no gap).
// When it does not hold, Y waits while the positions in between are fetched again
// as gap pages (the smallest page size that covers them with room for further
// drops during the request; aligned pages of 250 when none does), each checked the
// same way against the page before it; records already delivered are skipped by
// id. No page is thrown away and nothing restarts, so the read moves on as long as
// fewer records leave per request than the gap page leaves room for.
// A total that rises in a page asked for after the previous one arrived means a
// record entered, which the window rules out for every case but a deleted record
// restored during the run: the bound above no longer holds, and the source fails.
import type { CatalogClient, CatalogRecord, LazyPage, QueryEndpointName, RequestBody } from '../client/index.js';
import type { PageSize, QueryRequest } from '../catalog/index.js';
import { DataError } from '../errors.js';
import { compact } from '../client/request-summary.js';
import { setOrigin } from '../core/origin.js';
import { CatalogSource, type SourceRunOptions } from './source-stream.js';
import { FIXED_SORT_KEYS } from './read-window.js';

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
  /** Asked for in one request without `page` (endpoints that answer every result at once): one consistent read. */
  whole?: boolean;
}

/** Fetches page `no` of a segment body with `size` records per page (`size` Infinity: no `page`, every result). */
export type PageFetcher = (body: SourceBody, no: number, size: number) => Promise<LazyPage>;

/** Produces the segments of a source lazily; it may fetch (probes) through `fetchPage`. */
export type SegmentProducer = (fetchPage: PageFetcher) => AsyncIterable<Segment>;

export interface PagedQueryOptions extends SourceRunOptions {
  pageSize: number;
  /** Page requests in flight or buffered (at least 1). */
  concurrency: number;
  /** Drop records whose id was delivered already (code chunks over multi-valued fields). */
  dedupe?: boolean;
  /** Keeps a record the service sent; the others are counted, then left out (prefix matches of cipOrAcl7). */
  keep?: (record: Record<string, unknown>) => boolean;
}

/**
 * A segment is `opening` until its page 0 arrives (its total unknown, no other page planned), then `paging`
 * (pages planned up to its latest total), then `complete` once a page reaching its own total was emitted.
 */
type SegmentPhase = 'opening' | 'paging' | 'complete';

/** The source is `waiting` until the consumer first reads (no request before), then `reading`, then `finished`. */
type SourcePhase = 'waiting' | 'reading' | 'finished';

/** The job generator: `idle` (a job may be pulled), `pulling` one, or `exhausted` (every job was pulled). */
type JobsPhase = 'idle' | 'pulling' | 'exhausted';

interface SegmentState {
  segment: Segment;
  phase: SegmentPhase;
  /** The lowest total seen: regular pages are planned up to it. */
  total?: number;
  /** Next regular page number to ask for. */
  nextNo: number;
  /** The last emitted page: where it ended, the total it reported, and when it arrived (request clock). */
  end: number;
  endTotal: number;
  endArrived: number;
  /** Page 0's total: every later page was asked for after it arrived, so none can report more. */
  firstTotal: number;
  /** Gap pages asked for since the last emitted page that delivered a new record. */
  gapsWithoutProgress: number;
  /** Wakes the job generator when the plan changes (total known, more pages, done). */
  wake: () => void;
  changed: Promise<void>;
}

interface PageJob {
  state: SegmentState;
  no: number;
  /** Records per page of this request (regular pages: the source's page size; gap pages: as small as covers the gap). */
  size: number;
  /** Request clock when the request was sent and when its answer arrived (see #clock). */
  sent: number;
  arrived?: number;
  /** The page once fetched (records parsed when emitted). */
  page?: LazyPage;
}

/** The page being emitted: its records go out one by one while the stream's buffer has room. */
interface OpenPage {
  job: PageJob;
  page: LazyPage;
  /** Index of the next record to emit. */
  next: number;
  /** Records pushed (repeats and records delivered before are not). */
  pushed: number;
}

/** Ids of the last delivered records remembered for gap pages; a gap reaching further back fails. */
const RECENT_IDS = 5000;
/** Gap pages in a row without a new record before the source gives up (records leave faster than it reads). */
const MAX_GAPS_WITHOUT_PROGRESS = 50;
/** Positions a gap page reaches back beyond twice the deficit (room for a few removals on a quiet catalog). */
const GAP_MARGIN = 5;
/** Page sizes a gap page may use, smallest first (the API's). */
const GAP_PAGE_SIZES = [10, 50, 100, 250];

/**
 * The request for page `no` (of `size` records) of a segment; `size` Infinity asks for every result
 * without `page`. Bodies are built from validated options and the client validates each request
 * again, so the cast only names the endpoint.
 */
export function pageRequest<E extends QueryEndpointName>(body: SourceBody, no: number, size: number): QueryRequest<E> {
  if (size === Infinity) return { ...body } as QueryRequest<E>;
  // The body was checked against the endpoint's filters and sortings when the source was made (query-sources.ts).
  return { ...body, page: { no, size: size as PageSize } } as QueryRequest<E>;
}

export class PagedQuerySource extends CatalogSource {
  readonly #client: CatalogClient;
  readonly #pageSize: number;
  readonly #concurrency: number;
  readonly #jobs: AsyncGenerator<PageJob>;
  /** Jobs in emission order: in flight, or fetched and waiting to be emitted. */
  #queue: PageJob[] = [];
  #phase: SourcePhase = 'waiting';
  #jobsPhase: JobsPhase = 'idle';
  /** The stream's buffer has room: push()'s last answer, set again by each _read. */
  #bufferHasRoom = false;
  #delivered = 0;
  #open: OpenPage | undefined;
  /** Ids of the last RECENT_IDS delivered records (insertion order = delivery order). */
  readonly #recent = new Set<unknown>();
  #gapPages = 0;
  /**
   * Ticks at every request sent and every answer arrived: a page sent after another one arrived
   * saw a later catalog, the only order between pages the totals can be compared in.
   */
  #clock = 0;
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

  /** Pages asked for again because records left the result before the pages that follow them. */
  get rereads(): number {
    return this.#gapPages;
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
   * The regular page jobs in emission order; a job's request starts when the job is pulled. Pages
   * are planned up to the segment's lowest total; the next segment starts once this one is complete.
   * Gap pages are not planned here: #openPage puts them in front of the page that needs them.
   */
  async *#generateJobs(segments: AsyncIterable<Segment>): AsyncGenerator<PageJob> {
    for await (const segment of segments) {
      // Gap pages stay inside a segment; repeats across segments (code chunks) are isRepeat's to count.
      this.#recent.clear();
      const state = newSegmentState(segment);
      const size = segment.whole ? Infinity : this.#pageSize;
      const first = segment.firstPage ? Promise.resolve(segment.firstPage) : this.#fetch(segment.body, 0, size);
      state.nextNo = 1;
      yield this.#track({ state, no: 0, size, sent: segment.firstPage ? 0 : ++this.#clock }, first);
      while (state.phase !== 'complete') {
        const { total, nextNo: no } = state;
        if (state.phase === 'paging' && no * size < total!) {
          state.nextNo++;
          yield this.#track({ state, no, size, sent: ++this.#clock }, this.#fetch(segment.body, no, size));
        } else {
          await state.changed;
        }
      }
    }
  }

  #track(job: PageJob, request: Promise<LazyPage>): PageJob {
    request.then(
      (page) => {
        job.arrived = ++this.#clock;
        if (this.destroyed || job.state.phase === 'complete') return void page.release();
        job.page = page;
        if (job.state.phase === 'opening') {
          try {
            this.#openSegment(job.state, job, page);
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
  #openSegment(state: SegmentState, job: PageJob, page: LazyPage): void {
    const total = page.meta.total;
    if (total > page.length) this.#checkSorting(state.segment);
    state.total = total;
    state.firstTotal = total;
    // Page 0 is checked against a page that ended where it starts, with its own total and time.
    state.endTotal = total;
    state.endArrived = job.arrived!;
    state.phase = 'paging';
    this.addSegmentTotal(total, !!state.segment.last);
    state.wake();
  }

  /** Offset paging over a sort value that changes is refused unless the window is bounded (see above). */
  #checkSorting(segment: Segment): void {
    const sorting = segment.body.sorting as Record<string, unknown> | undefined;
    const key = sorting ? Object.keys(sorting)[0] : undefined;
    if (key === undefined || FIXED_SORT_KEYS.has(key) || hasBoundedUpdatedSince(segment.body.filter)) return;
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

  /** Emits the records of fetched pages, in emission order, while the buffer has room. */
  #drain(): void {
    if (this.destroyed || this.#phase === 'finished') return;
    try {
      while (this.#bufferHasRoom) {
        if (!this.#open) {
          const head = this.#queue[0];
          if (head && head.state.phase === 'complete') {
            // Planned before an earlier page reached the segment's end: past it, nothing is left to read.
            this.#queue.shift();
            head.page?.release();
            continue;
          }
          if (!head?.page) break;
          this.#open = this.#openPage(head);
          if (!this.#open) continue;
          this.#queue.shift();
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
   * Checks the page at the head of the queue against the page emitted before it (see the header);
   * undefined when gap pages were put in front of it, which are emitted first.
   */
  #openPage(job: PageJob): OpenPage | undefined {
    const { state, no, size } = job;
    const page = job.page!;
    const { label } = state.segment;
    const total = page.meta.total;
    const offset = size === Infinity ? 0 : no * size;
    const expected = Math.max(0, Math.min(size, total - offset));
    if (page.length !== expected) {
      throw this.#mismatch(
        label,
        `page ${no}${label ? ` of ${label}` : ''} reported total ${total} with ${page.length} records where ${expected} records were expected`,
      );
    }
    if (total > state.firstTotal || (total > state.endTotal && job.sent > state.endArrived)) {
      throw this.#mismatch(
        label,
        `records entered ${label ?? 'the result'} while it was read (total ${state.endTotal} -> ${total} between two pages asked for one after the other), ` +
          'so how far the others moved is not known (a deleted record restored during the run does this)',
      );
    }
    const left = Math.max(0, state.endTotal - total);
    // No position is below 0: a page from the start misses nothing, however many left.
    const need = Math.max(0, state.end - left);
    if (offset > need) {
      this.#askGap(state, need, offset, left);
      return undefined;
    }
    job.page = undefined;
    // Fewer records now: the regular plan stops earlier (pages asked for already come back short or empty).
    if (total < state.total!) state.total = total;
    return { job, page, next: 0, pushed: 0 };
  }

  /**
   * Positions [from, to) of the catalog as it is now hold records that moved back past the
   * page waiting at the head of the queue: ask for them again in front of it, with room for as
   * many more to leave while they are asked for.
   */
  #askGap(state: SegmentState, from: number, to: number, left: number): void {
    const { label } = state.segment;
    // As many positions again as have moved since the page emitted last: records keep leaving
    // while this request is on its way, and the deficit grows with every request until one passes.
    const start = Math.max(0, Math.min(from, state.end - 2 * left - GAP_MARGIN));
    if (state.end - start > RECENT_IDS / 2) {
      throw this.#mismatch(
        label,
        `${left} records left ${label ?? 'the result'} while it was read, more than can be read again safely`,
      );
    }
    if (++state.gapsWithoutProgress > MAX_GAPS_WITHOUT_PROGRESS) {
      throw this.#mismatch(
        label,
        `records kept leaving ${label ?? 'the result'} faster than it was read (${MAX_GAPS_WITHOUT_PROGRESS} pages asked for again without a new record)`,
      );
    }
    const pages = gapPages(start, to);
    this.#gapPages += pages.length;
    this.events.emit('info', {
      code: 'source.reread',
      message:
        `${this.endpoint}${label ? ` (${label})` : ''}: ${left} record(s) left the result before position ${to} while it was read; ` +
        `asking again for positions ${pages[0]!.no * pages[0]!.size}..${to - 1} and skipping the records already delivered`,
      page: pages[0]!.no,
      left,
    });
    const jobs = pages.map(({ no, size }) =>
      this.#track({ state, no, size, sent: ++this.#clock }, this.#fetch(state.segment.body, no, size)),
    );
    this.#queue.unshift(...jobs);
  }

  /** Pushes the page's next records until the buffer is full or the page is done; returns push()'s last answer. */
  #emitRecords(open: OpenPage): boolean {
    const { page, job } = open;
    const offset = job.size === Infinity ? 0 : job.no * job.size;
    const slice = job.state.segment.label;
    const pageNo = job.size === this.#pageSize || job.size === Infinity ? job.no : Math.floor(offset / this.#pageSize);
    let ok = true;
    while (ok && open.next < page.length) {
      const i = open.next++;
      const record = page.record(i) as CatalogRecord;
      if (this.#seenRecently(record) || this.isRepeat(record)) continue;
      setOrigin(record, { endpoint: this.endpoint, page: pageNo, index: offset + i, slice });
      if (page.invalidUtf8?.(i)) this.noteInvalidUtf8(record, `page ${pageNo}, index ${offset + i}`);
      open.pushed++;
      ok = this.push(record);
    }
    return ok;
  }

  /** Whether the record was delivered lately (a gap page or a shifted page); else it is remembered. */
  #seenRecently(record: { id?: unknown }): boolean {
    const id = record.id;
    if (id === undefined) return false;
    if (this.#recent.has(id)) return true;
    this.#recent.add(id);
    if (this.#recent.size > RECENT_IDS) this.#recent.delete(this.#recent.values().next().value);
    return false;
  }

  /** Every record of the page went out: count it, report it, move the frontier, and see whether the segment is complete. */
  #closePage(open: OpenPage): void {
    const { job, page, pushed } = open;
    const total = page.meta.total;
    page.release();
    const { state, no, size } = job;
    const { label } = state.segment;
    this.#delivered += pushed;
    if (pushed > 0) state.gapsWithoutProgress = 0;
    const regular = size === this.#pageSize || size === Infinity;
    if (regular || pushed > 0) {
      this.events.emit('page', {
        endpoint: this.endpoint,
        records: pushed,
        page: regular ? no : Math.floor((no * size) / this.#pageSize),
        ...(label ? { slice: label } : {}),
      });
    }
    const end = size === Infinity ? total : (no + 1) * size;
    state.end = end;
    state.endTotal = total;
    state.endArrived = job.arrived!;
    if (end >= total) {
      state.phase = 'complete';
      state.wake();
    } else if (state.nextNo * size >= state.total!) {
      // The plan ended short of this page's total (it was asked for before a lower total arrived): plan on.
      state.total = total;
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

/**
 * The pages that cover positions [from, to): one page of the smallest size that does (pages are
 * aligned to their size), else aligned pages of the largest size.
 */
export function gapPages(from: number, to: number): { no: number; size: number }[] {
  for (const size of GAP_PAGE_SIZES) {
    const no = Math.floor(from / size);
    if ((no + 1) * size >= to) return [{ no, size }];
  }
  const size = GAP_PAGE_SIZES[GAP_PAGE_SIZES.length - 1]!;
  const pages: { no: number; size: number }[] = [];
  for (let no = Math.floor(from / size); no * size < to; no++) pages.push({ no, size });
  return pages;
}

function newSegmentState(segment: Segment): SegmentState {
  const state = {
    segment,
    phase: 'opening',
    nextNo: 0,
    end: 0,
    endTotal: 0,
    endArrived: 0,
    firstTotal: 0,
    gapsWithoutProgress: 0,
  } as SegmentState;
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
