// Which resource a stage works on: named in its options, or taken from the
// pipeline's source (`ctx.source.resource`). Resolved once per stage, with the
// schema read as data (describeSchema) cached per schema.
import { z } from 'zod';
import {
  RESOURCE_NAMES,
  describeSchema,
  resourceSchemas,
  type FieldInfo,
  type ResourceName,
} from '../catalog/index.js';
import { ConfigError } from '../errors.js';
import type { StageContext } from '../core/stage.js';

export const ResourceOption = z
  .enum(RESOURCE_NAMES as [ResourceName, ...ResourceName[]])
  .optional()
  .describe(
    `Resource schema of the records (${RESOURCE_NAMES.join(', ')}); default: the resource of the pipeline's source`,
  );

export interface StageResource {
  name: ResourceName;
  schema: z.ZodType;
  info: FieldInfo;
}

const described = new WeakMap<z.ZodType, FieldInfo>();

/** The schema read as data, computed once per schema. */
export function fieldInfoOf(schema: z.ZodType): FieldInfo {
  let info = described.get(schema);
  if (!info) {
    info = describeSchema(schema);
    described.set(schema, info);
  }
  return info;
}

/**
 * The stage's resource: the `resource` option, else the source's resource, else
 * `fallback`. Without any of them the stage cannot know its records: ConfigError.
 */
export function resolveResource(
  stage: string,
  option: ResourceName | undefined,
  ctx: Pick<StageContext, 'source'>,
  fallback?: ResourceName,
): StageResource {
  const fromSource = ctx.source?.resource;
  const name =
    option ?? (fromSource && fromSource in resourceSchemas ? (fromSource as ResourceName) : undefined) ?? fallback;
  if (!name) {
    throw new ConfigError(
      `${stage}: cannot tell which resource the records are${fromSource ? ` (the source's resource "${fromSource}" is not one of ${RESOURCE_NAMES.join(', ')})` : ''}; set the option "resource" (${RESOURCE_NAMES.join(', ')})`,
      { path: 'resource' },
      { code: 'config.resource_unknown' },
    );
  }
  const schema = resourceSchemas[name];
  return { name, schema, info: fieldInfoOf(schema) };
}
