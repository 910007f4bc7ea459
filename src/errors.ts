// Error classes shared by every layer. Each has a stable `code` (for logs, tests
// and scripts) and an `exitCode` the CLI uses: 2 for bad usage or a bad pipeline
// file, 1 for a run that failed (API, sink or data error). The exit code of a code
// the catalogue knows comes from the catalogue (error-codes.ts), so the docs, the
// CLI's `explain` and the process agree; a class's own exit code only covers a code
// the catalogue does not know (a custom stage's). Messages say what failed, where,
// and what to do; they never contain credentials.
import { exitCodeOf } from './error-codes.js';

export class CatalogStreamsError extends Error {
  readonly code: string;
  readonly exitCode: 1 | 2;

  constructor(code: string, message: string, options: ErrorOptions & { exitCode?: 1 | 2 } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.exitCode = exitCodeOf(code) ?? options.exitCode ?? 1;
  }
}

/** Bad command-line usage (exit 2). */
export class UsageError extends CatalogStreamsError {
  constructor(message: string, options: ErrorOptions = {}) {
    super('usage', message, { ...options, exitCode: 2 });
  }
}

/** Options of a stage or a pipeline file that do not fit their schema (exit 2). */
export class ConfigError extends CatalogStreamsError {
  /** Where: a file (with line/column when known) and a path such as `transforms[1].locales[0]`. */
  readonly location: { file?: string; line?: number; column?: number; path?: string };

  constructor(
    message: string,
    location: { file?: string; line?: number; column?: number; path?: string } = {},
    options: ErrorOptions & { code?: string } = {},
  ) {
    super(options.code ?? 'config.invalid', message, { ...options, exitCode: 2 });
    this.location = location;
  }
}

/** A request that breaks the API spec, caught before it is sent (exit 2: the request is ours). */
export class RequestValidationError extends CatalogStreamsError {
  readonly endpoint: string;
  readonly path: string;

  constructor(endpoint: string, path: string, message: string) {
    super('request.invalid', `${endpoint}: ${path ? `${path}: ` : ''}${message}`, { exitCode: 2 });
    this.endpoint = endpoint;
    this.path = path;
  }
}

/** A record that does not fit its schema, or too many of them (exit 1). */
export class DataError extends CatalogStreamsError {
  constructor(message: string, options: ErrorOptions & { code?: string } = {}) {
    super(options.code ?? 'data.invalid', message, options);
  }
}

/** A sink could not write or commit its output (exit 1). */
export class SinkError extends CatalogStreamsError {
  constructor(message: string, options: ErrorOptions & { code?: string } = {}) {
    super(options.code ?? 'sink.failed', message, options);
  }
}

/**
 * A local file could not be written or created (exit 1). The message is `cannot <operation> <file>:
 * <reason>`; `reason` (the failed step, the system's error, what became of the file, what to do)
 * is kept apart so a caller can say it in its own words (`cannot write state <file>: <reason>`).
 */
export class StorageError extends CatalogStreamsError {
  readonly operation: string;
  readonly file: string;
  readonly reason: string;

  constructor(operation: string, file: string, reason: string, options: ErrorOptions & { code?: string } = {}) {
    super(options.code ?? 'storage.write_failed', `cannot ${operation} ${file}: ${reason}`, options);
    this.operation = operation;
    this.file = file;
    this.reason = reason;
  }
}

/**
 * Standard output was closed by its reader (`run ... | head`): the reader wants no more, so the
 * pipeline writing to it stops, like a producer in a shell pipeline; nothing failed.
 */
export class StdoutClosedError extends CatalogStreamsError {
  constructor(options: ErrorOptions = {}) {
    super(
      'stdout.closed',
      'stdout was closed by its reader (such as head): stopped reading; outputs other than stdout were discarded and the state cursor was left as it was',
      options,
    );
  }
}

/** The run was stopped by a signal or an AbortSignal. */
export class AbortedError extends CatalogStreamsError {
  constructor(message = 'the run was aborted', options: ErrorOptions = {}) {
    super('aborted', message, options);
  }
}

/**
 * An optional peer dependency a feature needs is not installed (exit 1). `code` is
 * `dependency.missing.<feature>` (e.g. `dependency.missing.s3-sink`), so a script can tell which feature asked;
 * `install` is the command that fixes it.
 */
export class MissingDependencyError extends CatalogStreamsError {
  readonly feature: string;
  readonly packages: readonly string[];
  readonly install: string;

  constructor(feature: string, packages: readonly string[], message: string, options: ErrorOptions = {}) {
    const install = `npm install ${packages.join(' ')}`;
    super(`dependency.missing.${feature}`, `${message}; run \`${install}\` in your project`, options);
    this.feature = feature;
    this.packages = packages;
    this.install = install;
  }
}
