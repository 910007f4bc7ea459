// What a running file of pipelines shows. With the pretty format on a TTY: a
// live display redrawn in place by log-update, one line per pipeline (records
// done / planned total, ETA, requests, retries, 429s, invalid) and one line for
// the shared request budget. With json: one JSON log line per pipeline every few
// seconds (`progress`) and one at each notable event. Everything goes to stderr
// so a `jsonl` sink can write records to stdout.
//
// Totals and the ETA come from the source plan made before the run (every
// slice and code chunk, the same plan `--dry-run` prints), not from the slice a
// source happens to be in: a sliced extract's total never jumps, its percentage
// only grows. The ETA counts the requests the plan says are left at the slower
// of the request budget and the pace seen so far (the budget is shared by the
// pipelines of a file, so each one's pace shows its share).
import { createLogUpdate } from 'log-update';
import type { OutputRecord, RunEvents } from '../events.js';
import type { Redactor } from '../pipeline/env.js';
import type { RunStats } from '../pipeline/run-stats.js';
import { type LogFormat, type LogLevel, levelEnabled } from './log.js';

/** One pipeline of the run as the display sees it. */
export interface PipelineProgress {
  name: string;
  stats: RunStats;
  /** What the plan expects; absent when planning was not possible (the run then learns totals as it goes). */
  plan?: { total?: number; requests: number };
  /**
   * A plan is on its way: until it comes, no total is shown (a sliced source's first slice total
   * would show a jump and a falling percentage once the plan's total replaces it).
   */
  planPending?: boolean;
  /** Set when the pipeline has finished (its line stops moving). */
  finished?: boolean;
}

export interface ProgressOptions {
  stream: NodeJS.WriteStream;
  format: LogFormat;
  level: LogLevel;
  /** Redraw a live display (pretty format on a TTY, level info or debug). */
  live: boolean;
  redactor: Redactor;
  /** The request budget, requests per minute: every key's together (what the ETA is paced by). */
  rateLimit: number;
  /** API keys sharing the budget (default 1), shown beside it. */
  keys?: number;
  /** Seconds between JSON progress lines. */
  logIntervalSeconds?: number;
  /** Every pipeline of the run: lines about the run as a whole (its own bus) carry them as `pipelines`. */
  pipelines?: string[];
}

export type LogFields = Record<string, unknown>;

export interface ProgressHandle {
  /** Writes one log line now (JSON with the json format) if `level` passes the threshold. */
  log(level: LogLevel, event: string, fields?: LogFields): void;
  /** Listens to one pipeline's events; its log lines name it in `pipeline`. */
  add(pipeline: PipelineProgress, events: RunEvents): void;
  stop(): void;
  /** The fields each pipeline's sinks kept in `_extra`, with the records that had them (for the summary). */
  readonly extraFields: ReadonlyMap<string, Readonly<Record<string, number>>>;
}

/**
 * Info events that say nothing on a clean run (issue 37): a transform's counts (the summary has the
 * totals), a sink's column count, and the `_extra` tally (the summary says each field once, with its
 * count). They are written at debug level.
 */
const QUIET_INFO = new Set([
  'transform.stats',
  'sink.parquet.schema',
  'sink.parquet.extra_fields',
  'sink.csv.extra_fields',
]);
/**
 * At a terminal also "every output committed": the summary right after says it. JSON logs keep it at
 * info (a scheduler or a test waits for it to know the commit point is passed).
 */
const QUIET_INFO_PRETTY = new Set([...QUIET_INFO, 'outputs_committed']);

const fmt = new Intl.NumberFormat('en-US');

export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  return h > 0
    ? `${h}:${String(m).padStart(2, '0')}:${String(r).padStart(2, '0')}`
    : `${m}:${String(r).padStart(2, '0')}`;
}

/** `1 request`, `2 requests`, `1,000 records`. */
export function plural(n: number, noun: string, nouns = `${noun}s`): string {
  return `${fmt.format(n)} ${n === 1 ? noun : nouns}`;
}

/**
 * `parquet: 580 rows, 198,442 bytes`; a table's metadata or state file says what it is, not "0 rows",
 * and leaves out a size the run does not know (an Iceberg catalog wrote the file).
 */
export function outputFacts(o: OutputRecord): string {
  if (o.role === undefined) return `${o.sink}: ${plural(o.rows, 'row')}, ${plural(o.bytes, 'byte')}`;
  return `${o.sink} ${o.role}${o.bytes > 0 ? `, ${plural(o.bytes, 'byte')}` : ''}`;
}

function bar(fraction: number, width = 24): string {
  const filled = Math.round(Math.min(1, Math.max(0, fraction)) * width);
  return `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
}

export interface ProgressFigures {
  records: number;
  total?: number;
  /** The total is a lower bound (a source's capped `meta.total`, no plan). */
  capped: boolean;
  percent?: number;
  etaSeconds?: number;
}

/** Records, total, percentage and ETA of one pipeline at `now`. */
export function progressFigures(p: PipelineProgress, rateLimit: number, now = Date.now()): ProgressFigures {
  const c = p.stats.counters;
  const planned = p.plan?.total;
  const total = planned ?? (p.planPending ? undefined : c.total);
  const capped = planned === undefined && !p.planPending && c.totalCapped;
  const percent =
    total !== undefined && total > 0 ? Math.min(100, Math.floor((100 * c.recordsRead) / total)) : undefined;
  if (p.finished) return { records: c.recordsRead, total, capped, percent };
  return { records: c.recordsRead, total, capped, percent, etaSeconds: eta(p, rateLimit, now) };
}

function eta(p: PipelineProgress, rateLimit: number, now: number): number | undefined {
  const c = p.stats.counters;
  const elapsedSeconds = p.stats.elapsedMs(now) / 1000;
  // Requests are what a paced run waits for: with a planned total, the planned requests left say how long.
  if (p.plan && p.plan.total !== undefined && p.plan.requests > 0) {
    const left = p.plan.requests - c.requests;
    if (left <= 0) return undefined;
    const budgetPace = Number.isFinite(rateLimit) && rateLimit > 0 ? 60 / rateLimit : 0;
    const seenPace = c.requests > 0 ? elapsedSeconds / c.requests : 0;
    const pace = Math.max(budgetPace, seenPace);
    return pace > 0 ? left * pace : undefined;
  }
  // No plan (a stream source): the record rate against the total the source announced.
  const total = c.total;
  if (total === undefined || c.recordsRead === 0 || c.recordsRead >= total) return undefined;
  return ((total - c.recordsRead) * elapsedSeconds) / c.recordsRead;
}

/** One display line for one pipeline. */
export function renderPipelineLine(p: PipelineProgress, rateLimit: number, now = Date.now()): string {
  const c = p.stats.counters;
  const f = progressFigures(p, rateLimit, now);
  const head =
    f.total !== undefined && f.total > 0
      ? `${p.name} ${bar(f.records / f.total)} ${fmt.format(f.records)} / ${f.capped ? '≥' : ''}${fmt.format(f.total)} records ${f.percent}%${f.etaSeconds !== undefined ? `  ETA ${formatDuration(f.etaSeconds)}` : p.finished ? '  done' : ''}`
      : `${p.name} ${plural(f.records, 'record')}${p.finished ? '  done' : ''}`;
  const rate = Math.round(p.stats.rate(now));
  return `${head} · ${plural(c.requests, 'request')} · ${plural(c.retries, 'retry', 'retries')} · ${fmt.format(c.throttles)} × 429 · ${fmt.format(c.invalid)} invalid · ${fmt.format(rate)} rec/s`;
}

/** The live display: a line per pipeline, then the shared budget and the elapsed time. */
export function renderProgress(
  pipelines: readonly PipelineProgress[],
  rateLimit: number,
  startedAt: number,
  now = Date.now(),
  keys = 1,
): string {
  const lines = pipelines.map((p) => renderPipelineLine(p, rateLimit, now));
  const lastMinute = pipelines.reduce((n, p) => n + p.stats.requestsLastMinute(now), 0);
  const budget = Number.isFinite(rateLimit)
    ? `${fmt.format(lastMinute)}/min of ${fmt.format(rateLimit)} requests${keys > 1 ? ` (${keys} keys)` : ''}`
    : `${plural(lastMinute, 'request')}/min (no rate limit${keys > 1 ? `, ${keys} keys` : ''})`;
  lines.push(`budget ${budget} · ${formatDuration((now - startedAt) / 1000)} elapsed`);
  return lines.join('\n');
}

/** Where log lines go while a live display is drawn: above it, which is then redrawn. */
interface LiveDisplay {
  persist(text: string): void;
  stop(): void;
}

export function attachProgress(events: RunEvents, opts: ProgressOptions): ProgressHandle {
  const startedAt = Date.now();
  const pipelines: PipelineProgress[] = [];
  const live = opts.live ? liveDisplay(pipelines, opts, startedAt) : undefined;
  let showing = live;
  const log = logWriter(opts, () => showing);
  const timer = live
    ? setInterval(() => live.redraw(), 200)
    : opts.format === 'json' && levelEnabled(opts.level, 'info')
      ? setInterval(() => logProgressLines(pipelines, opts.rateLimit, log), (opts.logIntervalSeconds ?? 5) * 1000)
      : undefined;
  timer?.unref();
  let ticking = timer;
  const extraFields = new Map<string, Record<string, number>>();
  const quiet = opts.format === 'pretty' ? QUIET_INFO_PRETTY : QUIET_INFO;
  listen(events, opts.pipelines ? { pipelines: opts.pipelines } : {}, log, quiet);

  return {
    log,
    extraFields,
    add(pipeline, pipelineEvents) {
      pipelines.push(pipeline);
      listen(pipelineEvents, { pipeline: pipeline.name }, log, quiet);
      pipelineEvents.on('info', (i) => {
        if (!i.code.endsWith('.extra_fields') || !isCounts(i.fields)) return;
        const counts = extraFields.get(pipeline.name) ?? {};
        for (const [path, n] of Object.entries(i.fields)) counts[path] = Math.max(counts[path] ?? 0, n);
        extraFields.set(pipeline.name, counts);
      });
    },
    stop() {
      // Idempotent: the run command stops the display before its summary and again on the way out.
      if (ticking) clearInterval(ticking);
      ticking = undefined;
      showing?.stop();
      showing = undefined;
    },
  };
}

/** One log line at a time, above the live display while one is shown. */
function logWriter(opts: ProgressOptions, live: () => LiveDisplay | undefined): ProgressHandle['log'] {
  return (level, event, fields = {}) => {
    if (!levelEnabled(opts.level, level)) return;
    if (opts.format === 'json') {
      // value by value: a short secret never damages a JSON key
      opts.stream.write(`${opts.redactor.json({ time: new Date().toISOString(), level, event, ...fields })}\n`);
      return;
    }
    const who = typeof fields.pipeline === 'string' ? `${fields.pipeline}: ` : '';
    const detail = 'message' in fields ? String(fields.message) : JSON.stringify(fields);
    const text = `${level === 'error' ? '✗' : level === 'warn' ? '!' : '·'} ${who}${event}: ${detail}`;
    const display = live();
    if (display) display.persist(text);
    else opts.stream.write(`${opts.redactor.redact(text)}\n`);
  };
}

function liveDisplay(
  pipelines: readonly PipelineProgress[],
  opts: ProgressOptions,
  startedAt: number,
): LiveDisplay & { redraw(): void } {
  const logUpdate = createLogUpdate(opts.stream);
  const draw = () =>
    logUpdate(opts.redactor.redact(renderProgress(pipelines, opts.rateLimit, startedAt, Date.now(), opts.keys)));
  return {
    redraw: draw,
    persist(text) {
      logUpdate.clear();
      opts.stream.write(`${opts.redactor.redact(text)}\n`);
      draw();
    },
    stop() {
      draw();
      logUpdate.done();
    },
  };
}

/** The JSON `progress` line of every pipeline still running. */
function logProgressLines(pipelines: readonly PipelineProgress[], rateLimit: number, log: ProgressHandle['log']): void {
  for (const p of pipelines) {
    if (p.finished) continue;
    const c = p.stats.counters;
    const f = progressFigures(p, rateLimit);
    log('info', 'progress', {
      pipeline: p.name,
      records: c.recordsRead,
      total: f.total,
      totalCapped: f.capped,
      percent: f.percent,
      pages: c.pages,
      requests: c.requests,
      plannedRequests: p.plan?.requests,
      requestsLastMinute: p.stats.requestsLastMinute(),
      retries: c.retries,
      throttles: c.throttles,
      invalid: c.invalid,
      recordsPerSecond: Math.round(p.stats.rate()),
      etaSeconds: f.etaSeconds === undefined ? undefined : Math.round(f.etaSeconds * 10) / 10,
    });
  }
}

function isCounts(v: unknown): v is Record<string, number> {
  return typeof v === 'object' && v !== null && Object.values(v).every((n) => typeof n === 'number');
}

/** Log lines for what a bus reports; `tag` names its pipeline (or the run's pipelines). */
function listen(bus: RunEvents, tag: LogFields, log: ProgressHandle['log'], quiet: ReadonlySet<string>): void {
  bus.on('retry', (e) =>
    log('warn', 'retry', {
      ...tag,
      ...e,
      message: `${e.endpoint} attempt ${e.attempt} failed (${e.reason}); retrying in ${formatDuration(e.delayMs / 1000)}`,
    }),
  );
  bus.on('throttle', (e) =>
    log('warn', 'throttle', {
      ...tag,
      ...e,
      message: `${e.endpoint} answered 429; slowing down for ${(e.delayMs / 1000).toFixed(1)} s`,
    }),
  );
  bus.on('output', (o) =>
    log('info', 'committed', {
      ...tag,
      ...o,
      message:
        o.role === undefined
          ? `${o.sink} wrote ${o.location} (${plural(o.rows, 'row')}, ${plural(o.bytes, 'byte')})`
          : `${o.sink} wrote ${o.location} (${outputFacts(o)})`,
    }),
  );
  bus.on('warning', (w) => log('warn', w.code, { ...tag, message: w.message }));
  // Info events may carry bulky detail (a Parquet schema): log lines keep the scalars.
  bus.on('info', (i) =>
    log(quiet.has(i.code) ? 'debug' : 'info', i.code, {
      ...tag,
      ...Object.fromEntries(Object.entries(i).filter(([, v]) => v === null || typeof v !== 'object')),
    }),
  );
  bus.on('invalid', (e) => log('debug', 'invalid', { ...tag, ...e }));
  bus.on('request', (e) => log('debug', 'request', { ...tag, ...e }));
}
