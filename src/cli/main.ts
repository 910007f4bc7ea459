#!/usr/bin/env node
// The `catalog-streams` command line: a small command table (`run`,
// `validate`, `stages`, `sandbox`) and the
// process glue: errors become one sentence on stderr and the command's result
// becomes the exit code (0 ok, 1 failed, 2 bad usage). `main(argv, io)` runs
// in-process for tests; as the bin it gets the real process streams and
// signals (io.ts `processIO`).
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CatalogStreamsError } from '../errors.js';
import { closestName } from '../closest-name.js';
import type { Command } from './command.js';
import { type CliIO, processIO } from './io.js';
import { runCommandDefinition } from './run-command.js';
import { sandboxCommand } from './sandbox-command.js';
import { schemaCommandDefinition } from './schema-command.js';
import { stagesCommandDefinition } from './stages-command.js';
import { validateCommandDefinition } from './validate-command.js';

export const commands: readonly Command[] = [runCommandDefinition, validateCommandDefinition, schemaCommandDefinition, stagesCommandDefinition, sandboxCommand];

export function usage(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'Usage: catalog-streams <command> [options]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    "Run 'catalog-streams <command> --help' for a command's options.",
    '',
  ].join('\n');
}

export async function main(argv: string[], io: CliIO): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined) {
    io.stderr.write(usage());
    return 2;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(usage());
    return 0;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    const hint = closestName(name, commands.map((c) => c.name));
    io.stderr.write(`catalog-streams: unknown command "${name}"${hint ? `; did you mean "${hint}"?` : ''} (commands: ${commands.map((c) => c.name).join(', ')}; see 'catalog-streams --help')\n`);
    return 2;
  }
  if (args.includes('--help') || args.includes('-h')) {
    io.stdout.write(command.usage);
    return 0;
  }
  try {
    return await command.run(args, io);
  } catch (err) {
    if (err instanceof CatalogStreamsError) {
      // One sentence, prefixed by the command unless the message already names it.
      const message = err.message.startsWith(`${name}:`) ? err.message : `${name}: ${err.message}`;
      io.stderr.write(`catalog-streams ${message}\n`);
      return err.exitCode;
    }
    io.stderr.write(`catalog-streams ${name}: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
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
      process.exitCode = code;
      // The outcome is final: a signal while the process winds down must not turn it into a kill.
      for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => process.exit(code));
    },
    (err: unknown) => {
      process.stderr.write(`catalog-streams: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
