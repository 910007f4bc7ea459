// What a CLI command reads and writes, passed in so tests run commands
// in-process with captured output and a chosen environment.
export interface CliIO {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WriteStream | (NodeJS.WritableStream & { isTTY?: boolean; columns?: number });
  env: NodeJS.ProcessEnv;
  /** Process signals to stop a run (SIGINT/SIGTERM); tests pass their own emitter or none. */
  signals?: NodeJS.EventEmitter;
}

export function processIO(): CliIO {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env, signals: process };
}
