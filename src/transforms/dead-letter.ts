// The invalid-record policy shared by validate and normalize-codes: what happens
// to a record that does not fit (fail the run, skip it, or write it to a
// dead-letter sink and go on), the `maxInvalid` threshold, counting, `invalid`
// events, and the life of the dead-letter sink (created on the first dead
// letter, committed when the stage ends, discarded when the run fails).
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import { z } from 'zod';
import { DataError } from '../errors.js';
import type { SinkStream, StageContext } from '../core/stage.js';
import { originOf, type RecordOrigin } from '../core/origin.js';
import { RecordTransform } from './record-transform.js';

export const INVALID_ACTIONS = ['fail', 'skip', 'dead-letter'] as const;
export type InvalidAction = (typeof INVALID_ACTIONS)[number];

const PERCENT = /^(\d+(?:\.\d+)?)%$/;

/**
 * The share of invalid records past which a run with `onInvalid: skip` or `dead-letter` fails when
 * `maxInvalid` is not set. A few bad records among many are the service's noise and go to the
 * dead letters; more than a tenth means the data does not fit the pipeline (a changed shape, a
 * wrong resource) and a green run would hide it.
 */
export const DEFAULT_MAX_INVALID = '10%';

/** A sink spec such as `{type: jsonl, path: out/rejected.jsonl}`; its own options are checked by that sink's schema. */
export const SinkSpecOption = z.looseObject({
  type: z.string().min(1).describe('Registered sink type, e.g. jsonl'),
});
export type SinkSpec = z.output<typeof SinkSpecOption>;

/** The options of the policy, spread into a stage's option schema. */
export function invalidPolicyOptions(defaultPath: string) {
  return {
    onInvalid: z
      .enum(INVALID_ACTIONS)
      .default('fail')
      .describe(
        'An invalid record fails the run (fail), is dropped and counted (skip), or is written to the dead-letter sink (dead-letter)',
      ),
    deadLetter: SinkSpecOption.default({ type: 'jsonl', path: defaultPath }).describe(
      `Sink for dead letters, created on the first one; {name} in its path is the run name, {stage} the stage type (default: jsonl at ${defaultPath})`,
    ),
    maxInvalid: z
      .union(
        [
          z.int().nonnegative(),
          z.literal('none'),
          z.string().regex(PERCENT, { message: 'maxInvalid as a string must be a percentage such as "0.5%", or none' }),
        ],
        {
          error:
            'maxInvalid must be a number of records (an integer such as 100), a percentage string such as "0.5%", or none',
        },
      )
      .optional()
      .describe(
        `Fail the run when invalid records exceed this: a count (100: fails at the 101st, checked as records arrive), a percentage of the records seen ("0.5%": checked at the end of the input; one invalid record never exceeds a percentage), or none (no limit); default with skip or dead-letter: "${DEFAULT_MAX_INVALID}"`,
      ),
  };
}

export interface InvalidPolicyOptions {
  onInvalid: InvalidAction;
  deadLetter: SinkSpec;
  maxInvalid?: number | string | undefined;
}

/** Cross-option checks of the policy, for the stage schema's superRefine. */
export function checkInvalidPolicy(options: InvalidPolicyOptions, ctx: z.RefinementCtx): void {
  if (options.maxInvalid === undefined) return;
  if (options.onInvalid === 'fail') {
    ctx.addIssue({
      code: 'custom',
      path: ['maxInvalid'],
      message:
        'maxInvalid applies to onInvalid: skip or dead-letter (with onInvalid: fail the first invalid record fails the run)',
    });
  }
  const m = typeof options.maxInvalid === 'string' ? PERCENT.exec(options.maxInvalid) : null;
  if (m && Number(m[1]) > 100)
    ctx.addIssue({ code: 'custom', path: ['maxInvalid'], message: 'maxInvalid percentage must be at most 100%' });
}

/** One reason a record was rejected; `path` is `eanGtin13`, `photos[0].displayOrder`. */
export interface RecordIssue {
  path: string;
  message: string;
  expected?: string;
  received?: string;
}

/** What a dead-letter sink receives for each rejected record. */
export interface DeadLetter {
  id: string | number | null;
  resource: string | null;
  issues: RecordIssue[];
  origin: RecordOrigin | null;
  record: unknown;
  rejectedAt: string;
  stage: string;
}

/** An invalid record with `onInvalid: fail`; the message names record, field, value and origin. */
export class InvalidRecordError extends DataError {
  readonly stage: string;
  readonly recordId: string | number | undefined;
  readonly issues: RecordIssue[];
  readonly origin: RecordOrigin | undefined;

  constructor(
    stage: string,
    message: string,
    recordId: string | number | undefined,
    issues: RecordIssue[],
    origin: RecordOrigin | undefined,
  ) {
    super(message, { code: 'data.invalid' });
    this.stage = stage;
    this.recordId = recordId;
    this.issues = issues;
    this.origin = origin;
  }
}

/** `products.query page 3, index 812`, `media.stream index 5`. */
export function describeOrigin(origin: RecordOrigin | undefined): string | undefined {
  if (!origin) return undefined;
  const parts = [
    origin.page !== undefined ? `page ${origin.page}` : '',
    origin.index !== undefined ? `index ${origin.index}` : '',
    origin.slice ? `slice ${origin.slice}` : '',
  ]
    .filter(Boolean)
    .join(', ');
  return parts ? `${origin.endpoint} ${parts}` : origin.endpoint;
}

export function recordIdOf(record: object): string | number | undefined {
  const id = (record as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}

/** `validate: product "P1" field eanGtin13: expected ..., got ... (from products.query page 3, index 812)`. */
export function rejectionMessage(
  stage: string,
  resource: string | undefined,
  record: object,
  issues: readonly RecordIssue[],
): string {
  const id = recordIdOf(record);
  const who = `${resource ?? 'record'}${id !== undefined ? ` ${JSON.stringify(id)}` : ' without id'}`;
  const [first, ...rest] = issues;
  const what = first ? `field ${first.path || '(the record)'}: ${first.message}` : 'invalid';
  const from = describeOrigin(originOf(record));
  const more = rest.length
    ? `; ${rest
        .slice(0, 2)
        .map((i) => `${i.path}: ${i.message}`)
        .join('; ')}${rest.length > 2 ? `; and ${rest.length - 2} more issues` : ''}`
    : '';
  return `${stage}: ${who} ${what}${from ? ` (from ${from})` : ''}${more}`;
}

type Threshold = { kind: 'count' | 'fraction'; max: number; label: string };

/** The threshold of a policy: the option, else the default for skip and dead-letter; none lifts it. */
function parseThreshold(value: number | string | undefined, action: InvalidAction): Threshold | undefined {
  if (value === undefined) {
    if (action === 'fail') return undefined;
    return { ...parseThreshold(DEFAULT_MAX_INVALID, action)!, label: `${DEFAULT_MAX_INVALID} (the default)` };
  }
  if (value === 'none') return undefined;
  if (typeof value === 'number') return { kind: 'count', max: value, label: String(value) };
  const m = PERCENT.exec(value);
  if (!m) throw new TypeError(`maxInvalid "${value}" is neither a count, a percentage nor none`);
  return { kind: 'fraction', max: Number(m[1]) / 100, label: value };
}

export class InvalidRecordPolicy {
  readonly action: InvalidAction;
  readonly #owner: RecordTransform;
  readonly #ctx: StageContext;
  readonly #resource: string | undefined;
  readonly #spec: SinkSpec;
  readonly #threshold: Threshold | undefined;
  #sink: SinkStream | undefined;
  #drain: Promise<void> | undefined;
  /** What exceeded the threshold; the error is made once the dead letters are committed, to name their file. */
  #failure: string | undefined;
  #failing: Promise<void> | undefined;
  #closed = false;

  constructor(owner: RecordTransform, options: InvalidPolicyOptions, ctx: StageContext, resource: string | undefined) {
    this.#owner = owner;
    this.#ctx = ctx;
    this.#resource = resource;
    this.action = options.onInvalid;
    this.#threshold = parseThreshold(options.maxInvalid, options.onInvalid);
    const path = typeof options.deadLetter.path === 'string' ? options.deadLetter.path : undefined;
    this.#spec = path
      ? { ...options.deadLetter, path: path.replaceAll('{name}', ctx.run.name).replaceAll('{stage}', owner.stage) }
      : options.deadLetter;
  }

  /** Where dead letters go: the committed location once written, else the configured path. */
  get location(): string {
    return this.#sink?.outputs[0]?.location ?? String(this.#spec.path ?? `${this.#spec.type} sink`);
  }

  /**
   * Rejects `record`: throws with `onInvalid: fail`, else counts it, reports an
   * `invalid` event, writes the dead letter (with `stored` as its record: a form every sink can
   * write, when the record itself is not), and returns null (the record is dropped).
   */
  reject(record: object, issues: RecordIssue[], stored: unknown = record): null {
    const stats = this.#owner.stats;
    stats.invalid++;
    const message = rejectionMessage(this.#owner.stage, this.#resource, record, issues);
    const id = recordIdOf(record);
    this.#ctx.events.emit('invalid', {
      stage: this.#owner.stage,
      ...(id !== undefined ? { id } : {}),
      action: this.action,
      message,
    });
    if (this.action === 'fail') throw new InvalidRecordError(this.#owner.stage, message, id, issues, originOf(record));
    if (this.action === 'dead-letter') {
      this.#write({
        id: id ?? null,
        resource: this.#resource ?? null,
        issues,
        origin: originOf(record) ?? null,
        record: stored,
        rejectedAt: new Date().toISOString(),
        stage: this.#owner.stage,
      });
      stats.deadLettered++;
    } else stats.skipped++;
    const t = this.#threshold;
    if (t?.kind === 'count' && stats.invalid > t.max && !this.#failure) {
      this.#failure = `${stats.invalid} invalid ${stats.invalid === 1 ? 'record exceeds' : 'records exceed'} maxInvalid ${t.label} (after ${stats.in} ${stats.in === 1 ? 'record' : 'records'})`;
    }
    return null;
  }

  /** Dead-letter backpressure, or the threshold failure (committed dead letters first, then rejects). */
  pending(): Promise<void> | undefined {
    if (this.#failure) {
      const failure = this.#failure;
      return (this.#failing ??= this.#close().then(() => {
        throw this.#thresholdError(failure);
      }));
    }
    return this.#drain;
  }

  /** End of input: checks a percentage threshold, commits the dead letters. */
  async finish(): Promise<void> {
    const t = this.#threshold;
    const stats = this.#owner.stats;
    // One invalid record never fails a share: on a night of 8 changed products one bad record is
    // 12.5 %, the same data the full run finds to be 0.01 %; a share judges a sample, not one record.
    if (!this.#failure && t?.kind === 'fraction' && stats.invalid > Math.max(1, t.max * stats.in)) {
      const pct = ((stats.invalid / stats.in) * 100).toFixed(2).replace(/\.?0+$/, '');
      this.#failure = `${stats.invalid} invalid records of ${stats.in} (${pct}%) exceed maxInvalid ${t.label}`;
    }
    await this.#close();
    if (this.#failure) throw this.#thresholdError(this.#failure);
  }

  /** The run failed or was stopped: a dead-letter sink that was not committed is discarded. */
  abort(): void {
    if (this.#sink && !this.#closed) {
      this.#closed = true;
      this.#sink.destroy();
    }
  }

  #thresholdError(what: string): DataError {
    const where =
      this.action === 'dead-letter'
        ? this.#owner.stats.deadLettered
          ? `the rejected records are in ${this.location}`
          : 'no dead letters were written'
        : 'the rejected records were skipped (onInvalid: skip), not kept';
    const raise = `if that many invalid records are expected, raise maxInvalid (e.g. "25%") or lift it (maxInvalid: none)`;
    return new DataError(`${this.#owner.stage}: ${what}; ${where}; ${raise}`, { code: 'data.max_invalid' });
  }

  #write(letter: DeadLetter): void {
    let sink = this.#sink;
    if (!sink) {
      sink = this.#sink = this.#ctx.createSink(this.#spec as { type: string; [option: string]: unknown });
      sink.on('error', (error) => {
        if (!this.#closed) this.#owner.failStream(error);
      });
    }
    if (!sink.write(letter) && !this.#drain) {
      this.#drain = once(sink, 'drain').then(() => {
        this.#drain = undefined;
      });
      // a sink error reaches the stream through the 'error' listener; this copy must not be unhandled
      this.#drain.catch(() => {});
    }
  }

  async #close(): Promise<void> {
    const sink = this.#sink;
    if (!sink || this.#closed) return;
    this.#closed = true;
    sink.end();
    await finished(sink);
  }
}

/**
 * A stage that checks records and rejects the invalid ones through an
 * InvalidRecordPolicy (validate, normalize-codes): the policy's backpressure,
 * threshold failure, commit and abort are wired to the stream here.
 */
export abstract class CheckingTransform extends RecordTransform {
  protected readonly policy: InvalidRecordPolicy;

  protected constructor(stage: string, ctx: StageContext, options: InvalidPolicyOptions, resource: string | undefined) {
    super(stage, ctx);
    this.policy = new InvalidRecordPolicy(this, options, ctx, resource);
  }

  protected override pending(): Promise<void> | undefined {
    return this.policy.pending();
  }

  protected override finish(): Promise<void> {
    return this.policy.finish();
  }

  protected override abort(): void {
    this.policy.abort();
  }
}
