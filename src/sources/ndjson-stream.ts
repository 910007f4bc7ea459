// The reader behind `products.stream` and `media.stream`: one POST per
// segment (the whole query, or one code chunk), whose NDJSON body is split into
// lines by split2 (with a maximum line length) and parsed line by line
// (`{meta: {total, index}, result}`, DESIGN §5).
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
// - a clean end before `total` lines (short; DESIGN §5: an error, not a cut).
//
// Resume: a stream that breaks off (connection reset or closed without the
// end of the chunked body, body timeout) is asked for again with the same body (the same
// stable sorting) after a backoff, through the client, so the new request
// waits for the rate limiter like any other; lines whose index was already
// delivered are skipped, so consumers see each record once and in order. The
// price is re-reading the delivered prefix (the endpoint takes no offset).
// Resumes are bounded: after `maxResumes` in a row without a new record, the
// source fails (resume_exhausted).
//
// Backpressure: when `push` says the buffer is full, the line splitter is
// paused, which pauses the HTTP body and the socket; `_read` resumes it.
import { pipeline, type Readable, type Transform } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import split2 from 'split2';
import { EXTRACT_PAGE_SIZE, type QueryRequest } from '../catalog/index.js';
import type { SourceBody } from './paged-query.js';
import { type CatalogClient, type CatalogRecord, NetworkError, type StreamEndpointName, StreamProtocolError, type StreamProblem } from '../client/index.js';
import { errorCodeOf } from '../client/retry-policy.js';
import { fromJson } from '../client/error-body.js';
import { truncate } from '../client/errors.js';
import { setOrigin } from './origin.js';
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
  /** The next `meta.index` to deliver (= records delivered so far). */
  next: number;
  total?: number;
  /** `next` when the last resume started, to tell progress from none. */
  nextAtLastResume: number;
  resumesWithoutProgress: number;
}

const SPLIT2_OVERFLOW = 'maximum buffer reached';

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
  #delivered = 0;
  #sincePageEvent = 0;
  #resumes = 0;

  constructor(client: CatalogClient, endpoint: StreamEndpointName, segments: StreamSegment[], options: NdjsonStreamOptions) {
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
    return { segment: this.#segments[index]!, next: 0, nextAtLastResume: 0, resumesWithoutProgress: 0 };
  }

  #open(): void {
    const attempt = ++this.#attempt;
    this.#client.stream(this.endpoint as 'products.stream', this.#state.segment.body as QueryRequest<'products.stream'>, { signal: this.signal, events: this.events }).then(
      (body) => {
        if (this.destroyed || attempt !== this.#attempt) return void body.destroy();
        this.#attach(body, body.statusCode, attempt);
      },
      (err: unknown) => this.destroy(err as Error),
    );
  }

  #attach(body: Readable, status: number, attempt: number): void {
    const lines = split2({ maxLength: this.#maxLineLength });
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
    if (line.length > this.#maxLineLength) {
      return this.#fail('line_too_long', `the line at index ${state.next} is ${line.length} characters long, more than maxLineLength ${this.#maxLineLength}`);
    }
    let message: { meta?: { total?: unknown; index?: unknown }; result?: unknown; error?: unknown };
    try {
      message = JSON.parse(line);
    } catch {
      return this.#fail('malformed_line', `the line at index ${state.next} is not valid JSON: ${truncate(line, 80)}`);
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
    if (!meta || !Number.isSafeInteger(meta.index) || !Number.isSafeInteger(meta.total) || !result || typeof result !== 'object') {
      return this.#fail('malformed_line', `the line at index ${state.next} is not a {meta: {total, index}, result} line: ${truncate(line, 80)}`);
    }
    const index = meta.index as number;
    const total = meta.total as number;
    if (state.total === undefined) this.#learnTotal(state, total);
    else if (total !== state.total) {
      return this.#fail('total_changed', `meta.total changed from ${state.total} to ${total} at index ${index}: the data changed during the extract; run it again`);
    }
    if (index < state.next) return; // already delivered before a resume
    if (index !== state.next || index >= total) {
      return this.#fail('index_gap', `expected meta.index ${state.next} but got ${index} (total ${total})`);
    }
    state.next++;
    const record = result as CatalogRecord;
    if (this.isRepeat(record)) return;
    setOrigin(record, { endpoint: this.endpoint, index, slice: state.segment.label });
    this.#delivered++;
    if (++this.#sincePageEvent >= EXTRACT_PAGE_SIZE) this.#pageEvent();
    if (!this.push(record)) this.#lines?.pause();
  }

  #learnTotal(state: SegmentState, total: number): void {
    state.total = total;
    this.addSegmentTotal(total, this.#segmentIndex === this.#segments.length - 1);
  }

  #onEnd(status: number): void {
    const state = this.#state;
    if (state.total === undefined) {
      if (status !== 204) return this.#fail('empty', `the service answered ${status} without any line (no results is a 204)`);
      this.#learnTotal(state, 0);
    }
    // DESIGN §5: a stream that ends cleanly with fewer lines than `total` is an error, not a cut.
    if (state.next < state.total!) return this.#fail('short', `the stream ended after ${state.next} of ${state.total} lines (next index ${state.next})`);
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
      return this.#fail('line_too_long', `the line at index ${this.#state.next} is longer than maxLineLength ${this.#maxLineLength}`);
    }
    if (this.#client.retryPolicy.isRetryableError(err)) return this.#resume(`was cut (${errorCodeOf(err)})`);
    this.destroy(new NetworkError({ host: this.#client.host, endpoint: this.endpoint, failure: 'failed', errorCode: errorCodeOf(err), attempts: this.#resumes + 1 }, { cause: err }));
  }

  /** Asks for the segment again after a backoff; delivered indexes will be skipped. */
  #resume(what: string): void {
    const state = this.#state;
    if (state.next > state.nextAtLastResume) state.resumesWithoutProgress = 0;
    state.resumesWithoutProgress++;
    state.nextAtLastResume = state.next;
    if (state.resumesWithoutProgress > this.#maxResumes) {
      return this.#fail('resume_exhausted', `the stream ${what} (next index ${state.next}), ${state.resumesWithoutProgress} times in a row without progress`);
    }
    this.#detach();
    this.#resumes++;
    const delayMs = this.#client.retryPolicy.backoff(state.resumesWithoutProgress);
    const label = state.segment.label ? ` (${state.segment.label})` : '';
    this.events.emit('retry', { endpoint: this.endpoint, attempt: this.#resumes + 1, reason: `stream ${what}`, delayMs });
    this.events.emit('info', {
      code: 'source.stream_resumed',
      message: `${this.endpoint}${label}: the stream ${what}; asking again in ${delayMs} ms and skipping the ${state.next} records already delivered`,
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
    this.events.emit('page', { endpoint: this.endpoint, records: this.#sincePageEvent, ...(label ? { slice: label } : {}) });
    this.#sincePageEvent = 0;
  }

  #fail(problem: StreamProblem, message: string, apiError?: ReturnType<typeof fromJson>): void {
    this.destroy(new StreamProtocolError({ endpoint: this.endpoint, problem, index: this.#state.next, apiError }, message));
  }
}
