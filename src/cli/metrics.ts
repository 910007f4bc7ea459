// Metrics of a finished run for the scheduler's monitoring: `--metrics-file`
// writes the Prometheus text format for node_exporter's textfile collector
// (atomically: a temp file in the same folder, then a rename, so the collector
// never reads half a file); `--pushgateway URL` pushes the same metrics to a
// Prometheus Pushgateway. prom-client makes the text (names, HELP/TYPE,
// label escaping), so nothing here hand-writes the format.
//
// Every value describes the last run, so they are gauges. The last success
// time must survive a failed run (that is what an alert compares with "now"):
// the file keeps the previous value of a pipeline that failed this time, and
// the Pushgateway push uses POST, which leaves metrics absent from the push
// (the last success of a failed pipeline) as they were.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Gauge, Pushgateway, Registry } from 'prom-client';
import type { RunSummary } from '../pipeline/runner.js';
import { writeFileAtomic } from '../storage/local-file.js';

const PREFIX = 'catalog_streams_';
const LAST_SUCCESS = `${PREFIX}last_success_timestamp_seconds`;

export interface RunMetricsInput {
  /** The pipeline file, for the Pushgateway grouping key. */
  file: string;
  summaries: readonly RunSummary[];
  /** Pipelines of the file that have no summary (the run never started them). */
  pipelines: readonly string[];
  exitCode: number;
  finishedAt: Date;
  /**
   * Applied to every pipeline label: a name made with a secret `${VAR}` is written redacted, as the
   * summary shows it (the run's redactor; the default keeps names as they are).
   */
  redact?: (text: string) => string;
}

/** Builds a registry holding the run's metrics; `previousSuccess` fills the last success of pipelines that failed now. */
export function runMetrics(input: RunMetricsInput, previousSuccess: ReadonlyMap<string, number> = new Map()): Registry {
  const registry = new Registry();
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new Gauge<L>({ name: `${PREFIX}${name}`, help, labelNames, registers: [registry] });
  const exit = gauge(
    'exit_code',
    'Exit status of the last run of the pipeline file the pipeline is in (0 success, 1 failed, 2 bad usage or file, 130/143 stopped by a signal)',
    ['pipeline'],
  );
  const lastRun = gauge('last_run_timestamp_seconds', 'When the last run of the pipeline finished, Unix seconds', [
    'pipeline',
  ]);
  const lastSuccess = gauge(
    'last_success_timestamp_seconds',
    'When the pipeline last finished successfully, Unix seconds',
    ['pipeline'],
  );
  const succeeded = gauge('last_run_succeeded', '1 when the last run of the pipeline succeeded, else 0', ['pipeline']);
  const duration = gauge('last_run_duration_seconds', 'Duration of the last run of the pipeline, seconds', [
    'pipeline',
  ]);
  const read = gauge('last_run_records_read', 'Records the last run read from the source', ['pipeline']);
  const written = gauge('last_run_records_written', 'Records the last run wrote, per sink type', ['pipeline', 'sink']);
  const invalid = gauge(
    'last_run_records_invalid',
    'Records the last run rejected as invalid (dead-lettered or skipped)',
    ['pipeline'],
  );
  const requests = gauge('last_run_requests', 'HTTP requests the last run made to the catalog API (retries included)', [
    'pipeline',
  ]);
  const retries = gauge('last_run_retries', 'Requests the last run retried', ['pipeline']);
  const throttles = gauge('last_run_throttled_requests', 'Requests the catalog API answered with 429 in the last run', [
    'pipeline',
  ]);

  // One series per pipeline, never an unlabelled one: two pipeline files writing into one textfile
  // directory would each export `catalog_streams_exit_code{}`, and node_exporter rejects a series
  // that two files define (the whole scrape of the textfile collector errors).
  const redact = input.redact ?? ((text: string) => text);
  const summaries = input.summaries.map((s) => ({ ...s, pipeline: redact(s.pipeline) }));
  const pipelines = input.pipelines.map(redact);
  for (const name of new Set([...pipelines, ...summaries.map((s) => s.pipeline)]))
    exit.set({ pipeline: name }, input.exitCode);
  const finished = input.finishedAt.getTime() / 1000;
  const withSummary = new Set(summaries.map((s) => s.pipeline));
  for (const s of summaries) {
    const p = { pipeline: s.pipeline };
    lastRun.set(p, Date.parse(s.finishedAt) / 1000);
    succeeded.set(p, s.status === 'succeeded' ? 1 : 0);
    duration.set(p, s.durationMs / 1000);
    read.set(p, s.records.read);
    for (const [sink, rows] of Object.entries(s.records.written)) written.set({ pipeline: s.pipeline, sink }, rows);
    invalid.set(p, s.records.invalid);
    requests.set(p, s.requests);
    retries.set(p, s.retries);
    throttles.set(p, s.throttles);
  }
  for (const name of pipelines) {
    if (withSummary.has(name)) continue;
    lastRun.set({ pipeline: name }, finished);
    succeeded.set({ pipeline: name }, 0);
  }
  for (const name of new Set([...pipelines, ...withSummary])) {
    const s = summaries.find((x) => x.pipeline === name);
    if (s?.status === 'succeeded') lastSuccess.set({ pipeline: name }, Date.parse(s.finishedAt) / 1000);
    else if (previousSuccess.has(name)) lastSuccess.set({ pipeline: name }, previousSuccess.get(name)!);
  }
  return registry;
}

/** The last success time per pipeline from a metrics file this module wrote before (none when absent). */
export async function readLastSuccess(file: string): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  const text = await readFile(file, 'utf8').catch(() => '');
  // Our own file: `name{pipeline="..."} value`, label values escaped by prom-client (\\, \", \n).
  const line = new RegExp(`^${LAST_SUCCESS}\\{pipeline="((?:[^"\\\\]|\\\\.)*)"\\} (\\S+)$`, 'gm');
  for (const m of text.matchAll(line)) {
    const name = m[1]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    const value = Number(m[2]);
    if (Number.isFinite(value)) found.set(name, value);
  }
  return found;
}

/** What a metrics file's name or earlier content says is wrong with where it is written. */
export interface MetricsFileProblems {
  /** Pipelines the file held before that this pipeline file does not have: another file's metrics, now replaced. */
  replaced: string[];
  /** The name does not end in `.prom`: node_exporter's textfile collector skips it. */
  notProm: boolean;
}

/**
 * Writes the metrics file atomically (temp file beside it, then rename; StorageError when it fails)
 * and returns what the caller should warn about: each pipeline file needs a file of its own (one
 * file holds one run's metrics, so a second pipeline file writing to it replaces the first one's).
 */
export async function writeMetricsFile(file: string, input: RunMetricsInput): Promise<MetricsFileProblems> {
  const previous = await readLastSuccess(file);
  const registry = runMetrics(input, previous);
  await writeFileAtomic(file, await registry.metrics());
  const ours = new Set([...input.pipelines, ...input.summaries.map((s) => s.pipeline)]);
  return { replaced: [...previous.keys()].filter((name) => !ours.has(name)), notProm: !file.endsWith('.prom') };
}

/** Pushes the metrics to a Pushgateway (POST: job `catalog-streams`, grouped by the pipeline file's name). */
export async function pushMetrics(gatewayUrl: string, input: RunMetricsInput): Promise<void> {
  const registry = runMetrics(input);
  const gateway = new Pushgateway(gatewayUrl, { timeout: 10_000 }, registry);
  try {
    await gateway.pushAdd({ jobName: 'catalog-streams', groupings: { pipeline_file: path.basename(input.file) } });
  } catch (err) {
    throw new Error(
      `pushing metrics to the Pushgateway at ${new URL(gatewayUrl).host} failed: ${(err as Error).message}`,
      { cause: err },
    );
  }
}
