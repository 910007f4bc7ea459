// Fault injection for tests and demos, all off by default. Every decision is
// deterministic: request-level faults draw from (seed, request counter),
// invalid records from (seed, record index), so a run with the same seed and
// the same request sequence fails the same way. Faults limited by `times`
// (stream cuts, bad lines, short streams) are used up when they happen, so the
// client's retry succeeds and recovery can be tested.
import { z } from 'zod';
import { hash32, unitFloat } from './random.js';
import { SALT } from './timeline.js';

const oneOff = <T extends z.ZodRawShape>(shape: T) =>
  z.strictObject({
    ...shape,
    times: z
      .number()
      .int()
      .nonnegative()
      .or(z.literal(Infinity))
      .default(1)
      .describe('how many streams get it (default 1)'),
  });

export const SandboxFaultsSchema = z.strictObject({
  /** Fraction of API requests answered with one of `errorStatuses` instead of a result. */
  errorRate: z.number().min(0).max(1).optional(),
  errorStatuses: z.array(z.number().int().min(400).max(599)).min(1).optional(),
  /** Delay added before answering every API request (so a client's in-flight concurrency matters). */
  latencyMs: z.number().nonnegative().optional(),
  latencyJitterMs: z.number().nonnegative().optional(),
  /** After `after` API requests, the next `count` are answered 429 (once). */
  tooManyRequests: z
    .strictObject({ after: z.number().int().nonnegative(), count: z.number().int().positive() })
    .optional(),
  /** Fraction of API requests whose connection is destroyed without an answer. */
  resetRate: z.number().min(0).max(1).optional(),
  /** Streams end abruptly (connection closed mid-body) after this many lines. */
  streamCut: oneOff({ afterLines: z.number().int().nonnegative() }).optional(),
  /** The line at this index is not valid JSON; the stream goes on. */
  malformedLine: oneOff({ atIndex: z.number().int().nonnegative() }).optional(),
  /** At this index a `{"error":{...}}` line is sent and the stream ends. */
  errorLine: oneOff({ atIndex: z.number().int().nonnegative() }).optional(),
  /** The stream ends cleanly (a proper end of the chunked body) in the middle of the line after `afterLines` lines. */
  streamTruncated: oneOff({ afterLines: z.number().int().nonnegative() }).optional(),
  /** A page body ends cleanly (chunked, no Content-Length) half-way through its JSON. */
  truncatedPage: z
    .strictObject({
      times: z
        .number()
        .int()
        .nonnegative()
        .or(z.literal(Infinity))
        .default(1)
        .describe('how many pages get it (default 1)'),
    })
    .optional(),
  /** The stream ends cleanly but `dropLast` lines short of `meta.total`. */
  shortStream: oneOff({ dropLast: z.number().int().positive() }).optional(),
  /** Fraction of product and media records served broken (schema-invalid), always the same records. */
  invalidRecordRate: z.number().min(0).max(1).optional(),
  /** Endpoint names (`products.query`, `media.stream`, ...) the faults apply to; default all. */
  endpoints: z.array(z.string()).optional(),
});
export type SandboxFaults = z.input<typeof SandboxFaultsSchema>;
type Faults = z.output<typeof SandboxFaultsSchema>;

export interface FaultStats {
  errors: number;
  resets: number;
  tooManyRequests: number;
  delayed: number;
  streamCuts: number;
  malformedLines: number;
  errorLines: number;
  shortStreams: number;
  truncatedStreams: number;
  truncatedPages: number;
  invalidRecords: number;
}

export type RequestFault =
  { kind: 'none' } | { kind: 'reset' } | { kind: 'status'; status: number } | { kind: 'tooManyRequests' };

/** What to do to one stream response. Indexes are positions in the stream. */
export interface StreamPlan {
  cutAfter?: number;
  malformedAt?: number;
  errorAt?: number;
  /** Number of lines to send in all (fewer than total). */
  sendOnly?: number;
  /** After this many lines, half of the next one, then a clean end. */
  truncateAfter?: number;
}

const DRAW = { error: 1, errorStatus: 2, reset: 3, latency: 4 } as const;
export const RESOURCE_SALT = { product: 1, media: 2 } as const;

export function emptyFaultStats(): FaultStats {
  return {
    errors: 0,
    resets: 0,
    tooManyRequests: 0,
    delayed: 0,
    streamCuts: 0,
    malformedLines: 0,
    errorLines: 0,
    shortStreams: 0,
    truncatedStreams: 0,
    truncatedPages: 0,
    invalidRecords: 0,
  };
}

export class FaultInjector {
  #faults: Faults = {};
  #requests = 0;
  #burstLeft = 0;
  #remaining = { streamCut: 0, malformedLine: 0, errorLine: 0, shortStream: 0, streamTruncated: 0, truncatedPage: 0 };
  readonly stats: FaultStats = emptyFaultStats();

  constructor(
    private readonly seed: number,
    faults: SandboxFaults = {},
  ) {
    this.set(faults);
  }

  /** Replaces the configuration and restarts counters (so `times` and bursts apply afresh). */
  set(faults: SandboxFaults): void {
    this.#faults = SandboxFaultsSchema.parse(faults);
    this.#requests = 0;
    this.#burstLeft = this.#faults.tooManyRequests?.count ?? 0;
    this.#remaining = {
      streamCut: this.#faults.streamCut?.times ?? 0,
      malformedLine: this.#faults.malformedLine?.times ?? 0,
      errorLine: this.#faults.errorLine?.times ?? 0,
      shortStream: this.#faults.shortStream?.times ?? 0,
      streamTruncated: this.#faults.streamTruncated?.times ?? 0,
      truncatedPage: this.#faults.truncatedPage?.times ?? 0,
    };
  }

  get config(): SandboxFaults {
    return this.#faults;
  }

  #applies(endpoint: string): boolean {
    return !this.#faults.endpoints || this.#faults.endpoints.includes(endpoint);
  }

  /** Decides the fate of the next API request to `endpoint`, and its added latency. */
  onRequest(endpoint: string): { fault: RequestFault; delayMs: number } {
    if (!this.#applies(endpoint)) return { fault: { kind: 'none' }, delayMs: 0 };
    const n = this.#requests++;
    const f = this.#faults;
    const draw = (what: number) => unitFloat(this.seed, SALT.faults, n, what);
    const delayMs = (f.latencyMs ?? 0) + (f.latencyJitterMs ?? 0) * draw(DRAW.latency);
    if (delayMs > 0) this.stats.delayed++;
    if (f.tooManyRequests && n >= f.tooManyRequests.after && this.#burstLeft > 0) {
      this.#burstLeft--;
      this.stats.tooManyRequests++;
      return { fault: { kind: 'tooManyRequests' }, delayMs };
    }
    if (f.resetRate && draw(DRAW.reset) < f.resetRate) {
      this.stats.resets++;
      return { fault: { kind: 'reset' }, delayMs };
    }
    if (f.errorRate && draw(DRAW.error) < f.errorRate) {
      const statuses = f.errorStatuses ?? [500, 503];
      this.stats.errors++;
      return {
        fault: { kind: 'status', status: statuses[hash32(this.seed, n, DRAW.errorStatus) % statuses.length]! },
        delayMs,
      };
    }
    return { fault: { kind: 'none' }, delayMs };
  }

  /** The faults of one stream of `total` lines; a fault is used up only when it can happen in this stream. */
  planStream(endpoint: string, total: number): StreamPlan {
    const plan: StreamPlan = {};
    if (!this.#applies(endpoint)) return plan;
    const f = this.#faults;
    if (f.streamCut && this.#remaining.streamCut > 0 && f.streamCut.afterLines < total) {
      this.#remaining.streamCut--;
      this.stats.streamCuts++;
      plan.cutAfter = f.streamCut.afterLines;
    }
    if (f.malformedLine && this.#remaining.malformedLine > 0 && f.malformedLine.atIndex < total) {
      this.#remaining.malformedLine--;
      this.stats.malformedLines++;
      plan.malformedAt = f.malformedLine.atIndex;
    }
    if (f.errorLine && this.#remaining.errorLine > 0 && f.errorLine.atIndex < total) {
      this.#remaining.errorLine--;
      this.stats.errorLines++;
      plan.errorAt = f.errorLine.atIndex;
    }
    if (f.streamTruncated && this.#remaining.streamTruncated > 0 && f.streamTruncated.afterLines < total) {
      this.#remaining.streamTruncated--;
      this.stats.truncatedStreams++;
      plan.truncateAfter = f.streamTruncated.afterLines;
    }
    if (f.shortStream && this.#remaining.shortStream > 0 && total > 0) {
      this.#remaining.shortStream--;
      this.stats.shortStreams++;
      plan.sendOnly = Math.max(0, total - f.shortStream.dropLast);
    }
    return plan;
  }

  /** Whether this page answer of `endpoint` is to end half-way through its body (used up when it says yes). */
  truncatesPage(endpoint: string): boolean {
    if (!this.#applies(endpoint) || !this.#faults.truncatedPage || this.#remaining.truncatedPage <= 0) return false;
    this.#remaining.truncatedPage--;
    this.stats.truncatedPages++;
    return true;
  }

  /** Whether record `index` of a resource is served broken (always the same records for a seed). */
  isInvalid(resource: keyof typeof RESOURCE_SALT, index: number): boolean {
    const rate = this.#faults.invalidRecordRate;
    return !!rate && unitFloat(this.seed, SALT.invalid, RESOURCE_SALT[resource], index) < rate;
  }

  /**
   * Breaks a record's JSON text so it fails its schema but stays valid JSON:
   * products get status "bogus" or a 14-digit eanGtin13 (integer or string); photos and frontals a
   * photoType "bogus"; links a null url.
   */
  corrupt(resource: keyof typeof RESOURCE_SALT, index: number, json: string): string {
    this.stats.invalidRecords++;
    if (resource === 'product') {
      if (index % 2 === 1 && /"eanGtin13":\d+/.test(json))
        return json.replace(/"eanGtin13":\d+/, '"eanGtin13":12345678901234');
      // The live profiles send codes as digit strings: 14 digits are still not an EAN-13.
      if (index % 2 === 1 && /"eanGtin13":"\d+"/.test(json))
        return json.replace(/"eanGtin13":"\d+"/, '"eanGtin13":"12345678901234"');
      return json.replace(/^\{"id":("[^"]*"),"status":"[a-z_]+"/, '{"id":$1,"status":"bogus"');
    }
    if (json.includes('"photoType":"')) return json.replace(/"photoType":"[a-z_]+"/, '"photoType":"bogus"');
    return json.replace('"url":"', '"url":null,"brokenUrl":"');
  }
}
