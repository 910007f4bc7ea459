// A stage as a plan holds it: its definition and its options already parsed by the definition's
// schema, and where it was written. The pipeline-file loader makes one per stage spec; a factory
// of the code API (`validate({...})`, `parquetSink({...})`) marks the stream it returns with one,
// so that a sink piped from a chain of built-in stages finds the chain, and with it the records'
// schema, the way the runner derives it from a file (ARCHITECTURE.md "Run assembly").
import type { Readable, Writable } from 'node:stream';
import { getEndpoint } from '../catalog/endpoints/index.js';
import { resourceSchemas } from '../catalog/resources/index.js';
import type { RecordField, RecordSchema } from './record-schema.js';
import type { StageDefinition, StageKind } from './stage.js';
import { recordSchemaFromZod } from './zod-column-hints.js';

/** Where a stage was written: a pipeline file's line and column, or nothing for code. */
export interface StagePosition {
  readonly file: string;
  readonly line?: number | undefined;
  readonly column?: number | undefined;
}

export interface PlannedStage<K extends StageKind = StageKind> {
  readonly kind: K;
  readonly type: string;
  readonly definition: StageDefinition;
  /** The options after the definition's schema parsed them (defaults filled in). */
  readonly options: Readonly<Record<string, unknown>>;
  /** The options as written (a file's spec without `type`, a factory's argument): for messages and the state's identity. */
  readonly written: Readonly<Record<string, unknown>>;
  /** Where in the pipeline it stands: `source`, `transforms[1]`, `sinks[0]`. */
  readonly at: string;
  readonly position?: StagePosition | undefined;
}

export function plannedStage<K extends StageKind>(
  definition: StageDefinition & { kind: K },
  options: unknown,
  written: unknown,
  at: string,
  position?: StagePosition,
): PlannedStage<K> {
  return {
    kind: definition.kind,
    type: definition.type,
    definition,
    options: options as Record<string, unknown>,
    written: { ...(written as Record<string, unknown> | undefined) },
    at,
    ...(position ? { position } : {}),
  };
}

const stages = new WeakMap<object, PlannedStage>();
const upstream = new WeakMap<object, Readable>();

/**
 * Marks a stream made by a code-API factory with its planned stage. A stream that receives records
 * remembers what is piped into it: stream.pipeline joins its streams with `pipe()` in order, so by
 * the time the sink hears its `pipe` event every link upstream of it is known.
 */
export function markStage<S extends Readable | Writable>(stream: S, stage: PlannedStage): S {
  stages.set(stream, stage);
  if (stage.kind !== 'source') stream.once('pipe', (from: Readable) => upstream.set(stream, from));
  return stream;
}

export function stageOf(stream: object): PlannedStage | undefined {
  return stages.get(stream);
}

/**
 * The planned stages piped into `stream`, source first. `complete` is false when the walk met a
 * stream no factory made (a Transform of the caller's) or nothing was piped in: what flows in is
 * then not known in advance.
 */
export function upstreamStages(stream: object): { stages: PlannedStage[]; complete: boolean } {
  const found: PlannedStage[] = [];
  for (let s = upstream.get(stream); s; s = upstream.get(s)) {
    const stage = stages.get(s);
    if (!stage) return { stages: found, complete: false };
    found.unshift(stage);
    if (stage.kind === 'source') return { stages: found, complete: true };
  }
  return { stages: found, complete: false };
}

/** The records' schema a source emits: its resource's declaration (undefined when it names none). */
export function sourceSchema(sourceType: string): { schema: RecordSchema | undefined; resource: string | undefined } {
  const resource = getEndpoint(sourceType)?.resource;
  const zod = resource
    ? (resourceSchemas as Record<string, Parameters<typeof recordSchemaFromZod>[0] | undefined>)[resource]
    : undefined;
  return { schema: zod ? recordSchemaFromZod(zod) : undefined, resource };
}

/**
 * The schema after the source and after each transform, in order (the last reaches the sinks).
 * A transform whose definition states no output schema emits records the schema knows nothing
 * about: from there on the entries are empty and `declared` is false (a pipeline file keeps their
 * fields in `_extra`; a sink built in code infers its columns from the records instead).
 */
export function stageSchemas(
  source: Pick<PlannedStage, 'type'>,
  transforms: readonly Pick<PlannedStage, 'definition' | 'options'>[],
  added: readonly RecordField[] = [],
): { schemas: RecordSchema[]; declared: boolean } {
  const { schema: first, resource } = sourceSchema(source.type);
  // `added`: fields the run sets on every record before the transforms (a fan-out's `region`).
  let schema: RecordSchema = { fields: [...added, ...(first?.fields ?? [])] };
  let declared = first !== undefined;
  const schemas = [schema];
  for (const t of transforms) {
    const define = t.definition.schema;
    declared &&= define !== undefined;
    schema = define ? define(schema, t.options, { resource }) : { fields: [] };
    schemas.push(schema);
  }
  return { schemas, declared };
}
