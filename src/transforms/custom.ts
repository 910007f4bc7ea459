// custom: runs the user's own code from a pipeline file. `module` is a path
// (relative to the pipeline file's folder, ctx.baseDir) to an ES module or
// CommonJS file, loaded with a dynamic import before the first record; this
// RUNS THAT CODE with the rights of the catalog-streams process. `export` names
// the function (default: the default export); `kind` fixes its contract (see
// functional.ts: map, filter, flat-map); `options` is handed to it as ctx.options.
// What drops a record is explicit: null from a map or flat-map, a falsy value
// from a filter; undefined (a forgotten `return`) fails the run naming the
// module, the export and the record. `timeout` bounds each call's Promise.
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { duration } from '../core/duration.js';
import type { LocatedIssue } from '../core/issues.js';
import { defineStage, type PreflightEnv, type StageContext } from '../core/stage.js';
import { FunctionTransform, type RecordFunction } from './functional.js';
import { DECLARED_TYPE_NAMES, declaredType, upsertFields, type RecordSchema } from '../core/record-schema.js';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';

export const CustomOptionsSchema = z.strictObject({
  module: z
    .string()
    .min(1)
    .describe(
      'Path of the module with the function, relative to the pipeline file (./my-transform.js); its code runs in the catalog-streams process',
    ),
  export: z.string().min(1).default('default').describe('Name of the exported function (default: the default export)'),
  kind: z
    .enum(['map', 'filter', 'flat-map'])
    .default('map')
    .describe(
      'map: fn(record, ctx) returns a record, or null to drop it; filter: truthy keeps the record, falsy drops it; flat-map: returns a list of records (or one, or null); any may return a Promise. Returning undefined (a missing `return`) fails the run',
    ),
  timeout: duration()
    .prefault('60s')
    .describe(
      'Longest wait for the Promise of one call (default "60s"); a call still pending then fails the run naming the record',
    ),
  options: z.unknown().optional().describe('Any value, passed to the function as ctx.options'),
  columns: z
    .record(z.string().min(1), z.enum(DECLARED_TYPE_NAMES))
    .optional()
    .describe(
      'The fields the function writes, with their types ({priceBand: string, score: double}), so sinks give them columns; ' +
        "without it a map or flat-map function's fields are kept in the Parquet _extra JSON column (a filter keeps the schema)",
    ),
  inputColumns: z
    .enum(['keep', 'drop'])
    .default('keep')
    .describe(
      'With columns: keep (the function returns its input record plus the declared fields) or drop (only the declared fields)',
    ),
});

/** Options as a caller writes them; each key documented on hover (src/generated/stage-option-docs.ts). */
export type CustomOptions = WithOptionDocs<'custom', z.input<typeof CustomOptionsSchema>>;

function moduleUrl(specifier: string, baseDir: string): string {
  if (specifier.startsWith('file:')) return specifier;
  return pathToFileURL(isAbsolute(specifier) ? specifier : resolve(baseDir, specifier)).href;
}

async function loadFunction(options: z.output<typeof CustomOptionsSchema>, baseDir: string): Promise<RecordFunction> {
  const url = moduleUrl(options.module, baseDir);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    const notFound =
      (error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' &&
      String((error as Error).message).includes(new URL(url).pathname);
    throw new ConfigError(
      notFound
        ? `custom: module "${options.module}" not found (looked for ${new URL(url).pathname}, relative to ${baseDir})`
        : `custom: module "${options.module}" failed to load: ${(error as Error).message}`,
      { path: 'module' },
      { code: 'config.custom_module', cause: error },
    );
  }
  const fn = mod[options.export];
  if (typeof fn !== 'function') {
    const names = Object.keys(mod)
      .filter((k) => typeof mod[k] === 'function')
      .sort();
    throw new ConfigError(
      `custom: module "${options.module}" has no function export "${options.export}"${fn === undefined ? '' : ` (it is ${typeof fn})`}; its function exports: ${names.join(', ') || 'none'}`,
      { path: 'export' },
      { code: 'config.custom_export' },
    );
  }
  return fn as RecordFunction;
}

function createCustom(options: z.output<typeof CustomOptionsSchema>, ctx: StageContext): FunctionTransform {
  // Two custom stages of one module log (and see in ctx.stage) different names: a named export is part of it.
  return new FunctionTransform(
    options.export === 'default' ? `custom(${options.module})` : `custom(${options.module}#${options.export})`,
    options.kind,
    () => loadFunction(options, ctx.moduleDir ?? ctx.baseDir),
    ctx,
    {
      lazy: true,
      userOptions: options.options,
      label: `custom: module "${options.module}" export "${options.export}"`,
      timeoutMs: options.timeout,
    },
  );
}

/** A filter passes records unchanged; a map/flat-map returns what its `columns` declare, else nothing the schema knows. */
function customSchema(input: RecordSchema, options: z.output<typeof CustomOptionsSchema>): RecordSchema {
  if (options.kind === 'filter') return input;
  if (!options.columns) return { fields: [] };
  const declared = Object.entries(options.columns).map(([name, type]) => ({ name, type: declaredType(type) }));
  return { fields: options.inputColumns === 'keep' ? upsertFields(input.fields, declared) : declared };
}

/**
 * The module must exist, so `validate` (no network, no code run) catches a wrong path;
 * loading it, which runs its code, waits for the run.
 */
function customModuleExists(options: { module: string }, env: PreflightEnv): LocatedIssue[] {
  const spec = options.module;
  const file = spec.startsWith('file:') ? fileURLToPath(spec) : isAbsolute(spec) ? spec : resolve(env.baseDir, spec);
  if (existsSync(file)) return [];
  return [
    {
      path: ['module'],
      message: `module "${spec}" does not exist (looked for ${file}; relative paths start at the pipeline file's folder)`,
      kind: 'value',
    },
  ];
}

export const customStage = defineStage({
  kind: 'transform',
  type: 'custom',
  description:
    'Runs your own function from a module (relative to the pipeline file) as map, filter or flat-map; the module is imported and its code runs in the process',
  options: CustomOptionsSchema,
  create: createCustom,
  schema: customSchema,
  preflight: customModuleExists,
});
