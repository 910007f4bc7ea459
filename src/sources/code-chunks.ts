// Code lists longer than the API's 1000 per query (spec §4.1, §8), split into
// several queries that together return every matching record once.
//
// - Where: a code filter (`endpoint.codeFilters`: id, ean, eanGtin*, brand...)
//   at the top level of the filter or inside a top-level `and` (nested `and`s
//   are flattened: and is associative). Each sub-query keeps the rest of the
//   filter unchanged.
// - A list over 1000 inside `or` or `not` cannot be split this way (the union
//   of `not` chunks is not the `not` of the union): rejected, with its path.
// - Repeated codes are removed first (they would only cost requests).
// - Several long lists: each is split and every combination of chunks is
//   queried (the cartesian product), so every sub-query stays within the limit
//   and the union is exactly the original filter.
// - Duplicates: with `id` chunks a record matches exactly one sub-query (a
//   record has one id). Other code filters may match a multi-valued field (a
//   product has several EANs, brands, categories), so a record can match two
//   chunks; then the source drops records whose id it already delivered
//   (`dedupe`), which keeps the ids of those records in memory.
import { z } from 'zod';
import {
  type EndpointFilter,
  type EndpointName,
  type FilterIssue,
  MAX_CODES_PER_FILTER,
  type RenamedFilter,
  checkFilter,
  formatPath,
  getEndpoint,
  isEmptyObject,
  notShown,
  EXACT_CODE_FIELDS,
  exactCodeTest,
  filterInSeconds,
  toWireFilter,
} from '../catalog/index.js';
import { RequestValidationError } from '../errors.js';

type AnyFilter = Record<string, unknown>;
type Path = (string | number)[];

export interface FilterChunk {
  /** The filter of one sub-query (undefined: the endpoint's whole collection). */
  filter: AnyFilter | undefined;
  /** `id chunk 2/3`; undefined when the filter was not split. */
  label?: string;
}

export interface ChunkPlan {
  chunks: FilterChunk[];
  /** Whether a record can match several chunks, so the source must drop repeats by id. */
  dedupe: boolean;
  /** Names of the filters that were split. */
  split: string[];
  /** Deprecated filter names the chunks send under the service's name (the source warns once). */
  renamed: RenamedFilter[];
}

/**
 * For a products filter with a code the service also matches by prefix (cipOrAcl7), the test a
 * source applies to keep only records carrying a searched code exactly (a public client does the
 * same, docs/live-service.md); undefined otherwise.
 */
export function exactMatchTest(
  endpointName: EndpointName,
  filter: unknown,
): ((record: Record<string, unknown>) => boolean) | undefined {
  const spec = getEndpoint(endpointName)!;
  if (spec.resource !== 'product' || filter === undefined) return undefined;
  return exactCodeTest(spec.filters, filter, EXACT_CODE_FIELDS);
}

/** The warning a source gives once for the deprecated filter names it sent under the service's. */
export function renamedWarning(endpointName: EndpointName, renamed: readonly RenamedFilter[]) {
  if (renamed.length === 0) return undefined;
  const names = [...new Set(renamed.map((r) => `\`${r.from}\` (use \`${r.to}\`)`))].join(', ');
  return {
    code: 'filter.deprecated_name',
    message: `${endpointName}: the filter name ${names} at ${renamed.map((r) => r.path).join(', ')} is deprecated: the live service does not know it, so it was sent as \`${renamed[0]!.to}\`; rename it in the pipeline file or code`,
  };
}

interface Conjunct {
  filter: AnyFilter;
  path: Path;
}

/** Splits a filter's long code lists into sub-queries of at most 1000 codes each. */
export function chunkFilter(endpointName: EndpointName, given: unknown, maxCodes = MAX_CODES_PER_FILTER): ChunkPlan {
  const issues = longListsOutOfReach(endpointName, given);
  if (issues.length) throw new RequestValidationError(endpointName, formatPath(issues[0]!.path), issues[0]!.message);
  const spec = getEndpoint(endpointName)!;
  if (given === undefined || (spec.filtersNotShown && isEmptyObject(given)))
    return { chunks: [{ filter: undefined }], dedupe: false, split: [], renamed: [] };
  // Every chunk, and so every request and dry-run line, carries the names and code forms the service knows.
  const { filter, renamed } = toWireFilter(spec.filters, given, spec.filterAliases);
  const conjuncts = topLevelConjuncts(filter as AnyFilter, ['filter']);
  const codeFilters = codeFiltersOf(endpointName);
  const long: { at: number; name: string; chunks: unknown[][] }[] = [];
  conjuncts.forEach((c, at) => {
    const list = longCodeList(codeFilters, c.filter, maxCodes);
    if (list) long.push({ at, name: list.name, chunks: chunksOf(uniqueCodes(list.codes), maxCodes) });
  });
  if (long.length === 0) return { chunks: [{ filter: filter as AnyFilter }], dedupe: false, split: [], renamed };

  const chunks: FilterChunk[] = [];
  const combination = (k: number, picked: number[]): void => {
    if (k === long.length) {
      const parts = conjuncts.map((c) => c.filter);
      const labels: string[] = [];
      long.forEach((l, i) => {
        parts[l.at] = { [l.name]: l.chunks[picked[i]!] };
        labels.push(`${l.name} chunk ${picked[i]! + 1}/${l.chunks.length}`);
      });
      chunks.push({ filter: parts.length === 1 ? parts[0] : { and: parts }, label: labels.join(', ') });
      return;
    }
    for (let i = 0; i < long[k]!.chunks.length; i++) combination(k + 1, [...picked, i]);
  };
  combination(0, []);
  return { chunks, dedupe: long.some((l) => l.name !== 'id'), split: long.map((l) => l.name), renamed };
}

/**
 * Every problem of a filter as the sources will send it: the endpoint's own
 * checks, except that long code lists where they can be split are checked in
 * pieces (paths keep the original positions), and long lists where they cannot
 * be split are reported.
 */
export function checkChunkableFilter(endpointName: EndpointName, filter: unknown): FilterIssue[] {
  const spec = getEndpoint(endpointName)!;
  const aliases = spec.filterAliases;
  if (spec.filtersNotShown) return isEmptyObject(filter) ? [] : notShown(spec, checkFilter(spec.filters, filter, []));
  if (!filter || typeof filter !== 'object' || Array.isArray(filter))
    return checkFilter(spec.filters, filter, [], aliases);
  const outOfReach = longListsOutOfReach(endpointName, filter, []);
  if (outOfReach.length) return outOfReach;
  const codeFilters = codeFiltersOf(endpointName);
  const issues: FilterIssue[] = [];
  for (const c of topLevelConjuncts(filter as AnyFilter, [])) {
    const list = longCodeList(codeFilters, c.filter, MAX_CODES_PER_FILTER);
    if (list) {
      const { name } = list;
      for (const [k, chunk] of chunksOf(list.codes, MAX_CODES_PER_FILTER).entries()) {
        const start = k * MAX_CODES_PER_FILTER;
        for (const issue of checkFilter(spec.filters, { [name]: chunk }, c.path, aliases)) {
          const [, index, ...rest] = issue.path.slice(c.path.length);
          issues.push({
            ...issue,
            path: [
              ...c.path,
              name,
              ...(typeof index === 'number' ? [index + start] : index === undefined ? [] : [index]),
              ...rest,
            ],
          });
        }
      }
    } else {
      issues.push(...checkFilter(spec.filters, c.filter, c.path, aliases));
    }
  }
  return issues;
}

/**
 * A zod schema for stage options: the endpoint's filter, with code lists over 1000 allowed where
 * they can be split. It parses to the filter with its times in unix seconds (`filterInSeconds`).
 */
export function chunkableFilterSchema<E extends EndpointName>(endpointName: E): z.ZodType<EndpointFilter<E>> {
  const spec = getEndpoint(endpointName)!;
  return z
    .any()
    .superRefine((value, ctx) => {
      for (const issue of checkChunkableFilter(endpointName, value))
        ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
    })
    .transform((value) => filterInSeconds(spec.filters, value, spec.filterAliases)) as unknown as z.ZodType<
    EndpointFilter<E>
  >;
}

/** Leaf filters of the top level and of top-level `and`s (flattened), with their paths. */
function topLevelConjuncts(filter: AnyFilter, path: Path): Conjunct[] {
  const keys = Object.keys(filter);
  if (keys.length === 1 && keys[0] === 'and' && Array.isArray(filter.and)) {
    return (filter.and as AnyFilter[]).flatMap((f, i) =>
      f && typeof f === 'object'
        ? topLevelConjuncts(f, [...path, 'and', i])
        : [{ filter: f, path: [...path, 'and', i] }],
    );
  }
  return [{ filter, path }];
}

/** Code lists over 1000 under `or`/`not` (anywhere below the top-level conjuncts). */
function longListsOutOfReach(endpointName: EndpointName, filter: unknown, root: Path = ['filter']): FilterIssue[] {
  if (!filter || typeof filter !== 'object' || Array.isArray(filter)) return [];
  const codeFilters = codeFiltersOf(endpointName);
  const issues: FilterIssue[] = [];
  const walk = (f: unknown, path: Path, splittable: boolean): void => {
    if (!f || typeof f !== 'object' || Array.isArray(f)) return;
    const [key, value] = leafOf(f as AnyFilter);
    if (key === 'and' && Array.isArray(value)) value.forEach((g, i) => walk(g, [...path, 'and', i], splittable));
    else if (key === 'or' && Array.isArray(value)) value.forEach((g, i) => walk(g, [...path, 'or', i], false));
    else if (key === 'not') walk(value, [...path, 'not'], false);
    else if (!splittable && longCodeList(codeFilters, f as AnyFilter, MAX_CODES_PER_FILTER)) {
      issues.push({
        path: [...path, key!],
        message: `lists ${(value as unknown[]).length} codes inside \`or\`/\`not\`, more than the ${MAX_CODES_PER_FILTER} a query accepts; lists that long can only be split when they are at the top level of the filter or inside a top-level \`and\`: restructure the filter, or run one pipeline per part`,
      });
    }
  };
  walk(filter, root, true);
  return issues;
}

const codeFilterSets = new Map<EndpointName, ReadonlySet<string>>();

/** The endpoint's code-list filter names, as a set made once per endpoint. */
function codeFiltersOf(endpointName: EndpointName): ReadonlySet<string> {
  let set = codeFilterSets.get(endpointName);
  if (!set) codeFilterSets.set(endpointName, (set = new Set(getEndpoint(endpointName)!.codeFilters)));
  return set;
}

/** The leaf filter as a code list with more codes than one query takes, or undefined. */
function longCodeList(
  codeFilters: ReadonlySet<string>,
  filter: AnyFilter,
  maxCodes: number,
): { name: string; codes: unknown[] } | undefined {
  const [name, value] = leafOf(filter);
  return name !== undefined && codeFilters.has(name) && Array.isArray(value) && value.length > maxCodes
    ? { name, codes: value }
    : undefined;
}

function leafOf(filter: AnyFilter): [string | undefined, unknown] {
  const keys = Object.keys(filter);
  return keys.length === 1 ? [keys[0], filter[keys[0]!]] : [undefined, undefined];
}

/** Codes in first-seen order without repeats (`1` and `"1"` are different codes). */
function uniqueCodes(values: unknown[]): unknown[] {
  const seen = new Set<string>();
  return values.filter((v) => {
    const key = `${typeof v}:${String(v)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function chunksOf<T>(values: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < values.length; i += size) out.push(values.slice(i, i + size));
  return out;
}
