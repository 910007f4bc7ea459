// What `connection.region` sets in a pipeline file (issue 40, catalog/regions.ts): the default
// locales of `flatten-locales` stages that name none, and the checks made at plan time, before
// any request: an environment the region has, the filters it documents, the formats of its codes.
// The client checks the same before each request (a pipeline built in code has no plan check).
import { getEndpoint } from '../catalog/endpoints/index.js';
import {
  type Region,
  regionBaseUrl,
  regionFilterIssues,
  regionLabel,
  regionLocales,
  regionsWithSandbox,
} from '../catalog/regions.js';
import type { PlannedStage } from '../core/planned-stage.js';
import type { ConnectionBlock, PipelineFile, StageSpec } from './pipeline-file.js';
import type { LocatedIssue } from '../core/issues.js';
import { type RecordField, STRING_TYPE } from '../core/record-schema.js';

/** A refusal found while planning (plan.ts takes it as a PlanProblem; declared here so plan.ts is not imported back). */
interface PlanProblem {
  readonly at: (string | number)[];
  readonly issue: LocatedIssue;
  readonly code?: string;
}

/** What a region preset set in a pipeline, for validate and the dry run (`transforms[1] flatten-locales: locales nl, fr`). */
export interface RegionPresetEffect {
  readonly at: string;
  readonly what: string;
}

/**
 * The file with the region's defaults filled in (a new object; the file as read is not changed):
 * each `flatten-locales` without `locales` and `fallback` gets the region's locales.
 */
export function applyRegionPreset(config: PipelineFile): { config: PipelineFile; effects: RegionPresetEffect[] } {
  const region = config.connection?.region;
  if (region === undefined) return { config, effects: [] };
  const effects: RegionPresetEffect[] = [];
  const transforms = config.transforms.map((t: StageSpec, i): StageSpec => {
    if (t.type !== 'flatten-locales' || 'locales' in t || 'fallback' in t) return t;
    const locales = [...regionLocales(region)];
    effects.push({ at: `transforms[${i}]`, what: `flatten-locales locales: ${locales.join(', ')}` });
    return { ...t, locales };
  });
  return { config: { ...config, transforms }, effects };
}

/** The field a fan-out (`connection.regions`) sets on every record: the region it was read from. */
export const REGION_FIELD: RecordField = { name: 'region', type: STRING_TYPE };

/** The region's refusals of the file's environment and of its source's filter, as plan problems. */
export function regionProblems(
  config: PipelineFile,
  source: PlannedStage<'source'> | undefined,
  sinks: readonly (PlannedStage<'sink'> | undefined)[] = [],
): PlanProblem[] {
  if (config.connection?.regions) return fanOutProblems(config, source, sinks);
  const region = config.connection?.region;
  const environment = config.connection?.environment;
  if (region === undefined) {
    if (environment === undefined) return [];
    const message = `environment "${environment}" needs a region: set connection.region (be, fr, de, au, us)`;
    return [{ at: ['connection', 'environment'], issue: { path: [], message }, code: 'config.region' }];
  }
  const problems: PlanProblem[] = [];
  if (environment !== undefined && regionBaseUrl(region, environment) === undefined) {
    const message = `region ${regionLabel(region)} has no ${environment} environment; the vendor has sandboxes for ${regionsWithSandbox().join(', ')} only: leave environment out (production), or run with --sandbox (the embedded sandbox's ${region} profile)`;
    problems.push({ at: ['connection', 'environment'], issue: { path: [], message }, code: 'config.region' });
  }
  if (source) problems.push(...sourceFilterProblems(region, source));
  return problems;
}

/** Settings a fan-out takes per region (in each entry of `regions`), never for the whole block. */
const PER_REGION = ['region', 'environment', 'baseUrl', 'apiKey', 'apiSecret', 'credentials'] as const;

/**
 * A fan-out's refusals: a per-region setting given for the whole block, a region listed twice, a
 * region's environment it does not have, the source's filter as each region takes it, and a table
 * keyed without the region (product ids are per platform: two regions share ids).
 */
function fanOutProblems(
  config: PipelineFile,
  source: PlannedStage<'source'> | undefined,
  sinks: readonly (PlannedStage<'sink'> | undefined)[],
): PlanProblem[] {
  const connection = config.connection!;
  const problems: PlanProblem[] = [];
  const problem = (at: (string | number)[], message: string) =>
    problems.push({ at, issue: { path: [], message }, code: 'config.region' });
  for (const name of PER_REGION)
    if (connection[name] !== undefined)
      problem(
        ['connection', name],
        `connection.regions reads each region with its own ${name === 'region' ? 'settings' : name}: set it in the region's entry of regions (- {region: be, ${name === 'region' ? 'apiKey: ...' : `${name}: ...`}}), or leave regions out`,
      );
  const seen = new Set<Region>();
  for (const [i, entry] of connection.regions!.entries()) {
    const region = typeof entry === 'string' ? entry : entry.region;
    if (seen.has(region)) problem(['connection', 'regions', i], `region ${region} is listed twice; list each once`);
    seen.add(region);
    const environment = typeof entry === 'string' ? undefined : entry.environment;
    if (environment !== undefined && regionBaseUrl(region, environment) === undefined)
      problem(
        ['connection', 'regions', i, 'environment'],
        `region ${regionLabel(region)} has no ${environment} environment; the vendor has sandboxes for ${regionsWithSandbox().join(', ')} only`,
      );
    if (source) problems.push(...sourceFilterProblems(region, source));
  }
  for (const sink of sinks) if (sink) problems.push(...fanOutSinkProblems(sink));
  return problems;
}

/** The file sinks and the option that holds their path template. */
const FILE_SINK_PATHS: Readonly<Record<string, string>> = { parquet: 'path', jsonl: 'path', csv: 'path', s3: 'key' };

/**
 * A sink of a fan-out: a table keyed without the region (product ids are per platform: two
 * regions share ids); a file dataset that each run replaces (no {run}) not partitioned by region:
 * a run where one region fails would overwrite or remove that region's published files with the
 * others' alone (a published output is never damaged; shared/failed-regions.ts keeps a failed
 * region's partition, which needs the partition).
 */
function fanOutSinkProblems(sink: PlannedStage<'sink'>): PlanProblem[] {
  const at = (option: string) =>
    [...sink.at.replace(/\]/g, '').split('['), option].map((p) => (/^\d+$/.test(p) ? Number(p) : p));
  const refuse = (option: string, message: string): PlanProblem[] => [
    { at: at(option), issue: { path: [], message }, code: 'config.region' },
  ];
  const key = sink.type === 'table' ? sink.options.key : undefined;
  if (typeof key === 'string' && !key.split(',').some((k) => k.trim() === REGION_FIELD.name))
    return refuse(
      'key',
      `a fan-out over regions needs the table keyed by region and id (key: region,id): product ids are per region, so "${key}" alone would merge two regions' products`,
    );
  const option = FILE_SINK_PATHS[sink.type];
  const template = option === undefined ? undefined : (sink.options as Record<string, unknown>)[option];
  if (typeof template !== 'string' || template === '-' || /\{\s*(?:run|region)\s*\}/.test(template)) return [];
  return refuse(
    option!,
    `a fan-out over regions needs "${template}" partitioned by region (region={region} in the ${option}, e.g. "products/region={region}/part-{part}.parquet") or written per run ({run}): each run replaces this dataset, so a run where one region fails would replace that region's published files with the other regions' records alone`,
  );
}

function sourceFilterProblems(region: Region, source: PlannedStage<'source'>): PlanProblem[] {
  const spec = getEndpoint(source.type);
  const filter = (source.options as { filter?: unknown }).filter;
  if (!spec || filter === undefined) return [];
  return regionFilterIssues(region, spec.resource, filter, ['filter'], spec.filterAliases).map((issue) => ({
    at: ['source'],
    issue: { path: issue.path, message: issue.message },
    code: 'config.region',
  }));
}

/**
 * One line on what the plan's region preset set, for validate and the dry run; undefined without
 * a region. `used`: the base URL the run uses and where it came from, when known (an explicit
 * base URL, or the embedded sandbox, wins over the region's).
 */
export function regionSummary(
  plan: { readonly connection: ConnectionBlock; readonly regionEffects: readonly RegionPresetEffect[] },
  used?: { url: string; source?: string | undefined },
): string | undefined {
  const { region, environment } = plan.connection;
  if (region === undefined) return undefined;
  const preset = regionBaseUrl(region, environment);
  const url = used?.url ?? plan.connection.baseUrl ?? preset;
  const from =
    url === preset ? '' : ` (from ${used?.source ?? 'connection.baseUrl'}; the region's is ${preset ?? 'none'})`;
  return [
    `region ${regionLabel(region)}, ${environment ?? 'production'}: base URL ${url}${from}`,
    ...plan.regionEffects.map((e) => `${e.at} ${e.what}`),
    `filters and codes checked for ${region} before any request`,
  ].join('; ');
}
