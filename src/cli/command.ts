// What every `catalog-streams` command is: a name, a one-line summary, a usage
// text and a `run(argv, io)` that returns the exit code (0 success, 1 failed,
// 2 bad usage). Commands write through `CliIO` (io.ts) instead of process
// streams so tests run them in-process. Option parsing helpers turn node's
// parseArgs errors into one-sentence usage errors with a "did you mean".
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { UsageError } from '../errors.js';
import { closestName } from '../closest-name.js';
import type { CliIO } from './io.js';

export interface Command {
  name: string;
  summary: string;
  usage: string;
  run(argv: string[], io: CliIO): Promise<number>;
}

type Options = NonNullable<ParseArgsConfig['options']>;
/** Parsed values: booleans for boolean options, strings otherwise; absent when not given. */
export type OptionValues<O extends Options> = { [K in keyof O]?: O[K] extends { type: 'boolean' } ? boolean : string };

/**
 * parseArgs in strict mode; a mistake becomes a UsageError naming the option (and the likely
 * intended one). Positional arguments are refused unless `positionals` says how many are expected.
 */
export function parseOptions<O extends Options>(command: string, args: string[], options: O): OptionValues<O>;
export function parseOptions<O extends Options>(
  command: string,
  args: string[],
  options: O,
  positionals: { exactly: number; what: string },
): { values: OptionValues<O>; positionals: string[] };
export function parseOptions<O extends Options>(
  command: string,
  args: string[],
  options: O,
  positionals?: { exactly: number; what: string },
) {
  let parsed: { values: unknown; positionals: string[] };
  try {
    parsed = parseArgs({ args, options, strict: true, allowPositionals: positionals !== undefined });
  } catch (err) {
    const e = err as Error & { code?: string };
    const name = /'(-{1,2}[^'\s]+)/.exec(e.message)?.[1];
    const see = `see 'catalog-streams ${command} --help'`;
    if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && name) {
      const hint = closestName(name.replace(/^-+/, ''), Object.keys(options));
      throw new UsageError(`${command}: unknown option ${name}${hint ? `; did you mean --${hint}?` : ''} (${see})`);
    }
    if (e.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
      throw new UsageError(`${command}: unexpected argument ${/'([^']*)'/.exec(e.message)?.[1] ?? ''} (${see})`);
    if (e.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE')
      throw new UsageError(`${command}: ${name ?? 'an option'} needs a value (${see})`);
    throw new UsageError(`${command}: ${e.message}`);
  }
  if (!positionals) return parsed.values as OptionValues<O>;
  if (parsed.positionals.length !== positionals.exactly) {
    throw new UsageError(
      `${command}: takes exactly ${positionals.what}, got ${parsed.positionals.length} (see 'catalog-streams ${command} --help')`,
    );
  }
  return { values: parsed.values as OptionValues<O>, positionals: parsed.positionals };
}

/** An integer option within [min, max]; undefined when not given. */
export function integerOption(
  command: string,
  name: string,
  value: string | undefined,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`${command}: --${name} must be an integer from ${min} to ${max}, got "${value}"`);
  }
  return n;
}

/** A number option within [min, max]; undefined when not given. */
export function numberOption(
  command: string,
  name: string,
  value: string | undefined,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < min || n > max)
    throw new UsageError(`${command}: --${name} must be a number from ${min} to ${max}, got "${value}"`);
  return n;
}
