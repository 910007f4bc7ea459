// What `catalog-streams run` reports once its pipelines ended: the summaries on stderr, the summary
// file, each pipeline's run history and the metrics (textfile, Pushgateway). They report the run and
// never change its outcome: a committed run that exits non-zero is retried and delivers its records
// twice, so a report that cannot be written is logged as an error and the exit code stays.
import type { LoadedPipeline } from '../pipeline/loader.js';
import type { Redactor } from '../pipeline/env.js';
import { appendHistory } from '../pipeline/run-history.js';
import type { RunSummary } from '../pipeline/runner.js';
import { writeFileAtomic } from '../storage/local-file.js';
import type { CliIO } from './io.js';
import { type MetricsFileProblems, type RunMetricsInput, pushMetrics, writeMetricsFile } from './metrics.js';
import type { ProgressHandle } from './progress.js';
import { formatSummaryText } from './summary.js';

/** How a run ended, as every report tells it. */
export interface RunOutcome {
  summaries: RunSummary[];
  exitCode: number;
  /** Pipelines stopped because the reader closed stdout (`run ... | head`): not a failure of theirs. */
  readerStopped: ReadonlySet<string>;
}

export interface RunReportOptions {
  /** The pipeline file, as the metrics label it. */
  file: string;
  json: boolean;
  /** Warnings are written as they happen (the log level shows them): the text summary does not repeat them. */
  warningsShown?: boolean;
  summaryFile?: string;
  metricsFile?: string;
  pushgateway?: string;
}

export class RunReports {
  readonly #pipelines: readonly LoadedPipeline[];
  readonly #names: string[];
  readonly #io: CliIO;
  readonly #progress: ProgressHandle;
  readonly #redactor: Redactor;
  readonly #options: RunReportOptions;

  constructor(
    pipelines: readonly LoadedPipeline[],
    io: CliIO,
    progress: ProgressHandle,
    redactor: Redactor,
    options: RunReportOptions,
  ) {
    this.#pipelines = pipelines;
    this.#names = pipelines.map((p) => p.config.name);
    this.#io = io;
    this.#progress = progress;
    this.#redactor = redactor;
    this.#options = options;
  }

  async write(outcome: RunOutcome): Promise<void> {
    this.#printSummaries(outcome);
    await this.#writeSummaryFile(outcome);
    await this.#appendHistory(outcome);
    await this.#publishMetrics(outcome);
  }

  // The summary is the run's result: written at every log level.
  #printSummaries({ summaries, readerStopped, exitCode }: RunOutcome): void {
    for (const s of summaries) {
      const line = this.#options.json
        ? this.#redactor.json({
            time: new Date().toISOString(),
            level: s.status === 'succeeded' || readerStopped.has(s.pipeline) ? 'info' : 'error',
            event: 'summary',
            ...this.#jsonSummary(s),
          })
        : this.#redactor.redact(
            formatSummaryText(s, {
              warningsShown: this.#options.warningsShown,
              extraFields: this.#progress.extraFields.get(s.pipeline),
              readerStopped: readerStopped.has(s.pipeline) && exitCode === 0,
            }),
          );
      this.#io.stderr.write(`${line}\n`);
    }
  }

  /**
   * The summary as the JSON log's last line. Each warning was a `warn` line of its own when it came
   * (issue 37): the summary counts them by code (`warningCounts`) instead of repeating the messages.
   * When the log level hid them (--log-level error), the messages are here, said once. The summary
   * file, a document read on its own (an orchestrator's metadata), keeps the messages either way.
   */
  #jsonSummary(s: RunSummary): Partial<RunSummary> {
    if (!this.#options.warningsShown) return s;
    const { warnings: _said, ...rest } = s;
    return rest;
  }

  // One shape whatever the number of pipelines, written whole (temp file and rename): a reader never
  // sees half a summary.
  async #writeSummaryFile({ summaries, exitCode }: RunOutcome): Promise<void> {
    const file = this.#options.summaryFile;
    if (!file) return;
    const text = `${this.#redactor.json({ exitCode, pipelines: summaries }, 2)}\n`;
    await writeFileAtomic(file, text).catch((err: unknown) =>
      this.#progress.log('error', 'summary_file', {
        pipelines: this.#names,
        message: this.#redactor.redact(
          `could not write the summary: ${(err as Error).message}; the run's outcome is the one logged above (exit ${exitCode})`,
        ),
      }),
    );
  }

  async #appendHistory({ summaries, exitCode }: RunOutcome): Promise<void> {
    for (const s of summaries) {
      const p = this.#pipelines.find((x) => x.config.name === s.pipeline);
      if (!p) continue;
      // Files of others in the history folder stay; said once per compaction that met them.
      const onForeign = (locations: string[]) =>
        this.#progress.log('info', 'history.foreign_files', {
          pipeline: s.pipeline,
          message: this.#redactor.redact(
            `left ${locations.length} file(s) in the run history folder that are not this pipeline's run files alone (never removed): ${locations.slice(0, 5).join(', ')}${locations.length > 5 ? ', ...' : ''}`,
          ),
        });
      await appendHistory(p, s, this.#io.env, onForeign).catch((err: unknown) =>
        this.#progress.log('error', 'history.failed', {
          pipeline: s.pipeline,
          message: this.#redactor.redact(
            `could not add the run to the history (catalog-streams history): ${(err as Error).message}; the run's outcome is the one logged above (exit ${exitCode})`,
          ),
        }),
      );
    }
  }

  // Said after writing: the metrics are there, but where a collector would not read them as meant.
  #warnMetricsFile(file: string, problems: MetricsFileProblems): void {
    if (problems.replaced.length > 0)
      this.#progress.log('warn', 'metrics.file_shared', {
        pipelines: this.#names,
        message: this.#redactor.redact(
          `--metrics-file ${file} held the metrics of pipelines this file does not have (${problems.replaced.slice(0, 5).join(', ')}${problems.replaced.length > 5 ? ', ...' : ''}), now replaced: give each pipeline file a --metrics-file of its own (e.g. textfile/catalog_streams_<file>.prom)`,
        ),
      });
    if (problems.notProm)
      this.#progress.log('warn', 'metrics.file_name', {
        pipelines: this.#names,
        message: this.#redactor.redact(
          `--metrics-file ${file} does not end in .prom: node_exporter's textfile collector reads only *.prom files`,
        ),
      });
  }

  // A metric that could not be published is caught by an alert on a stale last success.
  async #publishMetrics({ summaries, exitCode }: RunOutcome): Promise<void> {
    const { file, metricsFile, pushgateway } = this.#options;
    const metrics: RunMetricsInput = {
      file,
      summaries,
      pipelines: this.#names,
      exitCode,
      finishedAt: new Date(),
      redact: (text) => this.#redactor.redact(text),
    };
    const publish: [string, () => Promise<void>][] = [];
    if (metricsFile)
      publish.push([
        `--metrics-file ${metricsFile}`,
        async () => this.#warnMetricsFile(metricsFile, await writeMetricsFile(metricsFile, metrics)),
      ]);
    if (pushgateway) publish.push(['--pushgateway', () => pushMetrics(pushgateway, metrics)]);
    for (const [what, write] of publish) {
      await write().catch((err: unknown) =>
        this.#progress.log('error', 'metrics.failed', {
          pipelines: this.#names,
          message: this.#redactor.redact(`${what}: ${(err as Error).message}`),
        }),
      );
    }
  }
}
