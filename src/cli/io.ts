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
