// What a running pipeline shows. On a TTY: a live display redrawn in place by
// log-update (records done / total, pages, requests per minute against the
// budget, retries, 429s, ETA). Not on a TTY (cron, Kubernetes, CI): one JSON log
// line every few seconds and one at each notable event. Everything goes to
// stderr so a `jsonl` sink can write records to stdout.
import { createLogUpdate } from 'log-update';
import type { RunEvents } from '../events.js';
import type { Redactor } from '../pipeline/env.js';
import type { RunStats } from '../pipeline/run-stats.js';

export interface ProgressOptions {
  name: string;
  stream: NodeJS.WriteStream;
  tty: boolean;
  quiet: boolean;
  redactor: Redactor;
  /** The request budget, requests per minute. */
  rateLimit: number;
  /** Seconds between JSON progress lines when not on a TTY. */
  logIntervalSeconds?: number;
}

export interface ProgressHandle {
  /** Writes one structured (or plain, on a TTY) log line now. */
  log(level: 'info' | 'warn' | 'error', event: string, fields?: Record<string, unknown>): void;
  stop(): void;
}

const fmt = new Intl.NumberFormat('en-US');

export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${String(r).padStart(2, '0')}` : `${m}:${String(r).padStart(2, '0')}`;
}

function bar(fraction: number, width = 24): string {
  const filled = Math.round(Math.min(1, Math.max(0, fraction)) * width);
  return `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
}

export function renderProgress(stats: RunStats, name: string, rateLimit: number, now = Date.now()): string {
  const c = stats.counters;
  const total = c.total;
  const eta = stats.etaSeconds(now);
  const head =
    total !== undefined && total > 0
      ? `${name} ${bar(c.recordsRead / total)} ${fmt.format(c.recordsRead)} / ${c.totalCapped ? '≥' : ''}${fmt.format(total)} records ${Math.min(100, Math.floor((100 * c.recordsRead) / total))}%${eta !== undefined ? `  ETA ${formatDuration(eta)}` : ''}`
      : `${name} ${fmt.format(c.recordsRead)} records`;
  const budget = Number.isFinite(rateLimit) ? ` (${stats.requestsLastMinute(now)}/min of ${fmt.format(rateLimit)})` : '';
  const tail = `pages ${fmt.format(c.pages)} · requests ${fmt.format(c.requests)}${budget} · retries ${c.retries} · 429s ${c.throttles} · invalid ${c.invalid} · ${fmt.format(Math.round(stats.rate(now)))} rec/s · ${formatDuration(stats.elapsedMs(now) / 1000)}`;
  return `${head}\n${tail}`;
}

export function attachProgress(events: RunEvents, stats: RunStats, opts: ProgressOptions): ProgressHandle {
  const write = (text: string) => opts.stream.write(`${opts.redactor.redact(text)}\n`);
  const log: ProgressHandle['log'] = (level, event, fields = {}) => {
    if (opts.quiet && level === 'info') return;
    if (opts.tty) {
      const detail = 'message' in fields ? String(fields.message) : JSON.stringify(fields);
      live?.persist(`${level === 'info' ? '·' : level === 'warn' ? '!' : '✗'} ${event}: ${detail}`);
      if (!live) write(`${event}: ${detail}`);
    } else {
      opts.stream.write(`${opts.redactor.json({ time: new Date().toISOString(), level, pipeline: opts.name, event, ...fields })}\n`);
    }
  };

  let live: { persist(text: string): void; stop(): void } | undefined;
  let timer: NodeJS.Timeout | undefined;
  if (!opts.quiet && opts.tty) {
    const logUpdate = createLogUpdate(opts.stream);
    const draw = () => logUpdate(opts.redactor.redact(renderProgress(stats, opts.name, opts.rateLimit)));
    live = {
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
    timer = setInterval(draw, 200);
  } else if (!opts.quiet) {
    timer = setInterval(() => {
      const c = stats.counters;
      log('info', 'progress', {
        records: c.recordsRead,
        total: c.total,
        pages: c.pages,
        requests: c.requests,
        requestsLastMinute: stats.requestsLastMinute(),
        retries: c.retries,
        throttles: c.throttles,
        invalid: c.invalid,
        recordsPerSecond: Math.round(stats.rate()),
        etaSeconds: stats.etaSeconds() === undefined ? undefined : Math.round(stats.etaSeconds()!),
      });
    }, (opts.logIntervalSeconds ?? 5) * 1000);
  }
  timer?.unref();

  events.on('retry', (e) => log('warn', 'retry', { ...e, message: `${e.endpoint} attempt ${e.attempt} failed (${e.reason}); retrying in ${formatDuration(e.delayMs / 1000)}` }));
  events.on('throttle', (e) => log('warn', 'throttle', { ...e, message: `${e.endpoint} answered 429; slowing down for ${(e.delayMs / 1000).toFixed(1)} s` }));
  events.on('output', (o) => log('info', 'committed', { ...o, message: `${o.sink} wrote ${o.location} (${fmt.format(o.rows)} rows, ${fmt.format(o.bytes)} bytes)` }));
  events.on('warning', (w) => log('warn', w.code, { message: w.message }));
  // Info events may carry bulky detail (a Parquet schema): log lines keep the scalars.
  events.on('info', (i) => log('info', i.code, Object.fromEntries(Object.entries(i).filter(([, v]) => v === null || typeof v !== 'object'))));

  return {
    log,
    stop() {
      if (timer) clearInterval(timer);
      live?.stop();
    },
  };
}
