// The end-of-run summary: a few readable lines on a TTY, one JSON line otherwise.
import type { RunSummary } from '../pipeline/runner.js';
import { formatDuration, plural } from './progress.js';

const fmt = new Intl.NumberFormat('en-US');

export function formatSummaryText(s: RunSummary): string {
  const lines = [
    `${s.status === 'succeeded' ? '✓' : '✗'} ${s.pipeline} ${s.status} in ${formatDuration(s.durationMs / 1000)} (run ${s.runId})`,
    `  read ${plural(s.records.read, 'record')} from ${s.source} · ${fmt.format(s.recordsPerSecond)} rec/s · ${plural(s.pages, 'page')} · ${plural(s.requests, 'request')} · ${plural(s.retries, 'retry', 'retries')} · ${fmt.format(s.throttles)} × 429`,
  ];
  if (s.records.invalid > 0 || s.records.dropped > 0) {
    lines.push(
      `  invalid ${fmt.format(s.records.invalid)} (dead-lettered ${fmt.format(s.records.deadLettered)}, skipped ${fmt.format(s.records.skipped)}) · dropped by transforms ${fmt.format(s.records.dropped)}`,
    );
  }
  // A run that did not succeed lists only what it could not take back: say that it stays.
  const verb = s.status === 'succeeded' ? 'wrote' : 'left published';
  for (const o of s.outputs)
    lines.push(`  ${verb} ${o.location} (${o.sink}: ${plural(o.rows, 'row')}, ${plural(o.bytes, 'byte')})`);
  if (s.cursor) {
    lines.push(
      s.cursor.stored
        ? `  cursor ${s.cursor.next} (${new Date(s.cursor.next! * 1000).toISOString()}) saved to ${s.cursor.location}`
        : // Without a previous cursor (a first run, a full refresh, a run refused before reading the
          // state) the file may still hold one this run never read: it is left as it was, whatever it is.
          s.cursor.previous !== undefined
          ? `  cursor left at ${s.cursor.previous} in ${s.cursor.location}: the next run redoes this work`
          : `  state ${s.cursor.location} left as it was: the next run redoes this work`,
    );
  }
  for (const w of s.warnings) lines.push(`  ! ${w}`);
  if (s.error) lines.push(`  error [${s.error.code}]: ${s.error.message}`);
  return lines.join('\n');
}
