// The PipelinePlan: what a run is built from, made once. The loader makes it from a pipeline
// file (each stage's spec parsed by its definition, with its line and column); the code API makes
// it from the streams its factories returned (planFromStreams), whose options were parsed the same
// way. Both end in assemblePlan, so a pipeline written either way is the same plan. The runner
// builds its streams from the plan's definitions and parsed options and never parses a spec again
// (ARCHITECTURE.md "Run assembly").
import type { Readable, Writable } from 'node:stream';
import { getEndpoint } from '../catalog/endpoints/index.js';
import { ConfigError } from '../errors.js';
import { joinPath, type LocatedIssue } from '../core/issues.js';
import { plannedStage, stageOf, stageSchemas, type PlannedStage, type StagePosition } from '../core/planned-stage.js';
import type { RecordSchema } from '../core/record-schema.js';
import type { StageRegistry } from '../core/registry.js';
import type { StageKind } from '../core/stage.js';
import { incrementalOutputProblems } from './incremental-outputs.js';
import type { ConnectionBlock, PipelineFile, StageSpec, StateBlock } from './pipeline-file.js';
import { type RegionPresetEffect, applyRegionPreset, REGION_FIELD, regionProblems } from './region-preset.js';

/** A sink's output a run replaces unless its template has `{run}`: the option, and the template as written. */
export interface PlannedOutput {
  /** `sinks[0]`, `transforms[1].deadLetter`. */
  readonly at: string;
  readonly type: string;
  readonly option: 'path' | 'key';
  readonly template: string;
}

/** A sink that a stage's options name (a dead letter), planned like the pipeline's own. */
export interface PlannedNestedSink {
  /** The spec object as the stage's parsed options hold it: the stage hands this same object to ctx.createSink. */
  readonly spec: object;
  readonly stage: PlannedStage<'sink'>;
}

export interface PipelinePlan {
  readonly name: string;
  /** The pipeline file, or `<code>`. */
  readonly file: string;
  /** Relative outputs (sinks, dead letters, state) resolve against this. */
  readonly baseDir: string;
  /** Modules named in options (`custom`) resolve against this: the pipeline file's folder. */
  readonly moduleDir: string;
  readonly source: PlannedStage<'source'>;
  readonly transforms: readonly PlannedStage<'transform'>[];
  readonly sinks: readonly PlannedStage<'sink'>[];
  /** Sinks named in the options of other stages (dead letters). */
  readonly nestedSinks: readonly PlannedNestedSink[];
  /** The records' schema after the source and after each transform; the last reaches the sinks. */
  readonly schemas: readonly RecordSchema[];
  readonly recordSchema: RecordSchema;
  /** False when a transform declares nothing about its output (its fields go to `_extra`). */
  readonly schemaDeclared: boolean;
  /** The API endpoint the source reads, when it is one. */
  readonly endpoint?:
    | {
        readonly name: string;
        readonly resource: string | undefined;
        readonly mode: string;
        readonly incremental: boolean;
      }
    | undefined;
  /** The file's `connection:` block; the environment and `--sandbox` complete it at run time (connection.ts). */
  readonly connection: ConnectionBlock;
  /** What `connection.region` set in the file (default locales), shown by validate and the dry run. */
  readonly regionEffects: readonly RegionPresetEffect[];
  readonly state?: StateBlock | undefined;
  readonly stallTimeoutMs?: number | undefined;
  /** The outputs each sink replaces at every run unless its template has {run} (preflight checks them). */
  readonly outputs: readonly PlannedOutput[];
}

/** A problem found while planning, located by its path in the pipeline (`['transforms', 1, 'locales', 0]`). */
export interface PlanProblem {
  readonly at: (string | number)[];
  readonly issue: LocatedIssue;
  readonly code?: string;
}

export interface PlanOrigin {
  file: string;
  /** The pipeline file's folder (modules and preflight checks resolve against it). */
  baseDir: string;
  /** Where relative outputs go when not `baseDir` (a shipped file of an installed package). */
  outputDir?: string | undefined;
  /** Where a spec at `path` was written (the loader's line and column). */
  position?(path: (string | number)[]): StagePosition | undefined;
}

/**
 * Plans a pipeline file's content: every stage spec parsed once by its definition, its preflight
 * checks, the incremental rules. Returns every problem found, or the plan when there is none.
 */
export function planPipeline(
  file: PipelineFile,
  registry: StageRegistry,
  origin: PlanOrigin,
): { plan: PipelinePlan; problems: [] } | { plan: undefined; problems: PlanProblem[] } {
  const problems: PlanProblem[] = [];
  // The region's defaults are filled in before the specs are parsed, as if written in the file.
  const { config, effects: regionEffects } = applyRegionPreset(file);
  // Gives dead letters of a state pipeline their per-run default names, in place, before the specs are parsed.
  const fixed = incrementalOutputProblems(config, registry);
  const nestedSinks: PlannedNestedSink[] = [];
  const plan = <K extends StageKind>(kind: K, spec: StageSpec, at: (string | number)[]) => {
    const checked = registry.check(kind, spec);
    if (!checked.ok) {
      for (const issue of checked.issues) problems.push({ at, issue });
      return undefined;
    }
    for (const issue of checked.definition.preflight?.(checked.options, { baseDir: origin.baseDir }) ?? [])
      problems.push({ at, issue });
    // A stage option holding a sink spec (`deadLetter`, or any {type} naming a sink) is planned as a sink: when
    // written, or when the stage will use its default (a dead letter of `onInvalid: dead-letter`).
    const options = checked.options as Record<string, unknown>;
    for (const [key, value] of Object.entries(options)) {
      if (key === 'type' || !isStageSpec(value)) continue;
      if (key !== 'deadLetter' && registry.get(value.type)?.kind !== 'sink') continue;
      if (!Object.hasOwn(spec, key) && options.onInvalid !== 'dead-letter') continue;
      const nested = plan('sink', value, [...at, key]);
      if (nested) nestedSinks.push({ spec: value, stage: nested });
    }
    const { type: _type, ...written } = spec;
    const definition = checked.definition as typeof checked.definition & { kind: K };
    return plannedStage(definition, options, written, joinPath('', at), origin.position?.(at));
  };
  const source = plan('source', config.source, ['source']);
  const transforms = config.transforms.map((t, i) => plan('transform', t, ['transforms', i]));
  const sinks = config.sinks.map((s, i) => plan('sink', s, ['sinks', i]));
  problems.push(...regionProblems(config, source, sinks));
  if (config.state) problems.push(...stateProblems(config, registry));
  for (const { issue, at } of fixed) problems.push({ at, issue, code: 'config.state_fixed_output' });
  if (problems.length > 0 || !source) return { plan: undefined, problems };
  return {
    plan: assemblePlan({
      name: config.name,
      file: origin.file,
      baseDir: origin.outputDir ?? origin.baseDir,
      moduleDir: origin.baseDir,
      source,
      transforms: transforms as PlannedStage<'transform'>[],
      sinks: sinks as PlannedStage<'sink'>[],
      nestedSinks,
      connection: config.connection ?? {},
      regionEffects,
      state: config.state,
      stallTimeoutMs: config.stallTimeout,
    }),
    problems: [],
  };
}

/** Plans a pipeline or throws its first problem as a ConfigError (a pipeline built in code). */
export function planOrThrow(config: PipelineFile, registry: StageRegistry, origin: PlanOrigin): PipelinePlan {
  const { plan, problems } = planPipeline(config, registry, origin);
  if (plan) return plan;
  const [first, ...rest] = problems;
  const at = joinPath('', [...first!.at, ...first!.issue.path]);
  throw new ConfigError(
    `${origin.file}: ${at}: ${first!.issue.message}${rest.length ? ` (and ${rest.length} more)` : ''}`,
    { file: origin.file, path: at },
    { code: first!.code ?? (first!.issue.path[0] === 'type' ? 'config.unknown_type' : 'config.invalid') },
  );
}

export interface StreamPlanOptions {
  /** Names the run, its state and its outputs (default `catalog-streams`). */
  name?: string;
  /** Relative outputs resolve against this (default: cwd). */
  baseDir?: string;
}

/**
 * The plan of a chain composed in code: `planFromStreams([productsQuery(client, {...}), validate({...}),
 * parquetSink({...})])` is the plan the loader makes of the same stages written in a pipeline file.
 * Every stream must come from a factory of the package (each carries its definition and parsed
 * options); the last ones are the sinks.
 */
export function planFromStreams(
  streams: readonly (Readable | Writable)[],
  options: StreamPlanOptions = {},
): PipelinePlan {
  const stages = streams.map((s, i) => {
    const stage = stageOf(s);
    if (!stage) {
      throw new ConfigError(
        `stream ${i + 1} of ${streams.length} was not made by a catalog-streams factory, so its stage is unknown; ` +
          'make it with a factory (productsQuery, validate, parquetSink...) or leave it out of the plan',
        { path: `streams[${i}]` },
        { code: 'config.unplanned_stream' },
      );
    }
    return stage;
  });
  const [source, ...rest] = stages;
  if (source?.kind !== 'source')
    throw new ConfigError('the first stream of a plan must be a source', {}, { code: 'config.unplanned_stream' });
  const firstSink = rest.findIndex((s) => s.kind === 'sink');
  const transforms = (firstSink === -1 ? rest : rest.slice(0, firstSink)).map((t, i) =>
    relocated(t, `transforms[${i}]`),
  );
  const sinks = (firstSink === -1 ? [] : rest.slice(firstSink)).map((s, i) => relocated(s, `sinks[${i}]`));
  if (sinks.length === 0 || transforms.some((t) => t.kind !== 'transform') || sinks.some((s) => s.kind !== 'sink'))
    throw new ConfigError(
      'a plan is a source, transforms, then one or more sinks',
      {},
      { code: 'config.unplanned_stream' },
    );
  const baseDir = options.baseDir ?? process.cwd();
  return assemblePlan({
    name: options.name ?? 'catalog-streams',
    file: '<code>',
    baseDir,
    moduleDir: baseDir,
    source: relocated(source, 'source') as PlannedStage<'source'>,
    transforms: transforms as PlannedStage<'transform'>[],
    sinks: sinks as PlannedStage<'sink'>[],
    nestedSinks: [],
    connection: {},
    regionEffects: [],
  });
}

function relocated(stage: PlannedStage, at: string): PlannedStage {
  return { ...stage, at };
}

type PlanParts = Omit<PipelinePlan, 'schemas' | 'recordSchema' | 'schemaDeclared' | 'endpoint' | 'outputs'>;

/** The parts every plan derives the same way: the schema chain, the endpoint, the replaced outputs. */
function assemblePlan(parts: PlanParts): PipelinePlan {
  // A fan-out sets the region of every record before the transforms (region-fanout.ts).
  const added = parts.connection.regions ? [REGION_FIELD] : [];
  const { schemas, declared } = stageSchemas(parts.source, parts.transforms, added);
  const endpoint = getEndpoint(parts.source.type);
  const outputs: PlannedOutput[] = [];
  for (const stage of [...parts.sinks, ...parts.nestedSinks.map((n) => n.stage)]) {
    const option = stage.definition.replacesAt;
    const template = option ? stage.options[option] : undefined;
    if (option && typeof template === 'string') outputs.push({ at: stage.at, type: stage.type, option, template });
  }
  return {
    ...parts,
    schemas,
    recordSchema: schemas.at(-1)!,
    schemaDeclared: declared,
    endpoint: endpoint
      ? { name: endpoint.name, resource: endpoint.resource, mode: endpoint.mode, incremental: !!endpoint.incremental }
      : undefined,
    outputs,
  };
}

function stateProblems(config: PipelineFile, registry: StageRegistry): PlanProblem[] {
  if (getEndpoint(config.source.type)?.incremental) return [];
  const sources = registry
    .list('source')
    .filter((d) => getEndpoint(d.type)?.incremental)
    .map((d) => d.type);
  const message = `incremental state needs a source with an updatedSince filter (${sources.join(', ')}); "${config.source.type}" has none: reference data is small, extract it whole and remove \`state:\``;
  return [{ at: ['state'], issue: { path: [], message, kind: 'unknown-key' }, code: 'config.state' }];
}

function isStageSpec(v: unknown): v is StageSpec {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && typeof (v as { type?: unknown }).type === 'string';
}
