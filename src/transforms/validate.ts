// validate: checks each record against its resource schema (zod, JIT mode) and
// applies the invalid-record policy. Valid records pass through unchanged (the
// same object, so its origin stays with it).
import { z } from 'zod';
import type { FieldInfo, ResourceName } from '../catalog/index.js';
import { joinPath } from '../core/issues.js';
import { defineStage, type StageContext } from '../core/stage.js';
import {
  CheckingTransform,
  checkInvalidPolicy,
  invalidPolicyOptions,
  recordIdOf,
  type RecordIssue,
} from './dead-letter.js';
import { describeValue } from '../values.js';
import { genericPath } from '../core/field-path.js';
import { MAX_RECORD_DEPTH, depthOf, tooDeepFields, withFieldsAsText } from '../core/record-depth.js';
import type { RecordOutput, StageStats } from './record-transform.js';
import { ResourceOption, resolveResource } from './resource.js';
import { compileSchemaCheck, type SchemaCheck } from './schema-check.js';
import {
  PASS,
  UNSURE,
  compileRecordCheck,
  hasUnknown,
  knownShapeOf,
  type KnownShape,
  type RecordCheck,
} from './record-check.js';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';

export const ValidateOptionsSchema = z
  .strictObject({
    resource: ResourceOption,
    unknownFields: z
      .enum(['allow', 'report', 'reject'])
      .default('report')
      .describe(
        'Fields the schema does not declare: pass silently (allow), pass and warn once per field path with counts in the summary (report), or treat the record as invalid (reject)',
      ),
    ...invalidPolicyOptions('out/{name}-rejected.jsonl'),
  })
  .superRefine(checkInvalidPolicy);

/** Options as a caller writes them; each key documented on hover (src/generated/stage-option-docs.ts). */
export type ValidateOptions = WithOptionDocs<'validate', z.input<typeof ValidateOptionsSchema>>;

export interface ValidateStats extends StageStats {
  /** Undeclared field paths seen (`photos[].shiny`), with the number of records carrying them. */
  unknownFields: Record<string, number>;
}

/**
 * The paths of the undeclared fields of `value`, in field order. Only subtrees that hold one are
 * walked (hasUnknown), so paths are built for those alone: a product that reports one unknown
 * field used to cost a path string per field of the whole record.
 */
function collectUnknown(shape: KnownShape, value: unknown, path: string, out: string[]): void {
  if (typeof value !== 'object' || value === null) return;
  if (shape.fields) {
    if (Array.isArray(value)) return;
    const fields = shape.fields;
    const keys = Object.keys(value);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      const f = fields[k];
      if (f === undefined) out.push(path ? `${path}.${k}` : k);
      else if (f.fields || f.element) {
        const v = (value as Record<string, unknown>)[k];
        if (hasUnknown(f, v)) collectUnknown(f, v, path ? `${path}.${k}` : k, out);
      }
    }
  } else if (shape.element && Array.isArray(value)) {
    for (let i = 0; i < value.length; i++)
      if (hasUnknown(shape.element, value[i])) collectUnknown(shape.element, value[i], `${path}[${i}]`, out);
  }
}

function infoAt(info: FieldInfo | undefined, path: readonly PropertyKey[]): FieldInfo | undefined {
  for (const key of path) {
    if (!info) return undefined;
    info = typeof key === 'number' ? info.element : info.fields?.[String(key)];
  }
  return info;
}

function valueAt(record: unknown, path: readonly PropertyKey[]): unknown {
  let v = record;
  for (const key of path) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

const TYPE_WORDS: Record<string, string> = {
  int: 'an integer',
  number: 'a number',
  string: 'a string',
  object: 'an object',
  record: 'an object',
  array: 'a list',
  boolean: 'true or false',
  null: 'null',
};

function bound(issue: { origin?: string; inclusive?: boolean }, limit: unknown, big: boolean): string {
  if (issue.origin === 'string') return `${big ? 'at most' : 'at least'} ${String(limit)} characters`;
  if (issue.origin === 'array') return `${big ? 'at most' : 'at least'} ${String(limit)} items`;
  return `a number ${big ? '<' : '>'}${issue.inclusive ? '=' : ''} ${String(limit)}`;
}

/** What the schema expected, in words a data engineer reads in a log line. */
function expectedOf(issue: z.core.$ZodIssue, field: FieldInfo | undefined): string | undefined {
  const shape =
    issue.code === 'too_big' ||
    issue.code === 'too_small' ||
    issue.code === 'invalid_type' ||
    issue.code === 'invalid_union' ||
    issue.code === 'invalid_format';
  if ((field?.kind === 'gtin' || field?.kind === 'code') && shape) {
    return `a code of ${field.digits ? `at most ${field.digits} ` : ''}digits (an integer or a digit string)`;
  }
  if (field?.kind === 'timestamp' && (issue.code === 'invalid_type' || issue.code === 'too_small'))
    return 'a unix timestamp (a non-negative integer)';
  if (field?.kind === 'localized' && (issue.code === 'invalid_type' || issue.code === 'invalid_union')) {
    return 'a localized text (an object such as {"en": "..."}) or a plain string';
  }
  switch (issue.code) {
    case 'invalid_type':
      return TYPE_WORDS[issue.expected] ?? issue.expected;
    case 'invalid_value':
      return `one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'too_big':
      return bound(issue, issue.maximum, true);
    case 'too_small':
      return bound(issue, issue.minimum, false);
    default:
      return undefined;
  }
}

export class ValidateTransform extends CheckingTransform {
  declare readonly stats: ValidateStats;
  readonly resource: ResourceName;
  readonly #schema: z.ZodType;
  /** Answers "valid" without zod's deep copy; zod decides (and explains) the rest. */
  readonly #quickCheck: SchemaCheck;
  /** The common case in one walk (valid, not too deep, and whether a field is undeclared); zod for the rest. */
  readonly #passes: RecordCheck;
  readonly #info: FieldInfo;
  readonly #unknownMode: 'allow' | 'report' | 'reject';
  readonly #known: KnownShape | undefined;

  constructor(options: z.output<typeof ValidateOptionsSchema>, ctx: StageContext) {
    const resource = resolveResource('validate', options.resource, ctx);
    super('validate', ctx, options, resource.name);
    this.resource = resource.name;
    this.#schema = resource.schema;
    this.#quickCheck = compileSchemaCheck(resource.schema);
    this.#info = resource.info;
    this.#unknownMode = options.unknownFields;
    this.#known = knownShapeOf(resource.info);
    this.#passes = compileRecordCheck(resource.schema, this.#unknownMode === 'allow' ? undefined : this.#known);
    this.stats.unknownFields = {};
  }

  protected override get returnsOwnedRecords(): boolean {
    return true;
  }

  processRecord(record: object): RecordOutput {
    const verdict = this.#passes(record);
    if (verdict === PASS) return record;
    if (verdict !== UNSURE) return this.#undeclared(record, this.#unknownPaths(record, this.#known!));
    const deep = tooDeepFields(record);
    if (deep.length > 0) return this.#tooDeep(record, deep);
    const result = this.#quickCheck(record) ? undefined : this.#schema.safeParse(record);
    const known = this.#known;
    const unknown =
      this.#unknownMode !== 'allow' && known !== undefined && hasUnknown(known, record)
        ? this.#unknownPaths(record, known)
        : undefined;
    if (result === undefined || result.success)
      return unknown === undefined ? record : this.#undeclared(record, unknown);
    const issues = result.error.issues
      .flatMap((issue) => this.#closestBranch(issue))
      .map((i) => this.#toIssue(record, i));
    if (unknown && this.#unknownMode === 'reject') issues.push(...unknown.map(unknownIssue));
    else if (unknown) this.#report(record, unknown);
    return this.policy.reject(record, issues);
  }

  /** A valid record with fields the schema does not declare (`unknown`: their paths). */
  #undeclared(record: object, unknown: string[]): RecordOutput {
    if (this.#unknownMode === 'report') {
      this.#report(record, unknown);
      return record;
    }
    return this.policy.reject(record, unknown.map(unknownIssue));
  }

  /**
   * A record nested deeper than any stage can walk (core/record-depth.ts): invalid whatever the
   * schema says; its dead letter holds those fields as JSON text.
   */
  #tooDeep(record: object, fields: string[]): RecordOutput {
    const issues = fields.map((path) => ({
      path,
      message: `nested ${depthOf((record as Record<string, unknown>)[path]) + 1} levels deep, more than the ${MAX_RECORD_DEPTH} a record may have (the stages and outputs cannot walk it); kept in the dead letter as its JSON text`,
      expected: `at most ${MAX_RECORD_DEPTH} levels of objects and lists`,
      received: 'a value nested deeper',
    }));
    return this.policy.reject(record, issues, withFieldsAsText(record, fields));
  }

  #unknownPaths(record: object, known: KnownShape): string[] {
    const out: string[] = [];
    collectUnknown(known, record, '', out);
    return out;
  }

  #report(record: object, paths: string[]): void {
    const counts = this.stats.unknownFields;
    for (const p of new Set(paths.map(genericPath))) {
      if (counts[p] === undefined) {
        counts[p] = 0;
        // Declared on a sink (`columns:`): the user promoted it, as the `_extra` warning advised;
        // warning on every run after that would ask for what was done (issue 37). Still counted.
        if (this.ctx.declaredColumns?.has(p)) {
          counts[p]++;
          continue;
        }
        const id = recordIdOf(record);
        this.ctx.events.emit('warning', {
          code: 'validate.unknown_field',
          message: `validate: ${this.resource} field "${p}" is not in the catalog v4 schema; passed through (first seen on ${this.resource}${id !== undefined ? ` ${JSON.stringify(id)}` : ''})`,
        });
      }
      counts[p]++;
    }
  }

  /**
   * A field that takes other shapes besides its own (`orAlso`: a brand object or a bare id) fails
   * as a union, which names only the field; the branch the value got furthest into names the
   * member that is wrong (`brands[0].name`), where a union of leaves keeps its one message.
   */
  #closestBranch(issue: z.core.$ZodIssue): z.core.$ZodIssue[] {
    if (issue.code !== 'invalid_union' || issue.errors.length === 0) return [issue];
    if (!infoAt(this.#info, issue.path)?.alternatives) return [issue];
    const depth = (branch: readonly z.core.$ZodIssue[]) => Math.min(...branch.map((i) => i.path.length));
    const best = issue.errors.reduce((a, b) => (depth(b) > depth(a) ? b : a));
    if (depth(best) === 0) return [issue];
    return best.map((i) => ({ ...i, path: [...issue.path, ...i.path] }) as z.core.$ZodIssue);
  }

  #toIssue(record: object, issue: z.core.$ZodIssue): RecordIssue {
    const value = valueAt(record, issue.path);
    const expected = expectedOf(issue, infoAt(this.#info, issue.path));
    const received = describeValue(value);
    return {
      path: joinPath('', issue.path),
      message: expected ? `expected ${expected}, got ${received}` : `${issue.message}, got ${received}`,
      ...(expected ? { expected } : {}),
      received,
    };
  }
}

function unknownIssue(path: string): RecordIssue {
  return { path, message: 'not declared in the catalog v4 schema (unknownFields: reject)' };
}

export const validateStage = defineStage({
  kind: 'transform',
  type: 'validate',
  description:
    'Checks each record against its resource schema; invalid records fail the run, are skipped, or go to a dead-letter sink (JSONL by default), with a maxInvalid threshold',
  options: ValidateOptionsSchema,
  // Valid records pass unchanged; invalid ones leave the stream.
  schema: (input) => input,
  create: (options, ctx) => new ValidateTransform(options, ctx),
});
