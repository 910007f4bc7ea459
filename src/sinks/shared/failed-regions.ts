// A fan-out over regions (issue 40; docs/live-service.md, "Several regions in one run") publishes
// the regions that succeeded even when one failed. A dataset that each run replaces (no {run} in
// its path or key) removes, once published, the earlier files this run did not write again: a
// failed region wrote nothing (or only some of its records), so its partition's earlier files
// would go with nothing to replace them. "A published output is never damaged": the files under a
// failed region's partition (the path segment its `region={region}` renders) are kept.
import type { StageContext } from '../../core/stage.js';
import { escapePathValue, type PathTemplate } from './path-template.js';

/** The record field a fan-out sets on every record (pipeline/region-fanout.ts). */
const REGION_FIELD = 'region';

/**
 * Whether a path of the dataset (rendered by one of `templates`) lies in the partition of a
 * region that failed this run; undefined when no region failed (or the run is no fan-out).
 * A template that does not partition by region cannot tell whose a file is: then every earlier
 * file counts as a failed region's, and is kept.
 */
export function failedRegionFiles(
  ctx: StageContext,
  templates: readonly PathTemplate[],
): ((rendered: string) => boolean) | undefined {
  const failed = ctx.failedRegions?.();
  if (!failed || failed.size === 0) return undefined;
  const values = new Set([...failed].map(escapePathValue));
  const partitioned = templates.filter((t) => t.fields.some((f) => f.path.join('.') === REGION_FIELD));
  if (partitioned.length === 0) return () => true;
  return (rendered) =>
    partitioned.some((t) => {
      const value = t.fieldValue(rendered, REGION_FIELD);
      return value !== undefined && values.has(value);
    });
}

/** The info event saying which earlier files a failed region kept. */
export function reportKept(ctx: StageContext, sinkType: string, kept: readonly string[]): void {
  if (kept.length === 0) return;
  const failed = [...(ctx.failedRegions?.() ?? [])].join(', ');
  ctx.events.emit('warning', {
    code: 'sink.region_kept',
    message: `${sinkType} sink kept ${kept.length} earlier file(s) of region ${failed}, which failed this run (the next run that reads it replaces them): ${kept.join(', ')}`,
  });
}

/** The warning naming the files a failed region wrote this run that were not published. */
export function reportWithheld(ctx: StageContext, sinkType: string, dropped: readonly string[]): void {
  if (dropped.length === 0) return;
  const failed = [...(ctx.failedRegions?.() ?? [])].join(', ');
  ctx.events.emit('warning', {
    code: 'sink.region_kept',
    message: `${sinkType} sink did not publish ${dropped.length} file(s) of region ${failed}, which failed this run part-way: its earlier files stay as they were (${dropped.join(', ')})`,
  });
}
