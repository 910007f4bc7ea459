// The reader behind `products.stream` and `media.stream`: one POST per
// segment (the whole query, or one code chunk), whose NDJSON body is split into
// lines by NdjsonLines (with a maximum line length) and parsed line by line
// (`{meta: {total, index}, result}`, ARCHITECTURE.md, API rules).
//
// Contract checks, each a StreamProtocolError naming the index:
// - a line that is not JSON, or not of that shape (malformed_line);
// - a line longer than maxLineLength (line_too_long) — the splitter only bounds the
//   unfinished tail of its buffer, so complete lines are measured here too;
// - `{"error": {...}}` (error_line), with what the line said;
// - `meta.index` not the next one (index_gap), or `meta.total` changing within
//   one request (total_changed: the data moved, indexes no longer line up);
// - a 200 without any line (empty: "no results" is a 204).
// 204 is an empty result. Each request is checked on its own: its indexes run
// from 0 to its own `total` - 1, and fewer lines than that is never success.
//
// Truncation is a transient fault, like a cut: a body that ends cleanly in the
// middle of a line (the last piece has no newline and is not JSON), or at a
// line boundary before `total` lines, is resumed; only when resuming does not
// help does it fail (short).
//
// Resume: a stream that breaks off (connection reset or closed without the
// end of the chunked body, body timeout, a truncated body) is asked for again
// after a backoff, through the client, so the new request waits for the rate
// limiter like any other. The catalog may change while the stream is cut, so
// the resumed request starts after what was delivered, found by content, never
// by position (records leaving before the cut would shift the positions, and a
// record would be lost without a sign). The promise: a record in the result for
// the whole run is delivered exactly once; one that enters, leaves or changes
// during the run at most once; where that cannot be made sure, the source fails
// (resume_not_exact) rather than leave a gap. By sorting:
// - createdAt (ASC or DESC; it never changes): the new request asks for
//   `createdAt >= the last delivered record's` (<= for DESC) and skips the ids
//   delivered at that instant, so a stream cut at the same byte every time
//   still gets past the cut.
// - id (ASC or DESC; ids never change, the API has no "after this id" filter):
//   the same body is asked for again and every record up to the last delivered
//   id in the stream's order is skipped. The ids are compared as integers by
//   value and strings by UTF-16 code unit, and the stream itself must agree:
//   every line's id has to sort after the previous one (before, for DESC).
//   The last record skipped in the resumed request must also be one delivered
//   before the cut (one of the last RECENT_IDS), or none: when the last
//   delivered records left and an id nobody delivered stands where they were,
//   nothing shows which side of the cut it belongs to, and the source fails.
// - createdAt order is checked the same way (non-decreasing, an integer
//   meta.createdAt on every record).
// - Any other sorting (touchedAt, status, name...) orders by values that change:
//   a record updated during the cut moves, and without the ids of everything
//   delivered (memory that grows with the catalog) nothing tells a moved record
//   from a new one. Such a stream is not resumed once records were delivered:
//   the cut fails with resume_not_exact, naming id and createdAt as the sortings
//   that resume. (Inside a bounded updatedSince window records only leave, but
//   the tie order of equal values, e.g. thousands of products of one status,
//   would still have to be the same in both requests, which nothing checks.)
// A stream cut before any record was delivered is asked for again as it was,
// whatever the sorting.
// The order is checked on every request, cut or not (issue 35, item 5; it used
// to be checked for a resume only, so such a stream was read whole when not cut):
// under id or createdAt, a record out of order (out_of_order) or sent twice
// (repeated_id: the same id again among the records at the same id or createdAt;
// a media record is an id and a type, since one item is listed as a photo and
// as a frontal) fails the source before it is delivered. A stream that repeats
// a record has left another one out in its place (its indexes still run on),
// and one out of order can hide either: read whole, it would deliver a duplicate
// and lose a record with nothing said. A record whose order cannot be judged (no
// integer createdAt, ids that cannot be compared, a media item at the same id
// under another type) is read, but a cut after it fails (resume_not_exact),
// since a resume by content could then skip the wrong records. Under any other
// sorting nothing is checked: a repeat could only be told by keeping every id.
// The resumed request's `total` is its own: records that left or arrived while
// the stream was cut change it legitimately. Once the resumed request is past
// the records delivered before the cut, the segment's count is known again
// (delivered + that request's total - the lines it skipped) and the source's
// announced total is corrected, so `total` is what the source delivers.
// Consumers see each record once and in order. Resumes are bounded: after
// `maxResumes` in a row without a new record, the source fails
// (resume_exhausted, or short).
//
// Backpressure: when `push` says the buffer is full, the line splitter is
// paused, which pauses the HTTP body and the socket; `_read` resumes it.
import { pipeline, type Readable, type Transform } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { EXTRACT_PAGE_SIZE, type QueryRequest } from '../catalog/index.js';
import type { SourceBody } from './paged-query.js';
import { andFilter } from './sliced-products-query.js';
import {
  type CatalogClient,
  type CatalogRecord,
  NetworkError,
  notTheApi,
  parseJson,
  SlowBodyError,
  type StreamEndpointName,
  StreamProtocolError,
  type StreamProblem,
} from '../client/index.js';
import { Utf8Watch } from '../client/utf8.js';
import { errorCodeOf } from '../client/retry-policy.js';
import { fromJson } from '../client/error-body.js';
import { compact } from '../client/request-summary.js';
import { truncate } from '../client/errors.js';
import { describeValue } from '../values.js';
import { setOrigin } from '../core/origin.js';
import { CatalogSource, type SourceRunOptions } from './source-stream.js';
import { LINE_OVERFLOW, NdjsonLines } from './ndjson-lines.js';

export interface StreamSegment {
  body: SourceBody;
  label?: string;
}

export interface NdjsonStreamOptions extends SourceRunOptions {
  /** Longest line accepted, in characters. */
  maxLineLength: number;
  /** Resumes in a row without a new record before giving up. */
  maxResumes: number;
  /** Drop records whose id was delivered already (code chunks over multi-valued fields). */
  dedupe?: boolean;
  /** Keeps a record the service sent; the others are counted, then left out (prefix matches of cipOrAcl7). */
  keep?: (record: Record<string, unknown>) => boolean;
}

/** How a cut stream of a segment is resumed, from its sorting (see the header). */
type ResumeRule = { by: 'id' | 'createdAt'; desc: boolean } | { by: 'none'; sorting: unknown };

/** Where the records a resumed request delivered before the cut end. */
type ResumePoint =
  { by: 'id'; id: unknown; desc: boolean } | { by: 'createdAt'; createdAt: number; ids: ReadonlySet<unknown> };

/** How a line contradicts the order (`problem`: the stream fails), or why its order cannot be judged. */
interface Disorder {
  problem?: 'out_of_order' | 'repeated_id';
  text: string;
}

/** The last delivered ids kept per segment: the anchors a resume by id checks its skipping against. */
const RECENT_IDS = 256;

interface SegmentState {
  segment: StreamSegment;
  rule: ResumeRule;
  /** The body of the current request: the segment's, or one starting after what was delivered. */
  body: SourceBody;
  /** The next `meta.index` to deliver in the current request's stream. */
  next: number;
  /** `meta.total` of the current request's stream. */
  total?: number;
  /** Whether the segment's total was announced (its first stream's). */
  announced: boolean;
  /** Records the segment is to deliver in all, as announced (corrected after a resume). */
  expected: number;
  /** Records of the segment delivered over all its requests. */
  delivered: number;
  /** `delivered` when the current request started. */
  deliveredAtRequest: number;
  /** Lines of the current request skipped as delivered before the cut. */
  skipped: number;
  /** Set while the current (resumed) request is still on records delivered before the cut. */
  from?: ResumePoint;
  /** The id of the last line skipped by id in the current request. */
  lastSkippedId?: unknown;
  /** Whether the current request was resumed after deliveries: a contradiction in it fails at once. */
  resumed: boolean;
  /** The order key (id or createdAt) of the previous line of the current request. */
  previousKey?: unknown;
  /** The records (identity -> index) of the current request at `previousKey`: a repeat is among them. */
  atPreviousKey: Map<unknown, number>;
  /** Why a resume after the delivered records would not be exact (the stream contradicted the rule). */
  inexact?: string;
  /** `delivered` when the last resume started, to tell progress from none. */
  deliveredAtLastResume: number;
  resumesWithoutProgress: number;
  /** The last delivered record's id, and the last RECENT_IDS ids (a ring). */
  lastId?: unknown;
  recentIds: unknown[];
  /** createdAt sorting: the last delivered record's createdAt, and the ids delivered at that instant. */
  lastCreatedAt?: number;
  idsAtLastCreatedAt: Set<unknown>;
  /** A line that was not JSON, held until it is known whether it was the unterminated end of the body. */
  badLine?: { index: number; text: string };
}

/**
 * The id order a resume by id assumes: integers by value, strings by UTF-16 code unit. Undefined
 * when the two cannot be compared that way (not both safe integers, not both strings).
 */
function compareIds(a: unknown, b: unknown): number | undefined {
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (Number.isSafeInteger(a) && Number.isSafeInteger(b)) return (a as number) - (b as number);
  return undefined;
}

function resumeRule(body: SourceBody): ResumeRule {
  const sorting = body.sorting as Record<string, unknown> | undefined;
  const [name, direction] = Object.entries(sorting ?? {})[0] ?? [];
  if ((name === 'id' || name === 'createdAt') && (direction === 'ASC' || direction === 'DESC'))
    return { by: name, desc: direction === 'DESC' };
  return { by: 'none', sorting };
}

const createdAtOf = (record: CatalogRecord): unknown => (record.meta as { createdAt?: unknown } | undefined)?.createdAt;

/** A stream line as parsed: its position, its total, and maybe an error instead. */
interface LineMessage {
  meta?: { total?: unknown; index?: unknown };
  result?: unknown;
  results?: unknown;
  error?: unknown;
}

/** A line that passed its shape checks. */
interface ParsedLine {
  index: number;
  total: number;
  records: CatalogRecord[];
}

/** A line of the service's error (and no records): the stream fails with what it said. */
function isErrorLine(message: LineMessage): boolean {
  return (
    !!message &&
    typeof message === 'object' &&
    message.error !== undefined &&
    message.result === undefined &&
    message.results === undefined
  );
}

/**
 * The records a stream line carries: `result` (one record, the documented shape), or a list in
 * `results` or `result`; undefined when the line has none of these or a list holds something
 * other than records (or nothing).
 */
function lineRecords(message: unknown): CatalogRecord[] | undefined {
  if (!message || typeof message !== 'object') return undefined;
  const { result, results } = message as { result?: unknown; results?: unknown };
  const isRecord = (r: unknown) => typeof r === 'object' && r !== null && !Array.isArray(r);
  if (result !== undefined && results !== undefined) return undefined;
  const list = results ?? result;
  if (Array.isArray(list)) return list.length > 0 && list.every(isRecord) ? (list as CatalogRecord[]) : undefined;
  return isRecord(list) ? [list as CatalogRecord] : undefined;
}
const showId = (id: unknown): string => (typeof id === 'string' ? JSON.stringify(id) : String(id));

const NEWLINE = 0x0a;

export class NdjsonStreamSource extends CatalogSource {
  readonly #client: CatalogClient;
  readonly #segments: StreamSegment[];
  readonly #maxLineLength: number;
  readonly #maxResumes: number;
  #segmentIndex = 0;
  #state: SegmentState;
  #started = false;
  /** Bumped for every request, so callbacks of an abandoned body are ignored. */
  #attempt = 0;
  #body: Readable | undefined;
  #lines: Transform | undefined;
  /** The last byte of the current body seen so far (a newline unless the body ended mid-line). */
  #lastByte: number | undefined;
  /** Whether the current body had bytes that are not UTF-8 (the lines holding U+FFFD are then reported). */
  #utf8 = new Utf8Watch();
  #status = 200;
  #delivered = 0;
  #sincePageEvent = 0;
  #resumes = 0;

  constructor(
    client: CatalogClient,
    endpoint: StreamEndpointName,
    segments: StreamSegment[],
    options: NdjsonStreamOptions,
  ) {
    super(endpoint, { ...options, events: options.events ?? client.events });
    this.#client = client;
    this.#segments = segments;
    this.#maxLineLength = options.maxLineLength;
    this.#maxResumes = options.maxResumes;
    this.#state = this.#freshState(0);
  }

  /** Times the stream was asked for again after breaking off. */
  get resumes(): number {
    return this.#resumes;
  }

  override _read(): void {
    if (!this.#started) {
      this.#started = true;
      this.#open();
    } else if (this.#lines?.isPaused()) {
      this.#lines.resume();
    }
  }

  protected override onDestroy(): void {
    this.#detach();
  }

  #freshState(index: number): SegmentState {
    const segment = this.#segments[index]!;
    return {
      segment,
      rule: resumeRule(segment.body),
      body: segment.body,
      next: 0,
      announced: false,
      expected: 0,
      delivered: 0,
      deliveredAtRequest: 0,
      skipped: 0,
      resumed: false,
      deliveredAtLastResume: 0,
      resumesWithoutProgress: 0,
      recentIds: [],
      idsAtLastCreatedAt: new Set(),
      atPreviousKey: new Map(),
    };
  }

  #open(): void {
    const attempt = ++this.#attempt;
    this.#lastByte = undefined;
    this.#utf8 = new Utf8Watch();
    this.#client
      .stream(this.endpoint as 'products.stream', this.#state.body as QueryRequest<'products.stream'>, {
        signal: this.signal,
        events: this.events,
      })
      .then(
        (body) => {
          if (this.destroyed || attempt !== this.#attempt) return void body.destroy();
          this.#attach(body, body.statusCode, attempt);
        },
        (err: unknown) => this.destroy(err as Error),
      );
  }

  #attach(body: Readable, status: number, attempt: number): void {
    const utf8 = this.#utf8;
    const lines = new NdjsonLines({
      maxLength: this.#maxLineLength,
      // Notes the last byte that went by: a body that ends without a newline ended mid-line.
      onChunk: (chunk) => {
        if (attempt === this.#attempt && chunk.length > 0) this.#lastByte = chunk[chunk.length - 1];
        utf8.write(chunk);
      },
      onEnd: () => utf8.end(),
    });
    this.#status = status;
    this.#body = body;
    this.#lines = lines;
    pipeline(body, lines, (err) => {
      if (err && attempt === this.#attempt && !this.destroyed) this.#onBroken(err);
    });
    lines.on('data', (line: string) => {
      if (attempt === this.#attempt && !this.destroyed) this.#onLine(line);
    });
    lines.on('end', () => {
      if (attempt === this.#attempt && !this.destroyed) this.#onEnd(status);
    });
  }

  #detach(): void {
    this.#attempt++;
    this.#body?.destroy();
    this.#lines?.destroy();
    this.#body = undefined;
    this.#lines = undefined;
  }

  #onLine(line: string): void {
    if (line.length === 0) return;
    const state = this.#state;
    if (state.badLine) return this.#failBadLine(state.badLine);
    const parsed = this.#parseLine(state, line);
    if (!parsed || !this.#checkPosition(state, parsed)) return;
    this.#deliver(state, parsed, line);
  }

  /** The line's position and records; undefined once it failed the stream or was noted as a bad line. */
  #parseLine(state: SegmentState, line: string): ParsedLine | undefined {
    if (line.length > this.#maxLineLength) {
      this.#fail(
        'line_too_long',
        `the line at index ${state.next} is ${line.length} characters long, more than maxLineLength ${this.#maxLineLength}`,
      );
      return undefined;
    }
    let message: LineMessage;
    try {
      message = parseJson(line) as LineMessage;
    } catch {
      if (state.total === undefined && /^\uFEFF?\s*</.test(line)) this.#notNdjson(line);
      // A line followed by another is malformed; the last piece of a body that ends without a newline was cut off.
      else state.badLine = { index: state.next, text: line };
      return undefined;
    }
    if (isErrorLine(message)) {
      const said = fromJson(message);
      this.#fail(
        'error_line',
        `the service reported an error in the stream at index ${state.next}: ${[said.status, said.apiCode, said.apiMessage].filter((x) => x !== undefined).join(' ') || 'no details'}`,
        said,
      );
      return undefined;
    }
    const meta = message?.meta;
    const records = lineRecords(message);
    if (!meta || !Number.isSafeInteger(meta.index) || !Number.isSafeInteger(meta.total) || records === undefined) {
      this.#fail(
        'malformed_line',
        `the line at index ${state.next} is not a {meta: {total, index}, result} line (nor one whose \`results\` or \`result\` is a list of records): ${truncate(line, 80)}`,
      );
      return undefined;
    }
    return { index: meta.index as number, total: meta.total as number, records };
  }

  /** Whether the line is where the stream is and within its total; else the stream failed. */
  #checkPosition(state: SegmentState, { index, total, records }: ParsedLine): boolean {
    if (state.total === undefined) this.#learnTotal(state, total);
    else if (total !== state.total) {
      this.#fail(
        'total_changed',
        `meta.total changed from ${state.total} to ${total} at index ${index}: the data changed during the extract; run it again`,
      );
      return false;
    }
    // A line of several records (one integration reads `results`, or a list in `result`) holds
    // indexes index .. index + n - 1; each is counted against total like a line of its own.
    if (index !== state.next || index + records.length > total) {
      this.#fail(
        'index_gap',
        records.length === 1
          ? `expected meta.index ${state.next} but got ${index} (total ${total})`
          : `the line at index ${index} carries ${records.length} records; expected meta.index ${state.next} and at most ${total - state.next} more records (total ${total})`,
      );
      return false;
    }
    return true;
  }

  /** Pushes the line's records that are due (in order, not before a resume point, not repeats). */
  #deliver(state: SegmentState, { index, records }: ParsedLine, line: string): void {
    let full = false;
    for (let k = 0; k < records.length; k++) {
      if (this.destroyed) return;
      const at = index + k;
      state.next++;
      const record = records[k]!;
      const disorder = this.#checkOrder(state, record, at);
      if (disorder) {
        // Skipping by content is only as good as the order it relies on.
        if (state.resumed)
          return this.#fail('resume_not_exact', `the resumed stream ${disorder.text}; ${this.#notExact(state)}`);
        if (disorder.problem) return this.#failOrder(state, disorder.problem, disorder.text, at);
        state.inexact ??= disorder.text;
      }
      if (state.from) {
        const before = this.#deliveredBefore(state, state.from, record);
        if (before === 'failed') return;
        if (before === 'skip') continue;
      }
      this.#noteDelivered(state, record);
      if (this.isRepeat(record)) continue;
      setOrigin(record, { endpoint: this.endpoint, index: at, slice: state.segment.label });
      if (this.#utf8.invalid && line.includes('\uFFFD')) this.noteInvalidUtf8(record, `index ${at}`);
      this.#delivered++;
      if (++this.#sincePageEvent >= EXTRACT_PAGE_SIZE) this.#pageEvent();
      if (!this.push(record)) full = true;
    }
    if (full) this.#lines?.pause();
  }

  #learnTotal(state: SegmentState, total: number): void {
    state.total = total;
    if (!state.announced) {
      state.announced = true;
      state.expected = total;
      this.addSegmentTotal(total, this.#segmentIndex === this.#segments.length - 1);
    }
    if (!state.from) this.#settleExpected(state);
  }

  /**
   * The segment's count once no line of the current request is to be skipped any more: what was
   * delivered before it plus its lines not skipped. A resume after records left or arrived changes
   * it, and the source's total with it.
   */
  #settleExpected(state: SegmentState): void {
    if (state.total === undefined) return;
    const expected = state.deliveredAtRequest + state.total - state.skipped;
    if (expected === state.expected) return;
    this.reviseSegmentTotal(expected - state.expected);
    state.expected = expected;
  }

  /**
   * Checks that the line sorts after the previous one of this request under the resume rule and
   * is not one it sent already; says how it does not. `problem`: the stream is wrong (it fails at
   * once); without it, the order cannot be judged here (a resume after it would not be exact).
   */
  #checkOrder(state: SegmentState, record: CatalogRecord, index: number): Disorder | undefined {
    const rule = state.rule;
    if (rule.by === 'none') return undefined;
    const key = rule.by === 'id' ? record.id : createdAtOf(record);
    const previous = state.previousKey;
    state.previousKey = key;
    if (rule.by === 'createdAt' && !Number.isSafeInteger(key))
      return { text: `has a record without an integer meta.createdAt at index ${index} (${describeValue(key)})` };
    if (rule.by === 'id' && compareIds(key, key) === undefined)
      return {
        text: `has a record whose id is neither a string nor a safe integer at index ${index} (${describeValue(key)})`,
      };
    // The first line, or the first after one whose createdAt could not be judged.
    if (previous === undefined || (rule.by === 'createdAt' && !Number.isSafeInteger(previous)))
      return this.#firstAtKey(state, record, index);
    const c = rule.by === 'id' ? compareIds(previous, key) : (previous as number) - (key as number);
    if (c === undefined)
      return {
        text: `mixes id types: ${showId(key)} at index ${index} after ${showId(previous)}, which cannot be compared`,
      };
    if (c === 0) return this.#sameKey(state, record, index);
    if (rule.desc ? c > 0 : c < 0) return this.#firstAtKey(state, record, index);
    const order = `${rule.by} ${rule.desc ? 'DESC' : 'ASC'}`;
    return {
      problem: 'out_of_order',
      text:
        rule.by === 'id'
          ? `is not in the order the toolkit compares ids in (integers by value, strings by UTF-16 code unit): id ${showId(key)} at index ${index} came after ${showId(previous)} under sorting {id: ${rule.desc ? 'DESC' : 'ASC'}}`
          : `is not in ${order} order: createdAt ${String(key)} at index ${index} after ${String(previous)}`,
    };
  }

  /** The line starts a new order key: the records at the previous one are forgotten. */
  #firstAtKey(state: SegmentState, record: CatalogRecord, index: number): undefined {
    state.atPreviousKey.clear();
    state.atPreviousKey.set(this.#identity(record), index);
    return undefined;
  }

  /**
   * The line has the previous line's order key: a repeat when its identity is among the records
   * at that key; under id, another record at the same id (a media item as photo and as frontal)
   * cannot be ordered against its sibling, so a resume by id would not be exact.
   */
  #sameKey(state: SegmentState, record: CatalogRecord, index: number): Disorder | undefined {
    const identity = this.#identity(record);
    const first = state.atPreviousKey.get(identity);
    if (first !== undefined) {
      const what =
        this.endpoint === 'media.stream'
          ? `media item ${showId(record.id)} (${String(identity)})`
          : `id ${showId(record.id)}`;
      return { problem: 'repeated_id', text: `sent ${what} twice, at index ${first} and again at index ${index}` };
    }
    state.atPreviousKey.set(identity, index);
    if (state.rule.by === 'id')
      return {
        text: `has two records with id ${showId(record.id)} (at index ${index}), which a resume by id cannot tell apart`,
      };
    return undefined;
  }

  /** What makes a record one: its id; a media item's id and type (one item is listed as a photo and as a frontal). */
  #identity(record: CatalogRecord): unknown {
    if (this.endpoint !== 'media.stream') return record.id;
    const { type, kind } = record as { type?: unknown; kind?: unknown };
    return `${showId(record.id)}/${String(type ?? kind)}`;
  }

  /** A stream whose order rules out checking it for repeats and gaps: fails before the record is delivered. */
  #failOrder(state: SegmentState, problem: 'out_of_order' | 'repeated_id', text: string, index: number): void {
    const rule = state.rule as { by: 'id' | 'createdAt'; desc: boolean }; // 'none' checks no order
    const sorting = `sorting {${rule.by}: ${rule.desc ? 'DESC' : 'ASC'}}`;
    const why =
      problem === 'repeated_id'
        ? `a record sent twice stands in the place of another, which would be missing (its indexes still run on)`
        : `out of order, a record sent twice or left out cannot be told`;
    const action =
      problem === 'repeated_id' || rule.by === 'createdAt'
        ? 'run again, and if it repeats, report it with the index named'
        : 'sort by createdAt if the service orders ids differently; else run again, and if it repeats, report it with the index named';
    this.#fail(
      problem,
      `the stream ${text} (${sorting}, ${state.delivered} records delivered); ${why}, so the stream is not read on: ${action}`,
      undefined,
      index,
    );
  }

  /**
   * In a resumed request: whether the line is one delivered before the cut ('skip'), or the
   * first one past them, which ends the region ('no'); 'failed' when the end of the region
   * shows the skipping cannot be trusted.
   */
  #deliveredBefore(state: SegmentState, from: ResumePoint, record: CatalogRecord): 'skip' | 'no' | 'failed' {
    if (from.by === 'id') {
      const c = compareIds(record.id, from.id)!; // comparable: #checkOrder failed the request otherwise
      if ((from.desc ? -c : c) <= 0) {
        state.skipped++;
        state.lastSkippedId = record.id;
        return 'skip';
      }
    } else if (createdAtOf(record) === from.createdAt) {
      // At the last delivered instant: skip what was delivered, whatever the order of the ties.
      if (!from.ids.has(record.id)) return 'no';
      state.skipped++;
      return 'skip';
    }
    return this.#endRegion(state) ? 'no' : 'failed';
  }

  /**
   * The resumed request is past the records delivered before the cut. Skipping by id was exact if
   * the last line skipped was delivered before (the argument in the header), or none was skipped.
   */
  #endRegion(state: SegmentState): boolean {
    const skippedUnknown =
      state.from?.by === 'id' && state.skipped > 0 && !state.recentIds.includes(state.lastSkippedId);
    state.from = undefined;
    if (skippedUnknown) {
      this.#fail(
        'resume_not_exact',
        `the resumed stream skipped id ${showId(state.lastSkippedId)} as coming before the last delivered id ${showId(state.lastId)}, ` +
          `but it is not one of the last ${RECENT_IDS} records delivered: those left the result during the cut, and the service's id order ` +
          `cannot be checked against the toolkit's without them; ${this.#notExact(state)}`,
      );
      return false;
    }
    this.#settleExpected(state);
    return true;
  }

  /** Counts a delivered record and notes where a resume by content would start. */
  #noteDelivered(state: SegmentState, record: CatalogRecord): void {
    state.delivered++;
    state.lastId = record.id;
    if (state.rule.by === 'id') {
      const ring = state.recentIds;
      if (ring.length < RECENT_IDS) ring.push(record.id);
      else ring[(state.delivered - 1) % RECENT_IDS] = record.id;
    } else if (state.rule.by === 'createdAt') {
      const createdAt = createdAtOf(record);
      if (!Number.isSafeInteger(createdAt)) return; // #checkOrder noted that a resume would not be exact
      if (createdAt !== state.lastCreatedAt) {
        state.lastCreatedAt = createdAt as number;
        state.idsAtLastCreatedAt = new Set();
      }
      state.idsAtLastCreatedAt.add(record.id);
    }
  }

  /** What to do about a stream that cannot be resumed exactly. */
  #notExact(state: SegmentState): string {
    const other = state.rule.by === 'createdAt' ? 'id' : 'createdAt';
    return `run again${state.rule.by === 'none' ? '' : `, or sort by ${other}`}`;
  }

  /** Why a resume after `state.delivered` records would not be exact, if it would not. */
  #refusal(state: SegmentState): string | undefined {
    const rule = state.rule;
    if (rule.by === 'none') {
      return (
        `sorting ${compact(rule.sorting)} orders by a value that can change while the stream is cut: a record that moved ` +
        `or left before the cut would be repeated or lost, so the stream is not resumed. Run again, or sort by id (the default) ` +
        `or createdAt, which a cut stream resumes after the last delivered record (sort the output afterwards if the order matters)`
      );
    }
    if (state.inexact)
      return `a resume after the last delivered ${rule.by} would not be exact: the stream ${state.inexact}; ${this.#notExact(state)}`;
    if (rule.by === 'createdAt' && state.lastCreatedAt === undefined)
      return `the last delivered record has no createdAt to resume after; ${this.#notExact(state)}`;
    return undefined;
  }

  /** A 200 whose body is an HTML page (a proxy's, a login page): not a stream that was cut, so not resumed. */
  #notNdjson(line: string): void {
    this.destroy(
      notTheApi(
        this.endpoint,
        this.#state.body,
        this.#status,
        `the response is an HTML page, not NDJSON (it starts with ${JSON.stringify(truncate(line.replace(/\s+/g, ' ').trim(), 60))})`,
      ),
    );
  }

  #failBadLine(bad: { index: number; text: string }): void {
    this.#fail('malformed_line', `the line at index ${bad.index} is not valid JSON: ${truncate(bad.text, 80)}`);
  }

  #onEnd(status: number): void {
    const state = this.#state;
    if (state.badLine) {
      if (state.total === undefined && /^\uFEFF?\s*</.test(state.badLine.text))
        return this.#notNdjson(state.badLine.text);
      if (this.#lastByte === NEWLINE) return this.#failBadLine(state.badLine);
      return this.#resume(`ended in the middle of the line at index ${state.badLine.index} (truncated)`, 'short');
    }
    if (state.total === undefined) {
      if (status !== 204)
        return this.#resume(`ended without any line (status ${status}; no results is a 204)`, 'empty');
      this.#learnTotal(state, 0);
    }
    // ARCHITECTURE.md, API rules: fewer lines than `total` is an error, not success; the body was cut short, so it is resumed first.
    if (state.next < state.total!)
      return this.#resume(`ended after ${state.next} of ${state.total} lines (truncated)`, 'short');
    // Every line of the request was one delivered before the cut (or there was none).
    if (state.from && !this.#endRegion(state)) return;
    this.#pageEvent();
    if (this.#segmentIndex < this.#segments.length - 1) {
      this.#detach();
      this.#state = this.#freshState(++this.#segmentIndex);
      return this.#open();
    }
    this.finish(this.#delivered);
  }

  #onBroken(err: Error): void {
    if (this.signal.aborted) return;
    if (err.message === LINE_OVERFLOW) {
      return this.#fail(
        'line_too_long',
        `the line at index ${this.#state.next} is longer than maxLineLength ${this.#maxLineLength}`,
      );
    }
    if (this.#client.retryPolicy.isRetryableError(err))
      return this.#resume(
        err instanceof SlowBodyError ? `was stopped: ${err.detail}` : `was cut (${errorCodeOf(err)})`,
      );
    this.destroy(
      new NetworkError(
        {
          host: this.#client.host,
          endpoint: this.endpoint,
          failure: 'failed',
          errorCode: errorCodeOf(err),
          attempts: this.#resumes + 1,
        },
        { cause: err },
      ),
    );
  }

  /**
   * Asks for the segment again after a backoff, starting after the records already delivered
   * (by content, see the header); fails instead when that cannot be exact.
   */
  #resume(what: string, exhausted: StreamProblem = 'resume_exhausted'): void {
    const state = this.#state;
    const at = state.next;
    const refusal = state.delivered > 0 ? this.#refusal(state) : undefined;
    if (refusal)
      return this.#fail(
        'resume_not_exact',
        `the stream ${what} after ${state.delivered} records were delivered; ${refusal}`,
      );
    if (state.delivered > state.deliveredAtLastResume) state.resumesWithoutProgress = 0;
    state.resumesWithoutProgress++;
    state.deliveredAtLastResume = state.delivered;
    if (state.resumesWithoutProgress > this.#maxResumes) {
      const hint =
        state.rule.by === 'createdAt'
          ? ''
          : '; with sorting {createdAt: ASC} a resumed stream starts after the records already delivered, so a stream cut at the same point every time gets past it';
      return this.#fail(
        exhausted,
        `the stream ${what} (next index ${at}), ${state.resumesWithoutProgress} times in a row without progress${hint}`,
      );
    }
    this.#detach();
    this.#resumes++;
    const delayMs = this.#client.retryPolicy.backoff(state.resumesWithoutProgress);
    const label = state.segment.label ? ` (${state.segment.label})` : '';
    let how: string;
    if (state.delivered === 0) {
      // Nothing delivered: the same request again is exact whatever the sorting.
      state.body = state.segment.body;
      state.from = undefined;
      how = `asking again in ${delayMs} ms (nothing was delivered yet)`;
    } else if (state.rule.by === 'createdAt') {
      const desc = state.rule.desc;
      const createdAt = state.lastCreatedAt!; // #refusal made sure there is one
      const bound = desc ? { until: createdAt } : { from: createdAt };
      state.body = { ...state.segment.body, filter: andFilter(state.segment.body.filter, { createdAt: bound }) };
      state.from = { by: 'createdAt', createdAt, ids: new Set(state.idsAtLastCreatedAt) };
      how = `asking for the records from createdAt ${createdAt} ${desc ? 'back' : 'on'} in ${delayMs} ms (${state.delivered} delivered, ${state.idsAtLastCreatedAt.size} of them at that instant skipped)`;
    } else {
      const desc = state.rule.by === 'id' && state.rule.desc; // 'none' was refused
      state.body = state.segment.body;
      state.from = { by: 'id', id: state.lastId, desc };
      how = `asking again in ${delayMs} ms and skipping the records up to id ${showId(state.lastId)} (sorting {id: ${desc ? 'DESC' : 'ASC'}}, ${state.delivered} delivered)`;
    }
    state.next = 0;
    state.total = undefined;
    state.badLine = undefined;
    state.deliveredAtRequest = state.delivered;
    state.skipped = 0;
    state.lastSkippedId = undefined;
    state.previousKey = undefined;
    state.atPreviousKey = new Map();
    state.resumed = state.from !== undefined;
    this.events.emit('retry', {
      endpoint: this.endpoint,
      attempt: this.#resumes + 1,
      reason: `stream ${what}`,
      delayMs,
    });
    this.events.emit('info', {
      code: 'source.stream_resumed',
      message: `${this.endpoint}${label}: the stream ${what}; ${how}`,
      index: at,
    });
    sleep(delayMs, undefined, { signal: this.signal }).then(
      () => {
        if (!this.destroyed) this.#open();
      },
      () => {}, // aborted: the stream is being destroyed
    );
  }

  #pageEvent(): void {
    if (this.#sincePageEvent === 0) return;
    const { label } = this.#state.segment;
    this.events.emit('page', {
      endpoint: this.endpoint,
      records: this.#sincePageEvent,
      ...(label ? { slice: label } : {}),
    });
    this.#sincePageEvent = 0;
  }

  #fail(problem: StreamProblem, message: string, apiError?: ReturnType<typeof fromJson>, index?: number): void {
    this.destroy(
      new StreamProtocolError(
        { endpoint: this.endpoint, problem, index: index ?? this.#state.next, apiError },
        message,
      ),
    );
  }
}
