// Bench scenario: one pipeline, from YAML text, run by the same code path as
// `catalog-streams run` (parsePipelines + createRegistry + runPipeline, the
// runner's own CatalogClient) against a sandbox in another process. Measures
// the whole run (records/s, CPU, peak RSS) and reports the run summary's
// request counters; the rate-budget scenario also gets the start time of each
// request, from the client's `request` events.
//
//   node --expose-gc dist/test/bench/pipeline-run.js '{"pipeline":"...","baseDir":"/tmp/x","connection":{...}}'
import { z } from 'zod';
import { RunEvents } from '../../src/events.js';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { CatalogClient } from '../../src/client/index.js';
import { clientOptions, type ConnectionOverride, resolveConnection, runPipeline } from '../../src/pipeline/runner.js';
import { ParquetFormat, parquetFormatOptions } from '../../src/sinks/parquet/parquet-encoding.js';
import { type Measurement, measure, round, scenarioMain } from './measure.js';
import { PublicApiParquetEncoder } from './public-parquet-encoder.js';

export interface PipelineRunArgs {
  /** The pipeline file's text (YAML). */
  pipeline: string;
  /** Folder that relative output paths resolve against. */
  baseDir: string;
  /** baseUrl and credentials (apiKey and apiSecret may be comma-separated lists); rateLimit 0 lifts the client's limit. */
  connection: ConnectionOverride;
  /**
   * `public`: the parquet sink encodes with hyparquet-writer's public API (public-parquet-encoder.ts)
   * instead of ParquetEncoder, to measure our encoder against it; default `own`.
   */
  parquetWriter?: 'own' | 'public';
  /**
   * The service's rate-limit window, ms, for a sandbox started with a shorter one (`--rate-window-ms`):
   * the run's client is then made here with it (a file's connection block has no such setting).
   */
  rateLimitWindowMs?: number;
}

export interface PipelineRunResult extends Measurement {
  status: string;
  requests: number;
  retries: number;
  throttles: number;
  pages: number;
  invalid: number;
  outputs: { location: string; rows: number; bytes: number }[];
  /** Seconds from the run start to the first and to the last request start. */
  firstRequestSeconds: number;
  lastRequestSeconds: number;
  /** Request durations (sent to body read; limiter waits not included), ms: mean, median, 90th percentile. */
  requestMs: { mean: number; p50: number; p90: number };
  /** Requests on their way on average: the durations' sum over the wall time. */
  inFlight: number;
}

/**
 * Makes every parquet sink of this process encode with the public-API encoder, at the sink's
 * default options (the bench pipelines set none); the rest of the chain is unchanged.
 */
function usePublicParquetWriter(): void {
  const options = z.strictObject(parquetFormatOptions).parse({});
  ParquetFormat.prototype.createEncoder = function (this: ParquetFormat, destination) {
    return new PublicApiParquetEncoder(destination, this.schema.parquetColumns(), options);
  };
}

export async function runBenchPipeline(args: PipelineRunArgs): Promise<PipelineRunResult> {
  if (args.parquetWriter === 'public') usePublicParquetWriter();
  const [loaded] = parsePipelines(args.pipeline, createRegistry(), { file: `${args.baseDir}/bench.yml` });
  const events = new RunEvents();
  // A request event comes when the exchange ends; its start is then minus its duration.
  const starts: number[] = [];
  const durations: number[] = [];
  let t0 = 0;
  events.on('request', (e) => {
    starts.push(performance.now() - e.durationMs - t0);
    durations.push(e.durationMs);
  });
  const result = await measure(async () => {
    t0 = performance.now();
    // Made as the runner makes it (clientOptions), plus the window: part of the measured run.
    const client =
      args.rateLimitWindowMs === undefined
        ? undefined
        : new CatalogClient({
            ...clientOptions(resolveConnection(loaded!, args.connection)),
            rateLimitWindowMs: args.rateLimitWindowMs,
            events,
          });
    const summary = await runPipeline(loaded!, {
      registry: createRegistry(),
      connection: args.connection,
      events,
      fullRefresh: true,
      ...(client ? { client } : {}),
    }).finally(() => client?.close());
    return {
      records: summary.records.read,
      status: summary.status,
      requests: summary.requests,
      retries: summary.retries,
      throttles: summary.throttles,
      pages: summary.pages,
      invalid: summary.records.invalid,
      outputs: summary.outputs.map((o) => ({ location: o.location, rows: o.rows, bytes: o.bytes })),
    };
  });
  const sorted = [...durations].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  const sum = durations.reduce((a, b) => a + b, 0);
  return {
    ...result,
    requestMs: { mean: Math.round(sum / Math.max(1, durations.length)), p50: at(0.5), p90: at(0.9) },
    inFlight: round(sum / 1000 / result.wallSeconds),
    firstRequestSeconds: round(Math.min(...starts) / 1000, 3),
    lastRequestSeconds: round(Math.max(...starts) / 1000, 3),
  };
}

scenarioMain(import.meta.url, runBenchPipeline);
