// `run --dry-run`: what each pipeline would do, without writing anything. The
// source plan asks the service for totals (a few small probe requests: they
// count against the budget like any request); the outputs are the sinks' paths
// and keys with the run's placeholders filled in. The pipelines of a file share
// one client, so the estimate at the end adds their requests up.
import path from 'node:path';
import { CatalogClient } from '../client/catalog-client.js';
import { Redactor } from '../pipeline/env.js';
import type { LoadedPipeline } from '../pipeline/loader.js';
import {
  clientOptions,
  fullReadEvery,
  openPipelineState,
  sourceWithCursor,
  stateIdentity,
  type ResolvedConnection,
} from '../pipeline/runner.js';
import { isoSeconds } from '../catalog/index.js';
import { newRunId } from '../core/run-id.js';
import type { StageSpec } from '../pipeline/pipeline-file.js';
import { PathTemplate } from '../sinks/shared/path-template.js';
import { regionSummary } from '../pipeline/region-preset.js';
import { estimateSource, type SourceType } from '../sources/index.js';
import { estimateMediaMirror } from '../sinks/media/media-mirror-sink.js';
import type { MirrorEstimate } from '../sinks/media/mirror-estimate.js';
import { formatDuration, plural } from './progress.js';

const MAX_SLICES_SHOWN = 20;

/** What `--dry-run` found for one pipeline. */
export interface PipelinePlanReport {
  pipeline: string;
  source: string;
  /** What `connection.region` set (base URL, default locales) and checks; absent without a region. */
  region?: string;
  /** `incremental` from a stored cursor, `full` for a stateful pipeline without one; absent when stateless. */
  mode?: 'incremental' | 'full';
  updatedSince?: number;
  /** A full run although the state holds a cursor: a sink's periodic full read is due (fullReadEvery). */
  fullReadDue?: boolean;
  total?: number;
  slices: { label?: string; total?: number; requests: number }[];
  requests: number;
  estimatedSeconds: number;
  planRequests: number;
  /** Requests per minute of each key (null: no rate limit). */
  rateLimit: number | null;
  /** API keys the requests are spread over; the estimate uses their budgets together. */
  keys: number;
  transforms: string[];
  outputs: { sink: string; location: string }[];
  /** Per media-mirror sink: files and bytes to fetch as its state tells (or why it cannot say). */
  media?: MediaPlan[];
  state?: { location: string; cursor: number | null };
}

export type MediaPlan = { location: string } & ({ estimate: MirrorEstimate } | { error: string });

export interface PlanReport {
  pipelines: PipelinePlanReport[];
  /** The pipelines of a file share one budget: their requests added up. */
  all: { requests: number; estimatedSeconds: number; rateLimit: number | null; keys: number };
}

/**
 * The plan of the file's pipelines, its text values (names, paths, keys, labels) redacted by the
 * secrets every pipeline knows: a `${VAR}` of a secret in a path or a name is not printed.
 */
export async function planReport(
  pipelines: LoadedPipeline[],
  connection: ResolvedConnection,
  opts: { fullRefresh?: boolean } = {},
): Promise<PlanReport> {
  const redactor = new Redactor();
  for (const p of pipelines) redactor.absorb(p.redactor);
  return redactor.redactValue(await unredactedPlan(pipelines, connection, opts));
}

async function unredactedPlan(
  pipelines: LoadedPipeline[],
  connection: ResolvedConnection,
  opts: { fullRefresh?: boolean } = {},
): Promise<PlanReport> {
  const reports: PipelinePlanReport[] = [];
  const client = new CatalogClient(clientOptions(connection));
  let requests = 0;
  try {
    // Every pipeline's cursor is read and checked against the pipeline, API host and source before any
    // request: a dry run refuses a foreign cursor (state.mismatch) as the run would.
    const started = [];
    for (const p of pipelines) {
      const state = openPipelineState(p.plan);
      const identity = stateIdentity(p.plan, connection.baseUrl, connection.sandbox);
      const read = await sourceWithCursor(
        p.plan.source,
        state,
        opts.fullRefresh,
        identity,
        new Date(),
        fullReadEvery(p.plan),
      );
      started.push({ p, state, ...read });
    }
    for (const { p, state, source, previous, fullReadDue } of started) {
      const sp = await estimateSource(client, source.type as SourceType, source.written);
      requests += sp.requests;
      const run = { name: p.plan.name, id: newRunId(), startedAt: new Date() };
      const region = regionSummary(p.plan, { url: connection.baseUrl, source: connection.baseUrlSource });
      reports.push({
        pipeline: p.plan.name,
        source: source.type,
        ...(region !== undefined ? { region } : {}),
        ...(state ? { mode: previous ? ('incremental' as const) : ('full' as const) } : {}),
        ...(previous ? { updatedSince: previous.cursor } : {}),
        ...(fullReadDue ? { fullReadDue: true } : {}),
        total: sp.total,
        slices: sp.slices.map((s) => ({ label: s.label, total: s.total, requests: s.requests })),
        requests: sp.requests,
        estimatedSeconds: Math.round(sp.estimatedMs / 1000),
        planRequests: sp.planRequests,
        rateLimit: finiteOrNull(sp.rateLimit),
        keys: sp.keys,
        transforms: p.plan.transforms.map((t) => t.type),
        outputs: p.plan.sinks.map((s) => ({
          sink: s.type,
          location: outputOf({ type: s.type, ...s.written }, p.plan.baseDir, run),
        })),
        ...(await mediaPlans(p)),
        ...(state ? { state: { location: state.location, cursor: previous ? previous.cursor : null } } : {}),
      });
    }
  } finally {
    await client.close();
  }
  const ms = Number.isFinite(client.budgetPerMinute) ? (requests * 60_000) / client.budgetPerMinute : 0;
  return {
    pipelines: reports,
    all: {
      requests,
      estimatedSeconds: Math.round(ms / 1000),
      rateLimit: finiteOrNull(client.rateLimit),
      keys: client.keyCount,
    },
  };
}

/** The plan as text for a person (stdout). */
export function formatPlanText(report: PlanReport): string {
  const lines: string[] = [];
  for (const r of report.pipelines) {
    const mode =
      r.updatedSince !== undefined
        ? ` (incremental: updatedSince ${isoSeconds(r.updatedSince)}, unix ${r.updatedSince})`
        : r.mode === 'full'
          ? r.fullReadDue
            ? " (full extract: a sink's periodic full read is due, the stored cursor is not used)"
            : ' (full extract: no cursor yet, or --full-refresh)'
          : '';
    lines.push(`pipeline ${r.pipeline}: ${r.source}${mode}`);
    if (r.region) lines.push(`  ${r.region}`);
    lines.push(
      `  ${r.total !== undefined ? `${plural(r.total, 'record')}` : 'records unknown until the stream starts'} in ${plural(r.slices.length, 'slice')}; ~${plural(r.requests, 'request')}, ~${formatDuration(r.estimatedSeconds)} at ${rateText(r.rateLimit ?? Infinity, r.keys)} (planning used ${plural(r.planRequests, 'request')})`,
    );
    for (const s of r.slices.slice(0, MAX_SLICES_SHOWN)) {
      lines.push(
        `    ${s.label ? readableLabel(s.label) : 'whole query'}: ${s.total !== undefined ? `${plural(s.total, 'record')}, ` : ''}${plural(s.requests, 'request')}`,
      );
    }
    if (r.slices.length > MAX_SLICES_SHOWN)
      lines.push(`    … ${plural(r.slices.length - MAX_SLICES_SHOWN, 'more slice', 'more slices')}`);
    lines.push(`  transforms: ${r.transforms.join(' -> ') || '(none)'}`);
    for (const o of r.outputs) lines.push(`  would write (${o.sink}): ${o.location}`);
    for (const m of r.media ?? []) lines.push(...mediaLines(m));
    if (r.state)
      lines.push(
        `  state: ${r.state.location} (cursor ${r.state.cursor === null ? 'none yet' : `${isoSeconds(r.state.cursor)}, unix ${r.state.cursor}`}; stored after the sinks commit)`,
      );
  }
  if (report.pipelines.length > 1) {
    lines.push(
      `all ${report.pipelines.length} pipelines share one request budget: ~${plural(report.all.requests, 'request')}, ~${formatDuration(report.all.estimatedSeconds)} at ${rateText(report.all.rateLimit ?? Infinity, report.all.keys)}`,
    );
  }
  lines.push('dry run: nothing was written');
  return lines.join('\n');
}

/** The plan as JSON log lines: one `plan` line per pipeline, then one `dry-run` line for the whole file. */
export function planJsonLines(report: PlanReport): string[] {
  const time = new Date().toISOString();
  return [
    ...report.pipelines.map((r) => JSON.stringify({ time, level: 'info', event: 'plan', ...r })),
    JSON.stringify({
      time,
      level: 'info',
      event: 'dry-run',
      pipelines: report.pipelines.map((r) => r.pipeline),
      ...report.all,
      message: 'dry run: nothing was written',
    }),
  ];
}

/** The media-mirror sinks' estimates (none: no such sink). A state that cannot be read is said, not fatal. */
async function mediaPlans(p: LoadedPipeline): Promise<{ media?: MediaPlan[] }> {
  const media: MediaPlan[] = [];
  for (const s of p.plan.sinks) {
    if (s.type !== 'media-mirror') continue;
    const location = typeof s.written.path === 'string' ? s.written.path : '(no path)';
    try {
      media.push({ location, estimate: await estimateMediaMirror(s.written, p.plan.baseDir) });
    } catch (err) {
      media.push({ location, error: (err as Error).message });
    }
  }
  return media.length > 0 ? { media } : {};
}

/** A media mirror's estimate for a person: what its state tells, then what it cannot know. */
function mediaLines(m: MediaPlan): string[] {
  if ('error' in m) return [`  media-mirror ${m.location}: no estimate, its state could not be read (${m.error})`];
  const e = m.estimate;
  const bytes =
    e.estimatedBytesToFetch === null
      ? 'bytes unknown (no stored file of their type to judge by)'
      : `~${plural(e.estimatedBytesToFetch, 'byte')} at the mean stored size`;
  const lines = [
    `  media-mirror ${m.location}: ${plural(e.known, 'file')} known from earlier runs (${e.state}), ${e.stored.toLocaleString('en-US')} stored (${plural(e.storedBytes, 'byte')})`,
    `    to fetch: ${plural(e.toFetch, 'known file')} not stored yet, ${bytes}; ${plural(e.waiting, 'failed file')} waiting for a backoff (not asked)`,
    `    asked again: ${plural(e.revalidated, 'stored file')} by conditional GET (${plural(e.revalidatedBytes, 'byte')} if all changed, none while unchanged)`,
    `    not counted: ${e.unknown}`,
  ];
  return lines;
}

/**
 * A slice label for a person: its createdAt window in ISO. The label itself keeps seconds: it is
 * the slice's name in record origins, events and errors, which scripts may match.
 */
function readableLabel(label: string): string {
  return label.replace(
    /\bcreatedAt (\d+)\.\.(\d+)\b/,
    (_, from: string, until: string) => `createdAt ${isoSeconds(Number(from))}..${isoSeconds(Number(until))}`,
  );
}

function finiteOrNull(n: number): number | null {
  return Number.isFinite(n) ? n : null;
}

/** `100 requests/min`, or with several keys `3 keys × 120 requests/min (360/min)`. */
function rateText(rate: number, keys = 1): string {
  if (!Number.isFinite(rate)) return keys > 1 ? `no rate limit (${keys} keys)` : 'no rate limit';
  const one = `${plural(rate, 'request')}/min`;
  return keys > 1 ? `${keys} keys × ${one} (${(rate * keys).toLocaleString('en-US')}/min)` : one;
}

/** Where a sink writes: the path (absolute) or s3://bucket/key, run placeholders filled in. */
function outputOf(sink: StageSpec, baseDir: string, run: { name: string; id: string; startedAt: Date }): string {
  const render = (template: string) => {
    try {
      const t = PathTemplate.parse(template, run);
      const shown = t.render(
        t.fields.map((f) => `{${f.path.join('.')}}`),
        0,
      );
      return t.hasPart ? `${shown} (and further parts)` : shown;
    } catch {
      return template;
    }
  };
  if (typeof sink.bucket === 'string' && typeof sink.key === 'string') {
    const manifest = sink.manifest === false ? '' : ' + _manifest.json';
    return `s3://${sink.bucket}/${render(sink.key)}${manifest}`;
  }
  if (typeof sink.path === 'string') return sink.path === '-' ? 'stdout' : render(path.resolve(baseDir, sink.path));
  return '(no path)';
}
