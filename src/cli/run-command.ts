// `catalog-streams run <pipeline-file>`: loads and checks the file, optionally
// starts the embedded sandbox, runs every pipeline of the file with one shared
// client (one request budget), shows progress, prints the summary, and exits
// 0 / 1 (run failed) / 2 (bad usage or file) / 129 (SIGHUP) / 130 (SIGINT) / 143 (SIGTERM).
//
// The commit point of a pipeline is the moment every one of its sinks has
// committed; its cursor is stored right after. A first SIGINT/SIGTERM/SIGHUP
// before that point aborts it: the sources stop, uploads are aborted, temporary
// files removed, the state cursor is left as it was, and the command returns
// 130/143/129 once that cleanup is done. After that point the signal changes
// nothing: the cursor is stored and the run ends as it would have (exit 0), so
// the exit code, the summary, the outputs and the cursor tell one story. A
// second signal exits at once.
import { access, constants, stat } from 'node:fs/promises';
import path from 'node:path';
import { CatalogClient } from '../client/catalog-client.js';
import { type CatalogStreamsError, ConfigError, StdoutClosedError, UsageError } from '../errors.js';
import { RunEvents } from '../events.js';
import { createRegistry } from '../pipeline/builtins.js';
import { loadPipelineFile, type LoadedPipeline } from '../pipeline/loader.js';
import {
  RunFailedError,
  clientOptions,
  type ConnectionOverride,
  resolveConnection,
  runPipeline,
  type ResolvedConnection,
  type RunSummary,
} from '../pipeline/runner.js';
import { appendHistory } from '../pipeline/run-history.js';
import { RunStats } from '../pipeline/run-stats.js';
import { checkDestinations } from '../pipeline/preflight.js';
import type { PlannedStage } from '../core/planned-stage.js';
import type { StageRegistry } from '../core/registry.js';
import { PROFILE_ENV, SANDBOX_PROFILES, parseProfile, startSandbox } from '../sandbox/index.js';
import { plan, type SourceType } from '../sources/index.js';
import { writeFileAtomic } from '../storage/local-file.js';
import { type Command, integerOption, numberOption, parseOptions } from './command.js';
import type { CliIO } from './io.js';
import { LOG_OPTIONS_USAGE, type LogSettings, levelEnabled, logSettingsOf } from './log.js';
import { type RunMetricsInput, pushMetrics, writeMetricsFile } from './metrics.js';
import { installedOutputDir } from './package-info.js';
import { formatPlanText, planJsonLines, planReport } from './plan-output.js';
import { type PipelineProgress, attachProgress, plural } from './progress.js';
import { formatSummaryText } from './summary.js';

const NAME = 'run';

const RUN_USAGE = `Usage: catalog-streams run <pipeline-file> [--sandbox] [--full-refresh] [--allow-deletes] [--dry-run] [--quiet] [--summary-file FILE]
  --sandbox               start the embedded Catalog API sandbox in-process and run against it
  --sandbox-products N    products in that sandbox (default 12000)
  --sandbox-rate-limit N  its requests per minute (default 100, 0: off); the client paces to the same
  --profile P             shapes that sandbox serves: ${SANDBOX_PROFILES.join('|')} (default be, or CATALOG_SANDBOX_PROFILE)
  --full-refresh          ignore the stored incremental cursor and extract everything
  --allow-deletes         table sinks: publish a full run's deletes even above their deletes.maxRatio
  --dry-run               print the plan (slices, requests, duration, outputs) and exit; writes nothing
  --quiet                 same as --log-level warn: warnings, errors and the summary only
  --summary-file FILE     also write the summaries as JSON to FILE: {"exitCode": N, "pipelines": [...]}
  --metrics-file FILE     write the run's metrics in the Prometheus text format to FILE (atomically),
                          for node_exporter's textfile collector
  --pushgateway URL       push the same metrics to a Prometheus Pushgateway (job "catalog-streams")
  --progress-interval S   seconds between JSON progress lines (default 5)

${LOG_OPTIONS_USAGE}
Exit codes: 0 success, 1 the run failed, 2 bad usage or pipeline file, 129 SIGHUP, 130 SIGINT, 143 SIGTERM
(a signal after the outputs are committed changes nothing: exit 0).
A reader that closes stdout (run ... | head) stops the pipelines writing to it, like a signal (cursor kept
as it was): exit 0 when stdout was all they wrote, 1 when they also wrote files or objects (discarded).
`;

const options = {
  sandbox: { type: 'boolean' },
  'sandbox-products': { type: 'string' },
  'sandbox-rate-limit': { type: 'string' },
  profile: { type: 'string' },
  'full-refresh': { type: 'boolean' },
  'allow-deletes': { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  quiet: { type: 'boolean' },
  'summary-file': { type: 'string' },
  'metrics-file': { type: 'string' },
  pushgateway: { type: 'string' },
  'progress-interval': { type: 'string' },
} as const;

const SIGNAL_EXIT: Record<string, number> = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 };

async function runCommand(argv: string[], io: CliIO): Promise<number> {
  const { values: v, positionals } = parseOptions(NAME, argv, options, { exactly: 1, what: 'one pipeline file' });
  const file = positionals[0]!;
  const sandboxProducts = integerOption(NAME, 'sandbox-products', v['sandbox-products'], 1, 10_000_000);
  const sandboxRate = integerOption(NAME, 'sandbox-rate-limit', v['sandbox-rate-limit'], 0, 1_000_000_000);
  const progressInterval = numberOption(NAME, 'progress-interval', v['progress-interval'], 0.1, 3600);
  if (v.pushgateway !== undefined && !/^https?:\/\/[^/]/.test(v.pushgateway)) {
    throw new UsageError(`${NAME}: --pushgateway must be an http:// or https:// URL, got "${v.pushgateway}"`);
  }
  const base = logSettingsOf(io);
  const log: LogSettings = v.quiet && levelEnabled(base.level, 'info') ? { ...base, level: 'warn' } : base;
  if (v['summary-file'] !== undefined) await checkSummaryFile(v['summary-file']);
  if (v.profile !== undefined && !v.sandbox)
    throw new UsageError(`${NAME}: --profile chooses the embedded sandbox's shapes; add --sandbox`);
  const profile = v.sandbox
    ? (parseProfile(v.profile, `${NAME} --profile`) ?? parseProfile(io.env[PROFILE_ENV], `${NAME}: ${PROFILE_ENV}`))
    : undefined;

  const registry = createRegistry();
  const pipelines = await loadPipelineFile(file, registry, {
    env: io.env,
    outputDir: (dir) => installedOutputDir(dir, process.cwd()),
  });
  // One S3 client for every pipeline's state (it connects on first use only).

  const sandbox = v.sandbox
    ? await startSandbox({ port: 0, products: sandboxProducts, rateLimit: sandboxRate, profile })
    : undefined;
  try {
    const override: ConnectionOverride = sandbox
      ? {
          baseUrl: sandbox.url,
          apiKey: sandbox.credentials.apiKey,
          apiSecret: sandbox.credentials.apiSecret,
          sandbox: true,
          ...(sandboxRate !== undefined ? { rateLimit: sandboxRate === 0 ? Infinity : sandboxRate } : {}),
        }
      : {};
    const connection = sharedConnection(pipelines, override, io.env);
    if (v['dry-run']) {
      for (const p of pipelines) await checkDestinations(p);
      const report = await planReport(pipelines, connection, { fullRefresh: v['full-refresh'] ?? false });
      // json: the plan is log lines on stderr like everything else; pretty: a text for a person on stdout.
      if (log.format === 'json') {
        if (levelEnabled(log.level, 'info')) io.stderr.write(`${planJsonLines(report).join('\n')}\n`);
      } else io.stdout.write(`${formatPlanText(report)}\n`);
      return 0;
    }
    return await runAll(pipelines, connection, io, {
      registry,
      file,
      fullRefresh: v['full-refresh'] ?? false,
      allowDeletes: v['allow-deletes'] ?? false,
      log,
      progressInterval,
      summaryFile: v['summary-file'],
      metricsFile: v['metrics-file'],
      pushgateway: v.pushgateway,
    });
  } finally {
    await sandbox?.close();
  }
}

/**
 * The one connection every pipeline of the file runs on (one client, one
 * request budget); pipelines that ask for different ones belong in separate files.
 */
export function sharedConnection(
  pipelines: LoadedPipeline[],
  override: ConnectionOverride,
  env: NodeJS.ProcessEnv,
): ResolvedConnection {
  const [first, ...rest] = pipelines.map((p) => resolveConnection(p, override, env));
  for (const [i, c] of rest.entries()) {
    const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
    const differs = (
      [
        'baseUrl',
        'credentials',
        'rateLimit',
        'maxAttempts',
        'maxRetryWaitMs',
        'timeouts',
        'maxPageBytes',
        'resultWindow',
      ] as const
    ).find((k) => !same(c[k], first![k]));
    if (differs) {
      const p = pipelines[i + 1]!;
      const setting = differs === 'maxRetryWaitMs' ? 'maxRetryWait' : differs;
      throw new ConfigError(
        `${p.file}: pipeline "${p.config.name}" has another connection.${setting} than "${pipelines[0]!.config.name}"; the pipelines of one file share one client and request budget: give them the same connection, or put them in separate files`,
        { file: p.file, path: `connection.${setting}` },
      );
    }
  }
  return first!;
}

async function runAll(
  pipelines: LoadedPipeline[],
  connection: ResolvedConnection,
  io: CliIO,
  opts: {
    registry: StageRegistry;
    file: string;
    fullRefresh: boolean;
    allowDeletes: boolean;
    log: LogSettings;
    progressInterval?: number;
    summaryFile?: string;
    metricsFile?: string;
    pushgateway?: string;
  },
): Promise<number> {
  const events = new RunEvents();
  // Pipelines still able to discard their outputs: neither past their commit point nor settled.
  const uncommitted = new Set(pipelines.map((p) => p.config.name));
  const onCommitted = (info: { code: string; pipeline?: unknown }) => {
    if (info.code === 'outputs_committed') uncommitted.delete(String(info.pipeline));
  };
  const redactor = pipelines[0]!.redactor;
  for (const p of pipelines.slice(1)) redactor.absorb(p.redactor);
  const tty = Boolean((io.stderr as { isTTY?: boolean }).isTTY);
  const json = opts.log.format === 'json';
  const names = pipelines.map((p) => p.config.name);
  const progress = attachProgress(events, {
    stream: io.stderr as NodeJS.WriteStream,
    format: opts.log.format,
    level: opts.log.level,
    live: tty && !json && levelEnabled(opts.log.level, 'info'),
    redactor,
    // Several keys: one budget each, the ETA paced by all of them together.
    rateLimit: connection.rateLimit * connection.credentials.length,
    keys: connection.credentials.length,
    logIntervalSeconds: opts.progressInterval,
    pipelines: names,
  });

  const controller = new AbortController();
  let signalName: string | undefined;
  const onSignal = (name: string) => () => {
    if (signalName) {
      progress.log('error', 'signal', {
        pipelines: names,
        signal: name,
        message: `second ${name}: exiting now without waiting for the clean-up; hidden .tmp files may remain`,
      });
      progress.stop();
      io.exit?.(SIGNAL_EXIT[signalName]!);
      return;
    }
    signalName = name;
    const committed = pipelines.map((p) => p.config.name).filter((n) => !uncommitted.has(n));
    if (uncommitted.size === 0) {
      progress.log('warn', 'signal', {
        pipelines: names,
        signal: name,
        message: `${name} received after the run committed its outputs: finishing (the cursor is stored); the run counts as done (send it again to exit at once)`,
      });
    } else {
      const kept =
        committed.length > 0
          ? `; ${committed.join(', ')} had already committed and keep${committed.length === 1 ? 's its' : ' their'} outputs and cursor`
          : '';
      progress.log('warn', 'signal', {
        pipelines: names,
        signal: name,
        message: `${name} received: stopping, discarding partial outputs, leaving the state cursor as it was${kept} (send it again to exit at once)`,
      });
    }
    // Pipelines past their commit point no longer listen to this abort.
    controller.abort(`received ${name}`);
  };
  const handlers = Object.keys(SIGNAL_EXIT).map((name) => [name, onSignal(name)] as const);
  for (const [name, h] of handlers) io.signals?.on(name, h);
  const restoreWarnings = logProcessWarnings(io.warnings, (w) => {
    const message = `${w.name}: ${w.message.replace(/\s*\n\s*/g, ' ')}`;
    // The AWS SDK's notice that its 2027 releases need Node >= 22 says nothing a run can act on while Node 20 is
    // supported (README "Node versions"): debug, not a warning on every S3 run. Every other warning stays a warning.
    progress.log(isSdkNodeSupportNotice(w) ? 'debug' : 'warn', 'node.warning', { pipelines: names, message });
  });

  progress.log('info', 'started', {
    pipelines: names,
    host: new URL(connection.baseUrl).host,
    rateLimit: Number.isFinite(connection.rateLimit) ? connection.rateLimit : null,
    keys: connection.credentials.length,
    fullRefresh: opts.fullRefresh,
    message: `running ${pipelines.map((p) => p.config.name).join(', ')} against ${new URL(connection.baseUrl).host} at ${Number.isFinite(connection.rateLimit) ? `${plural(connection.rateLimit, 'request')}/min` : 'no rate limit'}${connection.credentials.length > 1 ? ` per key, ${connection.credentials.length} keys` : ''}${opts.fullRefresh ? ' (full refresh)' : ''}`,
  });
  // One client for every pipeline of the file: one request budget.
  const client = new CatalogClient({ ...clientOptions(connection), events, signal: controller.signal });
  const summaries: RunSummary[] = [];
  let exitCode = 0;
  let stopped = false;
  const readerStopped = new Set<string>();
  try {
    // The plan (every slice, as --dry-run shows it) gives the progress its totals and ETA. It is made beside
    // the run, never holding it up (an unreachable service fails the run, not a plan first); its probes count
    // against the budget like any request, so a run that shows no progress (--quiet, level warn) makes none.
    // Until a plan arrives, or without one (a stream source, a failed probe), totals come from the sources.
    const planning = new AbortController();
    // The plan's probes run beside the extract against the same host: their retries and failures are the
    // extract's too, which says them once, under the pipeline's name. The probes' own are debug detail.
    const planEvents = new RunEvents();
    for (const name of ['retry', 'throttle'] as const)
      planEvents.on(name, (e: object) => progress.log('debug', `plan.${name}`, { pipelines: names, ...e }));
    const stopPlanning = () => planning.abort();
    controller.signal.addEventListener('abort', stopPlanning, { once: true });
    const results = await Promise.allSettled(
      pipelines.map((p) => {
        const pipelineEvents = new RunEvents();
        // Before the progress log's listener: a signal sent while the commit is logged already knows of it.
        pipelineEvents.on('info', onCommitted);
        const shown: PipelineProgress = {
          name: p.config.name,
          stats: new RunStats(pipelineEvents),
          planPending: levelEnabled(opts.log.level, 'info'),
        };
        progress.add(shown, pipelineEvents);
        // The plan's probes wait until the run passed its preflight (locks, cursor): a refused run makes no request.
        const startPlan = (source: PlannedStage<'source'>) => {
          if (!levelEnabled(opts.log.level, 'info') || planning.signal.aborted) {
            shown.planPending = false;
            return;
          }
          void planFor(source, client, planning.signal, planEvents).then(
            (planned) => {
              shown.plan = planned;
              shown.planPending = false;
            },
            (err: unknown) => {
              shown.planPending = false;
              if (!planning.signal.aborted)
                progress.log('debug', 'plan.skipped', {
                  pipeline: p.config.name,
                  message: `no plan for the progress display: ${(err as Error).message}`,
                });
            },
          );
        };
        // Each pipeline's own connection settings (concurrency) stay its own: only the client is shared.
        const runOptions = {
          registry: opts.registry,
          client,
          fullRefresh: opts.fullRefresh,
          allowDeletes: opts.allowDeletes,
          signal: controller.signal,
          events: pipelineEvents,
          env: io.env,
          sandbox: connection.sandbox,
        };
        return runPipeline(p, { ...runOptions, onPreflight: startPlan }).finally(() => {
          shown.finished = true;
          uncommitted.delete(p.config.name);
        });
      }),
    );
    stopPlanning();
    controller.signal.removeEventListener('abort', stopPlanning);
    for (const [i, r] of results.entries()) {
      if (r.status === 'fulfilled') {
        summaries.push(r.value);
        continue;
      }
      const err = r.reason as CatalogStreamsError;
      if (err instanceof RunFailedError) summaries.push(err.summary);
      if (err instanceof RunFailedError && err.cause instanceof StdoutClosedError) {
        // `run ... | head`: the reader took what it wanted. Exit 0 when stdout was all this pipeline wrote
        // (nothing is lost but what the reader declined); 1 when it also wrote files or objects, which
        // were discarded with the cursor left as it was: a scheduler must not count that as delivered.
        const p = pipelines[i]!;
        const onlyStdout = writesOnlyToStdout(p);
        readerStopped.add(p.config.name);
        progress.log(onlyStdout ? 'info' : 'error', 'stdout.closed', {
          pipeline: p.config.name,
          code: 'stdout.closed',
          message: onlyStdout
            ? `${p.config.name}: stdout was closed by its reader: stopped (the state cursor was left as it was)`
            : `${p.config.name}: stdout was closed by its reader: stopped; its other outputs were discarded and the state cursor was left as it was (exit 1)`,
        });
        if (!onlyStdout) exitCode = Math.max(exitCode, 1);
        continue;
      }
      if (signalName && (!(err instanceof RunFailedError) || err.summary.status === 'aborted')) {
        stopped = true;
        continue;
      }
      const message = redactor.redact(err.message ?? String(err));
      // One sentence naming the pipeline: a JSON line; in pretty text the summary's
      // error line says it (a second copy above it is noise), unless there is no
      // summary. After a signal, the signal line said it.
      if (!signalName && (json || !(err instanceof RunFailedError))) {
        progress.log('error', 'failed', {
          pipeline: pipelines[i]!.config.name,
          code: err.code ?? 'error',
          message: `${pipelines[i]!.config.name}: ${message}`,
        });
      }
      exitCode = Math.max(exitCode, err.exitCode ?? 1);
    }
    // A stopped pipeline decides the exit code: the scheduler sees that it was stopped.
    if (stopped) exitCode = SIGNAL_EXIT[signalName!]!;
    // Drawn last, so the summary lines stand below the live display.
    progress.stop();
    // The summary is the run's result: written at every log level.
    for (const s of summaries) {
      io.stderr.write(
        `${json ? redactor.json({ time: new Date().toISOString(), level: s.status === 'succeeded' || readerStopped.has(s.pipeline) ? 'info' : 'error', event: 'summary', ...s }) : redactor.redact(formatSummaryText(s))}\n`,
      );
    }
    if (opts.summaryFile) {
      // One shape whatever the number of pipelines.
      const text = `${redactor.json({ exitCode, pipelines: summaries }, 2)}\n`;
      // The summary reports the run; failing to write it must not change the run's outcome
      // (a committed run that exits non-zero is retried and delivers its records twice).
      // Written whole (temp file and rename): a reader never sees half a summary.
      await writeFileAtomic(opts.summaryFile, text).catch((err: unknown) =>
        progress.log('error', 'summary_file', {
          pipelines: names,
          message: redactor.redact(
            `could not write the summary: ${(err as Error).message}; the run's outcome is the one logged above (exit ${exitCode})`,
          ),
        }),
      );
    }
    for (const s of summaries) {
      const p = pipelines.find((x) => x.config.name === s.pipeline);
      // Like the summary file: the history reports the run and must not change its outcome.
      if (p)
        await appendHistory(p, s, io.env).catch((err: unknown) =>
          progress.log('error', 'history.failed', {
            pipeline: s.pipeline,
            message: redactor.redact(
              `could not add the run to the history (catalog-streams history): ${(err as Error).message}; the run's outcome is the one logged above (exit ${exitCode})`,
            ),
          }),
        );
    }
    const metrics: RunMetricsInput = { file: opts.file, summaries, pipelines: names, exitCode, finishedAt: new Date() };
    const publish: [string, () => Promise<void>][] = [];
    if (opts.metricsFile)
      publish.push([`--metrics-file ${opts.metricsFile}`, () => writeMetricsFile(opts.metricsFile!, metrics)]);
    if (opts.pushgateway) publish.push(['--pushgateway', () => pushMetrics(opts.pushgateway!, metrics)]);
    for (const [what, write] of publish) {
      // Metrics describe the run; failing to publish them does not undo it (an alert on a stale last success catches it).
      await write().catch((err: unknown) =>
        progress.log('error', 'metrics.failed', {
          pipelines: names,
          message: redactor.redact(`${what}: ${(err as Error).message}`),
        }),
      );
    }
  } finally {
    progress.stop();
    await client.close();
    // Handlers stay until the outcome is final, so a late signal cannot kill the process mid-way.
    for (const [name, h] of handlers) io.signals?.off(name, h);
    restoreWarnings();
  }
  return exitCode;
}

/** The source plan of one pipeline, from the source as its run sends it: its total records and the requests its extract makes. */
async function planFor(
  source: PlannedStage<'source'>,
  client: CatalogClient,
  signal: AbortSignal,
  events: RunEvents,
): Promise<PipelineProgress['plan']> {
  const sp = await plan(client, source.type as SourceType, source.written, { signal, events });
  return { total: sp.total, requests: sp.requests };
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

/**
 * `--summary-file` is checked before the run starts: a folder that does not exist or cannot be
 * written is a usage error (exit 2), found before the first request, not after the outputs are committed.
 */
async function checkSummaryFile(file: string): Promise<void> {
  const dir = path.dirname(path.resolve(file));
  const fail = (problem: string) => {
    throw new UsageError(`${NAME}: --summary-file ${file}: ${problem}`);
  };
  const target = await stat(file).catch(() => undefined);
  if (target?.isDirectory()) fail('is a folder; give a file name (such as summary.json) for the JSON summary');
  const folder = await stat(dir).catch(() => undefined);
  if (!folder) fail(`the folder ${dir} does not exist; create it (mkdir -p) or point --summary-file elsewhere`);
  if (!folder!.isDirectory()) fail(`${dir} is not a folder`);
  await access(dir, constants.W_OK).catch(() =>
    fail(`the folder ${dir} is not writable by this user; fix its permissions or point --summary-file elsewhere`),
  );
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

export const runCommandDefinition: Command = {
  name: NAME,
  summary: 'run a pipeline file (--sandbox: against the embedded sandbox)',
  usage: RUN_USAGE,
  run: runCommand,
};
