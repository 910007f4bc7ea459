// What a run reports when it ends: the summary the CLI prints and writes (`--summary-file`), and
// the error a run that did not succeed throws with it.
import type { Transform } from 'node:stream';
import { CatalogStreamsError } from '../errors.js';
import { type Remedy, describeCode } from '../error-codes.js';
import type { OutputRecord } from '../events.js';
import { RecordTransform } from '../transforms/record-transform.js';
import type { RegionOutcome } from './region-fanout.js';
import type { OutputSchemaChange, RunCounters } from './run-stats.js';
import type { TableFilesReport } from '../sinks/table/table-layout.js';

export interface RunSummary {
  pipeline: string;
  runId: string;
  status: 'succeeded' | 'failed' | 'aborted';
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  source: string;
  /** The filter actually sent (with the incremental `updatedSince`). */
  sourceFilter?: unknown;
  /**
   * read: from the source; written: rows per sink type; invalid: rejected by a
   * stage (dead-lettered or skipped); dropped: left out by transforms for other
   * reasons (a filter, dedupe). Without explode or flat-map, read = written
   * (per sink) + invalid + dropped.
   */
  records: {
    read: number;
    written: Record<string, number>;
    invalid: number;
    deadLettered: number;
    skipped: number;
    dropped: number;
  };
  requests: number;
  retries: number;
  throttles: number;
  pages: number;
  bytes: number;
  /** Local files and S3 objects committed (a manifest counts as an object). */
  files: number;
  objects: number;
  outputs: OutputRecord[];
  recordsPerSecond: number;
  cursor?: { previous?: number; next?: number; stored: boolean; location: string };
  /** The warnings' messages, in the order they came. */
  warnings: string[];
  /**
   * The warnings by code, with how many of each (`{"sink.parquet.extra": 2}`): what the JSON log's
   * summary line carries instead of the messages when each warning was already a `warn` line of its own.
   */
  warningCounts: Record<string, number>;
  /**
   * Outputs whose columns changed since the previous run of the same output published (added,
   * removed, retyped): absent when none did. Each is also the `schemaChanged` block of its manifest.
   */
  schemaChanges?: OutputSchemaChange[];
  /**
   * Iceberg `current/` tables (row deltas with position deletes): files written and replaced by this run, its
   * bytes written, and the files and bytes in the table; absent when no such sink ran.
   */
  tables?: TableFilesReport[];
  /**
   * Why the run did not succeed. `remedy` (from the error-code catalogue, when it knows the code):
   * `retry` when running again unchanged may pass, `fix` when something must change first.
   */
  error?: { code: string; message: string; remedy?: Remedy };
  /**
   * A fan-out over regions (`connection.regions`): each region's records, cursor and, when it
   * failed, its error (the other regions' outputs are published all the same).
   */
  regions?: RegionOutcome[];
}

/** A run that did not succeed, with the summary of what it did before it stopped. */
export class RunFailedError extends CatalogStreamsError {
  readonly summary: RunSummary;
  constructor(summary: RunSummary, cause: unknown) {
    const c = cause as CatalogStreamsError;
    super(c?.code ?? 'run.failed', c?.message ?? String(cause), { cause, exitCode: c?.exitCode ?? 1 });
    this.summary = summary;
  }
}

/** What a run knows when it ends, for its summary. */
export interface RunFacts {
  status: RunSummary['status'];
  error?: unknown;
  pipeline: string;
  runId: string;
  startedAt: Date;
  source: string;
  sourceFilter: unknown;
  counters: RunCounters;
  /** What the pipeline's sinks (not dead letters) committed. */
  sinkOutputs: OutputRecord[];
  /** The run's transforms, before fusing: their own counters. */
  transforms: readonly Transform[];
  cursor?: RunSummary['cursor'];
  /** Masks secrets in an error message. */
  redact(text: string): string;
}

export function summarizeRun(f: RunFacts): RunSummary {
  const finishedAt = new Date();
  const c = f.counters;
  // Rows written count the pipeline's sinks; the outputs list everything committed (dead letters and manifests
  // too) when the run succeeded, and nothing that a failed run took back.
  const outputs = f.status === 'succeeded' ? [...c.outputs] : f.sinkOutputs;
  const written: Record<string, number> = {};
  for (const o of f.sinkOutputs) written[o.sink] = (written[o.sink] ?? 0) + o.rows;
  // The stages' own counters (fused stages keep counting into them); invalid records are counted apart.
  const dropped = f.transforms.reduce(
    (n, t) => (t instanceof RecordTransform ? n + t.stats.dropped - t.stats.invalid : n),
    0,
  );
  const durationMs = finishedAt.getTime() - f.startedAt.getTime();
  const err = f.error as CatalogStreamsError | undefined;
  return {
    pipeline: f.pipeline,
    runId: f.runId,
    status: f.status,
    startedAt: f.startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    durationMs,
    source: f.source,
    sourceFilter: f.sourceFilter,
    records: {
      read: c.recordsRead,
      written,
      invalid: c.invalid,
      deadLettered: c.deadLettered,
      skipped: c.skipped,
      dropped,
    },
    requests: c.requests,
    retries: c.retries,
    throttles: c.throttles,
    pages: c.pages,
    bytes: outputs.reduce((n, o) => n + o.bytes, 0),
    files: outputs.filter((o) => o.kind === 'file').length,
    objects: outputs.filter((o) => o.kind === 'object').length,
    outputs,
    recordsPerSecond: durationMs > 0 ? Math.round((c.recordsRead * 1000) / durationMs) : 0,
    cursor: f.cursor,
    warnings: c.warnings,
    warningCounts: { ...c.warningCounts },
    ...(c.schemaChanges.length > 0 ? { schemaChanges: [...c.schemaChanges] } : {}),
    ...(c.tables.length > 0 ? { tables: [...c.tables] } : {}),
    error: err
      ? { code: err.code ?? 'error', message: f.redact(err.message ?? String(err)), ...remedyOf(err.code ?? 'error') }
      : undefined,
  };
}

function remedyOf(code: string): { remedy?: Remedy } {
  const remedy = describeCode(code)?.remedy;
  return remedy ? { remedy } : {};
}
