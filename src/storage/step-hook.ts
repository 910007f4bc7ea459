// A test hook for the kill-at-every-step tests (test/faults/kill-every-step.test.ts): every step
// that changes what a reader or a later run can see (a file created, renamed, linked or removed;
// an object put, completed or deleted) passes through `storageStep`. With
// CATALOG_STREAMS_TEST_KILL_AT_STEP in the environment the process sends itself SIGKILL just
// before a chosen step, so a test can stop a run at each step in turn without guessing at
// timings: `N` is the N-th step; `<operation>:<text>:<n>` the n-th step of that operation whose
// location contains the text (`rename:/snapshot/:2`). CATALOG_STREAMS_TEST_STEP_LOG=<file>
// appends each step to a file, so a failure can name the step. Without these variables it costs
// one comparison.
import { appendFileSync } from 'node:fs';

const killAt = parseKillAt(process.env.CATALOG_STREAMS_TEST_KILL_AT_STEP);
const stepLog = process.env.CATALOG_STREAMS_TEST_STEP_LOG;
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
  if (kill) process.kill(process.pid, 'SIGKILL');
}
