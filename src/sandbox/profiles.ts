// Sandbox profiles: which shapes the sandbox serves. `spec` serves the shapes
// the API documentation shows; `au`, `be`, `de`, `fr` and `us` serve the shapes the
// live service is observed to send in each region (issues 11 and 24,
// /work/shared/samples/live-shapes.json and live-shapes-2.md): codes as digit
// strings, plain-string brand and organization names, float measures, nulls
// and empty strings in contact data, the region's locales and regional fields,
// sparse fields that first appear thousands of records into the catalog; and
// (issue 24) zero-led hsCodes as strings or integers, decimal weights, replaced
// products whose codes were nulled, bare brand ids, code lists, GTINs shared by
// several products and the regional reference tables. Issue 40 adds `de` (PZN codes,
// de/en locales); each live profile's locales come from the region of the same name
// (catalog/regions.ts), the facts a `connection.region` preset reads too.
import { REGION_FACTS, type Region } from '../catalog/regions.js';
import { UsageError } from '../errors.js';
import { localeBit } from './vocabulary.js';

export const SANDBOX_PROFILES = ['spec', 'au', 'be', 'de', 'fr', 'us'] as const;
export type SandboxProfile = (typeof SANDBOX_PROFILES)[number];

/**
 * `be` by default: it is the live service's richest region (four locales, every
 * observed shape and the most regional fields), so a pipeline that passes it is
 * ready for what production sends. `spec` is there for checking the documented
 * contract.
 */
export const DEFAULT_PROFILE: SandboxProfile = 'be';

/** The environment variable `sandbox` and `run --sandbox` read when `--profile` is not given. */
export const PROFILE_ENV = 'CATALOG_SANDBOX_PROFILE';

export function isSandboxProfile(value: unknown): value is SandboxProfile {
  return typeof value === 'string' && (SANDBOX_PROFILES as readonly string[]).includes(value);
}

/** The profile named by `value` (a flag or the environment), or a UsageError saying what is allowed. */
export function parseProfile(value: string | undefined, where: string): SandboxProfile | undefined {
  if (value === undefined || value === '') return undefined;
  if (isSandboxProfile(value)) return value;
  throw new UsageError(`${where}: "${value}" is not a sandbox profile; choose one of ${SANDBOX_PROFILES.join(', ')}`);
}

/** The locale mask (en=1, nl=2, fr=4, de=8) of a region's locales, and its primary locale's bit. */
function regionLocaleMask(region: Region): { mask: number; primary: number } {
  const locales = REGION_FACTS[region].locales;
  return { mask: locales.reduce((m, l) => m | localeBit(l), 0), primary: localeBit(locales[0]!) };
}

/**
 * Locale masks each profile serves, and the locale a record falls back to: a live profile's are
 * its region's (be: nl, fr, en, de with nl first; fr: fr, en; de: de, en; au and us: en).
 */
export const PROFILE_LOCALES: Record<SandboxProfile, { mask: number; primary: number }> = {
  spec: { mask: 0b1111, primary: 0b0001 },
  be: regionLocaleMask('be'),
  fr: regionLocaleMask('fr'),
  de: regionLocaleMask('de'),
  au: regionLocaleMask('au'),
  us: regionLocaleMask('us'),
};

/** A locale mask limited to the profile's locales, never empty. */
export function regionMask(profile: SandboxProfile, mask: number): number {
  const { mask: allowed, primary } = PROFILE_LOCALES[profile];
  return mask & allowed || primary;
}

/**
 * Where the late fields of the live profiles begin, in id order (product index).
 * Tools that infer a schema from the first records meet them only after that.
 */
export const LATE_FIELDS = {
  /** The first float measure (kg, cm) after integer ones. */
  floatMeasure: 1_000,
  /** `replacement` on replaced products. */
  replacement: 1_200,
  /** The regional field each live profile has only from here on: be bcfiCategory, fr acl13, au snomedCtpp, us ndc (de has none late). */
  regional: 2_500,
} as const;

/**
 * The reference endpoints each profile serves beyond the spec's (the vendor's regional docs):
 * ATC categories where products carry ATC codes, OSP categories only in France. A profile
 * without one answers 404, as a regional service without the table does.
 */
export const REGIONAL_TABLES: Record<SandboxProfile, readonly string[]> = {
  spec: [],
  be: ['active-ingredients.query', 'product-families.query', 'atc-categories.query'],
  fr: ['active-ingredients.query', 'product-families.query', 'atc-categories.query', 'osp-categories.query'],
  de: ['active-ingredients.query', 'product-families.query', 'atc-categories.query'],
  au: ['active-ingredients.query', 'product-families.query', 'atc-categories.query'],
  us: ['active-ingredients.query', 'product-families.query'],
};
