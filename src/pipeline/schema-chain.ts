// The record schema of a pipeline, derived without the network and without a
// record: the source's resource declaration, carried through each transform's
// `schema` function. The runner hands the result to the sinks
// (ctx.services.recordSchema); `catalog-streams schema` prints it.
import { getEndpoint } from '../catalog/endpoints/index.js';
import { resourceSchemas } from '../catalog/resources/index.js';
import { ConfigError } from '../errors.js';
import { recordSchemaFromZod } from '../core/zod-column-hints.js';
import type { PipelineFile } from './pipeline-file.js';
import { EMPTY_SCHEMA, type RecordSchema } from '../core/record-schema.js';
import type { StageRegistry } from '../core/registry.js';

/** The schema of a source's records: its resource's declaration (none known: empty). */
export function sourceRecordSchema(sourceType: string): { schema: RecordSchema; resource: string | undefined } {
  const resource = getEndpoint(sourceType)?.resource;
  const zod = resource
    ? (resourceSchemas as Record<string, Parameters<typeof recordSchemaFromZod>[0] | undefined>)[resource]
    : undefined;
  return { schema: zod ? recordSchemaFromZod(zod) : EMPTY_SCHEMA, resource };
}

/** The schema after the source and each transform of the pipeline, in order (the last reaches the sinks). */
export function pipelineRecordSchemas(
  config: Pick<PipelineFile, 'source' | 'transforms'>,
  registry: StageRegistry,
): RecordSchema[] {
  const { schema: first, resource } = sourceRecordSchema(config.source.type);
  const out = [first];
  let schema = first;
  config.transforms.forEach((spec, i) => {
    const checked = registry.check('transform', spec);
    if (!checked.ok)
      throw new ConfigError(`transforms[${i}]: ${checked.issues[0]!.message}`, { path: `transforms[${i}]` });
    const define = checked.definition.schema;
    schema = define ? define(schema, checked.options, { resource }) : EMPTY_SCHEMA;
    out.push(schema);
  });
  return out;
}

/** The schema of the records that reach the pipeline's sinks. */
export function pipelineRecordSchema(
  config: Pick<PipelineFile, 'source' | 'transforms'>,
  registry: StageRegistry,
): RecordSchema {
  return pipelineRecordSchemas(config, registry).at(-1)!;
}
