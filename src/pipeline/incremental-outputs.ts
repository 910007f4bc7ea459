// An incremental pipeline (`state:`) writes only the changes since its last run. Its outputs must
// therefore add to the earlier runs' data, never take its place. The local-file sinks (one per
// format: jsonl, parquet, csv...) and s3 replace earlier data whenever their path/key has no
// `{run}` (their stage definitions say so with `replacesAt`):
// - a fixed local path (`out/products.jsonl`, or `dt={date}/products.parquet` on a same-day rerun)
//   is renamed over the earlier file;
// - a local dataset (`dt={date}/part-{part}.parquet`, `status={status}/...`) and an S3 key (which
//   gets `-<run id>` added, and is then no fixed name) both supersede: once the run is published
//   it removes the earlier runs' files/objects that the same template renders (the same date).
// So with `state:` each such sink, dead-letter sinks included, needs `{run}`. Stdout (`-`) replaces
// nothing. Other sink types (a table that merges changes into a snapshot, a user's own sink)
// declare no `replacesAt` and decide for themselves. The loader and runPipeline (a pipeline built
// in code) share this check.
import type { PipelineFile } from './pipeline-file.js';
import type { LocatedIssue } from '../core/issues.js';
import type { StageRegistry } from '../core/registry.js';

const RUN = /\{\s*run\s*\}/;

type Spec = { type: string; [k: string]: unknown };

/** The option holding the template of a sink whose runs replace earlier outputs when it has no {run}. */
function replacesAt(registry: StageRegistry, type: string): 'path' | 'key' | undefined {
  const def = registry.get(type);
  return def?.kind === 'sink' ? def.replacesAt : undefined;
}

export interface FixedOutput {
  /** Where the sink spec is: `['sinks', 0]`, `['transforms', 1, 'deadLetter']`. */
  at: (string | number)[];
  issue: LocatedIssue;
}

/**
 * `template` with `-{run}` before the extension of its last segment, when it has no {run}:
 * `out/products.jsonl.gz` -> `out/products-{run}.jsonl.gz`.
 */
export function withRunName(template: string): string {
  if (RUN.test(template)) return template;
  const slash = template.lastIndexOf('/') + 1;
  const name = template.slice(slash);
  const ext = /(\.[^./{}]+(?:\.gz)?)?$/.exec(name)!;
  return `${template.slice(0, slash)}${name.slice(0, ext.index)}-{run}${ext[0]}`;
}

/**
 * For a pipeline with `state:`: gives each transform that dead-letters into its default sink
 * (`out/{name}-rejected.jsonl`) that default with {run} (`out/{name}-rejected-{run}.jsonl`), in
 * place, and returns every sink spec left whose path/key has no {run}. Transforms whose options
 * do not parse are skipped (the stage check reports them).
 */
export function incrementalOutputProblems(config: PipelineFile, registry: StageRegistry): FixedOutput[] {
  if (!config.state) return [];
  const found: FixedOutput[] = [];
  const visit = (spec: Spec, at: (string | number)[]) => {
    const field = replacesAt(registry, spec.type);
    const template = field ? spec[field] : undefined;
    if (field && typeof template === 'string' && template !== '-' && !RUN.test(template)) {
      found.push({
        at,
        issue: { path: [field], message: fixedOutputMessage(spec.type, field, template), kind: 'value' },
      });
    } else if (spec.type === 's3' && typeof template === 'string') {
      const shared = sharedManifest(spec);
      if (shared) found.push({ at, issue: shared });
    }
    for (const [key, value] of Object.entries(spec)) {
      if (key !== 'type' && isSpec(value) && (key === 'deadLetter' || registry.get(value.type)?.kind === 'sink'))
        visit(value, [...at, key]);
    }
  };
  config.transforms.forEach((t, i) => {
    if (t.deadLetter === undefined) {
      const checked = registry.check('transform', t);
      const options = checked.ok ? (checked.options as { onInvalid?: unknown; deadLetter?: unknown }) : undefined;
      const fallback =
        options?.onInvalid === 'dead-letter' && isSpec(options.deadLetter) ? options.deadLetter : undefined;
      const field = fallback ? replacesAt(registry, fallback.type) : undefined;
      if (fallback && field && typeof fallback[field] === 'string')
        t.deadLetter = { ...fallback, [field]: withRunName(fallback[field]) };
    }
    visit(t, ['transforms', i]);
  });
  config.sinks.forEach((s, i) => visit(s, ['sinks', i]));
  return found;
}

function fixedOutputMessage(type: string, field: 'path' | 'key', template: string): string {
  const how =
    type === 's3'
      ? 'each run would remove the objects the earlier runs wrote under it once its manifest is written'
      : 'each run would replace the files the earlier runs wrote there';
  return (
    `the pipeline has \`state:\` (each run extracts only the changes since the last one) but ${field} "${template}" has no {run}: ` +
    `${how}, losing their changes; add {run} to the ${field}, e.g. "${withRunName(template)}", so each incremental run adds its own output`
  );
}

/**
 * An S3 sink whose key has {run} only in its file name still shares its manifest between runs
 * (`_manifest.json` in the key's fixed folder): each run's manifest would replace the earlier
 * one's, and readers that trust manifests would no longer see the earlier runs' objects.
 */
function sharedManifest(spec: Spec): LocatedIssue | undefined {
  if (spec.manifest === false) return undefined;
  const key = String(spec.key);
  if (typeof spec.manifestKey === 'string') {
    if (RUN.test(spec.manifestKey)) return undefined;
    return {
      path: ['manifestKey'],
      message:
        `the pipeline has \`state:\` but manifestKey "${spec.manifestKey}" has no {run}: each run's manifest would replace the earlier ` +
        `runs' manifests, and readers trusting manifests would lose their objects; add {run}, e.g. "${withRunName(spec.manifestKey)}"`,
      kind: 'value',
    };
  }
  const folder = fixedFolder(key);
  if (RUN.test(folder)) return undefined;
  const name = key.slice(folder.length);
  const suggestion = `${folder}run={run}/${name.replace(/-?\{\s*run\s*\}/, '')}`;
  return {
    path: ['key'],
    message:
      `the pipeline has \`state:\` and key "${key}" has {run} only after its fixed folder, so every run writes the same manifest ` +
      `"${folder}_manifest.json": each run's manifest would replace the earlier runs' ones, and readers trusting manifests would lose ` +
      `their objects; give each run a folder of its own, e.g. "${suggestion}" (or set manifestKey with {run})`,
    kind: 'value',
  };
}

/** The folder of a key up to its first per-record or per-part placeholder (where the default manifest goes). */
function fixedFolder(key: string): string {
  const dynamic = /\{\s*([^}]*?)\s*\}/g;
  let end = key.length;
  for (const m of key.matchAll(dynamic)) {
    if (!['name', 'run', 'date'].includes(m[1]!)) {
      end = m.index;
      break;
    }
  }
  const fixed = key.slice(0, end);
  return fixed.slice(0, fixed.lastIndexOf('/') + 1);
}

function isSpec(v: unknown): v is Spec {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && typeof (v as { type?: unknown }).type === 'string';
}
