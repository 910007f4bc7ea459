// `catalog-streams run <pipeline-file>`: parses the flags, loads and checks the file, optionally
// starts the embedded sandbox, and either prints the plan (--dry-run) or drives a RunSession
// (run-session.ts: one shared client, signals, progress, summaries and reports). Exits
// 0 / 1 (run failed) / 2 (bad usage or file) / 129 (SIGHUP) / 130 (SIGINT) / 143 (SIGTERM).
import { access, constants, stat } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, UsageError } from '../errors.js';
import { createRegistry } from '../pipeline/builtins.js';
import { loadPipelineFile, type LoadedPipeline } from '../pipeline/loader.js';
import type { Region } from '../catalog/regions.js';
import { regionOf } from '../pipeline/connection.js';
import { type ConnectionOverride, resolveConnection, type ResolvedConnection } from '../pipeline/runner.js';
import { checkDestinations } from '../pipeline/preflight.js';
import {
  PROFILE_ENV,
  SANDBOX_PROFILES,
  type Sandbox,
  type SandboxProfile,
  parseProfile,
  startSandbox,
} from '../sandbox/index.js';
import { type Command, integerOption, numberOption, parseOptions } from './command.js';
import type { CliIO } from './io.js';
import { LOG_OPTIONS_USAGE, type LogSettings, levelEnabled, logSettingsOf } from './log.js';
import { installedOutputDir } from './package-info.js';
import { formatPlanText, planJsonLines, planReport } from './plan-output.js';
import { RunSession, type RunSessionOptions } from './run-session.js';

const NAME = 'run';

const RUN_USAGE = `Usage: catalog-streams run <pipeline-file> [--sandbox] [--full-refresh] [--allow-deletes] [--dry-run] [--quiet] [--summary-file FILE]
  --sandbox               start the embedded Catalog API sandbox in-process and run against it
  --sandbox-products N    products in that sandbox (default 12000)
  --sandbox-rate-limit N  its requests per minute (default 100, 0: off); the client paces to the same
  --profile P             shapes that sandbox serves: ${SANDBOX_PROFILES.join('|')} (default: the file's connection.region, else CATALOG_SANDBOX_PROFILE, else be)
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

/** The command line of one run, checked. */
interface RunFlags extends Omit<RunSessionOptions, 'registry'> {
  dryRun: boolean;
  sandbox?: { products?: number; rateLimit?: number; profile?: SandboxProfile };
}

async function runCommand(argv: string[], io: CliIO): Promise<number> {
  const { dryRun, sandbox: sandboxFlags, ...session } = await parseRunFlags(argv, io);
  const registry = createRegistry();
  const pipelines = await loadPipelineFile(session.file, registry, {
    env: io.env,
    outputDir: (dir) => installedOutputDir(dir, process.cwd()),
  });
  // A fan-out reads a sandbox per region (startRegionSandboxes), not the one of --profile.
  const fanOut = pipelines.some((p) => p.plan.connection.regions);
  const sandbox =
    sandboxFlags && !fanOut
      ? await startSandbox({ port: 0, ...sandboxFlags, profile: sandboxProfile(sandboxFlags, pipelines, io.env) })
      : undefined;
  const regionSandboxes: Sandbox[] = [];
  try {
    const regionConnections =
      sandboxFlags && fanOut ? await startRegionSandboxes(pipelines, sandboxFlags, regionSandboxes) : undefined;
    // The session's client (progress plan, dry run) is the first region's.
    const override = regionConnections
      ? Object.values(regionConnections)[0]!
      : sandboxConnection(sandbox, sandboxFlags?.rateLimit);
    const connection = sharedConnection(pipelines, override, io.env);
    if (dryRun) return await printPlan(pipelines, connection, session, io);
    return await new RunSession(pipelines, connection, io, { ...session, registry, regionConnections }).run();
  } finally {
    await Promise.all([sandbox?.close(), ...regionSandboxes.map((s) => s.close())]);
  }
}

/**
 * With --sandbox, a fan-out (`connection.regions`) reads one embedded sandbox per region, each
 * serving its region's profile with credentials of its own, as the live regions do.
 */
async function startRegionSandboxes(
  pipelines: LoadedPipeline[],
  flags: { products?: number; rateLimit?: number },
  started: Sandbox[],
): Promise<Partial<Record<Region, ConnectionOverride>>> {
  const regions = new Set(pipelines.flatMap((p) => (p.plan.connection.regions ?? []).map(regionOf)));
  const connections: Partial<Record<Region, ConnectionOverride>> = {};
  for (const region of regions) {
    const sandbox = await startSandbox({ port: 0, ...flags, profile: region });
    started.push(sandbox);
    connections[region] = sandboxConnection(sandbox, flags.rateLimit);
  }
  return connections;
}

async function parseRunFlags(argv: string[], io: CliIO): Promise<RunFlags> {
  const { values: v, positionals } = parseOptions(NAME, argv, options, { exactly: 1, what: 'one pipeline file' });
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
  // The environment's profile is read after the file's region (sandboxProfile): only --profile beats the region.
  const profile = v.sandbox ? parseProfile(v.profile, `${NAME} --profile`) : undefined;
  return {
    file: positionals[0]!,
    dryRun: v['dry-run'] ?? false,
    fullRefresh: v['full-refresh'] ?? false,
    allowDeletes: v['allow-deletes'] ?? false,
    log,
    progressInterval,
    summaryFile: v['summary-file'],
    metricsFile: v['metrics-file'],
    pushgateway: v.pushgateway,
    sandbox: v.sandbox ? { products: sandboxProducts, rateLimit: sandboxRate, profile } : undefined,
  };
}

/**
 * The embedded sandbox's profile: --profile, else the profile named after the file's
 * `connection.region` (every region has one), else CATALOG_SANDBOX_PROFILE, else the default.
 */
function sandboxProfile(
  flags: { profile?: SandboxProfile },
  pipelines: LoadedPipeline[],
  env: NodeJS.ProcessEnv,
): SandboxProfile | undefined {
  const region = pipelines.map((p) => p.plan.connection.region).find((r) => r !== undefined);
  return flags.profile ?? region ?? parseProfile(env[PROFILE_ENV], `${NAME}: ${PROFILE_ENV}`);
}

/** What the embedded sandbox changes in the pipelines' connection: its address, credentials and pace. */
function sandboxConnection(sandbox: Sandbox | undefined, rateLimit: number | undefined): ConnectionOverride {
  if (!sandbox) return {};
  return {
    baseUrl: sandbox.url,
    apiKey: sandbox.credentials.apiKey,
    apiSecret: sandbox.credentials.apiSecret,
    sandbox: true,
    ...(rateLimit !== undefined ? { rateLimit: rateLimit === 0 ? Infinity : rateLimit } : {}),
  };
}

/** --dry-run: checks the destinations and prints the plan; writes nothing. */
async function printPlan(
  pipelines: LoadedPipeline[],
  connection: ResolvedConnection,
  flags: Pick<RunFlags, 'log' | 'fullRefresh'>,
  io: CliIO,
): Promise<number> {
  for (const p of pipelines) await checkDestinations(p);
  const report = await planReport(pipelines, connection, { fullRefresh: flags.fullRefresh });
  // json: the plan is log lines on stderr like everything else; pretty: a text for a person on stdout.
  if (flags.log.format === 'json') {
    if (levelEnabled(flags.log.level, 'info')) io.stderr.write(`${planJsonLines(report).join('\n')}\n`);
  } else io.stdout.write(`${formatPlanText(report)}\n`);
  return 0;
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
        'region',
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

export const runCommandDefinition: Command = {
  name: NAME,
  summary: 'run a pipeline file (--sandbox: against the embedded sandbox)',
  usage: RUN_USAGE,
  run: runCommand,
};
