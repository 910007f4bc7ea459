// `catalog-streams run <pipeline-file>`: loads and checks the file, optionally
// starts the embedded sandbox, runs every pipeline of the file with one shared
// client (one request budget), shows progress, prints the summary, and exits
// 0 / 1 (run failed) / 2 (bad usage or file) / 130 (SIGINT) / 143 (SIGTERM).
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { CatalogClient } from '../client/catalog-client.js';
import { CatalogStreamsError, UsageError } from '../errors.js';
import { RunEvents } from '../events.js';
import { createRegistry } from '../pipeline/builtins.js';
import { loadPipelineFile, type LoadedPipeline } from '../pipeline/loader.js';
import { RunFailedError, resolveConnection, runPipeline, type ResolvedConnection, type RunSummary } from '../pipeline/runner.js';
import { RunStats } from '../pipeline/run-stats.js';
import { startSandbox } from '../sandbox/index.js';
import type { Command } from './command.js';
import type { CliIO } from './io.js';
import { planCommandOutput } from './plan-output.js';
import { attachProgress } from './progress.js';
import { s3ObjectIO } from './s3-state-io.js';
import { formatSummaryText } from './summary.js';

export const RUN_USAGE = `Usage: catalog-streams run <pipeline-file> [--sandbox] [--full-refresh] [--dry-run] [--quiet] [--summary-file FILE]
  --sandbox               start the embedded Catalog API sandbox in-process and run against it
  --sandbox-products N    products in that sandbox (default 12000)
  --sandbox-rate-limit N  its requests per minute (default 100; the client paces to the same)
  --full-refresh          ignore the stored incremental cursor and extract everything
  --dry-run               print the plan (slices, requests, duration, outputs) and exit
  --quiet                 no progress display or info log lines; errors and the summary only
  --summary-file FILE     also write the run summary as JSON to FILE

Exit codes: 0 success, 1 the run failed, 2 bad usage or pipeline file, 130 SIGINT, 143 SIGTERM.
`;

const SIGNAL_EXIT: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };

export async function runCommand(argv: string[], io: CliIO): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        sandbox: { type: 'boolean', default: false },
        'sandbox-products': { type: 'string' },
        'sandbox-rate-limit': { type: 'string' },
        'full-refresh': { type: 'boolean', default: false },
        'dry-run': { type: 'boolean', default: false },
        quiet: { type: 'boolean', default: false },
        'summary-file': { type: 'string' },
        help: { type: 'boolean', default: false },
      },
    });
  } catch (err) {
    throw new UsageError(`run: ${(err as Error).message} (see 'catalog-streams run --help')`);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.stdout.write(RUN_USAGE);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError(`run: takes exactly one pipeline file, got ${positionals.length} (see 'catalog-streams run --help')`);
  const numberFlag = (name: string, raw: string | undefined): number | undefined => {
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`run: --${name} takes a positive number, got "${raw}"`);
    return n;
  };
  const sandboxProducts = numberFlag('sandbox-products', values['sandbox-products']);
  const sandboxRate = numberFlag('sandbox-rate-limit', values['sandbox-rate-limit']);

  const registry = createRegistry();
  const pipelines = await loadPipelineFile(positionals[0]!, registry, { env: io.env });

  const sandbox = values.sandbox ? await startSandbox({ port: 0, products: sandboxProducts, rateLimit: sandboxRate }) : undefined;
  try {
    const override: Partial<ResolvedConnection> = sandbox
      ? { baseUrl: sandbox.url, apiKey: sandbox.credentials.apiKey, apiSecret: sandbox.credentials.apiSecret, ...(sandboxRate ? { rateLimit: sandboxRate } : {}) }
      : {};
    if (values['dry-run']) {
      io.stdout.write(`${await planCommandOutput(pipelines, override, io.env)}\n`);
      return 0;
    }
    return await runAll(pipelines, override, io, { fullRefresh: values['full-refresh'], quiet: values.quiet, summaryFile: values['summary-file'] });
  } finally {
    await sandbox?.close();
  }
}

async function runAll(
  pipelines: LoadedPipeline[],
  override: Partial<ResolvedConnection>,
  io: CliIO,
  opts: { fullRefresh: boolean; quiet: boolean; summaryFile?: string },
): Promise<number> {
  const events = new RunEvents();
  const stats = new RunStats(events);
  const first = pipelines[0]!;
  const connection = resolveConnection(first, override, io.env);
  for (const p of pipelines.slice(1)) resolveConnection(p, override, io.env);
  const redactor = first.redactor;
  for (const p of pipelines.slice(1)) {
    redactor.add(p.config.connection?.apiKey);
    redactor.add(p.config.connection?.apiSecret);
  }
  const controller = new AbortController();
  let signalName: string | undefined;
  const onSignal = (name: string) => () => {
    signalName ??= name;
    controller.abort(`received ${name}`);
  };
  const handlers = Object.keys(SIGNAL_EXIT).map((name) => [name, onSignal(name)] as const);
  for (const [name, h] of handlers) io.signals?.on(name, h);

  const tty = Boolean((io.stderr as { isTTY?: boolean }).isTTY);
  const progress = attachProgress(events, stats, {
    name: pipelines.map((p) => p.config.name).join(', '),
    stream: io.stderr as NodeJS.WriteStream,
    tty,
    quiet: opts.quiet,
    redactor,
    rateLimit: connection.rateLimit,
  });
  // One client for every pipeline of the file: one request budget.
  const client = new CatalogClient({ ...connection, events, signal: controller.signal });
  const summaries: RunSummary[] = [];
  let exitCode = 0;
  try {
    const results = await Promise.allSettled(
      pipelines.map((p) =>
        runPipeline(p, { registry: createRegistry(), client, connection: override, fullRefresh: opts.fullRefresh, signal: controller.signal, events, env: io.env, s3: s3ObjectIO }),
      ),
    );
    for (const r of results) {
      if (r.status === 'fulfilled') summaries.push(r.value);
      else {
        const err = r.reason as CatalogStreamsError;
        if (err instanceof RunFailedError) summaries.push(err.summary);
        else progress.log('error', err.code ?? 'error', { message: redactor.redact(err.message ?? String(err)) });
        exitCode = Math.max(exitCode, err.exitCode ?? 1);
      }
    }
  } finally {
    progress.stop();
    await client.close();
    for (const [name, h] of handlers) io.signals?.off(name, h);
  }
  for (const s of summaries) {
    io.stderr.write(`${redactor.redact(tty ? formatSummaryText(s) : JSON.stringify({ time: new Date().toISOString(), level: s.status === 'succeeded' ? 'info' : 'error', event: 'summary', ...s }))}\n`);
  }
  if (opts.summaryFile) {
    await writeFile(opts.summaryFile, `${redactor.redact(JSON.stringify(summaries.length === 1 ? summaries[0] : summaries, null, 2))}\n`);
  }
  if (signalName) return SIGNAL_EXIT[signalName]!;
  return exitCode;
}

export const runCommandDefinition: Command = {
  name: 'run',
  summary: 'run a pipeline file (--sandbox: against the embedded sandbox)',
  usage: RUN_USAGE,
  run: runCommand,
};
