// `run --dry-run`: what each pipeline would do, without writing anything. The
// source plan asks the service for totals (a few small probe requests: they
// count against the budget like any request); sinks are described from their
// options.
import { CatalogClient } from '../client/catalog-client.js';
import type { LoadedPipeline } from '../pipeline/loader.js';
import { openPipelineState, resolveConnection, withUpdatedSince, type ResolvedConnection } from '../pipeline/runner.js';
import { plan, type SourceType } from '../sources/index.js';
import { formatDuration } from './progress.js';
import { s3ObjectIO } from './s3-state-io.js';

const fmt = new Intl.NumberFormat('en-US');

export async function planCommandOutput(pipelines: LoadedPipeline[], override: Partial<ResolvedConnection>, env: NodeJS.ProcessEnv): Promise<string> {
  const lines: string[] = [];
  for (const p of pipelines) {
    const connection = resolveConnection(p, override, env);
    const client = new CatalogClient({ ...connection });
    try {
      const state = openPipelineState(p, s3ObjectIO);
      const previous = await state?.read();
      const source = previous ? withUpdatedSince(p.config.source, previous.cursor) : p.config.source;
      const { type: _type, ...options } = source;
      const sp = await plan(client, source.type as SourceType, options);
      lines.push(`pipeline ${p.config.name}: ${source.type}${previous ? ` (incremental from cursor ${previous.cursor})` : state ? ' (first incremental run: full extract)' : ''}`);
      lines.push(
        `  ${sp.total !== undefined ? `${fmt.format(sp.total)} records` : 'records unknown until the stream starts'} in ${sp.slices.length} slice(s); ~${fmt.format(sp.requests)} requests, ~${formatDuration(sp.estimatedMs / 1000)} at ${Number.isFinite(sp.rateLimit) ? `${fmt.format(sp.rateLimit)} requests/min` : 'no rate limit'} (planning used ${sp.planRequests})`,
      );
      for (const s of sp.slices.slice(0, 20)) {
        lines.push(`    ${s.label ?? 'whole query'}: ${s.total !== undefined ? `${fmt.format(s.total)} records, ` : ''}${s.requests} request(s)`);
      }
      if (sp.slices.length > 20) lines.push(`    … ${sp.slices.length - 20} more slices`);
      lines.push(`  transforms: ${p.config.transforms.map((t) => t.type).join(' -> ') || '(none)'}`);
      for (const s of p.config.sinks) {
        const where = (s.path ?? (s.bucket ? `s3://${String(s.bucket)}/${String(s.key ?? '')}` : '')) as string;
        lines.push(`  sink ${s.type}: ${where}`);
      }
      if (state) lines.push(`  state: ${state.location} (cursor ${previous ? previous.cursor : 'none yet'})`);
    } finally {
      await client.close();
    }
  }
  return lines.join('\n');
}
