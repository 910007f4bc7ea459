// What a CLI command reads and writes, passed in so tests run commands
// in-process with captured output and a chosen environment.
import type { LogSettings } from './log.js';

export interface CliIO {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WriteStream | (NodeJS.WritableStream & { isTTY?: boolean; columns?: number });
  env: NodeJS.ProcessEnv;
  /** Process signals to stop a run (SIGINT/SIGTERM/SIGHUP); tests pass their own emitter or none. */
  signals?: NodeJS.EventEmitter;
  /**
   * The process's 'warning' events (the AWS SDK's Node-version notice, say):
   * a run logs them as its own warn lines (JSON off a TTY) instead of Node
   * printing them raw into the log. Absent in tests.
   */
  warnings?: NodeJS.EventEmitter;
  /** `--log-level` / `--log-format` as main() resolved them (absent: info, json unless stderr is a TTY). */
  log?: LogSettings;
  /** Ends the process at once (a second signal while a run cleans up); absent in tests. */
  exit?(code: number): void;
}

export function processIO(): CliIO {
  // A reader that closed the pipe (`| head`) is the run's business (it stops the pipelines writing to
  // stdout), not a crash: an EPIPE after the stdout sink let go of the stream is dropped.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    signals: process,
    warnings: process,
    exit: (code) => process.exit(code),
  };
}

/**
 * How long the process may wind down on its own once its outcome is final. Past it, whatever keeps
 * the event loop alive (a custom stage's timer or socket, a libuv thread stuck on a file system call)
 * is not waited for: the run is over and reported.
 */
export const EXIT_GRACE_MS = 1000;
/** How long stdout and stderr may take to drain before the grace starts regardless (a reader that stopped reading). */
const FLUSH_LIMIT_MS = 10_000;

/**
 * Ends the process with `code` once what it wrote reached stdout and stderr: sets process.exitCode
 * and, if something still keeps the loop alive after a short grace, exits. The timers are unref'd,
 * so a process with nothing pending ends at once, on its own; either way the exit code is the one
 * the summary reported.
 */
export async function exitWhenDone(code: number, graceMs = EXIT_GRACE_MS): Promise<void> {
  process.exitCode = code;
  // The outcome is final: a signal while the process winds down must not turn it into a kill.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => process.exit(code));
  await Promise.race([Promise.all([flushed(process.stdout), flushed(process.stderr)]), unrefDelay(FLUSH_LIMIT_MS)]);
  await unrefDelay(graceMs);
  process.exit(code);
}

/** Resolves once everything written to `stream` so far was handed to the system (at once if it is closed). */
function flushed(stream: NodeJS.WritableStream & { destroyed?: boolean; writableEnded?: boolean }): Promise<void> {
  if (stream.destroyed || stream.writableEnded) return Promise.resolve();
  // A write's callback comes after every write before it: an empty one marks the end of what was written.
  return new Promise((resolve) => stream.write('', () => resolve()));
}

/** A delay that does not itself keep the process alive. */
function unrefDelay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
