#!/usr/bin/env node
// The `catalog-streams` command line: a small command table (`run`,
// `validate`, `stages`, `history`, `sandbox`) and the
// process glue: errors become one sentence on stderr and the command's result
// becomes the exit code (0 ok, 1 failed, 2 bad usage). `main(argv, io)` runs
// in-process for tests; as the bin it gets the real process streams and
// signals (io.ts `processIO`).
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CatalogStreamsError, type ConfigError } from '../errors.js';
import { closestName } from '../closest-name.js';
import { setDefaultWarnings } from '../code-warnings.js';
import type { Command } from './command.js';
import { explainCommandDefinition, formatAllCodes } from './explain-command.js';
import { historyCommandDefinition } from './history-command.js';
import { type CliIO, exitWhenDone, processIO } from './io.js';
import { LOG_OPTIONS_USAGE, type LogSettings, extractLogSettings, jsonLogLine } from './log.js';
import { packageVersion } from './package-info.js';
import { runCommandDefinition } from './run-command.js';
import { sandboxCommand } from './sandbox-command.js';
import { schemaCommandDefinition } from './schema-command.js';
import { filtersCommandDefinition, stagesCommandDefinition } from './stages-command.js';
import { validateCommandDefinition } from './validate-command.js';
import { processStep } from '../storage/step-hook.js';

export const commands: readonly Command[] = [
  runCommandDefinition,
  validateCommandDefinition,
  schemaCommandDefinition,
  stagesCommandDefinition,
  filtersCommandDefinition,
  historyCommandDefinition,
  explainCommandDefinition,
  sandboxCommand,
];

export function usage(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'Usage: catalog-streams <command> [options]',
    '       catalog-streams --version',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    LOG_OPTIONS_USAGE,
    "Run 'catalog-streams <command> --help' (or 'catalog-streams help <command>') for a command's options.",
    '',
  ].join('\n');
}

/** Writes a failure as one line (a JSON object with the json format) and returns its exit code. */
type Fail = (
  command: string | undefined,
  err: { code?: string; exitCode: number; message: string; location?: object },
  text: string,
) => number;

export async function main(argv: string[], io: CliIO): Promise<number> {
  // The CLI logs each run's own bus; a bus made without one (the dry run's plan probes) stays
  // quiet, as before warnings of code-API buses went to stderr (src/code-warnings.ts).
  setDefaultWarnings('silent');
  let log: LogSettings;
  let rest: string[];
  try {
    ({ settings: log, rest } = extractLogSettings(argv, io.stderr));
  } catch (err) {
    return badLogOptions(err as Error, io);
  }
  const [name, ...args] = rest;
  io = { ...io, log };
  // With json, every stderr line is a JSON object (config and usage errors too).
  const fail: Fail = (command, err, text) => {
    io.stderr.write(
      `${log.format === 'json' ? jsonLogLine('error', 'error', { ...(command ? { command } : {}), code: err.code ?? 'error', exitCode: err.exitCode, ...(err.location ?? {}), message: err.message }) : text}\n`,
    );
    return err.exitCode;
  };
  if (name === '--version' || name === '-v') {
    io.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  if (name === undefined) return noCommand(io, log, fail);
  if (name === '--help' || name === '-h' || name === 'help') return help(name, args, io, fail);
  const command = commands.find((c) => c.name === name);
  if (!command) {
    const message = `unknown command "${name}"${didYouMean(name)} (commands: ${commandNames()}; see 'catalog-streams --help')`;
    return fail(undefined, { code: 'usage', exitCode: 2, message }, `catalog-streams: ${message}`);
  }
  if (args.includes('--help') || args.includes('-h')) {
    io.stdout.write(command.usage);
    return 0;
  }
  try {
    return await command.run(args, io);
  } catch (err) {
    return commandFailed(name, err, log, fail);
  }
}

/** `--log-level`/`--log-format` themselves are wrong: said in JSON unless stderr is a terminal. */
function badLogOptions(err: Error, io: CliIO): number {
  const json = !(io.stderr as { isTTY?: boolean }).isTTY;
  io.stderr.write(
    `${json ? jsonLogLine('error', 'error', { code: 'usage', exitCode: 2, message: err.message }) : `catalog-streams: ${err.message}`}\n`,
  );
  return 2;
}

function noCommand(io: CliIO, log: LogSettings, fail: Fail): number {
  if (log.format === 'json')
    return fail(
      undefined,
      { code: 'usage', exitCode: 2, message: "no command given (see 'catalog-streams --help')" },
      '',
    );
  io.stderr.write(usage());
  return 2;
}

/** `--help`, `-h`, `help` and `help <command>`. */
function help(name: string, args: string[], io: CliIO, fail: Fail): number {
  // `help run` reads as `run --help`: a user who typed the command's name wants its page, not the index.
  const topic = name === 'help' ? args.find((a) => !a.startsWith('-')) : undefined;
  if (topic === undefined) {
    io.stdout.write(usage());
    return 0;
  }
  // Not a command: the error codes and exit codes, from the catalogue (src/error-codes.ts).
  if (topic === 'errors') {
    io.stdout.write(formatAllCodes());
    return 0;
  }
  const described = commands.find((c) => c.name === topic);
  if (!described) {
    const message = `help: unknown command "${topic}"${didYouMean(topic, ['errors'])} (commands: ${commandNames()}; error and exit codes: help errors)`;
    return fail(undefined, { code: 'usage', exitCode: 2, message }, `catalog-streams ${message}`);
  }
  io.stdout.write(described.usage);
  return 0;
}

/** A command threw: its error as one sentence (each problem of a pipeline file as its own JSON line). */
function commandFailed(name: string, err: unknown, log: LogSettings, fail: Fail): number {
  if (
    err instanceof CatalogStreamsError &&
    log.format === 'json' &&
    Array.isArray((err as { issues?: unknown }).issues)
  ) {
    for (const issue of (err as CatalogStreamsError & { issues: ConfigError[] }).issues)
      fail(name, { code: issue.code, exitCode: err.exitCode, message: issue.message, location: issue.location }, '');
    return err.exitCode;
  }
  if (err instanceof CatalogStreamsError) {
    // Prefixed by the command unless the message already names it.
    const message = err.message.startsWith(`${name}:`) ? err.message : `${name}: ${err.message}`;
    const location = 'location' in err ? (err.location as object) : undefined;
    return fail(
      name,
      { code: err.code, exitCode: err.exitCode, message: err.message, location },
      `catalog-streams ${message}`,
    );
  }
  const message = err instanceof Error ? err.message : String(err);
  return fail(name, { code: 'error', exitCode: 1, message }, `catalog-streams ${name}: ${message}`);
}

function commandNames(): string {
  return commands.map((c) => c.name).join(', ');
}

function didYouMean(name: string, topics: readonly string[] = []): string {
  const hint = closestName(name, [...commands.map((c) => c.name), ...topics]);
  return hint ? `; did you mean "${hint}"?` : '';
}

/** True when this file is the process entry (the bin, possibly through a symlink), not an import. */
function isEntryPoint(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  main(process.argv.slice(2), processIO()).then(
    (code) => {
      // The outcome is final here: a test may signal at this moment (a run's handlers still hold).
      processStep('exit', 'catalog-streams');
      return exitWhenDone(code);
    },
    (err: unknown) => {
      process.stderr.write(`catalog-streams: ${err instanceof Error ? err.message : String(err)}\n`);
      return exitWhenDone(1);
    },
  );
}
