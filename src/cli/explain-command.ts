// `catalog-streams explain <code>`: what an error, warning or event code means and what to do,
// from the catalogue the error classes and docs/errors.md read too (src/error-codes.ts). An exit
// code (`explain 143`) prints what it means to a scheduler. `--json` is for orchestrators: a DAG
// that got exit 1 reads the summary's error code and asks whether to retry (examples/airflow).
import { closestName } from '../closest-name.js';
import {
  ERROR_CODES,
  ERROR_CODE_FAMILIES,
  EXIT_CODES,
  describeCode,
  describeExitCode,
  formatCodeEntry,
} from '../error-codes.js';
import { UsageError } from '../errors.js';
import { type Command, parseOptions } from './command.js';
import type { CliIO } from './io.js';

const NAME = 'explain';

const EXPLAIN_USAGE = `Usage: catalog-streams explain <code> [--json]
       catalog-streams explain <exit code> [--json]
       catalog-streams explain --all [--json]     (same as 'catalog-streams help errors')
  <code>     an error, warning or event code, as in the JSON log and the summary file (state.locked)
  --all      every code and exit code
  --json     print the entry as JSON: {code, kind, exitCode, remedy, meaning, action}

remedy: "retry" when running again unchanged may pass, "fix" when something must change first.
`;

const options = { json: { type: 'boolean' }, all: { type: 'boolean' } } as const;

/** Every code and exit code as text: `help errors` and `explain --all`. */
export function formatAllCodes(): string {
  const width = Math.max(...ERROR_CODES.map((e) => e.code.length), ...ERROR_CODE_FAMILIES.map((f) => f.code.length));
  const section = (title: string, kind: string) => [
    title,
    ...[...ERROR_CODES, ...(kind === 'error' ? ERROR_CODE_FAMILIES : [])]
      .filter((e) => e.kind === kind)
      .sort((a, b) => a.code.localeCompare(b.code))
      .map(
        (e) =>
          `  ${e.code.padEnd(width)}  ${e.exitCode !== undefined ? `exit ${e.exitCode}, ${e.remedy}: ` : ''}${e.meaning}`,
      ),
    '',
  ];
  return [
    'Exit codes:',
    ...EXIT_CODES.map((e) => `  ${String(e.exitCode).padStart(3)}  ${e.meaning}; ${e.scheduler}`),
    '',
    ...section('Errors (remedy retry: may pass when run again; fix: change something first):', 'error'),
    ...section('Warnings:', 'warning'),
    ...section('Events:', 'info'),
    "Details of one: 'catalog-streams explain <code>'; all of them: docs/errors.md.",
    '',
  ].join('\n');
}

async function explainCommand(argv: string[], io: CliIO): Promise<number> {
  const v = parseOptions(
    NAME,
    argv.filter((a) => a.startsWith('-')),
    options,
  );
  const positionals = argv.filter((a) => !a.startsWith('-'));
  if (v.all) {
    if (positionals.length > 0)
      throw new UsageError(`${NAME}: --all takes no code (see 'catalog-streams explain --help')`);
    io.stdout.write(
      v.json
        ? `${JSON.stringify({ exitCodes: EXIT_CODES, codes: [...ERROR_CODES, ...ERROR_CODE_FAMILIES] }, null, 2)}\n`
        : formatAllCodes(),
    );
    return 0;
  }
  if (positionals.length !== 1)
    throw new UsageError(
      `${NAME}: takes exactly one code, got ${positionals.length} (see 'catalog-streams explain --help')`,
    );
  const wanted = positionals[0]!;
  if (/^\d+$/.test(wanted)) {
    const exit = describeExitCode(Number(wanted));
    if (!exit)
      throw new UsageError(
        `${NAME}: ${wanted} is not an exit code of catalog-streams (exit codes: ${EXIT_CODES.map((e) => e.exitCode).join(', ')})`,
      );
    io.stdout.write(
      v.json ? `${JSON.stringify(exit)}\n` : `exit ${exit.exitCode}: ${exit.meaning}\n  scheduler: ${exit.scheduler}\n`,
    );
    return 0;
  }
  const entry = describeCode(wanted);
  if (!entry) {
    const hint = closestName(
      wanted,
      ERROR_CODES.map((e) => e.code),
    );
    throw new UsageError(
      `${NAME}: no code "${wanted}"${hint ? `; did you mean "${hint}"?` : ''} (every code: 'catalog-streams help errors')`,
    );
  }
  // A family's entry answers for the code asked about (api.bad_request), under that code.
  const shown = entry.code === wanted ? entry : { ...entry, code: wanted, family: entry.code };
  io.stdout.write(v.json ? `${JSON.stringify(shown)}\n` : formatCodeEntry(shown));
  return 0;
}

export const explainCommandDefinition: Command = {
  name: NAME,
  summary: 'what an error, warning or exit code means and what to do (help errors: all of them)',
  usage: EXPLAIN_USAGE,
  run: explainCommand,
};
