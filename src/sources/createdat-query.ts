// products.query and media.query, read so that every answer verifies itself (docs:
// reading a changing catalog). Offsets shift when records leave or enter, and the service
// promises no order among ties: a page asked for by number is an answer about a catalog that
// may have moved. So nothing here asks for a page past 0. Each request is page 0 of the
// createdAt range still to read (createdat-lane.ts), one consistent answer, checked in itself:
// its records sorted and inside the range asked for, and its length what its own total allows.
//
// Lanes: a run that keeps `concurrency` requests going splits the range after the first page
// into lanes, sized by the density that page showed; each lane is read in order on its own, and
// the lanes are emitted one after the other, so records come out in createdAt order whatever the
// user's sorting (documented; a sorting by a value that changes cannot be paged exactly). The
// lanes are read at once, in order: the head lane holds at most two fetched pages,
// kept as bytes, ahead of the consumer, and the lanes after it are cut short (AHEAD_LANE_PAGES,
// createdat-split.ts) and hold at most that many (a lane that fills up and has more to read gives
// the rest to a new lane), so that they are emitted soon after they are read and the next ones can
// start: long lanes after the head would wait, full, for the head to
// end, and leave one request on its way (issue 40: a run with 4 or 8 keys went no faster than
// one key's budget).
//
// Requests on their way: `concurrency`, or more when the keys' budget at the latency seen needs
// more (budget-in-flight.ts); the lanes follow that number.
//
// Code chunks (code-chunks.ts) are read one after the other, each by its own lanes.
import type { CatalogClient, CatalogRecord, LazyPage, QueryEndpointName } from '../client/index.js';
import { DataError } from '../errors.js';
import { ApiError } from '../client/errors.js';
import { setOrigin } from '../core/origin.js';
import { CatalogSource } from './source-stream.js';
import { type PagedQueryOptions, type SourceBody, pageRequest } from './paged-query.js';
import { CreatedAtLane, type Direction, type LaneStep, createdAtOf, listedCodes } from './createdat-lane.js';
import { AHEAD_LANE_PAGES, estimateFarEnd, rebalance } from './createdat-split.js';
import { budgetInFlight, lanePages } from './budget-in-flight.js';
import { listedIds } from './read-window.js';
import { PROBE_PAGE_SIZE, isCapped } from './sliced-products-query.js';

export interface QueryChunk {
  body: SourceBody;
  /** Names the chunk in origins and errors (a code chunk). */
  label?: string;
}

/** Pages a lane keeps fetched ahead of the consumer. */
const PAGES_AHEAD = 2;
/** A chunk whose first total is under this many pages is read in one lane. */
const FEW_PAGES = 16;

interface LanePage {
  step: LaneStep;
  page: LazyPage;
}

interface OpenPage extends LanePage {
  lane: CreatedAtLane;
  next: number;
  pushed: number;
  /** createdAt of the record emitted last from this page: the order is checked as records go. */
  previous: number | undefined;
  no: number;
}

export class CreatedAtQuerySource extends CatalogSource {
  readonly #client: CatalogClient;
  readonly #endpoint: QueryEndpointName;
  readonly #size: number;
  readonly #concurrency: number;
  readonly #direction: Direction;
  readonly #chunks: QueryChunk[];
  #chunk = -1;
  #lanes: CreatedAtLane[] = [];
  readonly #pages = new Map<CreatedAtLane, LanePage[]>();
  #open: OpenPage | undefined;
  #inFlight = 0;
  #started = false;
  #bufferHasRoom = false;
  #delivered = 0;
  #pagesEmitted = 0;
  /** Answers asked for again because they contradicted themselves. */
  #rereads = 0;
  /** Records per createdAt second the chunk's first page showed (what a lane not read yet is judged by). */
  #density = 0;
  /** The far end of a capped chunk is being asked for (createdAt in the other direction). */
  #probing = false;
  /** The chunk's first total says it fills fewer than FEW_PAGES pages: it is not split. */
  #few = false;
  /** The sum of the chunks' first totals, as announced (corrected to what was delivered at the end). */
  #announced = 0;

  constructor(
    client: CatalogClient,
    endpoint: QueryEndpointName,
    chunks: QueryChunk[],
    direction: Direction,
    options: PagedQueryOptions,
  ) {
    super(endpoint, { ...options, events: options.events ?? client.events });
    this.#client = client;
    this.#endpoint = endpoint;
    this.#size = options.pageSize;
    this.#concurrency = Math.max(1, options.concurrency);
    this.#direction = direction;
    this.#chunks = chunks;
  }

  /** Answers asked for again because they contradicted themselves (a passing fault). */
  get rereads(): number {
    return this.#rereads;
  }

  override _read(): void {
    this.#bufferHasRoom = true;
    if (!this.#started) {
      this.#started = true;
      this.#nextChunk();
    }
    this.#drain();
  }

  protected override onDestroy(): void {
    for (const pages of this.#pages.values()) for (const p of pages) p.page.release();
    this.#pages.clear();
    this.#open?.page.release();
    this.#open = undefined;
  }

  #label(): string {
    const chunk = this.#chunks[this.#chunk];
    return `${this.endpoint}${chunk?.label ? ` (${chunk.label})` : ''}`;
  }

  /** Starts the next chunk with one lane over its whole range; false when none is left. */
  #nextChunk(): boolean {
    if (++this.#chunk >= this.#chunks.length) return false;
    const { filter } = this.#chunks[this.#chunk]!.body;
    const lane = new CreatedAtLane(this.#direction, undefined, undefined, listedCodes(filter), listedIds(filter));
    this.#lanes = [lane];
    this.#pages.set(lane, []);
    return true;
  }

  /**
   * Sends requests for lanes that have room, head lane first, while fewer than `concurrency` are on
   * their way. The head holds PAGES_AHEAD pages, the lanes after it all together (with the requests
   * on their way) `concurrency` x AHEAD_LANE_PAGES, the nearest first: what is held stays bounded
   * however fast the pages come, and the head is always read (createdat-split.ts).
   */
  #pump(): void {
    let held = this.#inFlight;
    for (const pages of this.#pages.values()) held += pages.length;
    const target = this.#target();
    for (const [i, lane] of this.#lanes.entries()) {
      if (this.#inFlight >= target || this.destroyed) return;
      // The first page decides the split: nothing else is asked for before it.
      if (this.#lanes[0]!.requests === 1 && this.#lanes[0]!.inFlight) return;
      if (lane.done || lane.inFlight) continue;
      const pages = this.#pages.get(lane)!.length;
      if (i === 0 ? pages >= PAGES_AHEAD : held >= this.#heldBound) continue;
      held++;
      this.#request(lane);
    }
  }

  /**
   * Requests to keep on their way: `concurrency`, or what the budget needs at the latency seen
   * (budget-in-flight.ts), within half the pages the lanes may hold (the rest is for their pages).
   */
  #target(): number {
    return budgetInFlight(this.#client, this.#concurrency, this.#heldBound / 2);
  }

  /**
   * Pages the lanes after the head may hold, with the requests on their way: what `concurrency`
   * lanes of AHEAD_LANE_PAGES hold. It does not grow with the requests the budget adds: memory
   * stays what `concurrency` says (pages of 250 are ~1.5 MB).
   */
  get #heldBound(): number {
    return this.#concurrency * AHEAD_LANE_PAGES;
  }

  /** Pages a lane after the head is cut to: AHEAD_LANE_PAGES, fewer when the budget needs it (budget-in-flight.ts). */
  #lanePages(): number {
    return lanePages(this.#client, this.#heldBound, AHEAD_LANE_PAGES);
  }

  /** A lane after the head that holds its pages: what it has left more is worth a lane of its own. */
  #stalled(lane: CreatedAtLane): boolean {
    return lane !== this.#lanes[0] && (this.#pages.get(lane)?.length ?? 0) >= this.#lanePages();
  }

  #request(lane: CreatedAtLane, retried = false): void {
    const chunk = this.#chunks[this.#chunk]!;
    const step = lane.step(chunk.body);
    lane.inFlight = true;
    this.#inFlight++;
    const request = pageRequest<QueryEndpointName>(step.body, step.page, this.#size);
    // The head lane's pages are what the consumer and every lane after it wait for: ahead of the queue.
    const first = lane === this.#lanes[0];
    this.#client.queryLazy(this.#endpoint, request, { signal: this.signal, events: this.events, first }).then(
      (page) => {
        lane.inFlight = false;
        this.#inFlight--;
        if (this.destroyed) return void page.release();
        try {
          this.#accept(lane, step, page, retried);
        } catch (err) {
          page.release();
          this.destroy(err as Error);
          return;
        }
        this.#drain();
      },
      (err: unknown) => this.destroy(refused(this.endpoint, err)),
    );
  }

  /** A page arrived: check it in itself, move the lane's frontier, split the first lane, queue the page. */
  #accept(lane: CreatedAtLane, step: LaneStep, page: LazyPage, retried: boolean): void {
    const where = this.#label();
    const { total } = page.meta;
    const offset = step.page * this.#size;
    if (page.length > this.#size || (page.length < this.#size && total > offset + page.length)) {
      if (!retried) {
        // One answer that contradicts itself may be a passing fault: ask once more before failing.
        page.release();
        lane.requests--;
        this.#rereads++;
        this.events.emit('info', {
          code: 'source.reread',
          message: `${where}: an answer held ${page.length} records with total ${total}; asking for it again`,
        });
        return this.#request(lane, true);
      }
      throw new DataError(
        `${where}: the service answered ${page.length} records with total ${total} for page ${step.page} of ${this.#size}, twice; ` +
          'its answers contradict themselves, so what it holds cannot be read exactly; run it again later',
        { code: 'source.inconsistent_page' },
      );
    }
    const first = lane.requests === 1 && this.#lanes.length === 1 && lane === this.#lanes[0];
    if (first) this.#announce(total);
    lane.advance(page.length, this.#size, total, tailOf(page, where), where);
    if (first && !lane.done) this.#density = estimateFarEnd(lane, page, total, where);
    // A chunk of a few pages is read in one lane: a split costs a request, and saves little time there.
    if (first) this.#few = !isCapped(total, this.#client.resultWindow) && total < FEW_PAGES * this.#size;
    this.#pages.get(lane)!.push({ step, page });
    if (first && !lane.done && this.#target() > 1 && isCapped(total, this.#client.resultWindow))
      this.#probeFarEnd(lane);
    this.#rebalance();
  }

  /** Splits lanes (none while the far end is being asked for) until as many as requests kept on their way are being read. */
  #rebalance(): void {
    const target = this.#target();
    if (target === 1 || this.#probing || this.#few) return;
    const stalled = (lane: CreatedAtLane) => this.#stalled(lane);
    for (const l of rebalance(this.#lanes, target, this.#size, this.#density, stalled, this.#lanePages()))
      this.#pages.set(l, []);
  }

  /**
   * A total at the cap says nothing of how far the matches reach: one small request from the
   * other end tells where the open lane ends, so the lanes share the whole range, not a guess.
   */
  #probeFarEnd(lane: CreatedAtLane): void {
    const chunk = this.#chunks[this.#chunk]!;
    const sorting = { createdAt: this.#direction === 'ASC' ? 'DESC' : 'ASC' };
    const request = pageRequest<QueryEndpointName>({ ...chunk.body, sorting }, 0, PROBE_PAGE_SIZE);
    this.#probing = true;
    this.#inFlight++;
    this.#client.queryLazy(this.#endpoint, request, { signal: this.signal, events: this.events }).then(
      (page) => {
        this.#inFlight--;
        this.#probing = false;
        try {
          if (page.length > 0) lane.hint = createdAtOf(page.record(0) as CatalogRecord, this.#label());
        } catch (err) {
          this.destroy(err as Error);
        } finally {
          page.release();
        }
        if (this.destroyed) return;
        this.#rebalance();
        this.#drain();
      },
      (err: unknown) => this.destroy(err as Error),
    );
  }

  #announce(total: number): void {
    this.#announced += total;
    this.addSegmentTotal(total, this.#chunk === this.#chunks.length - 1);
  }

  /** Emits fetched pages, head lane first, while the buffer has room; moves on to the next lane, chunk, or the end. */
  #drain(): void {
    if (this.destroyed || !this.#started) return;
    try {
      while (this.#bufferHasRoom) {
        if (!this.#open && !this.#openNext()) break;
        const open = this.#open!;
        this.#bufferHasRoom = this.#emit(open);
        if (open.next >= open.page.length) this.#close(open);
      }
    } catch (err) {
      this.destroy(err as Error);
      return;
    }
    if (this.#lanes.length === 0 && !this.#open) {
      if (this.#nextChunk()) return this.#drain();
      return this.#finish();
    }
    this.#pump();
  }

  /** Opens the head lane's next page; false when it has none yet (or the chunk is done: `#lanes` empty). */
  #openNext(): boolean {
    while (this.#lanes.length > 0) {
      const lane = this.#lanes[0]!;
      const pages = this.#pages.get(lane)!;
      const next = pages.shift();
      if (next) {
        this.#open = { ...next, lane, next: 0, pushed: 0, previous: undefined, no: this.#pagesEmitted++ };
        return true;
      }
      if (!lane.done) return false;
      this.#pages.delete(lane);
      this.#lanes.shift();
    }
    return false;
  }

  /** Pushes the page's next records until the buffer is full or the page is done; returns push()'s last answer. */
  #emit(open: OpenPage): boolean {
    const { page, step, lane } = open;
    const chunk = this.#chunks[this.#chunk];
    let ok = true;
    while (ok && open.next < page.length) {
      const i = open.next++;
      const record = page.record(i) as CatalogRecord;
      const createdAt = createdAtOf(record, this.#label());
      this.#checkOrder(open, step, createdAt, i);
      open.previous = createdAt;
      if (!lane.owns(createdAt) || step.skip.has(record.id) || this.isRepeat(record)) continue;
      setOrigin(record, {
        endpoint: this.endpoint,
        page: open.no,
        index: this.#delivered + open.pushed,
        ...(chunk?.label ? { slice: chunk.label } : {}),
      });
      if (page.invalidUtf8?.(i)) this.noteInvalidUtf8(record, `page ${open.no}, index ${i}`);
      open.pushed++;
      ok = this.push(record);
    }
    return ok;
  }

  /** A record outside the range asked for, or out of createdAt order, means the answer cannot be trusted. */
  #checkOrder(open: OpenPage, step: LaneStep, createdAt: number, i: number): void {
    const asc = this.#direction === 'ASC';
    const outside =
      (step.from !== undefined && createdAt < step.from) || (step.until !== undefined && createdAt > step.until);
    const unordered = open.previous !== undefined && (asc ? createdAt < open.previous : createdAt > open.previous);
    if (!outside && !unordered) return;
    throw new DataError(
      `${this.#label()}: record ${i} of an answer has createdAt ${createdAt}, ` +
        (outside
          ? `outside the range asked for (${step.from ?? '-inf'}..${step.until ?? 'inf'})`
          : `out of the createdAt ${this.#direction} order asked for (after ${open.previous})`) +
        '; the service did not apply the filter or sorting, so the query cannot be read exactly; use the stream endpoint',
      { code: 'source.unsliceable' },
    );
  }

  #close(open: OpenPage): void {
    open.page.release();
    this.#open = undefined;
    this.#delivered += open.pushed;
    const chunk = this.#chunks[this.#chunk];
    this.events.emit('page', {
      endpoint: this.endpoint,
      records: open.pushed,
      page: open.no,
      ...(chunk?.label ? { slice: chunk.label } : {}),
    });
  }

  #finish(): void {
    // Records left or entered while the chunks were read: the total becomes what was delivered.
    this.reviseSegmentTotal(this.#delivered - this.#announced);
    this.finish(this.#delivered);
  }
}

/** The last record's createdAt and the ids the page holds at that second (read from the end). */
function tailOf(page: LazyPage, where: string): { createdAt: number; ids: unknown[] } | undefined {
  if (page.length === 0) return undefined;
  const last = createdAtOf(page.record(page.length - 1) as CatalogRecord, where);
  const ids: unknown[] = [];
  for (let i = page.length - 1; i >= 0; i--) {
    const record = page.record(i) as CatalogRecord;
    if (createdAtOf(record, where) !== last) break;
    ids.push(record.id);
  }
  return { createdAt: last, ids };
}

/**
 * A service that refuses the createdAt filter or sorting (400/422: the media filters are not in
 * the spec) cannot be read exactly by createdAt: say so and point at the stream, rather than
 * surface a bare API error.
 */
function refused(endpoint: string, err: unknown): Error {
  if (!(err instanceof ApiError) || (err.status !== 400 && err.status !== 422)) return err as Error;
  return new DataError(
    `${endpoint}: the service refused the createdAt filter or sorting an exact read needs (${err.status}: ${err.message}); ` +
      `use ${endpoint.replace(/\.query$/, '.stream')} (no limit) or check the filter`,
    { code: 'source.unsliceable', cause: err },
  );
}
