// Counts what a run did from its events: the numbers the progress display, the
// JSON log lines and the final summary are made of. One listener set per run.
import type { OutputRecord, RunEvents } from '../events.js';
import type { SchemaChange } from '../sinks/index.js';
import type { TableFilesReport } from '../sinks/table/table-layout.js';

export interface RunCounters {
  recordsRead: number;
  pages: number;
  requests: number;
  retries: number;
  throttles: number;
  invalid: number;
  deadLettered: number;
  skipped: number;
  /** Expected records from `meta.total` (summed over sources/slices when known). */
  total?: number;
  totalCapped: boolean;
  outputs: OutputRecord[];
  warnings: string[];
  /** The warnings by code, with how many of each. */
  warningCounts: Record<string, number>;
  /** Outputs whose columns changed since their previous run (`sink.schema_changed` events). */
  schemaChanges: OutputSchemaChange[];
  /** Tables that keep unchanged files (Iceberg current/): what each commit wrote and the table's size (`table.files` events). */
  tables: TableFilesReport[];
}

/** An output whose columns differ from the previous run's published schema of it. */
export interface OutputSchemaChange {
  sink: string;
  location: string;
  change: SchemaChange;
}

export class RunStats {
  readonly counters: RunCounters = {
    recordsRead: 0,
    pages: 0,
    requests: 0,
    retries: 0,
    throttles: 0,
    invalid: 0,
    deadLettered: 0,
    skipped: 0,
    totalCapped: false,
    outputs: [],
    warnings: [],
    warningCounts: {},
    schemaChanges: [],
    tables: [],
  };
  readonly startedAt = Date.now();
  /** The latest total each endpoint announced (estimates grow, the exact one comes last). */
  readonly #totals = new Map<string, { total: number; capped: boolean }>();
  /** Request start times of the last minute, for the requests-per-minute gauge. */
  readonly #recentRequests: number[] = [];

  constructor(events: RunEvents) {
    const c = this.counters;
    events.on('request', () => {
      c.requests++;
      const now = Date.now();
      this.#recentRequests.push(now);
      this.#forget(now);
    });
    events.on('retry', () => c.retries++);
    events.on('throttle', () => c.throttles++);
    events.on('page', (e) => {
      c.pages++;
      c.recordsRead += e.records;
    });
    events.on('total', (e) => {
      // Several sources (pipelines of one file) add up; each endpoint's latest word counts.
      this.#totals.set(e.endpoint, { total: e.total, capped: e.capped });
      let total = 0;
      let capped = false;
      for (const t of this.#totals.values()) {
        total += t.total;
        capped ||= t.capped;
      }
      c.total = total;
      c.totalCapped = capped;
    });
    events.on('invalid', (e) => {
      c.invalid++;
      if (e.action === 'dead-letter') c.deadLettered++;
      else if (e.action === 'skip') c.skipped++;
    });
    events.on('output', (o) => c.outputs.push(o));
    events.on('info', (e) => {
      if (e.code === 'sink.schema_changed')
        c.schemaChanges.push({
          sink: String(e.sink),
          location: String(e.location),
          change: e.schemaChanged as SchemaChange,
        });
      if (e.code === 'table.files') c.tables.push(e.files as TableFilesReport);
    });
    events.on('warning', (w) => {
      c.warnings.push(w.message);
      c.warningCounts[w.code] = (c.warningCounts[w.code] ?? 0) + 1;
    });
  }

  /** Requests started in the last 60 s. */
  requestsLastMinute(now = Date.now()): number {
    this.#forget(now);
    return this.#recentRequests.length;
  }

  /** Drops request times older than a minute (kept only for the gauge). */
  #forget(now: number): void {
    const r = this.#recentRequests;
    let old = 0;
    while (old < r.length && r[old]! < now - 60_000) old++;
    if (old > 0) r.splice(0, old);
  }

  elapsedMs(now = Date.now()): number {
    return now - this.startedAt;
  }

  /** Records per second since the start. */
  rate(now = Date.now()): number {
    const s = this.elapsedMs(now) / 1000;
    return s > 0 ? this.counters.recordsRead / s : 0;
  }

  /** Seconds left at the current rate, when the total is known. */
  etaSeconds(now = Date.now()): number | undefined {
    const { total, recordsRead } = this.counters;
    const rate = this.rate(now);
    if (total === undefined || rate <= 0 || recordsRead >= total) return undefined;
    return (total - recordsRead) / rate;
  }
}
