// The base of every catalog source: an object-mode Readable that knows its
// endpoint, exposes `total` once it is known (and emits `'meta'` `{total}`
// then, and again only if a resumed stream corrects it), reports to the run's
// events, and owns an AbortController tied to the run's signal so that
// destroying the stream, or aborting the run, cancels the requests it has in
// flight or waiting for the rate limiter.
//
// It also keeps what the paged and the stream reader share: the running total
// over segments (chunks, windows), and dropping records already delivered
// when code chunks can overlap (see code-chunks.ts).
import { setMaxListeners } from 'node:events';
import { Readable } from 'node:stream';
import { replacedFields } from '../client/utf8.js';
import { AbortedError } from '../errors.js';
import { RunEvents } from '../events.js';

export interface SourceRunOptions {
  /** The run's events (`total`, `page`, `info`); the client's bus when absent. */
  events?: RunEvents;
  /** The run's signal: aborting it destroys the source with an AbortedError. */
  signal?: AbortSignal;
  /**
   * When the run started (default: when the source is made). Query sources read what existed the
   * second before (read-window.ts).
   */
  startedAt?: Date;
}

/** Records with invalid UTF-8 named one by one in warnings; the rest are counted. */
const MAX_UTF8_WARNINGS = 20;

export interface SourceMeta {
  /** Records the source delivers in all. */
  total: number;
}

export abstract class CatalogSource extends Readable {
  readonly endpoint: string;
  protected readonly events: RunEvents;
  /** Aborted when the source is destroyed or the run's signal aborts. */
  protected readonly controller = new AbortController();
  #total: number | undefined;
  /** Sum of the totals of the segments opened so far. */
  #knownTotal = 0;
  /** Ids delivered, when code chunks may overlap. */
  readonly #seen: Set<unknown> | undefined;
  #duplicates = 0;
  /** Records the service returned although they carry none of the searched codes (prefix matches). */
  readonly #keep: ((record: Record<string, unknown>) => boolean) | undefined;
  #unrelated = 0;
  /** Records whose bytes were not valid UTF-8 (repaired with U+FFFD by decoding). */
  #invalidUtf8 = 0;
  readonly #runSignal: AbortSignal | undefined;
  readonly #onRunAbort = () =>
    this.destroy(new AbortedError(`${this.endpoint}: the source was aborted`, { cause: this.#runSignal?.reason }));

  constructor(
    endpoint: string,
    run: SourceRunOptions & {
      events: RunEvents;
      dedupe?: boolean;
      keep?: (record: Record<string, unknown>) => boolean;
    },
  ) {
    super({ objectMode: true });
    // Every request on its way or waiting for a key listens to this signal, at a few layers
    // (the key's limiter, the socket pool): up to the client's sockets (64 at most) plus one per
    // key when the budget needs them (budget-in-flight.ts), and a lookup's or a probe's beside
    // them, past Node's warning at 10.
    setMaxListeners(256, this.controller.signal);
    this.endpoint = endpoint;
    this.events = run.events;
    this.#seen = run.dedupe ? new Set() : undefined;
    this.#keep = run.keep;
    this.#runSignal = run.signal;
    if (run.signal?.aborted) queueMicrotask(this.#onRunAbort);
    else run.signal?.addEventListener('abort', this.#onRunAbort, { once: true });
  }

  /** Records this source delivers in all; undefined until known. */
  get total(): number | undefined {
    return this.#total;
  }

  protected get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Sets the exact total (once) and announces it. */
  protected setTotal(total: number): void {
    if (this.#total !== undefined) return;
    this.#total = total;
    this.emit('meta', { total } satisfies SourceMeta);
    this.events.emit('total', { endpoint: this.endpoint, total, capped: false });
  }

  /** A lower bound or estimate while the exact total is not known yet (progress only). */
  protected announceEstimate(total: number): void {
    if (this.#total === undefined) this.events.emit('total', { endpoint: this.endpoint, total, capped: true });
  }

  /**
   * A segment's total became known. After the last segment the sum is exact,
   * unless repeats across chunks are dropped (then it is exact at the end).
   */
  protected addSegmentTotal(total: number, last: boolean): void {
    this.#knownTotal += total;
    if (last && !this.#seen && !this.#keep) this.setTotal(this.#knownTotal);
    else this.announceEstimate(this.#knownTotal);
  }

  /**
   * A segment's count changed after it was announced (a cut stream resumed while records left or
   * arrived): the running total moves by `delta`, and an exact total already announced is
   * corrected (`'meta'` and the `total` event again), so `total` stays what the source delivers.
   */
  protected reviseSegmentTotal(delta: number): void {
    if (delta === 0) return;
    this.#knownTotal += delta;
    if (this.#total === undefined) return this.announceEstimate(this.#knownTotal);
    this.#total = this.#knownTotal;
    this.emit('meta', { total: this.#total } satisfies SourceMeta);
    this.events.emit('total', { endpoint: this.endpoint, total: this.#total, capped: false });
  }

  /**
   * Whether a record the service sent (and the reader counted against its total) is left out: a
   * prefix match of a searched code that carries none of them (`keep`, see exactCodeTest), or,
   * with overlapping code chunks, an id delivered already (else it is remembered).
   */
  protected isRepeat(record: { id?: unknown }): boolean {
    if (this.#keep && !this.#keep(record as Record<string, unknown>)) {
      this.#unrelated++;
      return true;
    }
    if (!this.#seen || record.id === undefined) return false;
    if (this.#seen.has(record.id)) {
      this.#duplicates++;
      return true;
    }
    this.#seen.add(record.id);
    return false;
  }

  /**
   * A record whose bytes were not valid UTF-8: decoding replaced them with U+FFFD, so its text is
   * not what the service meant. It goes on as it is (nothing better can be made of it), counted
   * and named in a warning (the first ones each; the count when the source ends).
   */
  protected noteInvalidUtf8(record: object, where: string): void {
    if (++this.#invalidUtf8 > MAX_UTF8_WARNINGS) return;
    const id = (record as { id?: unknown }).id;
    const fields = replacedFields(record);
    this.events.emit('warning', {
      code: 'source.invalid_utf8',
      message:
        `${this.endpoint}: record ${id === undefined ? 'without id' : JSON.stringify(id)} (${where}) had bytes that are not valid UTF-8` +
        ` in ${fields.length ? `field ${fields.join(', ')}` : 'its JSON'}; they were replaced by U+FFFD (�) and the record kept` +
        (this.#invalidUtf8 === MAX_UTF8_WARNINGS ? `; further records with invalid UTF-8 are counted, not named` : ''),
    });
  }

  /** Every record was delivered: report dropped repeats, settle the total, end the stream. */
  protected finish(delivered: number): void {
    if (this.#invalidUtf8 > 0) {
      this.events.emit('warning', {
        code: 'source.invalid_utf8',
        message: `${this.endpoint}: ${this.#invalidUtf8} record(s) had bytes that are not valid UTF-8, replaced by U+FFFD (the service's data or encoding is broken there)`,
      });
    }
    if (this.#duplicates > 0) {
      this.events.emit('info', {
        code: 'source.duplicates_dropped',
        message: `${this.endpoint}: ${this.#duplicates} records matched more than one code chunk and were delivered once`,
        duplicates: this.#duplicates,
      });
    }
    if (this.#unrelated > 0) {
      this.events.emit('info', {
        code: 'source.unrelated_dropped',
        message: `${this.endpoint}: ${this.#unrelated} records the service returned for a code it also matches by prefix (cipOrAcl7) carry none of the searched codes and were left out`,
        unrelated: this.#unrelated,
      });
    }
    this.setTotal(delivered);
    this.push(null);
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.#runSignal?.removeEventListener('abort', this.#onRunAbort);
    this.controller.abort(err ?? new AbortedError(`${this.endpoint}: the source was closed`));
    this.onDestroy();
    callback(err);
  }

  /** Releases what the subclass holds (bodies, iterators). */
  protected onDestroy(): void {}
}
