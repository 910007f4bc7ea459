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
import { type ConnectionOverride, runPipeline } from '../../src/pipeline/runner.js';
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
  let t0 = 0;
  events.on('request', (e) => starts.push(performance.now() - e.durationMs - t0));
  const result = await measure(async () => {
    t0 = performance.now();
    const summary = await runPipeline(loaded!, {
      registry: createRegistry(),
      connection: args.connection,
      events,
      fullRefresh: true,
    });
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
  return {
    ...result,
    firstRequestSeconds: round(Math.min(...starts) / 1000, 3),
    lastRequestSeconds: round(Math.max(...starts) / 1000, 3),
  };
}

scenarioMain(import.meta.url, runBenchPipeline);
