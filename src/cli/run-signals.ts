// SIGINT, SIGTERM and SIGHUP during `catalog-streams run`. The first stops every pipeline not yet past
// its commit point (sources stop, temporary outputs go, the cursor stays); pipelines that committed
// keep their outputs and cursor. The second ends the process at once: with the first one's exit code
// while a pipeline may still discard its outputs, else with the code the outputs stand for.
//
// The handlers stay installed until the process exits. Node restores a signal's default action (the
// process killed outright, the shell seeing 143) as soon as its last listener goes, so a run that
// removed them while it wound down (closing the client, the sandbox, flushing stderr) would die of
// a late SIGTERM after it published. Once the outcome is concluded a signal changes nothing.
import type { RunEvents } from '../events.js';
import type { CliIO } from './io.js';
import type { ProgressHandle } from './progress.js';

/** The exit code of a run stopped by each signal (128 + its number, as a shell reports it). */
export const SIGNAL_EXIT: Readonly<Record<string, number>> = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 };

export class RunSignals {
  readonly #controller = new AbortController();
  readonly #names: readonly string[];
  // Pipelines still able to discard their outputs: neither past their commit point nor settled.
  readonly #uncommitted: Set<string>;
  readonly #progress: ProgressHandle;
  readonly #io: CliIO;
  readonly #handlers: Array<readonly [string, () => void]>;
  /** Pipelines past their commit point (every output published). */
  readonly #committed = new Set<string>();
  #received: string | undefined;
  /** The run's exit code once judged: what every later signal leaves as it is. */
  #concluded: number | undefined;

  constructor(names: readonly string[], progress: ProgressHandle, io: CliIO) {
    this.#names = names;
    this.#uncommitted = new Set(names);
    this.#progress = progress;
    this.#io = io;
    this.#handlers = Object.keys(SIGNAL_EXIT).map((name) => [name, () => this.#onSignal(name)] as const);
  }

  /** Aborted by the first signal: what the client and every pipeline of the run listen to. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** The first signal received, if any. */
  get received(): string | undefined {
    return this.#received;
  }

  /** The exit code that says the run was stopped by the signal received. */
  get stoppedExitCode(): number | undefined {
    return this.#received === undefined ? undefined : SIGNAL_EXIT[this.#received];
  }

  install(): void {
    for (const [name, h] of this.#handlers) this.#io.signals?.on(name, h);
  }

  /**
   * The run's outcome is judged: a signal from now on (while the reports are written, the client
   * and the sandbox close, the process exits) is logged and leaves the exit code as it is.
   */
  conclude(exitCode: number): void {
    this.#concluded = exitCode;
  }

  /** For an embedding that outlives the run; the CLI keeps the handlers until the process exits. */
  uninstall(): void {
    for (const [name, h] of this.#handlers) this.#io.signals?.off(name, h);
  }

  /**
   * Follows one pipeline's commit point. Call it before the progress display listens to the same
   * bus: a signal sent while the commit is being logged already knows of it.
   */
  watchCommit(events: RunEvents): void {
    events.on('info', (info: { code: string; pipeline?: unknown }) => {
      if (info.code !== 'outputs_committed') return;
      this.#uncommitted.delete(String(info.pipeline));
      this.#committed.add(String(info.pipeline));
    });
  }

  /** The pipeline ended (committed, failed or stopped): a signal has nothing of it left to discard. */
  settled(name: string): void {
    this.#uncommitted.delete(name);
  }

  #onSignal(name: string): void {
    if (this.#concluded !== undefined) {
      this.#afterConclusion(name);
      return;
    }
    if (this.#received) {
      this.#force(name, this.#received);
      return;
    }
    this.#received = name;
    this.#progress.log('warn', 'signal', { pipelines: this.#names, signal: name, message: this.#stopMessage(name) });
    // Pipelines past their commit point no longer listen to this abort.
    this.#controller.abort(`received ${name}`);
  }

  #afterConclusion(name: string): void {
    const first = this.#received === undefined;
    this.#received ??= name;
    this.#progress.log('warn', 'signal', {
      pipelines: this.#names,
      signal: name,
      message: `${name} received after the run ended: it changes nothing, the exit code stays ${this.#concluded}`,
    });
    // A second one asks to go at once: with the code the run reported.
    if (!first) this.#io.exit?.(this.#concluded!);
  }

  #force(name: string, first: string): void {
    // Every pipeline past its commit point: its outputs stand, whatever the signals say.
    const code = this.#committed.size === this.#names.length ? 0 : SIGNAL_EXIT[first]!;
    this.#progress.log('error', 'signal', {
      pipelines: this.#names,
      signal: name,
      message: `second ${name}: exiting now (exit ${code}) without waiting for the clean-up; hidden .tmp files may remain`,
    });
    this.#progress.stop();
    this.#io.exit?.(code);
  }

  #stopMessage(name: string): string {
    if (this.#uncommitted.size === 0)
      return `${name} received after the run committed its outputs: finishing (the cursor is stored); the run counts as done (send it again to exit at once)`;
    const committed = this.#names.filter((n) => !this.#uncommitted.has(n));
    const kept =
      committed.length > 0
        ? `; ${committed.join(', ')} had already committed and keep${committed.length === 1 ? 's its' : ' their'} outputs and cursor`
        : '';
    return `${name} received: stopping, discarding partial outputs, leaving the state cursor as it was${kept} (send it again to exit at once)`;
  }
}
