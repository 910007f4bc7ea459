// The end-of-run summary: a few readable lines on a TTY, one JSON line otherwise.
import type { RegionOutcome, RunSummary } from '../pipeline/runner.js';
import { describeSchemaChange } from '../sinks/shared/schema-change.js';
import { formatDuration, outputFacts, plural } from './progress.js';

const fmt = new Intl.NumberFormat('en-US');

/** What the summary may leave to the lines written during the run. */
export interface SummaryTextOptions {
  /** The run's warnings were written as they happened (the log level shows warnings): not repeated. */
  warningsShown?: boolean;
  /** Fields kept in `_extra`, with the records that had them: said once, here, with their counts. */
  extraFields?: Readonly<Record<string, number>> | undefined;
  /**
   * The reader closed stdout (`run ... | head`) and the run still exits 0: it took what it wanted,
   * nothing failed, so the summary says that instead of "✗ aborted" and an error line.
   */
  readerStopped?: boolean;
}

export function formatSummaryText(s: RunSummary, options: SummaryTextOptions = {}): string {
  const status = options.readerStopped ? 'stopped when its reader closed stdout' : s.status;
  const lines = [
    `${s.status === 'succeeded' || options.readerStopped ? '✓' : '✗'} ${s.pipeline} ${status} in ${formatDuration(s.durationMs / 1000)} (run ${s.runId})`,
    `  read ${plural(s.records.read, 'record')} from ${s.source} · ${fmt.format(s.recordsPerSecond)} rec/s · ${plural(s.pages, 'page')} · ${plural(s.requests, 'request')} · ${plural(s.retries, 'retry', 'retries')} · ${fmt.format(s.throttles)} × 429`,
  ];
  if (s.records.invalid > 0 || s.records.dropped > 0) {
    lines.push(
      `  invalid ${fmt.format(s.records.invalid)} (dead-lettered ${fmt.format(s.records.deadLettered)}, skipped ${fmt.format(s.records.skipped)}) · dropped by transforms ${fmt.format(s.records.dropped)}`,
    );
  }
  // A run that did not succeed lists only what it could not take back: say that it stays. A fan-out
  // whose region failed published the other regions' records.
  const partial = s.regions?.some((r) => r.status === 'succeeded') ?? false;
  const verb = s.status === 'succeeded' ? 'wrote' : partial ? 'published' : 'left published';
  for (const o of s.outputs) lines.push(`  ${verb} ${o.location} (${outputFacts(o)})`);
  // One line per output whose columns changed: old and new files now read differently.
  for (const c of s.schemaChanges ?? [])
    lines.push(
      `  schema changed: ${c.location}: ${describeSchemaChange(c.change)} (read old and new files with union_by_name)`,
    );
  for (const t of s.tables ?? [])
    lines.push(
      `  table ${t.location}: ${plural(t.filesAdded, 'file')} written (${fmt.format(t.bytesWritten)} bytes), ${fmt.format(t.filesRemoved)} replaced; ${plural(t.filesInTable, 'file')} in the table`,
    );
  if (s.regions) lines.push(...s.regions.map(regionLine));
  else if (s.cursor) {
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
  lines.push(...warningLines(s, options));
  if (s.error && !options.readerStopped) lines.push(`  error [${s.error.code}]: ${s.error.message}`);
  return lines.join('\n');
}

/** A region of a fan-out: its records, and its cursor stored or left (`region fr failed [auth.unauthorized]: ...`). */
function regionLine(r: RegionOutcome): string {
  const head = `  region ${r.region} ${r.status === 'failed' ? `failed [${r.error?.code ?? 'error'}]` : 'published'}: ${plural(r.records, 'record')}`;
  if (!r.cursor) return head;
  if (r.cursor.stored) return `${head}, cursor ${r.cursor.next} saved to ${r.cursor.location}`;
  return `${head}, ${r.cursor.previous !== undefined ? `cursor left at ${r.cursor.previous}` : 'state left as it was'} in ${r.cursor.location}: the next run reads it again`;
}

/**
 * Each warning once per run (issue 37): written above as it happened, the summary only counts them;
 * otherwise (--log-level error) listed here. The `_extra` fields get their record counts, known only now.
 */
function warningLines(s: RunSummary, { warningsShown = false, extraFields }: SummaryTextOptions): string[] {
  const extra = Object.entries(extraFields ?? {});
  const counts = extra.length
    ? `; kept in _extra: ${extra.map(([path, n]) => `${path} (${plural(n, 'record')})`).join(', ')}`
    : '';
  if (s.warnings.length === 0) return counts ? [`  !${counts.slice(1)}`] : [];
  if (warningsShown) return [`  ! ${plural(s.warnings.length, 'warning')} (written above)${counts}`];
  return [...s.warnings.map((w) => `  ! ${w}`), ...(counts ? [`  !${counts.slice(1)}`] : [])];
}
