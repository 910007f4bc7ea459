// The reader behind `products.stream` and `media.stream`: one POST per
// segment (the whole query, or one code chunk), whose NDJSON body is split into
// lines by split2 (with a maximum line length) and parsed line by line
// (`{meta: {total, index}, result}`, ARCHITECTURE.md, API rules).
//
// Contract checks, each a StreamProtocolError naming the index:
// - a line that is not JSON, or not of that shape (malformed_line);
// - a line longer than maxLineLength (line_too_long) — split2 only bounds the
//   unfinished tail of its buffer, so complete lines are measured here too;
// - `{"error": {...}}` (error_line), with what the line said;
// - `meta.index` not the next one (index_gap), or `meta.total` changing
//   (total_changed: the data moved, indexes no longer line up);
// - a 200 without any line (empty: "no results" is a 204).
// 204 is an empty result.
//
// Truncation is a transient fault, like a cut: a body that ends cleanly in the
// middle of a line (the last piece has no newline and is not JSON), or at a
// line boundary before `total` lines, is resumed; only when resuming does not
// help does it fail (short).
//
// Resume: a stream that breaks off (connection reset or closed without the
// end of the chunked body, body timeout, a truncated body) is asked for again
// after a backoff, through the client, so the new request waits for the rate
// limiter like any other. Where the sorting allows it (createdAt), the new
// request starts after what was delivered: `createdAt >= the last delivered
// record's` (<= for DESC), skipping the ids already delivered at that instant,
// so a stream cut at the same byte every time still gets past the cut. Otherwise
// (id and the other sortings: the API has no filter for "after this id") the
// same body is asked for again and the indexes already delivered are skipped;
// the price is re-reading the delivered prefix. Consumers see each record once
// and in order. Resumes are bounded: after `maxResumes` in a row without a new
// record, the source fails (resume_exhausted, or short).
//
// Backpressure: when `push` says the buffer is full, the line splitter is
// paused, which pauses the HTTP body and the socket; `_read` resumes it.
import { PassThrough, pipeline, type Readable, type Transform } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import split2 from 'split2';
import { EXTRACT_PAGE_SIZE, type QueryRequest } from '../catalog/index.js';
import type { SourceBody } from './paged-query.js';
import { andFilter } from './sliced-products-query.js';
import {
  type CatalogClient,
  type CatalogRecord,
  NetworkError,
  type StreamEndpointName,
  StreamProtocolError,
  type StreamProblem,
} from '../client/index.js';
import { errorCodeOf } from '../client/retry-policy.js';
import { fromJson } from '../client/error-body.js';
import { truncate } from '../client/errors.js';
import { setOrigin } from '../core/origin.js';
import { CatalogSource, type SourceRunOptions } from './source-stream.js';

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
}

interface SegmentState {
  segment: StreamSegment;
  /** The body of the current request: the segment's, or one starting after what was delivered. */
  body: SourceBody;
  /** The next `meta.index` to deliver in the current request's stream. */
  next: number;
  /** `meta.total` of the current request's stream. */
  total?: number;
  /** Whether the segment's total was announced (its first stream's). */
  announced: boolean;
  /** Records of the segment delivered over all its requests. */
  delivered: number;
  /** `delivered` when the last resume started, to tell progress from none. */
  deliveredAtLastResume: number;
  resumesWithoutProgress: number;
  /** createdAt sorting: the last delivered record's createdAt, and the ids delivered at that instant. */
  lastCreatedAt?: number;
  idsAtLastCreatedAt: Set<unknown>;
  /** Ids a resumed request skips (delivered at its first instant before the resume). */
  skipIds: Set<unknown>;
  /** A line that was not JSON, held until it is known whether it was the unterminated end of the body. */
  badLine?: { index: number; text: string };
}

const SPLIT2_OVERFLOW = 'maximum buffer reached';
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
      body: segment.body,
      next: 0,
      announced: false,
      delivered: 0,
      deliveredAtLastResume: 0,
      resumesWithoutProgress: 0,
      idsAtLastCreatedAt: new Set(),
      skipIds: new Set(),
    };
  }

  #open(): void {
    const attempt = ++this.#attempt;
    this.#lastByte = undefined;
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
    const lines = split2({ maxLength: this.#maxLineLength });
    // Notes the last byte that went by: a body that ends without a newline ended mid-line.
    const tap = new PassThrough();
    tap.on('data', (chunk: Buffer) => {
      if (attempt === this.#attempt && chunk.length > 0) this.#lastByte = chunk[chunk.length - 1];
    });
    this.#body = body;
    this.#lines = lines;
    pipeline(body, tap, lines, (err) => {
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
    if (line.length > this.#maxLineLength) {
      return this.#fail(
        'line_too_long',
        `the line at index ${state.next} is ${line.length} characters long, more than maxLineLength ${this.#maxLineLength}`,
      );
    }
    let message: { meta?: { total?: unknown; index?: unknown }; result?: unknown; error?: unknown };
    try {
      message = JSON.parse(line);
    } catch {
      // A line followed by another is malformed; the last piece of a body that ends without a newline was cut off.
      state.badLine = { index: state.next, text: line };
      return;
    }
    if (message && typeof message === 'object' && message.error !== undefined && message.result === undefined) {
      const said = fromJson(message);
      return this.#fail(
        'error_line',
        `the service reported an error in the stream at index ${state.next}: ${[said.status, said.apiCode, said.apiMessage].filter((x) => x !== undefined).join(' ') || 'no details'}`,
        said,
      );
    }
    const meta = message?.meta;
    const result = message?.result;
    if (
      !meta ||
      !Number.isSafeInteger(meta.index) ||
      !Number.isSafeInteger(meta.total) ||
      !result ||
      typeof result !== 'object'
    ) {
      return this.#fail(
        'malformed_line',
        `the line at index ${state.next} is not a {meta: {total, index}, result} line: ${truncate(line, 80)}`,
      );
    }
    const index = meta.index as number;
    const total = meta.total as number;
    if (state.total === undefined) this.#learnTotal(state, total);
    else if (total !== state.total) {
      return this.#fail(
        'total_changed',
        `meta.total changed from ${state.total} to ${total} at index ${index}: the data changed during the extract; run it again`,
      );
    }
    if (index < state.next) return; // already delivered before a resume
    if (index !== state.next || index >= total) {
      return this.#fail('index_gap', `expected meta.index ${state.next} but got ${index} (total ${total})`);
    }
    state.next++;
    const record = result as CatalogRecord;
    if (state.skipIds.size > 0 && state.skipIds.has(record.id)) return; // delivered before the resume
    this.#noteDelivered(state, record);
    if (this.isRepeat(record)) return;
    setOrigin(record, { endpoint: this.endpoint, index, slice: state.segment.label });
    this.#delivered++;
    if (++this.#sincePageEvent >= EXTRACT_PAGE_SIZE) this.#pageEvent();
    if (!this.push(record)) this.#lines?.pause();
  }

  #learnTotal(state: SegmentState, total: number): void {
    state.total = total;
    if (state.announced) return;
    state.announced = true;
    this.addSegmentTotal(total, this.#segmentIndex === this.#segments.length - 1);
  }

  /** Counts a delivered record and, under a createdAt sorting, where a resume can start. */
  #noteDelivered(state: SegmentState, record: CatalogRecord): void {
    state.delivered++;
    if (!this.#resumeKey(state)) return;
    const createdAt = (record.meta as { createdAt?: unknown } | undefined)?.createdAt;
    if (!Number.isSafeInteger(createdAt)) {
      state.lastCreatedAt = undefined;
      return;
    }
    if (createdAt !== state.lastCreatedAt) {
      state.lastCreatedAt = createdAt as number;
      state.idsAtLastCreatedAt = new Set();
    }
    state.idsAtLastCreatedAt.add(record.id);
  }

  /** The direction of a createdAt sorting (a resume can start after what was delivered), else undefined. */
  #resumeKey(state: SegmentState): 'ASC' | 'DESC' | undefined {
    const sorting = state.segment.body.sorting as Record<string, unknown> | undefined;
    const direction = sorting?.createdAt;
    return direction === 'ASC' || direction === 'DESC' ? direction : undefined;
  }

  #failBadLine(bad: { index: number; text: string }): void {
    this.#fail('malformed_line', `the line at index ${bad.index} is not valid JSON: ${truncate(bad.text, 80)}`);
  }

  #onEnd(status: number): void {
    const state = this.#state;
    if (state.badLine) {
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
    if (err.message === SPLIT2_OVERFLOW) {
      return this.#fail(
        'line_too_long',
        `the line at index ${this.#state.next} is longer than maxLineLength ${this.#maxLineLength}`,
      );
    }
    if (this.#client.retryPolicy.isRetryableError(err)) return this.#resume(`was cut (${errorCodeOf(err)})`);
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
   * Asks for the segment again after a backoff: from after the last delivered record when the
   * sorting allows it, else the same body with its delivered indexes skipped.
   */
  #resume(what: string, exhausted: StreamProblem = 'resume_exhausted'): void {
    const state = this.#state;
    if (state.delivered > state.deliveredAtLastResume) state.resumesWithoutProgress = 0;
    state.resumesWithoutProgress++;
    state.deliveredAtLastResume = state.delivered;
    if (state.resumesWithoutProgress > this.#maxResumes) {
      const hint = this.#resumeKey(state)
        ? ''
        : '; with sorting {createdAt: ASC} a resumed stream starts after the records already delivered, so a stream cut at the same point every time gets past it';
      return this.#fail(
        exhausted,
        `the stream ${what} (next index ${state.next}), ${state.resumesWithoutProgress} times in a row without progress${hint}`,
      );
    }
    this.#detach();
    this.#resumes++;
    const delayMs = this.#client.retryPolicy.backoff(state.resumesWithoutProgress);
    const label = state.segment.label ? ` (${state.segment.label})` : '';
    const direction = this.#resumeKey(state);
    let how: string;
    if (direction && state.lastCreatedAt !== undefined) {
      const bound = direction === 'ASC' ? { from: state.lastCreatedAt } : { until: state.lastCreatedAt };
      state.body = { ...state.segment.body, filter: andFilter(state.segment.body.filter, { createdAt: bound }) };
      state.skipIds = state.idsAtLastCreatedAt;
      state.idsAtLastCreatedAt = new Set(state.skipIds);
      state.next = 0;
      state.total = undefined;
      how = `asking for the records from createdAt ${state.lastCreatedAt} ${direction === 'ASC' ? 'on' : 'back'} in ${delayMs} ms (${state.delivered} delivered, ${state.skipIds.size} of them at that instant skipped)`;
    } else {
      how = `asking again in ${delayMs} ms and skipping the ${state.next} records already delivered`;
    }
    state.badLine = undefined;
    this.events.emit('retry', {
      endpoint: this.endpoint,
      attempt: this.#resumes + 1,
      reason: `stream ${what}`,
      delayMs,
    });
    this.events.emit('info', {
      code: 'source.stream_resumed',
      message: `${this.endpoint}${label}: the stream ${what}; ${how}`,
      index: state.next,
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

  #fail(problem: StreamProblem, message: string, apiError?: ReturnType<typeof fromJson>): void {
    this.destroy(
      new StreamProtocolError({ endpoint: this.endpoint, problem, index: this.#state.next, apiError }, message),
    );
  }
}
