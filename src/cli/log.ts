// How the CLI writes to stderr: `--log-level` (error, warn, info, debug) and
// `--log-format` (json, pretty, auto). With json every stderr line is one JSON
// object, `{time, level, event, ...}`, so a log collector never sees a raw
// sentence; pretty is for a person at a terminal. auto (the default) picks
// json when stderr is not a terminal (cron, Kubernetes, CI) and pretty on one.
import { UsageError } from '../errors.js';

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['json', 'pretty', 'auto'] as const;
export type LogFormat = 'json' | 'pretty';

export interface LogSettings {
  level: LogLevel;
  format: LogFormat;
}

export const LOG_OPTIONS_USAGE = `Logging (every command):
  --log-level LEVEL       error, warn, info (default) or debug: the least severe line written to stderr
  --log-format FORMAT     json (one JSON object per stderr line), pretty (for a terminal) or
                          auto (default: json when stderr is not a terminal, pretty on one)
`;

/** True when a line of `level` passes the threshold `threshold`. */
export function levelEnabled(threshold: LogLevel, level: LogLevel): boolean {
  return LOG_LEVELS.indexOf(level) <= LOG_LEVELS.indexOf(threshold);
}

/**
 * Takes the logging options out of `argv` (anywhere in it, `--opt value` or
 * `--opt=value`) and resolves them against the stream they describe.
 */
export function extractLogSettings(
  argv: string[],
  stderr: { isTTY?: boolean },
): { settings: LogSettings; rest: string[] } {
  const rest: string[] = [];
  let level: string | undefined;
  let format: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const m = /^--(log-level|log-format)(?:=(.*))?$/.exec(arg);
    if (!m) {
      rest.push(arg);
      continue;
    }
    const value = m[2] ?? argv[++i];
    if (value === undefined || value.startsWith('--'))
      throw new UsageError(
        `--${m[1]} needs a value (${m[1] === 'log-level' ? LOG_LEVELS.join(', ') : LOG_FORMATS.join(', ')})`,
      );
    if (m[1] === 'log-level') level = value;
    else format = value;
  }
  if (level !== undefined && !(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got "${level}"`);
  }
  if (format !== undefined && !(LOG_FORMATS as readonly string[]).includes(format)) {
    throw new UsageError(`--log-format must be one of ${LOG_FORMATS.join(', ')}, got "${format}"`);
  }
  const resolved: LogFormat = format === 'json' || format === 'pretty' ? format : stderr.isTTY ? 'pretty' : 'json';
  return { settings: { level: (level as LogLevel | undefined) ?? 'info', format: resolved }, rest };
}

/** One JSON log line (without the newline): time and level first, then the fields. */
export function jsonLogLine(level: LogLevel, event: string, fields: Record<string, unknown> = {}): string {
  return JSON.stringify({ time: new Date().toISOString(), level, event, ...fields });
}

/** The settings main() resolved, or the defaults for a command run without them (tests). */
export function logSettingsOf(io: { log?: LogSettings; stderr: { isTTY?: boolean } }): LogSettings {
  return io.log ?? { level: 'info', format: io.stderr.isTTY ? 'pretty' : 'json' };
}
