// Random product records for property tests, from a seeded RNG: `spec` records have the documented
// shapes (codes as integers, localized names, integer measures); `au`, `be`, `fr` records have the
// shapes the live service sends (issue 11, fixtures/live): codes as digit strings (sometimes
// integers) with leading zeros, plain-string brand and organization names, float measures, null
// or empty contact fields, conservation per scale, each region's locales and sparse regional
// fields, frontals with the extra format keys, descriptions with descriptionTag.
export type Profile = 'spec' | 'au' | 'be' | 'fr';
export const PROFILES: readonly Profile[] = ['spec', 'au', 'be', 'fr'];

export const PROFILE_LOCALES: Record<Profile, readonly string[]> = {
  spec: ['en', 'nl', 'fr', 'de'],
  au: ['en'],
  be: ['nl', 'fr', 'en', 'de'],
  fr: ['fr', 'en'],
};

/** mulberry32: a small seeded generator, the same sequence for the same seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Rng {
  constructor(readonly next: () => number) {}
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.next() * list.length)]!;
  }
  subset<T>(list: readonly T[], min = 1): T[] {
    const out = list.filter(() => this.chance(0.5));
    return out.length >= min ? out : list.slice(0, min);
  }
  digits(n: number): string {
    let s = '';
    for (let i = 0; i < n; i++) s += String(this.int(0, 9));
    return s;
  }
  word(): string {
    return (
      this.pick(['Vita', 'Derma', 'Lumbar', 'Thermo', 'Calm', 'Zinc', 'Flex', 'Aqua', 'Nova', 'Café', 'Crème', 'Δ8']) +
      this.pick(['', ' Plus', ' Forte', ' 500 mg', ' — 50 ml', ' XXL'])
    );
  }
}

const TARGET_GROUPS = ['public', 'pharmacist', 'doctor', 'homecare', 'hospital', 'nurse', 'physiotherapist', 'webshop'];
const SIDES = ['front', 'left', 'right', 'back', 'bottom', 'top'];
const DESCRIPTION_TYPES = [
  'full_description',
  'faq',
  'usage',
  'composition',
  'legal_text',
  'warnings',
  'pregnancy_description_extended',
  'keywords',
];

function localized(r: Rng, locales: readonly string[], text: () => string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const l of r.subset(locales)) out[l] = `${text()} (${l})`;
  return out;
}

/** A code of `n` digits, often with leading zeros; live profiles send most as strings. */
function code(r: Rng, n: number, live: boolean): string | number {
  const s = (r.chance(0.3) ? '00' : '') + r.digits(n);
  const digits = s.slice(0, n);
  return live && r.chance(0.8) ? digits : Number(digits);
}

function formats(r: Rng, base: string, keys: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of r.subset(keys))
    out[k] = `https://assets.example/${base}/${k}.${k.endsWith('Webp') ? 'webp' : k.endsWith('Png') ? 'png' : 'jpg'}`;
  return out;
}

/** One random product of `profile`, with id `X<index>` (ids ascend with index). */
export function randomProduct(next: () => number, profile: Profile, index: number): Record<string, unknown> {
  const r = new Rng(next);
  const live = profile !== 'spec';
  const locales = PROFILE_LOCALES[profile];
  const meta = { createdAt: 1_600_000_000 + index, updatedAt: 1_700_000_000 + index };
  const name = (): string | Record<string, string> =>
    live && r.chance(0.7) ? r.word() : localized(r, locales, () => r.word());
  const p: Record<string, unknown> = {
    id: `X${String(index).padStart(9, '0')}`,
    status: r.pick(['active', 'active', 'inactive', 'no_selection']),
    name: localized(r, locales, () => r.word()),
    requiresLegalText: r.chance(0.2),
    ean: Array.from({ length: r.int(0, 2) }, () => code(r, r.pick([12, 13]), live)),
    eanGtin13: code(r, 13, live),
    vat: live ? r.pick([0, 6, 10, 21]) : r.pick([0, 5.5, 21]),
    publicPrice: r.int(100, 99_999),
    weightWithUnit: live
      ? { value: r.int(1, 5000) / 100, unit: r.pick(['kg', 'g']) }
      : { value: r.int(1, 5000), unit: 'g' },
    widthWithUnit: live
      ? { value: r.int(1, 300) / 10, unit: r.pick(['cm', 'mm']) }
      : { value: r.int(1, 300), unit: 'mm' },
    publicCategories: [
      {
        id: r.int(1, 500),
        name: localized(r, locales, () => r.word()),
        parent: r.chance(0.5) ? null : r.int(1, 500),
        ...(live ? { order: r.int(1, 20) } : {}),
      },
    ],
    brands: [{ id: r.int(1, 900), name: name() }],
    organizations: Array.from({ length: r.int(1, 2) }, () => ({
      id: r.int(1, 900),
      name: name(),
      type: r.pick(['supplier', 'marketing']),
      contactInformation: live
        ? {
            address: r.pick([null, '', '1 Example St']),
            city: r.pick([null, '', 'Gent']),
            country: r.pick([null, 'BE', 'AU']),
            url: r.pick([null, 'https://x.example/']),
          }
        : { address: '1 Example St', city: 'Gent', country: 'BE' },
    })),
    photos: Array.from({ length: r.int(0, 2) }, (_, k) => ({
      ...(live ? { id: r.int(1, 1e6) } : { displayOrder: k + 1, locales: r.subset(locales), targetGroups: ['public'] }),
      photoType: r.pick(['packshot', 'lifestyle_image']),
      formats: formats(r, `p${index}-${k}`, [
        'thumbnail',
        'medium',
        'large',
        'huge',
        'thumbnailWebp',
        'mediumWebp',
        'largeWebp',
        'hugeWebp',
      ]),
      ...(r.chance(0.5) ? { visibleSides: r.subset(SIDES) } : {}),
    })),
    frontals: Array.from({ length: r.int(0, 1) }, () => ({
      ...(live
        ? { id: r.int(1, 1e6), type: 'frontal', targetGroups: r.subset(TARGET_GROUPS), locales: r.subset(locales) }
        : {}),
      photoType: 'packshot',
      displayOrder: 1,
      formats: formats(
        r,
        `f${index}`,
        live
          ? ['thumbnail', 'medium', 'mediumJpeg', 'large', 'largePng', 'largeJpg', 'huge', 'hugePng', 'largeWebp']
          : ['thumbnail', 'mediumJpeg', 'largeJpg', 'largeWebp', 'hugeWebp'],
      ),
    })),
    descriptions: Array.from({ length: r.int(0, 2) }, (_, k) => ({
      id: index * 10 + k,
      type: live ? r.pick(DESCRIPTION_TYPES) : 'usage',
      ...(live ? { descriptionTag: r.pick(['user_generated', 'system_generated']) } : {}),
      locales: r.subset(locales),
      targetGroups: r.subset(TARGET_GROUPS),
      content: localized(r, locales, () => `Text ${r.word()}`),
    })),
    meta,
  };
  if (live) {
    p.conservationLabel = localized(r, locales, () => 'Room temperature');
    p.conservationMin = { celsius: { value: r.int(2, 15), unit: '°C' } };
    p.conservationMax = {
      celsius: { value: r.int(20, 30), unit: '°C' },
      ...(r.chance(0.3) ? { fahrenheit: { value: 77, unit: '°F' } } : {}),
    };
    if (r.chance(0.3)) p.eanGtin12 = code(r, 12, live);
  }
  // sparse regional fields: on few products
  if (profile === 'be') {
    p.cnk = code(r, 7, live);
    if (r.chance(0.2))
      p.bcfiCategory = {
        id: `0000${r.digits(5)}`,
        name: localized(r, locales, () => 'Categorie'),
        parent: null,
        order: r.int(1, 9),
      };
  }
  if (profile === 'fr') {
    p.cipOrAcl7 = code(r, 7, live);
    if (r.chance(0.5)) p.cip13 = `3400${r.digits(9)}`;
    else p.acl13 = `3401${r.digits(9)}`;
  }
  if (profile === 'au') {
    p.artgId = r.digits(6);
    p.gstApplicable = r.chance(0.5);
    if (r.chance(0.2)) p.snomedMpp = `${r.int(1, 9)}${r.digits(16)}`;
    if (r.chance(0.2)) p.scheduleCode = r.pick(['S2', 'S3', 'NS']);
  }
  return p;
}

/** `count` random products of a profile from `seed`. */
export function randomProducts(seed: number, profile: Profile, count: number): Array<Record<string, unknown>> {
  const next = seededRandom(seed);
  return Array.from({ length: count }, (_, i) => randomProduct(next, profile, i));
}
