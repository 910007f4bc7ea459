// Filter and sorting machinery shared by every query endpoint (spec §4.1): a
// filter is an object with exactly one key, either a filter name of the endpoint
// or one of the combinators `and`/`or`/`not`, recursively. Validation walks the
// tree itself (rather than a zod union) so a mistake is reported at its exact
// path with the allowed names or values.
import { z } from 'zod';
import { MAX_CODES_PER_FILTER } from './limits.js';
import { SortDirection, catalogKindOf, catalogMetaOf } from './primitives.js';
import { Timestamp } from './timestamp.js';
import { closestName } from '../closest-name.js';
import { isPlainObject } from '../values.js';

/** "One or more": a single value or a non-empty list. */
export function oneOrMore<T extends z.ZodType>(item: T) {
  return z.union([item, z.array(item).min(1, { message: 'must list at least one value' })]);
}

/** A list of identifier codes: at most 1000 per query (spec §8). */
export function codes<T extends z.ZodType>(item: T) {
  return codeList(item).meta({ catalogKind: 'codes' });
}

function codeList<T extends z.ZodType>(item: T) {
  return z.union([
    item,
    z
      .array(item)
      .min(1, { message: 'must list at least one value' })
      .max(MAX_CODES_PER_FILTER, {
        message: `lists more than ${MAX_CODES_PER_FILTER} codes; split it into several queries (the sources do this for you)`,
      }),
  ]);
}

/**
 * Values a code filter must never send: the live service takes `"0"` as "no value" (a public
 * client's workaround for `cipOrAcl7`, docs/live-service.md), and `""` is no code
 * either; a query carrying one would match products without that code, or unrelated ones.
 */
function isBlankCode(v: unknown): boolean {
  return v === '' || v === 0 || (typeof v === 'string' && /^0+$/.test(v));
}

function refuseBlankCodes(value: unknown, ctx: z.core.$RefinementCtx<unknown>): void {
  const blank = (Array.isArray(value) ? value : [value]).filter(isBlankCode);
  if (blank.length === 0) return;
  ctx.addIssue({
    code: 'custom',
    message: `${blank.map((v) => JSON.stringify(v)).join(', ')} ${blank.length === 1 ? 'is not a code' : 'are not codes'}: the live service treats "0" (and "") as no value, so the query would match products without that code or unrelated ones; remove ${blank.length === 1 ? 'it' : 'them'}`,
  });
}

/** A list of digit codes (EAN/GTIN, organization numbers) in which `"0"`, `0` and `""` are refused. */
export function digitCodes<T extends z.ZodType>(item: T) {
  return codeList(item).superRefine(refuseBlankCodes).meta({ catalogKind: 'codes' });
}

/**
 * A list of national product codes of a fixed length (CNK 7, CIP13/ACL13 13, cipOrAcl7 7): an
 * integer or a digit string, sent as the zero-padded string (`wireDigits`, see `toWireFilter`)
 * because the service compares codes as text and a YAML `0012345` arrives here as 12345. `"0"`
 * and `""` are refused. `prefix`: the service matches the code as a prefix of longer codes too
 * (cipOrAcl7), so the sources keep only records carrying the code exactly.
 */
export function nationalCodes(digits: number, prefix = false) {
  const item = z.union(
    [
      z
        .int()
        .nonnegative()
        .max(10 ** digits - 1, { message: `must have at most ${digits} digits` }),
      z.string().regex(new RegExp(`^\\d{1,${digits}}$`), { message: `must be a string of at most ${digits} digits` }),
    ],
    { error: `must be a code of at most ${digits} digits: a string of digits (or an integer)` },
  );
  return codeList(item)
    .superRefine(refuseBlankCodes)
    .meta({ catalogKind: 'codes', wireDigits: digits, ...(prefix ? { prefixMatch: true } : {}) });
}

/**
 * Timestamp filter parameter: a time (`Timestamp`: ISO 8601 or unix seconds), or `{from, until}`
 * (both inclusive, each optional). Parses to unix seconds, the only form the wire carries.
 */
export const TimestampFilter = z
  .union([
    Timestamp,
    z
      .strictObject({ from: Timestamp.optional(), until: Timestamp.optional() })
      .refine((r) => r.from !== undefined || r.until !== undefined, { message: 'needs `from`, `until` or both' })
      .refine((r) => r.from === undefined || r.until === undefined || r.from <= r.until, {
        message: '`from` is after `until`',
      }),
  ])
  .meta({ catalogKind: 'timestamp-filter' });
export type TimestampFilter = z.input<typeof TimestampFilter>;

/** An EAN/GTIN code in a filter: an integer, or a digit string (keeps leading zeros readable). */
export const GtinCode = z.union([
  z.int().nonnegative(),
  z.string().regex(/^\d{1,14}$/, { message: 'must be 1 to 14 digits' }),
]);

export type FilterParams = Record<string, z.ZodType>;

type LeafFilter<P extends FilterParams> = { [K in keyof P]: { [Q in K]: z.input<P[K]> } }[keyof P];
/** A filter of an endpoint whose leaf filters are `P`, combined with and/or/not. */
export type Filter<P extends FilterParams> =
  LeafFilter<P> | { and: Filter<P>[] } | { or: Filter<P>[] } | { not: Filter<P> };

export type SortingParams = Record<string, z.ZodType>;
type OneSorting<S extends SortingParams> = { [K in keyof S]: { [Q in K]: z.input<S[K]> } }[keyof S];
export type Sorting<S extends SortingParams> = OneSorting<S>;

export const Direction = SortDirection;
export const NameSorting = z.strictObject({ direction: SortDirection, locale: z.string().min(1) });

export interface FilterIssue {
  path: (string | number)[];
  message: string;
}

const COMBINATORS = ['and', 'or', 'not'] as const;

function describeFilterValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'string') return `"${v}"`;
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${String(v)}`;
}

/** Turns a zod issue into one sentence, adding the allowed values of an enum. */
function issueMessage(issue: z.core.$ZodIssue, value: unknown): string {
  if (issue.code === 'invalid_value' && 'values' in issue) {
    const got = issue.path.reduce<unknown>(
      (v, k) => (isPlainObject(v) || Array.isArray(v) ? (v as any)[k as any] : undefined),
      value,
    );
    return `${describeFilterValue(got)} is not allowed; allowed: ${issue.values.map(String).join(', ')}`;
  }
  return issue.message;
}

/**
 * zod reports a failed union as one "Invalid input" issue holding each branch's
 * issues. For "one or more" parameters the branch that matches the value's shape
 * (a list or a single value) is the one a user wants to hear about.
 */
function expandIssues(issues: readonly z.core.$ZodIssue[]): z.core.$ZodIssue[] {
  return issues.flatMap((issue) => {
    if (issue.code !== 'invalid_union' || issue.errors.length === 0) return [issue];
    // The branch that got furthest into the value (deepest first issue), and
    // among equals one that did not fail on the value's type at its root.
    const score = (b: readonly z.core.$ZodIssue[]) =>
      Math.min(...b.map((i) => i.path.length)) * 2 +
      (b.some((i) => i.code === 'invalid_type' && i.path.length === 0) ? 0 : 1);
    const branch = issue.errors.reduce((best, b) => (score(b) > score(best) ? b : best));
    return expandIssues(branch.map((i) => ({ ...i, path: [...issue.path, ...i.path] })));
  });
}

/**
 * Validates one filter tree. Returns the issues (empty when valid). `aliases`: deprecated names
 * accepted for a filter (`kind` for `type`), checked with the filter's schema.
 */
export function checkFilter(
  params: FilterParams,
  filter: unknown,
  path: (string | number)[] = [],
  aliases: Readonly<Record<string, string>> = {},
): FilterIssue[] {
  if (!isPlainObject(filter)) {
    return [{ path, message: `a filter must be an object with one key, got ${describeFilterValue(filter)}` }];
  }
  const keys = Object.keys(filter);
  if (keys.length !== 1) {
    return [
      {
        path,
        message:
          keys.length === 0
            ? 'a filter must have exactly one key (a filter name, or and/or/not)'
            : `a filter must have exactly one key, got ${keys.length} (${keys.join(', ')}); combine them with {and: [...]}`,
      },
    ];
  }
  const key = keys[0]!;
  const value = filter[key];
  if (key === 'and' || key === 'or') {
    if (!Array.isArray(value) || value.length === 0) {
      return [{ path: [...path, key], message: `\`${key}\` takes a non-empty list of filters` }];
    }
    return value.flatMap((f, i) => checkFilter(params, f, [...path, key, i], aliases));
  }
  if (key === 'not') return checkFilter(params, value, [...path, key], aliases);
  // hasOwn: a filter named `constructor` must be unknown, not Object.prototype's.
  const name = Object.hasOwn(aliases, key) ? aliases[key]! : key;
  const schema = Object.hasOwn(params, name) ? params[name] : undefined;
  if (!schema) {
    const names = [...Object.keys(params), ...COMBINATORS];
    const hint = closestName(key, names);
    return [
      {
        path: [...path, key],
        message: `unknown filter "${key}"; ${hint ? `did you mean "${hint}"? ` : ''}this endpoint's filters are: ${names.join(', ')}`,
      },
    ];
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return [];
  return expandIssues(parsed.error.issues).map((issue) => ({
    path: [...path, key, ...(issue.path as (string | number)[])],
    message: issueMessage(issue, value),
  }));
}

/** Validates a sorting: exactly one known key with its parameter. */
export function checkSorting(sortings: SortingParams, sorting: unknown, path: (string | number)[] = []): FilterIssue[] {
  if (!isPlainObject(sorting) || Object.keys(sorting).length !== 1) {
    return [
      {
        path,
        message: `a sorting must be an object with exactly one key; allowed: ${Object.keys(sortings).join(', ')}`,
      },
    ];
  }
  const key = Object.keys(sorting)[0]!;
  const schema = Object.hasOwn(sortings, key) ? sortings[key] : undefined;
  if (!schema) {
    const hint = closestName(key, Object.keys(sortings));
    return [
      {
        path: [...path, key],
        message: `unknown sorting "${key}"; ${hint ? `did you mean "${hint}"? ` : ''}allowed: ${Object.keys(sortings).join(', ')}`,
      },
    ];
  }
  const parsed = schema.safeParse(sorting[key]);
  if (parsed.success) return [];
  return expandIssues(parsed.error.issues).map((issue) => ({
    path: [...path, key, ...(issue.path as (string | number)[])],
    message: issueMessage(issue, sorting[key]),
  }));
}

export function sortingSchema<S extends SortingParams>(
  sortings: S,
  explain: (issues: FilterIssue[]) => FilterIssue[] = (i) => i,
): z.ZodType<Sorting<S>> {
  return z.any().superRefine((value, ctx) => {
    for (const issue of explain(checkSorting(sortings, value)))
      ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
  }) as unknown as z.ZodType<Sorting<S>>;
}

/** Names of the filters that take identifier-code lists (and so are split into chunks of 1000). */
export function codeFilterNames(params: FilterParams): string[] {
  return Object.entries(params)
    .filter(([, s]) => catalogKindOf(s) === 'codes')
    .map(([k]) => k);
}

/** `filter.and[1].status` from a path array. */
export function formatPath(path: readonly (string | number)[], root = ''): string {
  let out = root;
  for (const k of path) out += typeof k === 'number' ? `[${k}]` : out ? `.${k}` : k;
  return out;
}

export interface RenamedFilter {
  /** Where the deprecated name stood: `filter.and[0].kind`. */
  path: string;
  from: string;
  to: string;
}

/**
 * The filter as it goes on the wire: deprecated names replaced by the service's (`kind` ->
 * `type`, listed in `renamed` so the caller can warn once), national codes as zero-padded
 * strings, times in unix seconds. Idempotent; the input is not changed.
 */
export function toWireFilter(
  params: FilterParams,
  filter: unknown,
  aliases: Readonly<Record<string, string>> = {},
  root: (string | number)[] = ['filter'],
): { filter: unknown; renamed: RenamedFilter[] } {
  const renamed: RenamedFilter[] = [];
  const walk = (f: unknown, path: (string | number)[]): unknown => {
    if (!isPlainObject(f) || Object.keys(f).length !== 1) return f;
    const [key, value] = Object.entries(f)[0]!;
    if ((key === 'and' || key === 'or') && Array.isArray(value))
      return { [key]: value.map((g, i) => walk(g, [...path, key, i])) };
    if (key === 'not') return { not: walk(value, [...path, key]) };
    const name = Object.hasOwn(aliases, key) ? aliases[key]! : key;
    if (name !== key) renamed.push({ path: formatPath([...path, key]), from: key, to: name });
    const schema = Object.hasOwn(params, name) ? params[name] : undefined;
    const seconds = schema ? inSeconds(schema, value) : undefined;
    if (seconds !== undefined) return { [name]: seconds };
    const digits = schema ? catalogMetaOf(schema)?.wireDigits : undefined;
    if (typeof digits !== 'number') return name === key ? f : { [name]: value };
    const pad = (v: unknown) =>
      (typeof v === 'number' && Number.isSafeInteger(v)) || (typeof v === 'string' && /^\d+$/.test(v))
        ? String(v).padStart(digits, '0')
        : v;
    return { [name]: Array.isArray(value) ? value.map(pad) : pad(value) };
  };
  return { filter: walk(filter, root), renamed };
}

/** A time filter's value in unix seconds (`TimestampFilter`); undefined for other filters or an invalid value. */
function inSeconds(schema: z.ZodType, value: unknown): unknown {
  if (catalogKindOf(schema) !== 'timestamp-filter') return undefined;
  const parsed = schema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/**
 * The issues `leaf` finds at each leaf filter of a tree (`and`/`or`/`not` walked), with the
 * leaf's name resolved through `aliases` (deprecated names an endpoint accepts) and its path.
 */
export function filterLeafIssues(
  filter: unknown,
  path: (string | number)[],
  aliases: Readonly<Record<string, string>>,
  leaf: (name: string, value: unknown, at: (string | number)[]) => FilterIssue[],
): FilterIssue[] {
  if (!isPlainObject(filter) || Object.keys(filter).length !== 1) return [];
  const [key, value] = Object.entries(filter)[0]!;
  if ((key === 'and' || key === 'or') && Array.isArray(value))
    return value.flatMap((f, i) => filterLeafIssues(f, [...path, key, i], aliases, leaf));
  if (key === 'not') return filterLeafIssues(value, [...path, key], aliases, leaf);
  return leaf(Object.hasOwn(aliases, key) ? aliases[key]! : key, value, [...path, key]);
}

/**
 * Times in a filter that are not unix seconds, as the service sees them: it takes no dates (a
 * client converts them, `toWireFilter`), so the sandbox refuses a request that carries one.
 */
export function timesNotInSeconds(
  params: FilterParams,
  filter: unknown,
  path: (string | number)[] = ['filter'],
  aliases: Readonly<Record<string, string>> = {},
): FilterIssue[] {
  return filterLeafIssues(filter, path, aliases, (name, value, at) => {
    const schema = Object.hasOwn(params, name) ? params[name] : undefined;
    if (!schema || catalogKindOf(schema) !== 'timestamp-filter') return [];
    return timeIssues(value, at);
  });
}

function timeIssues(value: unknown, path: (string | number)[]): FilterIssue[] {
  const times: [unknown, (string | number)[]][] = isPlainObject(value)
    ? Object.entries(value).map(([k, v]) => [v, [...path, k]])
    : [[value, path]];
  return times
    .filter(([v]) => v !== undefined && typeof v !== 'number')
    .map(([v, at]) => ({
      path: at,
      message: `${JSON.stringify(v)} is not unix seconds: the service takes times as integers`,
    }));
}

/**
 * The filter with every time in unix seconds (ISO dates converted), names and codes as written:
 * what a source's options parse to, so windows, cursors and checks compare numbers.
 */
export function filterInSeconds(
  params: FilterParams,
  filter: unknown,
  aliases: Readonly<Record<string, string>> = {},
): unknown {
  const walk = (f: unknown): unknown => {
    if (!isPlainObject(f) || Object.keys(f).length !== 1) return f;
    const [key, value] = Object.entries(f)[0]!;
    if ((key === 'and' || key === 'or') && Array.isArray(value)) return { [key]: value.map(walk) };
    if (key === 'not') return { not: walk(value) };
    const name = Object.hasOwn(aliases, key) ? aliases[key]! : key;
    const schema = Object.hasOwn(params, name) ? params[name] : undefined;
    const seconds = schema ? inSeconds(schema, value) : undefined;
    return seconds === undefined ? f : { [key]: seconds };
  };
  return walk(filter);
}

/**
 * Where a filter asks for a code the service matches by prefix too (`cipOrAcl7`: a 7-digit
 * search also returns products whose longer codes merely start with those digits), a test
 * keeping the records that carry one of the searched codes exactly in `fields`; undefined when
 * the filter has no such code or it cannot tell (under `not`, or beside another filter in `or`,
 * a record may have matched another way).
 */
export function exactCodeTest(
  params: FilterParams,
  filter: unknown,
  fields: readonly string[],
): ((record: Record<string, unknown>) => boolean) | undefined {
  type Verdict = (r: Record<string, unknown>) => boolean | undefined;
  const codesOf = (r: Record<string, unknown>): string[] =>
    fields.flatMap((k) => {
      const v = r[k];
      return (Array.isArray(v) ? v : [v]).filter((x) => typeof x === 'string' || typeof x === 'number').map(String);
    });
  const compile = (f: unknown): Verdict | undefined => {
    if (!isPlainObject(f) || Object.keys(f).length !== 1) return undefined;
    const [key, value] = Object.entries(f)[0]!;
    if ((key === 'and' || key === 'or') && Array.isArray(value)) {
      const parts = value.map(compile);
      if (key === 'and') {
        const known = parts.filter((p): p is Verdict => p !== undefined);
        return known.length ? (r) => (known.some((p) => p(r) === false) ? false : undefined) : undefined;
      }
      if (parts.some((p) => p === undefined)) return undefined;
      return (r) => (parts.every((p) => p!(r) === false) ? false : undefined);
    }
    const schema = Object.hasOwn(params, key) ? params[key] : undefined;
    const meta = schema ? catalogMetaOf(schema) : undefined;
    if (!meta?.prefixMatch || typeof meta.wireDigits !== 'number') return undefined;
    const digits = meta.wireDigits;
    const wanted = new Set((Array.isArray(value) ? value : [value]).map((v) => String(v).padStart(digits, '0')));
    return (r) => (codesOf(r).some((c) => wanted.has(c) || wanted.has(c.padStart(digits, '0'))) ? undefined : false);
  };
  const verdict = compile(filter);
  return verdict && ((r) => verdict(r) !== false);
}
