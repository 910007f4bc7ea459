// `run --dry-run`: what each pipeline would do, without writing anything. The
// source plan asks the service for totals (a few small probe requests: they
// count against the budget like any request); the outputs are the sinks' paths
// and keys with the run's placeholders filled in. The pipelines of a file share
// one client, so the estimate at the end adds their requests up.
import path from 'node:path';
import { CatalogClient } from '../client/catalog-client.js';
import type { LoadedPipeline } from '../pipeline/loader.js';
import { clientOptions, openPipelineState, sourceWithCursor, type ResolvedConnection } from '../pipeline/runner.js';
import { newRunId } from '../pipeline/run-id.js';
import type { StageSpec } from '../pipeline/pipeline-file.js';
import type { S3ObjectIO } from '../pipeline/state.js';
import { PathTemplate } from '../sinks/path-template.js';
import { plan, type SourceType } from '../sources/index.js';
import { formatDuration } from './progress.js';

const fmt = new Intl.NumberFormat('en-US');
const MAX_SLICES_SHOWN = 20;

export async function planCommandOutput(
  pipelines: LoadedPipeline[],
  connection: ResolvedConnection,
  opts: { s3?: () => S3ObjectIO; fullRefresh?: boolean } = {},
): Promise<string> {
  const lines: string[] = [];
  const client = new CatalogClient(clientOptions(connection));
  let requests = 0;
  try {
    for (const p of pipelines) {
      const state = openPipelineState(p, opts.s3);
      const { source, previous } = await sourceWithCursor(p.config.source, state, opts.fullRefresh);
      const { type: _type, ...options } = source;
      const sp = await plan(client, source.type as SourceType, options);
      requests += sp.requests;
      const mode = previous ? ` (incremental: updatedSince ${previous.cursor}, ${new Date(previous.cursor * 1000).toISOString()})` : state ? ' (full extract: no cursor yet, or --full-refresh)' : '';
      lines.push(`pipeline ${p.config.name}: ${source.type}${mode}`);
      lines.push(
        `  ${sp.total !== undefined ? `${fmt.format(sp.total)} records` : 'records unknown until the stream starts'} in ${sp.slices.length} slice(s); ~${fmt.format(sp.requests)} requests, ~${formatDuration(sp.estimatedMs / 1000)} at ${rateText(sp.rateLimit)} (planning used ${sp.planRequests})`,
      );
      for (const s of sp.slices.slice(0, MAX_SLICES_SHOWN)) {
        lines.push(`    ${s.label ?? 'whole query'}: ${s.total !== undefined ? `${fmt.format(s.total)} records, ` : ''}${s.requests} request(s)`);
      }
      if (sp.slices.length > MAX_SLICES_SHOWN) lines.push(`    … ${sp.slices.length - MAX_SLICES_SHOWN} more slices`);
      lines.push(`  transforms: ${p.config.transforms.map((t) => t.type).join(' -> ') || '(none)'}`);
      const run = { name: p.config.name, id: newRunId(), startedAt: new Date() };
      for (const s of p.config.sinks) lines.push(`  would write (${s.type}): ${outputOf(s, p.baseDir, run)}`);
      if (state) lines.push(`  state: ${state.location} (cursor ${previous ? previous.cursor : 'none yet'}; stored after the sinks commit)`);
    }
    if (pipelines.length > 1) {
      const ms = Number.isFinite(client.rateLimit) ? (requests * 60_000) / client.rateLimit : 0;
      lines.push(`all ${pipelines.length} pipelines share one request budget: ~${fmt.format(requests)} requests, ~${formatDuration(ms / 1000)} at ${rateText(client.rateLimit)}`);
    }
    lines.push('dry run: nothing was written');
  } finally {
    await client.close();
  }
  return lines.join('\n');
}

function rateText(rate: number): string {
  return Number.isFinite(rate) ? `${fmt.format(rate)} requests/min` : 'no rate limit';
}

/** Where a sink writes: the path (absolute) or s3://bucket/key, run placeholders filled in. */
function outputOf(sink: StageSpec, baseDir: string, run: { name: string; id: string; startedAt: Date }): string {
  const render = (template: string) => {
    try {
      const t = PathTemplate.parse(template, run);
      const shown = t.render(t.fields.map((f) => `{${f.path.join('.')}}`), 0);
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
