// normalize-codes: product codes become strings of digits with their leading
// zeros (ARCHITECTURE.md, API rules). A digit string (the live service) is kept exactly as
// sent: the service sent its zeros, and a shorter string is another code, not one to pad
// (hsCode "0402" is a heading, "000402" no code at all). An integer (JSON dropped the zeros)
// gets them back (core/integer-code.ts): EAN/GTIN eanGtin8/12/13/14 to their declared length,
// a list of codes (ean[]) to 13 digits (14 for a 14-digit code); national codes of fixed
// length (CNK 7, CIP13/ACL13 13, cip(7)OrAcl7 7, PZN 8, upc11 11, upc10 10) to it; hsCode
// the one zero it lost when its digit count is odd (HS codes have 2, 4, 6, 8 or 10 digits);
// codes of varying length (artgId, snomed*) keep their digits. A field that also accepts a list of codes
// (eanGtin13/14 as one client receives them) keeps the list, each code normalized. A code with more digits than declared, a
// negative, fractional or unsafe (> 2^53) number, or a string that is not all
// digits makes the record invalid, handled by the same policy as validate
// (fail, skip, dead-letter).
import { z } from 'zod';
import type { FieldInfo } from '../catalog/index.js';
import { ConfigError } from '../errors.js';
import { closestName } from '../closest-name.js';
import { defineStage, type StageContext } from '../core/stage.js';
import { CheckingTransform, checkInvalidPolicy, invalidPolicyOptions, type RecordIssue } from './dead-letter.js';
import { describeValue } from '../values.js';
import { integerCode } from '../core/integer-code.js';
import { buildPathTree, parseFieldPath, replaceAtPaths, replaceInPlace, type PathNode } from '../core/field-path.js';
import type { RecordOutput } from './record-transform.js';
import { ResourceOption, resolveResource, type StageResource } from './resource.js';
import { rewriteContainer, type FieldType, type RecordSchema, type SchemaEnv } from '../core/record-schema.js';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';

export const NormalizeCodesOptionsSchema = z
  .strictObject({
    resource: ResourceOption,
    fields: z
      .array(z.string())
      .min(1)
      .optional()
      .describe(
        'Code fields to normalize (eanGtin13, ean, cnk); default: every EAN/GTIN and national code field of the resource schema',
      ),
    checkDigit: z.boolean().default(false).describe('Also reject EAN/GTIN codes whose GS1 check digit is wrong'),
    ...invalidPolicyOptions('out/{name}-codes-rejected.jsonl'),
  })
  .superRefine(checkInvalidPolicy);

/** Options as a caller writes them; each key documented on hover (src/generated/stage-option-docs.ts). */
export type NormalizeCodesOptions = WithOptionDocs<'normalize-codes', z.input<typeof NormalizeCodesOptionsSchema>>;

interface CodePlan {
  /** Path shown in issues (`eanGtin13`, `ean`). */
  path: string;
  /** Most digits a code may have (Infinity: no limit). */
  digits: number;
  /** Length integer codes are padded to: `digits`, or 13 for a list (a 14-digit code stays 14); 0: none. */
  padTo: number;
  /** hsCode: an integer of an odd digit count gets its one lost zero back. */
  evenDigits: boolean;
  list: boolean;
  /** One code that may also come as a list of codes (`orAlso`): a list keeps its elements, each normalized. */
  orList: boolean;
  /** A GS1 code (EAN/GTIN): checkDigit applies. */
  gs1: boolean;
}

interface CodeField {
  path: string;
  digits: number;
  list: boolean;
  orList: boolean;
  /** Width a shorter integer code is padded to (GTINs, CNK, CIP...: `digits`); 0: none. */
  padTo: number;
  evenDigits: boolean;
  gs1: boolean;
}

type CodeOf = Omit<CodeField, 'path' | 'list'>;

const codeOf = (field: FieldInfo): CodeOf | undefined => {
  const orList = (field.alternatives ?? []).some((a) => a.kind === 'array' && a.element && codeOf(a.element));
  if (field.kind === 'gtin') {
    const digits = field.digits ?? 14;
    return { digits, padTo: digits, evenDigits: false, gs1: true, orList };
  }
  if (field.kind === 'code') {
    const fixed = field.pad === true && field.digits !== undefined;
    return {
      digits: field.digits ?? Number.POSITIVE_INFINITY,
      padTo: fixed ? field.digits! : 0,
      evenDigits: field.evenDigits === true,
      gs1: false,
      orList,
    };
  }
  return undefined;
};

/** Codes in a list (`ean[]`) are padded to 13 digits, 14 only for a code that has 14. */
const padOf = (c: CodeField): number => (c.list ? Math.min(13, c.padTo) : c.padTo);

/** Every code field of a schema: `eanGtin13` (digits 13), `ean[]` (a list), `cnk` (7, padded), `artgId` (as sent). */
function codeFields(info: FieldInfo, path = '', out: CodeField[] = []) {
  for (const [key, field] of Object.entries(info.fields ?? {})) {
    const p = path ? `${path}.${key}` : key;
    const code = codeOf(field);
    const element = field.kind === 'array' && field.element ? codeOf(field.element) : undefined;
    if (code) out.push({ path: p, ...code, list: false });
    else if (element) out.push({ path: p, ...element, list: true, orList: false });
    else if (field.kind === 'object') codeFields(field, p, out);
  }
  return out;
}

/** GS1 mod-10: weights 3,1,3,... from the right, excluding the check digit. */
function checkDigitOk(code: string): boolean {
  let sum = 0;
  for (let i = code.length - 2, w = 3; i >= 0; i--, w = 4 - w) sum += (code.charCodeAt(i) - 48) * w;
  return (10 - (sum % 10)) % 10 === code.charCodeAt(code.length - 1) - 48;
}

function isDigits(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** The code fields the stage normalizes: `fields` (checked against the resource), or every code field of it. */
function chosenCodes(options: z.output<typeof NormalizeCodesOptionsSchema>, resource: StageResource): CodeField[] {
  const known = codeFields(resource.info);
  if (!options.fields) return known;
  const names = known.map((k) => k.path);
  return options.fields.map((f, i) => {
    const name = f.endsWith('[]') ? f.slice(0, -2) : f;
    const found = known.find((k) => k.path === name);
    if (!found) {
      const hint = closestName(name, names);
      throw new ConfigError(
        `normalize-codes: fields[${i}]: "${f}" is not a code field of ${resource.name}${hint ? `; did you mean "${hint}"?` : ''} (codes: ${names.join(', ') || 'none'})`,
        { path: `fields[${i}]` },
        { code: 'config.unknown_field' },
      );
    }
    return found;
  });
}

/** Each normalized code field becomes a string code (a list of them for ean[]). */
function normalizeCodesSchema(
  input: RecordSchema,
  options: z.output<typeof NormalizeCodesOptionsSchema>,
  env: SchemaEnv,
): RecordSchema {
  const source = env.resource === undefined ? undefined : { type: '', resource: env.resource };
  let out = input.fields;
  for (const c of chosenCodes(options, resolveResource('normalize-codes', options.resource, { source }, 'product'))) {
    const path = c.path.split('.');
    const key = path.at(-1)!;
    const digits = Number.isFinite(c.digits) ? c.digits : undefined;
    const code: FieldType = {
      kind: 'string',
      code: { digits, padTo: padOf(c), ...(c.evenDigits ? { evenDigits: true } : {}) },
    };
    // A code that may come as a list keeps saying so: sinks put the list beside its column.
    const type: FieldType = c.list ? { kind: 'list', element: code } : c.orList ? { ...code, alsoList: true } : code;
    out = rewriteContainer(
      out,
      path.slice(0, -1).map((k) => ({ kind: 'key', key: k })),
      (fields) => fields.map((f) => (f.name === key ? { name: key, type } : f)),
    );
  }
  return { fields: out };
}

export class NormalizeCodesTransform extends CheckingTransform {
  readonly fields: readonly string[];
  readonly #tree: PathNode<CodePlan>;
  readonly #checkDigit: boolean;
  /** Issues of the record being rewritten (reset per record; only filled when a code is bad). */
  #issues: RecordIssue[] = [];

  constructor(options: z.output<typeof NormalizeCodesOptionsSchema>, ctx: StageContext) {
    const resource = resolveResource('normalize-codes', options.resource, ctx, 'product');
    super('normalize-codes', ctx, options, resource.name);
    const chosen = chosenCodes(options, resource);
    this.fields = chosen.map((c) => c.path);
    this.#checkDigit = options.checkDigit;
    this.#tree = buildPathTree(
      chosen.map(
        (c) =>
          [
            parseFieldPath(c.path),
            {
              path: c.path,
              digits: c.digits,
              list: c.list,
              orList: c.orList,
              gs1: c.gs1,
              padTo: padOf(c),
              evenDigits: c.evenDigits,
            },
          ] as const,
      ),
    );
  }

  processRecord(record: object, owned?: boolean): RecordOutput {
    const out = owned
      ? replaceInPlace(record, this.#tree, this.#replace)
      : replaceAtPaths(record, this.#tree, this.#replace);
    if (this.#issues.length > 0) {
      const issues = this.#issues;
      this.#issues = [];
      return this.policy.reject(record, issues);
    }
    return typeof out === 'function' ? out() : out;
  }

  protected override get returnsOwnedRecords(): boolean {
    return true;
  }

  readonly #replace = (value: unknown, plan: CodePlan): unknown => {
    if (!(plan.list || plan.orList) || !Array.isArray(value)) return this.#code(value, plan, plan.path);
    const list = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) list[i] = this.#code(value[i], plan, `${plan.path}[${i}]`);
    return list;
  };

  /** The normalized code, or the value unchanged after recording an issue. */
  #code(value: unknown, plan: CodePlan, path: string): unknown {
    let code: string;
    if (typeof value === 'number') {
      if (!Number.isSafeInteger(value) || value < 0)
        return this.#bad(
          value,
          plan,
          path,
          Number.isInteger(value) && value > 0 ? 'beyond 2^53, so JSON already lost digits' : undefined,
        );
      const digits = String(value);
      if (digits.length > plan.digits) return this.#bad(value, plan, path);
      code = integerCode(digits, plan);
    } else if (typeof value === 'string') {
      // Kept exactly: the service sent the zeros it has (docs/lake-contract.md, "Codes").
      if (!isDigits(value) || value.length > plan.digits) return this.#bad(value, plan, path);
      code = value;
    } else if (value === null || value === undefined) return value;
    else return this.#bad(value, plan, path);
    if (this.#checkDigit && plan.gs1 && !checkDigitOk(code)) {
      this.#issues.push({
        path,
        message: `check digit of ${code} is wrong, got ${describeValue(value)}`,
        expected: 'a code with a valid GS1 check digit',
        received: describeValue(value),
      });
    }
    return code;
  }

  #bad(value: unknown, plan: CodePlan, path: string, why?: string): unknown {
    const most = Number.isFinite(plan.digits) ? `at most ${plan.digits} ` : '';
    const expected = `a code of ${most}digits (an integer or a digit string)`;
    const received = describeValue(value);
    this.#issues.push({
      path,
      message: `expected ${expected}, got ${received}${why ? ` (${why})` : ''}`,
      expected,
      received,
    });
    return value;
  }
}

export const normalizeCodesStage = defineStage({
  kind: 'transform',
  type: 'normalize-codes',
  description:
    'Product codes to digit strings with their leading zeros: a digit string is kept as sent; an integer gets back the zeros it lost: eanGtin8/12/13/14, gtin and upc12 padded to their length, ean[] to 13 digits (14 for 14-digit codes), cnk/cip13/acl13/pzn/upc10/upc11 to theirs, hsCode one zero when its digit count is odd (402 -> 0402), artgId/snomed* as sent; a list where one code is declared (eanGtin13: [...]) keeps every code; a malformed code is invalid (fail, skip or dead-letter)',
  options: NormalizeCodesOptionsSchema,
  schema: normalizeCodesSchema,
  create: (options, ctx) => new NormalizeCodesTransform(options, ctx),
});
