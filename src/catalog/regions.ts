// The live service's regions (issue 40; /work/shared/samples/live-facts-3.md items 10, 11, 16):
// five separate deployments, each with its own host, locales, national codes and filters. This
// module is the one place those facts live: the connection reads the base URL, `flatten-locales`
// its default locales, the plan and the client the filters and code formats a region takes, and
// the sandbox the locales and codes of the profile of the same name.
import { closestName } from '../closest-name.js';
import { filterLeafIssues, type FilterIssue } from './filters.js';

export const REGIONS = ['be', 'fr', 'de', 'au', 'us'] as const;
export type Region = (typeof REGIONS)[number];

export const ENVIRONMENTS = ['production', 'sandbox'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

export interface RegionFacts {
  readonly country: string;
  /** The API root, without `/v4` (the client appends `/v4/...`; a base given with `/v4` works too). */
  readonly baseUrl: string;
  /** The vendor's sandbox of the region, where there is one (only BE and FR have one). */
  readonly sandboxBaseUrl?: string;
  /** The locales the region's records carry, the primary one first (the default of flatten-locales). */
  readonly locales: readonly string[];
  /** The national product codes its records carry (fields; the filters are in REGIONAL_FILTERS). */
  readonly codes: readonly string[];
}

export const REGION_FACTS: Readonly<Record<Region, RegionFacts>> = {
  be: {
    country: 'Belgium',
    baseUrl: 'https://api.medipim.be',
    sandboxBaseUrl: 'https://api.sandbox.medipim.be',
    locales: ['nl', 'fr', 'en', 'de'],
    codes: ['cnk'],
  },
  fr: {
    country: 'France',
    baseUrl: 'https://api.medipim.fr',
    sandboxBaseUrl: 'https://api.sandbox.medipim.fr',
    locales: ['fr', 'en'],
    codes: ['cip13', 'acl13', 'cipOrAcl7'],
  },
  de: { country: 'Germany', baseUrl: 'https://api.medipim.de', locales: ['de', 'en'], codes: ['pzn'] },
  au: {
    country: 'Australia',
    baseUrl: 'https://api.au.medipim.com',
    locales: ['en'],
    codes: ['artgId', 'pbs', 'fred', 'zCode'],
  },
  us: {
    country: 'USA',
    baseUrl: 'https://api.us.medipim.com',
    locales: ['en'],
    codes: ['gtin', 'upc12', 'upc11', 'upc10'],
  },
};

/**
 * Filters only some regions document, by resource: a region not listed for a filter does not take
 * it (the vendor's per-region products/query tables: `ecommerce` only on BE and FR, each national
 * code on its own region). A filter not listed here is every region's.
 */
export const REGIONAL_FILTERS: Readonly<Record<string, Readonly<Record<string, readonly Region[]>>>> = {
  product: {
    cnk: ['be'],
    apbCategory: ['be'],
    ecommerce: ['be', 'fr'],
    cip13: ['fr'],
    acl13: ['fr'],
    cipOrAcl7: ['fr'],
    pzn: ['de'],
    artgId: ['au'],
    pbs: ['au'],
    fred: ['au'],
    zCode: ['au'],
  },
  organization: { apbNr: ['be'], rizivNr: ['be'] },
};

/**
 * The format of a code filter's values. `leadingZeros`: the code may start with 0, so an integer
 * with fewer digits (a YAML `0012345` read as 12345) is taken as zero-padded; a string must have
 * one of `lengths` exactly, as the service compares codes as text.
 */
export interface CodeFormat {
  readonly label: string;
  readonly lengths: readonly number[];
  readonly leadingZeros: boolean;
}

const GTIN_LENGTHS = [8, 12, 13, 14] as const;

/** The code filters whose values are checked before sending when a region is set. */
export const CODE_FORMATS: Readonly<Record<string, CodeFormat>> = {
  cnk: { label: 'CNK', lengths: [7], leadingZeros: true },
  pzn: { label: 'PZN', lengths: [8], leadingZeros: true },
  cipOrAcl7: { label: 'CIP7 or ACL7', lengths: [7], leadingZeros: true },
  // CIP13 starts 3400, ACL13 3401: never a lost zero, and the service takes exactly 13 characters.
  cip13: { label: 'CIP13', lengths: [13], leadingZeros: false },
  acl13: { label: 'ACL13', lengths: [13], leadingZeros: false },
  ean: { label: 'EAN/GTIN', lengths: GTIN_LENGTHS, leadingZeros: true },
  gtin: { label: 'GTIN', lengths: GTIN_LENGTHS, leadingZeros: true },
  eanGtin8: { label: 'EAN-8', lengths: [8], leadingZeros: true },
  eanGtin12: { label: 'GTIN-12 (UPC-A)', lengths: [12], leadingZeros: true },
  eanGtin13: { label: 'EAN-13', lengths: [13], leadingZeros: true },
  eanGtin14: { label: 'GTIN-14', lengths: [14], leadingZeros: true },
};

export function isRegion(value: unknown): value is Region {
  return typeof value === 'string' && (REGIONS as readonly string[]).includes(value);
}

/** `be (Belgium)`, for messages. */
export function regionLabel(region: Region): string {
  return `${region} (${REGION_FACTS[region].country})`;
}

/** The regions with a vendor sandbox (`environment: sandbox`). */
export function regionsWithSandbox(): Region[] {
  return REGIONS.filter((r) => REGION_FACTS[r].sandboxBaseUrl !== undefined);
}

/** The region's API base URL in `environment`, or undefined when the region has no such environment. */
export function regionBaseUrl(region: Region, environment: Environment = 'production'): string | undefined {
  const facts = REGION_FACTS[region];
  return environment === 'sandbox' ? facts.sandboxBaseUrl : facts.baseUrl;
}

/** The locales of the region, primary first: what flatten-locales writes when the stage names none. */
export function regionLocales(region: Region): readonly string[] {
  return REGION_FACTS[region].locales;
}

/** The filters of `resource` that only some regions take and `region` is one of. */
export function regionalFiltersOf(region: Region, resource: string): string[] {
  return Object.entries(REGIONAL_FILTERS[resource] ?? {})
    .filter(([, regions]) => regions.includes(region))
    .map(([name]) => name);
}

/**
 * What a region refuses in a filter tree of `resource`, before any request: a filter the region
 * does not document (named with the region and the regional filters it takes), and a code value
 * of the wrong format (named, with its path: it is never sent, since one bad code inside an `or`
 * fails the whole query on the service). `aliases`: deprecated names the endpoint accepts.
 */
export function regionFilterIssues(
  region: Region,
  resource: string,
  filter: unknown,
  path: (string | number)[] = ['filter'],
  aliases: Readonly<Record<string, string>> = {},
): FilterIssue[] {
  return filterLeafIssues(filter, path, aliases, (name, value, at) => {
    const regions = REGIONAL_FILTERS[resource]?.[name];
    if (regions && !regions.includes(region)) return [foreignFilterIssue(region, resource, name, regions, at)];
    const format = Object.hasOwn(CODE_FORMATS, name) ? CODE_FORMATS[name] : undefined;
    return format ? codeIssues(name, format, value, at) : [];
  });
}

function foreignFilterIssue(
  region: Region,
  resource: string,
  name: string,
  regions: readonly Region[],
  path: (string | number)[],
): FilterIssue {
  const own = regionalFiltersOf(region, resource);
  const hint = closestName(name, own);
  return {
    path,
    message:
      `region ${regionLabel(region)} does not take the filter "${name}" (documented for ${regions.map(regionLabel).join(', ')}); ` +
      `${hint ? `did you mean "${hint}"? ` : ''}` +
      `its regional ${resource} filters are: ${own.length ? own.join(', ') : 'none'}, beside the filters every region takes; ` +
      'remove the filter, or set connection.region to the region it belongs to',
  };
}

/** The values of a code filter that do not have the code's format, each named at its path. */
function codeIssues(name: string, format: CodeFormat, value: unknown, path: (string | number)[]): FilterIssue[] {
  const list = Array.isArray(value) ? value : [value];
  const issues: FilterIssue[] = [];
  list.forEach((v, i) => {
    const problem = codeProblem(format, v);
    if (problem === undefined) return;
    issues.push({
      path: Array.isArray(value) ? [...path, i] : path,
      message:
        `${JSON.stringify(v)} is not a valid ${format.label} code: ${problem}; it was not sent ` +
        `(the service fails the whole query on one bad ${name} value, even inside an "or"): correct or remove it`,
    });
  });
  return issues;
}

/** Why `v` does not have the format, or undefined when it does. */
export function codeProblem(format: CodeFormat, v: unknown): string | undefined {
  const lengths = format.lengths;
  const wanted =
    lengths.length === 1
      ? `exactly ${lengths[0]} digits`
      : `${lengths.slice(0, -1).join(', ')} or ${lengths.at(-1)} digits`;
  const label = `${format.label} codes`;
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v) || v < 0) return `${label} are strings of ${wanted}`;
    const n = String(v).length;
    if (lengths.includes(n) || (format.leadingZeros && n <= Math.max(...lengths))) return undefined;
    return `${label} have ${wanted}, this number has ${n}`;
  }
  if (typeof v !== 'string' || !/^\d+$/.test(v)) return `${label} are strings of ${wanted}`;
  if (lengths.includes(v.length)) return undefined;
  const hint = format.leadingZeros ? ' (write it quoted, with its leading zeros)' : '';
  return `${label} have ${wanted}, this has ${v.length}${hint}`;
}
