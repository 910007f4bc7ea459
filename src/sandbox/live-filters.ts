// The filters of the live service that the spec does not show (docs/live-service.md,
// F1-F3), as the live profiles (au, be, de, fr, us) serve them; the `spec` profile refuses them
// as it did before they were known, and the live profiles refuse the spec's guessed `kind` and
// the filters their region does not document (catalog/regions.ts: `ecommerce` outside be and
// fr, another region's national codes), as each regional service does.
//
// Where a record states the value, the filter reads it (media type, locales, target groups,
// national codes, apbCategory, names, photos, descriptions). Where the live service's records
// state nothing the sandbox serves, the value is a fact of the dataset, documented here and
// exported for tests, as `vatNr` is for organizations:
// - media `published` and `available`: every tenth media item is unpublished, every seventh
//   unavailable (by media id);
// - media `organization`: the organization of the product the media item belongs to
//   (`organization1` of its owner);
// - media `linkType`: links only, by media id over app, brochure, video, website;
// - product `prescription`: medicines (hsCode 300...), `ecommerce`: `no` for those, else
//   `unknown` for every fifth product (by index), `yes` for the rest;
// - organization `apbNr` (6 digits) and `rizivNr` (11 digits): Belgian pharmacies
//   (medical_professional organizations) of the `be` profile only.
import {
  type EndpointSpec,
  type FilterIssue,
  LINK_TYPES,
  LIVE_MEDIA_FILTERS,
  LIVE_ORGANIZATION_FILTERS,
  LIVE_PRODUCT_FILTERS,
  REGIONAL_FILTERS,
  isRegion,
} from '../catalog/index.js';
import { closestName } from '../closest-name.js';
import type { Dataset } from './dataset.js';
import { listOf, stringSet, timestampPredicate } from './filter-values.js';
import { KIND_LINK, MEDIA_KINDS, linkTypeOf, mediaInfo, mediaTargetGroups } from './generate-media.js';
import type { ProductFacts } from './generate-products.js';
import type { OrganizationEntry } from './generate-reference.js';
import type { SandboxProfile } from './profiles.js';
import { FilterValueError, type Path, type Predicate } from './query-engine.js';
import { localeBit } from './vocabulary.js';

/** The hasContent flags the live service is asked for (F1): a name, media, descriptions in the locale. */
export const LIVE_CONTENT_FLAGS = ['name', 'media', 'descriptions'] as const;

const LIVE_ONLY: Record<string, readonly string[]> = {
  product: LIVE_PRODUCT_FILTERS,
  media: LIVE_MEDIA_FILTERS,
  organization: LIVE_ORGANIZATION_FILTERS,
};

/**
 * Filter names the profile's service would not know: under `spec` the live service's own filters,
 * under a live profile the spec's guessed `kind` (the live media filter is `type`).
 */
export function profileFilterIssues(profile: SandboxProfile, spec: EndpointSpec, filter: unknown): FilterIssue[] {
  const refused = new Set(
    profile === 'spec'
      ? (LIVE_ONLY[spec.resource] ?? [])
      : [...Object.keys(spec.filterAliases ?? {}), ...foreignFilters(profile, spec.resource)],
  );
  if (refused.size === 0) return [];
  const known = Object.keys(spec.filters).filter((n) => !refused.has(n));
  const issues: FilterIssue[] = [];
  const walk = (f: unknown, path: Path): void => {
    if (!f || typeof f !== 'object' || Array.isArray(f)) return;
    for (const [key, value] of Object.entries(f)) {
      if ((key === 'and' || key === 'or') && Array.isArray(value)) value.forEach((g, i) => walk(g, [...path, key, i]));
      else if (key === 'not') walk(value, [...path, key]);
      else if (refused.has(key)) {
        const hint = spec.filterAliases?.[key] ?? closestName(key, known);
        issues.push({
          path: [...path, key],
          message: `unknown filter "${key}"; ${hint ? `did you mean "${hint}"? ` : ''}this endpoint's filters are: ${known.join(', ')}`,
        });
      }
    }
  };
  walk(filter, ['filter']);
  return issues;
}

/** The filters of `resource` that the region of a live profile does not document. */
function foreignFilters(profile: SandboxProfile, resource: string): string[] {
  if (!isRegion(profile)) return [];
  return Object.entries(REGIONAL_FILTERS[resource] ?? {})
    .filter(([, regions]) => !regions.includes(profile))
    .map(([name]) => name);
}

const SEVENTH = 7;
const TENTH = 10;

/** Whether media item `m` (0-based) is published. */
export const mediaPublished = (m: number): boolean => (m + 1) % TENTH !== 0;
/** Whether media item `m` is available. */
export const mediaAvailable = (m: number): boolean => (m + 1) % SEVENTH !== 0;
/** The link type of media item `m`, undefined when it is not a link. */
export function mediaLinkType(ds: Dataset, m: number): (typeof LINK_TYPES)[number] | undefined {
  return mediaInfo.kind(ds.mediaInfo[m]!) === KIND_LINK ? linkTypeOf(m) : undefined;
}

/** A predicate for a media filter of the live service, or undefined when `name` is not one. */
export function liveMediaLeaf(ds: Dataset, name: string, value: unknown): Predicate | undefined {
  switch (name) {
    case 'type':
    case 'kind': {
      const set = stringSet(value);
      return (m) => set.has(MEDIA_KINDS[mediaInfo.kind(ds.mediaInfo[m]!)]!);
    }
    case 'published':
      return (m) => mediaPublished(m) === value;
    case 'available':
      return (m) => (mediaAvailable(m) && !ds.expiredMedia.has(m)) === value;
    case 'organization': {
      const set = new Set(listOf(value).map(Number));
      return (m) => set.has(ds.organization1[ds.mediaOwner(m)]!);
    }
    case 'targetGroup': {
      const set = stringSet(value);
      return (m) => (mediaTargetGroups(ds.seed, m, ds.mediaInfo[m]!) ?? []).some((g) => set.has(g));
    }
    case 'linkType': {
      const set = stringSet(value);
      return (m) => {
        const t = mediaLinkType(ds, m);
        return t !== undefined && set.has(t);
      };
    }
    case 'locale': {
      const mask = localeMask(value);
      return (m) => (ds.mediaLocales[m]! & mask) !== 0;
    }
    case 'touchedAt':
      return timestampPredicate(value, 'since', (m) => ds.mediaUpdatedAt[m]!);
    default:
      return undefined;
  }
}

/** Whether product facts `f` are those of a prescription medicine. */
export const productPrescription = (f: ProductFacts): boolean => String(f.hsCode).startsWith('300');
/** The product's e-commerce status (yes, no, unknown). */
export function productEcommerce(f: ProductFacts, index: number): 'yes' | 'no' | 'unknown' {
  if (productPrescription(f)) return 'no';
  return index % 5 === 4 ? 'unknown' : 'yes';
}

/** A national code of a filter as the service compares it: the zero-padded digit string. */
const padded = (value: unknown, digits: number) => new Set(listOf(value).map((v) => String(v).padStart(digits, '0')));

/**
 * A predicate for a product filter of the live service, or undefined when `name` is not one.
 * `photos`: whether product i has a photo suited to the locales of a mask.
 */
export function liveProductLeaf(
  ds: Dataset,
  facts: (i: number) => ProductFacts,
  hasPhoto: (i: number, mask: number) => boolean,
  name: string,
  value: unknown,
  path: Path,
): Predicate | undefined {
  const live = (i: number) => facts(i).live;
  switch (name) {
    case 'cnk': {
      const set = padded(value, 7);
      return (i) => set.has(live(i)?.cnk ?? '');
    }
    case 'cip13':
    case 'acl13': {
      const set = padded(value, 13);
      return (i) => set.has(live(i)?.[name] ?? '');
    }
    case 'pzn': {
      const set = padded(value, 8);
      return (i) => set.has(live(i)?.pzn ?? '');
    }
    case 'cipOrAcl7': {
      // The live service matches the digits as a prefix of the 13-digit codes too, so a 7-digit
      // search also returns products whose cip13 or acl13 merely starts with them (F1).
      const wanted = [...padded(value, 7)];
      return (i) => {
        const l = live(i);
        if (!l) return false;
        return wanted.some(
          (w) => l.cipOrAcl7 === w || l.cip13?.startsWith(w) === true || l.acl13?.startsWith(w) === true,
        );
      };
    }
    case 'media': {
      const set = new Set<number>();
      for (const id of listOf(value).map(Number)) {
        if (Number.isSafeInteger(id) && id >= 1 && id <= ds.mediaCount)
          for (const p of ds.mediaProductIndexes(id - 1)) set.add(p);
      }
      return (i) => set.has(i);
    }
    case 'ecommerce': {
      const set = stringSet(value);
      return (i) => set.has(productEcommerce(facts(i), i));
    }
    case 'prescription':
      return (i) => productPrescription(facts(i)) === value;
    case 'apbCategory': {
      const set = stringSet(value);
      return (i) => set.has(live(i)?.apbCategory ?? '');
    }
    case 'locale': {
      const mask = localeMask(value);
      return (i) => (ds.nameLocales[i]! & mask) !== 0;
    }
    case 'hasContent': {
      const { flag, locale } = value as { flag: string; locale: string };
      const bit = localeBit(locale);
      switch (flag) {
        case 'name':
          return (i) => (ds.nameLocales[i]! & bit) !== 0;
        case 'descriptions':
          return (i) => (ds.descriptionLocales[i]! & bit) !== 0;
        case 'media':
          return (i) => bit !== 0 && hasPhoto(i, bit);
        default:
          throw new FilterValueError(
            [...path, 'flag'],
            `"${flag}" is not allowed; allowed: ${LIVE_CONTENT_FLAGS.join(', ')}`,
          );
      }
    }
    default:
      return undefined;
  }
}

/** The Belgian pharmacy numbers of an organization (be profile, medical professionals only). */
export function organizationNumbers(
  profile: SandboxProfile,
  entry: OrganizationEntry,
): { apbNr: string; rizivNr: string } | undefined {
  if (profile !== 'be' || entry.record.type !== 'medical_professional') return undefined;
  const id = entry.record.id;
  return {
    apbNr: String(100_000 + ((id * 7_919) % 900_000)),
    rizivNr: `${String(2_000_000 + ((id * 104_729) % 7_000_000)).padStart(8, '0')}${String(id % 1000).padStart(3, '0')}`,
  };
}

/** A test for the organization filters apbNr and rizivNr (integers or digit strings). */
export function organizationNumberFilter(
  profile: SandboxProfile,
  name: 'apbNr' | 'rizivNr',
): (value: unknown) => (entry: OrganizationEntry) => boolean {
  return (value) => {
    const set = new Set(listOf(value).map((v) => String(v).replace(/^0+(?=\d)/, '')));
    return (e) => {
      const n = organizationNumbers(profile, e)?.[name];
      return n !== undefined && set.has(n.replace(/^0+(?=\d)/, ''));
    };
  };
}

function localeMask(value: unknown): number {
  let mask = 0;
  for (const l of listOf(value)) mask |= localeBit(String(l));
  return mask;
}
