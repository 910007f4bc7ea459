// A test hook for the kill-at-every-step tests (test/faults/kill-every-step.test.ts): every step
// that changes what a reader or a later run can see (a file created, renamed, linked or removed;
// an object put, completed or deleted) passes through `storageStep`. With
// CATALOG_STREAMS_TEST_KILL_AT_STEP in the environment the process sends itself SIGKILL just
// before a chosen step, so a test can stop a run at each step in turn without guessing at
// timings: `N` is the N-th step; `<operation>:<text>:<n>` the n-th step of that operation whose
// location contains the text (`rename:/snapshot/:2`). CATALOG_STREAMS_TEST_STEP_LOG=<file>
// appends each step to a file, so a failure can name the step. CATALOG_STREAMS_TEST_KILL_SIGNAL
// (SIGTERM, SIGINT, SIGHUP) sends that signal instead of SIGKILL, so a test can stop a run at an
// exact step and watch what the process makes of it; SIGSTOP freezes it there (a paused pod: the
// fencing tests resume it with SIGCONT once another run took its lock over). Moments that are not storage steps but where
// a signal must change nothing (the CLI about to exit) pass `processStep`, matched by the
// `<operation>:<text>:<n>` form only (they are not counted as steps). Without these variables it
// costs one comparison.
import { appendFileSync } from 'node:fs';

const killAt = parseKillAt(process.env.CATALOG_STREAMS_TEST_KILL_AT_STEP);
const stepLog = process.env.CATALOG_STREAMS_TEST_STEP_LOG;
const killSignal = parseSignal(process.env.CATALOG_STREAMS_TEST_KILL_SIGNAL);
let steps = 0;
let matching = 0;

function parseKillAt(
  value: string | undefined,
): { step: number } | { operation: string; text: string; occurrence: number } | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return { step: Number(value) };
  const m = /^([\w-]+):(.*):(\d+)$/.exec(value);
  return m ? { operation: m[1]!, text: m[2]!, occurrence: Number(m[3]) } : undefined;
}

/** One visible step: `operation` on `location` (a path or an s3:// URL) is about to happen. */
export function storageStep(operation: string, location: string): void {
  if (!killAt && !stepLog) return;
  steps++;
  if (stepLog) appendFileSync(stepLog, `${process.pid} ${steps} ${operation} ${location}\n`);
  if (!killAt) return;
  const kill =
    'step' in killAt
      ? steps === killAt.step
      : operation === killAt.operation && location.includes(killAt.text) && ++matching === killAt.occurrence;
  if (kill) process.kill(process.pid, killSignal);
}

/** A moment of the process that is not a storage step: `operation` at `location` (the CLI's exit, say). */
export function processStep(operation: string, location: string): void {
  if (!killAt || 'step' in killAt) return;
  if (operation === killAt.operation && location.includes(killAt.text) && ++matching === killAt.occurrence)
    process.kill(process.pid, killSignal);
}

function parseSignal(value: string | undefined): NodeJS.Signals {
  return value === 'SIGTERM' || value === 'SIGINT' || value === 'SIGHUP' || value === 'SIGSTOP' ? value : 'SIGKILL';
}
