// Generates the records about products rather than products themselves:
// corrections (feedback on a product) and news items (the updates endpoint).
// They are at most a few thousand, so they are built once as ready records.
// Facts that filters or sortings need but the spec shows no field for (a
// correction's creating organization and user, a news item's sort order) are
// kept beside the record.
import type { Correction, NewsItem } from '../catalog/index.js';
import { productIdOf } from './generate-products.js';
import type { ReferenceData } from './generate-reference.js';
import { rngFor } from './random.js';
import { GENERATION_EPOCH, SALT, timeBetween, updatedAfter } from './timeline.js';
import { PROFILE_LOCALES, type SandboxProfile } from './profiles.js';
import {
  CORRECTION_TEXTS,
  CORRECTION_TYPES,
  LIVE_CORRECTION_TYPES,
  LOCALES,
  NEWS_MEDIA_TYPES,
  TARGET_GROUPS,
  localized,
} from './vocabulary.js';

export interface CorrectionEntry {
  record: Correction;
  organization: number;
  createdBy: number;
}

export interface NewsEntry {
  record: NewsItem & { targetGroups: string[]; products?: string[]; brands?: number[]; publicCategories?: number[] };
  sortOrder: number;
}

const YEAR_2018 = 1_514_764_800;

export function activitySizes(productCount: number): { corrections: number; news: number } {
  return {
    corrections: Math.min(5000, Math.max(20, Math.round(productCount / 10))),
    news: Math.min(2000, Math.max(20, Math.round(productCount / 25))),
  };
}

export function generateCorrections(
  seed: number,
  createdAt: Uint32Array,
  ref: ReferenceData,
  profile: SandboxProfile = 'spec',
): CorrectionEntry[] {
  const live = profile !== 'spec';
  const localeMask = PROFILE_LOCALES[profile].mask;
  const rng = rngFor(seed, SALT.corrections, 0);
  const out: CorrectionEntry[] = [];
  const count = activitySizes(createdAt.length).corrections;
  for (let id = 1; id <= count; id++) {
    const product = rng.int(createdAt.length);
    const drawn = rng.int(LOCALES.length);
    // Live regions report corrections in their own locales only.
    const locale = localeMask & (1 << drawn) ? drawn : Math.log2(PROFILE_LOCALES[profile].primary);
    const created = timeBetween(rng, Math.max(YEAR_2018, createdAt[product]!), GENERATION_EPOCH - 1);
    out.push({
      record: {
        id,
        product: productIdOf(product),
        locale: LOCALES[locale]!,
        type: live ? rng.pick(LIVE_CORRECTION_TYPES) : rng.pick(CORRECTION_TYPES),
        text: CORRECTION_TEXTS[locale]!,
        // `handled` is in the spec's filter list only, yet live records carry it.
        status: (live
          ? rng.weighted([
              ['open', 25],
              ['in_progress', 15],
              ['handled', 20],
              ['solved', 25],
              ['closed', 15],
            ] as const)
          : rng.weighted([
              ['open', 30],
              ['in_progress', 20],
              ['solved', 35],
              ['closed', 15],
            ] as const)) as Correction['status'],
        meta: { createdAt: created, updatedAt: updatedAfter(rng, created) },
      },
      organization: rng.between(1, ref.organizations.length),
      createdBy: rng.between(1, 50),
    });
  }
  return out;
}

export function generateNews(seed: number, productCount: number, ref: ReferenceData): NewsEntry[] {
  const rng = rngFor(seed, SALT.news, 0);
  const out: NewsEntry[] = [];
  const count = activitySizes(productCount).news;
  for (let id = 1; id <= count; id++) {
    const type = rng.pick(['product', 'organization', 'public_category', 'brand'] as const);
    const mask = rng.chance(0.5) ? 0b1111 : rng.between(1, 15);
    const created = timeBetween(rng, YEAR_2018, GENERATION_EPOCH - 1);
    const organization = rng.between(1, ref.organizations.length);
    const orgName = ref.organizations[organization - 1]!.record.name;
    const headline = ['News from', 'Nieuws van', 'Nouvelles de', 'Neues von'] as const;
    const record: NewsEntry['record'] = {
      id,
      type,
      organization,
      title: localized(mask, (l) => `${headline[l]} ${orgName}`),
      content: Array.from({ length: rng.between(1, 2) }, (_, k) => ({
        shortDescription: localized(mask, (l) => `${headline[l]} ${orgName} (${k + 1})`),
        description: localized(
          mask,
          (l) =>
            `${headline[l]} ${orgName}: ${['new packaging', 'nieuwe verpakking', 'nouvel emballage', 'neue Verpackung'][l]} — ${id}.${k + 1}`,
        ),
        media: rng.chance(0.6)
          ? [{ url: `https://media.catalog-sandbox.test/news/${id}/${k + 1}`, type: rng.pick(NEWS_MEDIA_TYPES) }]
          : [],
      })),
      locales: Object.keys(localized(mask, () => '')),
      targetGroups: rng.subset(TARGET_GROUPS, 1, 2),
      meta: { createdAt: created, updatedAt: updatedAfter(rng, created) },
    };
    // Type-specific fields (the spec says they exist without showing them).
    if (type === 'product')
      record.products = Array.from({ length: rng.between(1, 3) }, () => productIdOf(rng.int(productCount)));
    if (type === 'brand') record.brands = [rng.between(1, ref.brands.length)];
    if (type === 'public_category') record.publicCategories = [rng.pick(ref.publicCategories).id];
    out.push({ record, sortOrder: rng.int(1000) });
  }
  return out;
}
