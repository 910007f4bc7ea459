// One lane of a query read by createdAt (createdat-query.ts): a range of `createdAt` seconds
// read from one end to the other, each request `page 0` of what is left, so that every answer
// is one consistent answer of the service and no offset can shift under churn.
//
// A request asks for the lane's filter AND `createdAt` from the frontier second (ASC; up to it
// for DESC), sorted by createdAt, minus the ids already delivered at the frontier second
// (`not: {id: [...]}`). A consistent answer sorted by createdAt holds every match before the
// second of its last record: so when the page is full, everything up to that second was
// delivered, and that second becomes the frontier, its delivered ids excluded from the next
// request (ties are in any order and may run past the page; the exclusion makes the next page
// start where this one ended, whatever order the service gives them). A page that is not full
// holds everything left: the lane is done. The cost is the pages the matches fill, nothing more.
//
// Where the frontier's ids do not fit in one request (spec §4.1: 1000 codes, less the codes the
// filter lists already), they are skipped as they come back instead; that moves on as long as
// the ties of one second fit a page. A second whose ties fill whole pages past that is read on
// its own, by id (createdat-bulk.ts).
import type { CatalogRecord } from '../client/index.js';
import { DataError } from '../errors.js';
import { andFilter } from './sliced-products-query.js';
import { BulkSecond } from './createdat-bulk.js';
import type { SourceBody } from './paged-query.js';

export type Direction = 'ASC' | 'DESC';

/** Identifier codes one request may carry (spec §4.1, §8). */
export const MAX_CODES_PER_REQUEST = 1000;

/** One request of a lane, with what its records are checked against when they are emitted. */
export interface LaneStep {
  body: SourceBody;
  /** createdAt bounds the request asked for (inclusive; undefined: open). */
  from: number | undefined;
  until: number | undefined;
  /** Ids delivered at the frontier second: excluded by the request, skipped if the service sends them anyway. */
  skip: ReadonlySet<unknown>;
  /** The page asked for: 0 but inside a bulk second (createdat-bulk.ts). */
  page: number;
}

/** What a full page ended with: its last record's createdAt and the ids at that second on the page. */
export interface PageTail {
  createdAt: number;
  ids: unknown[];
}

export class CreatedAtLane {
  /** The createdAt seconds still to read, inclusive (undefined: open). */
  from: number | undefined;
  until: number | undefined;
  done = false;
  /** A request of this lane is on its way. */
  inFlight = false;
  /** Requests this lane sent (the first one may decide a split). */
  requests = 0;
  /** Records its pages held: with the seconds they span, the density a split is judged by. */
  records = 0;
  /** Where an open far end is thought to be (the density seen so far): what a split of an open lane cuts at. */
  hint: number | undefined;
  /** Ids delivered at the frontier second. */
  #frontier = new Set<unknown>();
  /** The frontier second the lane started from (what its density is measured over). */
  #start: number | undefined;
  /** A frontier second too full to exclude by id, being read on its own. */
  #bulk: BulkSecond | undefined;

  constructor(
    readonly direction: Direction,
    from: number | undefined,
    until: number | undefined,
    /** Codes the base filter lists already (they count against the request's limit). */
    readonly baseCodes: number,
    /** Records the filter can match at most (an id list: one each), past which nothing is asked for. */
    readonly maxRecords = Infinity,
  ) {
    this.from = from;
    this.until = until;
  }

  /** The next request: the base filter within the lane's range, minus the frontier's ids. */
  step(base: SourceBody): LaneStep {
    this.requests++;
    if (this.#bulk) {
      const { body, page } = this.#bulk.request(base);
      const second = this.#bulk.second;
      return { body, from: second, until: second, skip: new Set(this.#frontier), page };
    }
    let filter = base.filter;
    if (this.from !== undefined || this.until !== undefined) {
      const range: Record<string, number> = {};
      if (this.from !== undefined) range.from = this.from;
      if (this.until !== undefined) range.until = this.until;
      filter = andFilter(filter, { createdAt: range });
    }
    // Frontier ids the request cannot list are skipped as they come (the page may then repeat some).
    const excluded = this.#frontier.size <= this.#room() ? [...this.#frontier] : [];
    if (excluded.length > 0) filter = andFilter(filter, { not: { id: excluded } });
    return {
      body: { ...base, ...(filter !== undefined ? { filter } : {}), sorting: { createdAt: this.direction } },
      from: this.from,
      until: this.until,
      skip: new Set(this.#frontier),
      page: 0,
    };
  }

  /**
   * A page of `length` records (of `total`) arrived for a request of `size`: a page that is not
   * full held everything left; a full one moves the frontier to the second its last record has.
   */
  advance(length: number, size: number, total: number, tail: PageTail | undefined, where: string): void {
    this.records += length;
    if (this.#bulk) return this.#advanceBulk(length, size, total, tail, where);
    if (length < size || !tail || this.records >= this.maxRecords) {
      this.done = true;
      return;
    }
    const frontier = this.direction === 'ASC' ? this.from : this.until;
    const known = this.#frontier.size;
    if (frontier !== tail.createdAt) this.#frontier.clear();
    for (const id of tail.ids) this.#frontier.add(id);
    // A full page of the frontier second and nothing new on it: the service ignored the exclusion.
    if (frontier === tail.createdAt && this.#frontier.size === known) throw ignoredExclusion(where, tail.createdAt);
    this.#start ??= frontier ?? tail.createdAt;
    this.#moveTo(tail.createdAt);
    // A whole page of one second whose ids no longer fit in a request (a bulk import): read that
    // second on its own, by id (what was delivered of it is skipped there).
    if (tail.ids.length >= length && this.#frontier.size > this.#room())
      this.#bulk = new BulkSecond(tail.createdAt, [...this.#frontier].slice(0, this.#room()));
  }

  #advanceBulk(length: number, size: number, total: number, tail: PageTail | undefined, where: string): void {
    const bulk = this.#bulk!;
    if (!bulk.advance(length, size, total, tail?.ids ?? [], this.#frontier, where)) return;
    this.#bulk = undefined;
    this.#frontier.clear();
    this.#moveTo(this.direction === 'ASC' ? bulk.second + 1 : bulk.second - 1);
  }

  /** Moves the near end to `second`; a split may have left nothing past it. */
  #moveTo(second: number): void {
    if (this.direction === 'ASC') this.from = second;
    else this.until = second;
    if (this.from !== undefined && this.until !== undefined && this.from > this.until) this.done = true;
  }

  /** Codes of the frontier a request may still list (spec §4.1: 1000 per query, less those the filter lists). */
  #room(): number {
    return Math.max(0, MAX_CODES_PER_REQUEST - this.baseCodes);
  }

  /** Seconds still to read, with an open far end taken at its hint (0: nothing to share). */
  remaining(): number {
    if (this.done) return 0;
    const near = this.direction === 'ASC' ? this.from : this.until;
    const far = (this.direction === 'ASC' ? this.until : this.from) ?? this.hint;
    if (near === undefined || far === undefined) return 0;
    return this.direction === 'ASC' ? Math.max(0, far - near) : Math.max(0, near - far);
  }

  /**
   * Records still to read, at the density this lane's pages showed so far (its first page: none,
   * so a lane not yet read is taken to hold what its seconds hold at `fallback` per second).
   */
  expected(fallback: number): number {
    const near = this.direction === 'ASC' ? this.from : this.until;
    const seen = this.#start === undefined || near === undefined ? 0 : Math.abs(near - this.#start) + 1;
    const density = seen > 0 && this.records > 0 ? this.records / seen : fallback;
    return density * this.remaining();
  }

  /**
   * Gives the far part of what is left to a new lane (read after this one): by default the far
   * half, else all but the near `share` of the seconds left; undefined when less than two seconds
   * are left. A request on its way keeps its range: what it brings past the new end is dropped
   * when emitted (`owns`), and the new lane reads it.
   */
  split(share = 0.5): CreatedAtLane | undefined {
    const left = this.remaining();
    if (left < 1) return undefined;
    const asc = this.direction === 'ASC';
    const near = (asc ? this.from : this.until)!;
    const open = (asc ? this.until : this.from) === undefined;
    const kept = Math.min(left - 1, Math.floor(left * Math.min(1, Math.max(0, share))));
    const mid = asc ? near + kept : near - kept;
    const lane = asc
      ? new CreatedAtLane('ASC', mid + 1, this.until, this.baseCodes)
      : new CreatedAtLane('DESC', this.from, mid - 1, this.baseCodes);
    if (open) lane.hint = this.hint;
    lane.#start = asc ? mid + 1 : mid - 1;
    if (asc) this.until = mid;
    else this.from = mid;
    this.hint = undefined;
    return lane;
  }

  /** Whether `createdAt` is not past the far end of the lane, which a split may have moved nearer. */
  owns(createdAt: number): boolean {
    if (this.direction === 'ASC') return this.until === undefined || createdAt <= this.until;
    return this.from === undefined || createdAt >= this.from;
  }
}

/** How many codes a filter lists (every array in it: code and id lists), an upper bound of what it sends. */
export function listedCodes(filter: unknown): number {
  if (Array.isArray(filter))
    return filter.reduce((n: number, v) => n + (typeof v === 'object' ? listedCodes(v) : 1), 0);
  if (!filter || typeof filter !== 'object') return 0;
  return Object.values(filter as Record<string, unknown>).reduce((n: number, v) => n + listedCodes(v), 0);
}

/** A record's `meta.createdAt`, which reading by createdAt needs on every record. */
export function createdAtOf(record: CatalogRecord, where: string): number {
  const createdAt = (record.meta as { createdAt?: unknown } | undefined)?.createdAt;
  if (Number.isSafeInteger(createdAt)) return createdAt as number;
  throw new DataError(
    `${where}: a record (${JSON.stringify(record.id)}) has no integer meta.createdAt, so the query cannot be read by createdAt; use the stream endpoint`,
    { code: 'source.unsliceable' },
  );
}

function ignoredExclusion(where: string, second: number): DataError {
  return new DataError(
    `${where}: the service answered a full page of records already delivered at createdAt ${second}, although the ` +
      'request excluded them by id; it does not apply `not: {id: [...]}`, so the query cannot be read exactly; use the stream endpoint',
    { code: 'source.unsliceable' },
  );
}
