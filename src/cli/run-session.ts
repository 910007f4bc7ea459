// One `catalog-streams run` of a file of pipelines, over `runPipeline`: one shared client (one request
// budget), the signals that stop it (RunSignals), the progress display and the plans that give it
// totals (PlanProbes), the judgement of each pipeline's result into one exit code, and the reports
// (RunReports). run-command.ts parses the flags and drives it.
//
// The commit point of a pipeline is the moment every one of its sinks has committed; its cursor is
// stored right after. A stop before that point discards its outputs and leaves the cursor; after it,
// the run ends as it would have: the exit code, the summary, the outputs and the cursor tell one story.
import { CatalogClient } from '../client/catalog-client.js';
import type { StageRegistry } from '../core/registry.js';
import { type CatalogStreamsError, StdoutClosedError } from '../errors.js';
import { RunEvents } from '../events.js';
import type { Redactor } from '../pipeline/env.js';
import type { LoadedPipeline } from '../pipeline/loader.js';
import {
  RunFailedError,
  clientOptions,
  runPipeline,
  type ResolvedConnection,
  type RunOptions,
  type RunSummary,
} from '../pipeline/runner.js';
import { RunStats } from '../pipeline/run-stats.js';
import type { CliIO } from './io.js';
import { type LogSettings, levelEnabled } from './log.js';
import { PlanProbes } from './plan-probes.js';
import { type PipelineProgress, type ProgressHandle, attachProgress, plural } from './progress.js';
import { type RunOutcome, RunReports } from './run-reports.js';
import { RunSignals } from './run-signals.js';

export interface RunSessionOptions {
  registry: StageRegistry;
  /** A fan-out's connections by region (--sandbox: each region's embedded sandbox). */
  regionConnections?: RunOptions['regionConnections'];
  /** The pipeline file, as the metrics label it. */
  file: string;
  fullRefresh: boolean;
  allowDeletes: boolean;
  log: LogSettings;
  progressInterval?: number;
  summaryFile?: string;
  metricsFile?: string;
  pushgateway?: string;
}

type PipelineResult = PromiseSettledResult<RunSummary>;

export class RunSession {
  readonly #pipelines: readonly LoadedPipeline[];
  readonly #names: string[];
  readonly #connection: ResolvedConnection;
  readonly #io: CliIO;
  readonly #options: RunSessionOptions;
  readonly #redactor: Redactor;
  readonly #progress: ProgressHandle;
  readonly #signals: RunSignals;
  readonly #reports: RunReports;
  readonly #client: CatalogClient;

  constructor(
    pipelines: readonly LoadedPipeline[],
    connection: ResolvedConnection,
    io: CliIO,
    options: RunSessionOptions,
  ) {
    this.#pipelines = pipelines;
    this.#names = pipelines.map((p) => p.config.name);
    this.#connection = connection;
    this.#io = io;
    this.#options = options;
    // One redactor knows every pipeline's secrets: a line about the run may quote any of them.
    this.#redactor = pipelines[0]!.redactor;
    for (const p of pipelines.slice(1)) this.#redactor.absorb(p.redactor);
    addUrlCredentials(this.#redactor, options.pushgateway);
    const events = new RunEvents();
    this.#progress = this.#attachProgress(events);
    this.#signals = new RunSignals(this.#names, this.#progress, io);
    this.#reports = new RunReports(pipelines, io, this.#progress, this.#redactor, {
      file: options.file,
      json: this.#json,
      warningsShown: levelEnabled(options.log.level, 'warn'),
      summaryFile: options.summaryFile,
      metricsFile: options.metricsFile,
      pushgateway: options.pushgateway,
    });
    // One client for every pipeline of the file: one request budget. It connects on first use only.
    this.#client = new CatalogClient({ ...clientOptions(connection), events, signal: this.#signals.signal });
  }

  /** Runs every pipeline, reports, and returns the exit code. */
  async run(): Promise<number> {
    this.#signals.install();
    const restoreWarnings = logProcessWarnings(this.#io.warnings, (w) => this.#logWarning(w));
    try {
      this.#logStarted();
      const outcome = this.#judge(await this.#runPipelines());
      // From here a signal changes nothing: the outputs and the cursor are what they are.
      this.#signals.conclude(outcome.exitCode);
      // Drawn last, so the summary lines stand below the live display.
      this.#progress.stop();
      await this.#reports.write(outcome);
      return outcome.exitCode;
    } finally {
      this.#progress.stop();
      await this.#client.close();
      // The signal handlers stay until the process exits (run-signals.ts says why).
      restoreWarnings();
    }
  }

  get #json(): boolean {
    return this.#options.log.format === 'json';
  }

  get #showsProgress(): boolean {
    return levelEnabled(this.#options.log.level, 'info');
  }

  #attachProgress(events: RunEvents): ProgressHandle {
    const { log } = this.#options;
    const tty = Boolean((this.#io.stderr as { isTTY?: boolean }).isTTY);
    return attachProgress(events, {
      stream: this.#io.stderr as NodeJS.WriteStream,
      format: log.format,
      level: log.level,
      live: tty && !this.#json && this.#showsProgress,
      redactor: this.#redactor,
      // Several keys: one budget each, the ETA paced by all of them together.
      rateLimit: this.#connection.rateLimit * this.#connection.credentials.length,
      keys: this.#connection.credentials.length,
      logIntervalSeconds: this.#options.progressInterval,
      pipelines: this.#names,
    });
  }

  #logStarted(): void {
    const { baseUrl, rateLimit, credentials } = this.#connection;
    const host = new URL(baseUrl).host;
    const keys = credentials.length;
    const limited = Number.isFinite(rateLimit);
    const { fullRefresh } = this.#options;
    this.#progress.log('info', 'started', {
      pipelines: this.#names,
      host,
      rateLimit: limited ? rateLimit : null,
      keys,
      fullRefresh,
      message: `running ${this.#names.join(', ')} against ${host} at ${limited ? `${plural(rateLimit, 'request')}/min` : 'no rate limit'}${keys > 1 ? ` per key, ${keys} keys` : ''}${fullRefresh ? ' (full refresh)' : ''}`,
    });
  }

  #logWarning(w: Error): void {
    const message = `${w.name}: ${w.message.replace(/\s*\n\s*/g, ' ')}`;
    // The AWS SDK's notice that its 2027 releases need Node >= 22 says nothing a run can act on while Node 20 is
    // supported (README "Node versions"): debug, not a warning on every S3 run. Every other warning stays a warning.
    this.#progress.log(isSdkNodeSupportNotice(w) ? 'debug' : 'warn', 'node.warning', {
      pipelines: this.#names,
      message,
    });
  }

  async #runPipelines(): Promise<PipelineResult[]> {
    const probes = new PlanProbes(
      this.#client,
      this.#progress,
      this.#names,
      { enabled: this.#showsProgress },
      this.#signals.signal,
    );
    try {
      return await Promise.allSettled(this.#pipelines.map((p) => this.#runPipeline(p, probes)));
    } finally {
      probes.stop();
    }
  }

  #runPipeline(p: LoadedPipeline, probes: PlanProbes): Promise<RunSummary> {
    const events = new RunEvents();
    this.#signals.watchCommit(events);
    const shown: PipelineProgress = { name: p.config.name, stats: new RunStats(events), planPending: probes.enabled };
    this.#progress.add(shown, events);
    // Each pipeline's own connection settings (concurrency) stay its own: only the client is shared.
    return runPipeline(p, {
      registry: this.#options.registry,
      client: this.#client,
      fullRefresh: this.#options.fullRefresh,
      allowDeletes: this.#options.allowDeletes,
      signal: this.#signals.signal,
      events,
      env: this.#io.env,
      sandbox: this.#connection.sandbox,
      ...(this.#options.regionConnections ? { regionConnections: this.#options.regionConnections } : {}),
      onPreflight: (source) => probes.start(p.plan.name, source, shown),
    }).finally(() => {
      shown.finished = true;
      this.#signals.settled(p.config.name);
    });
  }

  /** The summaries and the exit code of the pipelines' results; failures not in a summary are logged. */
  #judge(results: PipelineResult[]): RunOutcome {
    const summaries: RunSummary[] = [];
    const readerStopped = new Set<string>();
    let exitCode = 0;
    let stopped = false;
    for (const [i, r] of results.entries()) {
      if (r.status === 'fulfilled') {
        summaries.push(r.value);
        continue;
      }
      const p = this.#pipelines[i]!;
      const err = r.reason as CatalogStreamsError;
      if (err instanceof RunFailedError) summaries.push(err.summary);
      if (err instanceof RunFailedError && err.cause instanceof StdoutClosedError) {
        readerStopped.add(p.config.name);
        exitCode = Math.max(exitCode, this.#readerClosedStdout(p));
      } else if (this.#signals.received && (!(err instanceof RunFailedError) || err.summary.status === 'aborted')) {
        stopped = true;
      } else {
        this.#logFailure(p, err);
        exitCode = Math.max(exitCode, err.exitCode ?? 1);
      }
    }
    // A stopped pipeline decides the exit code: the scheduler sees that it was stopped.
    if (stopped) exitCode = this.#signals.stoppedExitCode!;
    return { summaries, exitCode, readerStopped };
  }

  /**
   * `run ... | head`: the reader took what it wanted. Exit 0 when stdout was all this pipeline wrote
   * (nothing is lost but what the reader declined); 1 when it also wrote files or objects, which were
   * discarded with the cursor left as it was: a scheduler must not count that as delivered.
   */
  #readerClosedStdout(p: LoadedPipeline): number {
    const onlyStdout = writesOnlyToStdout(p);
    const name = p.config.name;
    this.#progress.log(onlyStdout ? 'info' : 'error', 'stdout.closed', {
      pipeline: name,
      code: 'stdout.closed',
      message: onlyStdout
        ? `${name}: stdout was closed by its reader: stopped (the state cursor was left as it was)`
        : `${name}: stdout was closed by its reader: stopped; its other outputs were discarded and the state cursor was left as it was (exit 1)`,
    });
    return onlyStdout ? 0 : 1;
  }

  /**
   * One sentence naming the pipeline: a JSON line; in pretty text the summary's error line says it
   * (a second copy above it is noise), unless there is no summary. After a signal, the signal line said it.
   */
  #logFailure(p: LoadedPipeline, err: CatalogStreamsError): void {
    if (this.#signals.received || (!this.#json && err instanceof RunFailedError)) return;
    const message = this.#redactor.redact(err.message ?? String(err));
    this.#progress.log('error', 'failed', {
      pipeline: p.config.name,
      code: err.code ?? 'error',
      message: `${p.config.name}: ${message}`,
    });
  }
}

/**
 * The user and password of a URL (`--pushgateway https://user:pass@host`): a gateway that echoes
 * the request in its error (the password, or the Basic header made of both) is not printed.
 */
function addUrlCredentials(redactor: Redactor, url: string | undefined): void {
  if (!url) return;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return;
  }
  if (!parsed.password) return;
  const password = safeDecode(parsed.password);
  const user = safeDecode(parsed.username);
  for (const secret of [password, parsed.password, `${user}:${password}`]) redactor.add(secret);
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** True when every sink of the pipeline, dead-letter sinks included, writes to stdout (`path: "-"`). */
function writesOnlyToStdout(p: LoadedPipeline): boolean {
  const outputs: unknown[] = [...p.config.sinks];
  for (const t of p.config.transforms) {
    const deadLetter = (t as { deadLetter?: unknown }).deadLetter;
    if (deadLetter !== undefined) outputs.push(deadLetter);
  }
  return outputs.every((o) => (o as { path?: unknown }).path === '-');
}

/** The AWS SDK's process warning that its releases after January 2027 need Node >= 22. */
function isSdkNodeSupportNotice(w: Error): boolean {
  return /NodeVersionSupportWarning/.test(`${w.name} ${w.message}`) && /AWS SDK/.test(w.message);
}

/** Routes process warnings to `log` (instead of Node's raw printing) until the returned function is called. */
function logProcessWarnings(emitter: NodeJS.EventEmitter | undefined, log: (warning: Error) => void): () => void {
  if (!emitter) return () => {};
  const previous = emitter.listeners('warning') as Array<(w: Error) => void>;
  emitter.removeAllListeners('warning');
  emitter.on('warning', log);
  return () => {
    emitter.off('warning', log);
    for (const l of previous) emitter.on('warning', l);
  };
}
