// Where the warnings of stages and clients made in code go when the caller gave no event bus.
// Before, each factory made a bus nobody listened to, so a README example put 46 EANs into
// `_extra` without a word (issue 37, item 15). Now such a bus prints each distinct warning once on
// stderr (`catalog-streams warning [sink.parquet.extra]: ...`), as the CLI would; a caller who
// wants them elsewhere passes its own `events` (a RunEvents it listens to) or a `warnings`
// function, and `setDefaultWarnings('silent')` (or CATALOG_STREAMS_WARNINGS=silent) keeps a test
// suite or the CLI (which logs the run's own bus) quiet.
import { RunEvents } from './events.js';

export interface CodeWarning {
  code: string;
  message: string;
}

/** `stderr` (the default), `silent`, or a function that receives each distinct warning. */
export type WarningOutput = 'stderr' | 'silent' | ((warning: CodeWarning) => void);

let fallback: WarningOutput | undefined;

/** What a bus made without an explicit `warnings` does (process-wide; `stderr` unless set or the environment says silent). */
export function setDefaultWarnings(output: WarningOutput): void {
  fallback = output;
}

function defaultOutput(): WarningOutput {
  return fallback ?? (process.env.CATALOG_STREAMS_WARNINGS === 'silent' ? 'silent' : 'stderr');
}

/** A fresh event bus whose warnings go to `output` (default: setDefaultWarnings), each code and message once. */
export function warningEvents(output: WarningOutput = defaultOutput()): RunEvents {
  const events = new RunEvents();
  if (output === 'silent') return events;
  const said = new Set<string>();
  events.on('warning', (w) => {
    // A warning repeated per record or per part would bury the rest: each one once per bus.
    const key = `${w.code}\u0000${w.message}`;
    if (said.has(key)) return;
    said.add(key);
    if (typeof output === 'function') output({ code: w.code, message: w.message });
    else process.stderr.write(`catalog-streams warning [${w.code}]: ${w.message}\n`);
  });
  return events;
}
