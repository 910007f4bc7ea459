// A test hook for the kill-at-every-step tests (test/faults/kill-every-step.test.ts): every step
// that changes what a reader or a later run can see (a file created, renamed, linked or removed;
// an object put, completed or deleted) passes through `storageStep`. With
// CATALOG_STREAMS_TEST_KILL_AT_STEP=N in the environment, the process sends itself SIGKILL just
// before its N-th step, so the test can stop a run at each step in turn without guessing at
// timings; CATALOG_STREAMS_TEST_STEP_LOG=<file> appends each step to a file, so a failure can name
// the step. Without these variables it costs one comparison.
import { appendFileSync } from 'node:fs';

const killAt = Number(process.env.CATALOG_STREAMS_TEST_KILL_AT_STEP ?? 0);
const stepLog = process.env.CATALOG_STREAMS_TEST_STEP_LOG;
let steps = 0;

/** One visible step: `operation` on `location` (a path or an s3:// URL) is about to happen. */
export function storageStep(operation: string, location: string): void {
  if (!killAt && !stepLog) return;
  steps++;
  if (stepLog) appendFileSync(stepLog, `${process.pid} ${steps} ${operation} ${location}\n`);
  if (steps === killAt) process.kill(process.pid, 'SIGKILL');
}
