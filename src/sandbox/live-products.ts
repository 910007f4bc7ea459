// Product records in the shapes the live service sends (profiles au, be, de, fr, us;
// see profiles.ts and issue 11). Same facts as the spec profile where the
// shapes agree, so filters and sortings read the same columns; what differs is
// written here: codes as digit strings with their leading zeros, plain-string
// brand and organization names, kg/cm floats, contact data with nulls and "",
// conservation ranges as {celsius: {value, unit}}, integer VAT percentages,
// photos with ids and missing optional fields, frontals with extra format keys,
// descriptions with descriptionTag, and each region's codes and locales. Issue
// 24 adds: hsCode with its leading zero as a string or as the integer that lost
// it, the deprecated `weight` as a decimal, replaced products with their codes
// nulled, bare brand ids, eanGtin13/14 as lists, GTIN-14s shared by two
// products, and the US service's upc10/11/12, padded gtin and subdivision regions.
import type { ReferenceData } from './generate-reference.js';
import { type MediaSource, liveProductFrontalJson, liveProductPhotoJson } from './generate-media.js';
import {
  PRODUCT_STATUSES,
  type ProductFacts,
  type ProductSource,
  leafletsJson,
  notApplicableFields,
  productIdOf,
  productName,
  productSlug,
} from './generate-products.js';
import { type JsonFragments, localeListJson, localizedJson, q } from './json-fragments.js';
import { BCFI_CATEGORIES, type LiveFacts, VAT_RATES } from './live-facts.js';
import { PROFILE_LOCALES, type SandboxProfile } from './profiles.js';
import { type Rng, rngFor } from './random.js';
import { SALT } from './timeline.js';
import {
  CITIES,
  CONSERVATION_RANGES,
  DESCRIPTION_TAGS,
  DOSAGE_FORMS,
  LIVE_CONSERVATION_LABELS,
  LIVE_DESCRIPTION_TYPES,
  LIVE_TARGET_GROUPS,
  LOCALES,
  words,
} from './vocabulary.js';

export type LiveProfile = Exclude<SandboxProfile, 'spec'>;

/** What live-shaped product records are drawn from (Dataset implements it; see ProductSource). */
export interface LiveProductSource extends ProductSource, MediaSource {
  readonly profile: SandboxProfile;
  readonly liveFragments: LiveFragments | undefined;
}

/** Keeps only the locales in `mask` of every localized object (all keys locale codes, string values). */
export function restrictLocales(value: unknown, mask: number): unknown {
  if (Array.isArray(value)) return value.map((v) => restrictLocales(v, mask));
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value as Record<string, unknown>);
  const localized =
    entries.length > 0 &&
    entries.every(([k, v]) => (LOCALES as readonly string[]).includes(k) && typeof v === 'string');
  if (localized) {
    const kept = entries.filter(([k]) => mask & (1 << (LOCALES as readonly string[]).indexOf(k)));
    return Object.fromEntries(kept.length ? kept : entries.slice(0, 1));
  }
  return Object.fromEntries(entries.map(([k, v]) => [k, restrictLocales(v, mask)]));
}

/** The reference objects live product records embed, as JSON text, built once per dataset. */
export class LiveFragments {
  readonly brand: string[];
  readonly organization: string[];
  /** Media records' organizations, names limited to the region's locales. */
  readonly photoOrganizations: string[];
  readonly publicCategory: string[];
  readonly catalogCategory: Map<string, string>;
  readonly family: string[];
  readonly ingredient: string[];
  readonly species: Map<string, string>;
  readonly dietary: Map<string, string>;
  readonly color: Map<string, string>;
  readonly bcfiCategory: string[];
  readonly conservationLabel: Map<string, string>;

  constructor(ref: ReferenceData, base: JsonFragments, seed: number, profile: LiveProfile) {
    const mask = PROFILE_LOCALES[profile].mask;
    const restrict = (json: string) => JSON.stringify(restrictLocales(JSON.parse(json), mask));
    const restrictMap = (m: Map<string, string>) => new Map([...m].map(([k, v]) => [k, restrict(v)]));
    this.brand = ref.brands.map((b) => JSON.stringify({ id: b.record.id, name: b.record.name }));
    this.organization = ref.organizations.map((o) => {
      const rng = rngFor(seed, SALT.liveReference, o.record.id);
      const info = o.record.contactInformation;
      // Missing contact data comes as null or "", never as an absent key.
      const blank = () => (rng.chance(0.6) ? null : '');
      const field = (v: string | null | undefined) => (v === undefined || v === null || rng.chance(0.2) ? blank() : v);
      const contactInformation: Record<string, string | null> = {
        address: field(info?.address),
        city: field(info?.city),
        country: field(info?.country ?? (rng.chance(0.5) ? rng.pick(CITIES).country : undefined)),
        url: field(info?.url),
      };
      // The AU and US services send the region as an ISO 3166-2 code (`AU-NSW`, `US-CA`).
      if (profile === 'us' && info) {
        const place = US_PLACES[o.record.id % US_PLACES.length]!;
        Object.assign(contactInformation, { city: place.city, region: place.region, country: 'US' });
      } else if (profile === 'de' && info) {
        // The DE service's regions are ISO 3166-2 codes too (DE-BY; /work/shared/samples/live-facts-3.md item 10).
        const place = DE_PLACES[o.record.id % DE_PLACES.length]!;
        Object.assign(contactInformation, { city: place.city, region: place.region, country: 'DE' });
      } else if (profile === 'au' && info) contactInformation.region = info.region?.value ?? null;
      return JSON.stringify({ id: o.record.id, name: o.record.name, type: o.record.type, contactInformation });
    });
    this.photoOrganizations = base.photoOrganizations.map(restrict);
    const siblings = new Map<number | null, number>();
    this.publicCategory = ref.publicCategories.map((c) => {
      const order = (siblings.get(c.parent) ?? 0) + 1;
      siblings.set(c.parent, order);
      return JSON.stringify({ id: c.id, name: restrictLocales(c.name, mask), parent: c.parent, order });
    });
    this.catalogCategory = restrictMap(base.catalogCategory);
    this.family = base.family.map(restrict);
    this.ingredient = base.ingredient.map(restrict);
    this.species = restrictMap(base.species);
    this.dietary = restrictMap(base.dietary);
    this.color = restrictMap(base.color);
    this.bcfiCategory = Array.from({ length: BCFI_CATEGORIES }, (_, k) =>
      JSON.stringify({
        id: String(k + 1).padStart(9, '0'),
        name: words([`Category ${k + 1}`, `Categorie ${k + 1}`, `Catégorie ${k + 1}`, `Kategorie ${k + 1}`], mask),
        parent: k < 8 ? null : String((k % 8) + 1).padStart(9, '0'),
        order: k < 8 ? k + 1 : Math.floor(k / 8),
      }),
    );
    this.conservationLabel = new Map(
      Object.entries(LIVE_CONSERVATION_LABELS).map(([k, w]) => [k, JSON.stringify(words(w, mask))]),
    );
  }
}

/** Where the US profile's suppliers are (their embedded contact information). */
const US_PLACES = [
  { city: 'Austin', region: 'US-TX' },
  { city: 'San Diego', region: 'US-CA' },
  { city: 'Newark', region: 'US-NJ' },
  { city: 'Chicago', region: 'US-IL' },
] as const;

/** Where the DE profile's suppliers are. */
const DE_PLACES = [
  { city: 'München', region: 'DE-BY' },
  { city: 'Hamburg', region: 'DE-HH' },
  { city: 'Köln', region: 'DE-NW' },
  { city: 'Berlin', region: 'DE-BE' },
] as const;

const join = (items: readonly string[]): string => `[${items.join(',')}]`;
const text = (key: string, value: string | undefined): string => (value === undefined ? '' : `,"${key}":${q(value)}`);
const code = (key: string, value: number | undefined, width: number): string =>
  value === undefined ? '' : `,"${key}":"${String(value).padStart(width, '0')}"`;
const measure = (key: string, value: number, unit: string) => `,"${key}WithUnit":{"value":${value},"unit":"${unit}"}`;
const fahrenheit = (c: number) => Math.round(((c * 9) / 5 + 32) * 10) / 10;

function conservationJson(c: number, withFahrenheit: boolean): string {
  return `{"celsius":{"value":${c},"unit":"°C"}${withFahrenheit ? `,"fahrenheit":{"value":${fahrenheit(c)},"unit":"°F"}` : ''}}`;
}

/** `ean[]` as digit strings: EAN-13s padded to 13, and the UPC beside its zero-padded EAN-13 form. */
function eansJson(f: ProductFacts): string {
  const out: string[] = [];
  const upc = f.live!.upcInEan ? f.eanGtin12 : undefined;
  for (const e of f.ean) if (e !== upc) out.push(`"${String(e).padStart(13, '0')}"`);
  if (upc !== undefined) out.push(`"${String(upc).padStart(12, '0')}"`, `"${String(upc).padStart(13, '0')}"`);
  return join(out);
}

/**
 * The GTIN fields: digit strings with their zeros; null on a replaced product whose codes were
 * nulled; eanGtin13/14 as lists for one client (its other EAN beside the EAN-13); the US
 * service's upc12/11/10 and gtin padded to 14.
 */
function codesJson(f: ProductFacts, profile: LiveProfile): string {
  const live = f.live!;
  const us = profile === 'us';
  if (live.codesNulled) {
    const nulled = [
      'eanGtin8',
      'eanGtin12',
      'eanGtin13',
      'eanGtin14',
      ...(us ? ['gtin', 'upc12', 'upc11', 'upc10'] : []),
    ];
    return nulled.map((k) => `,"${k}":null`).join('');
  }
  let s = code('eanGtin8', f.eanGtin8, 8) + code('eanGtin12', f.eanGtin12, 12);
  if (live.second.codeLists && f.eanGtin13 !== undefined) {
    const other = f.ean.find((e) => e !== f.eanGtin13 && e !== f.eanGtin12);
    const list = [f.eanGtin13, ...(other === undefined ? [] : [other])];
    s += `,"eanGtin13":[${list.map((e) => `"${String(e).padStart(13, '0')}"`).join(',')}]`;
    s += f.eanGtin14 === undefined ? '' : `,"eanGtin14":["${String(f.eanGtin14).padStart(14, '0')}"]`;
  } else s += code('eanGtin13', f.eanGtin13, 13) + code('eanGtin14', f.eanGtin14, 14);
  if (us) {
    s += code('gtin', f.eanGtin14 ?? f.eanGtin12, 14);
    if (f.eanGtin12 !== undefined) {
      // UPC-A, then without its check digit (11), then without its number system digit (10)
      const upc12 = String(f.eanGtin12).padStart(12, '0');
      s += `,"upc12":"${upc12}","upc11":"${upc12.slice(0, 11)}","upc10":"${upc12.slice(1, 11)}"`;
    }
  }
  return s;
}

function descriptionsJson(
  ds: LiveProductSource,
  index: number,
  f: ProductFacts,
  createdAt: number,
  count: number,
): string {
  if (!f.descriptionMask) return '[]';
  const ing = ds.ref.ingredients[f.ingredient]!.words;
  const live = f.live!;
  const locales = localeListJson(f.descriptionMask);
  const out: string[] = [];
  for (let k = 0; k < count; k++) {
    const type = LIVE_DESCRIPTION_TYPES[live.descriptionTypes[k]!]!;
    const content = localizedJson(
      f.descriptionMask,
      (l) => `${type.replaceAll('_', ' ')}: ${ing.name[l]} ${f.strength} ${ing.unit}.`,
    );
    const groups =
      k === 0 ? '["public"]' : JSON.stringify([LIVE_TARGET_GROUPS[(index + k) % LIVE_TARGET_GROUPS.length]]);
    out.push(
      `{"id":${index * 4 + k + 1},"type":"${type}","descriptionTag":"${DESCRIPTION_TAGS[live.descriptionTags[k]!]}","locales":${locales}` +
        `,"targetGroups":${groups},"content":${content},"meta":{"createdAt":${createdAt},"updatedAt":${createdAt + k * 3600}}}`,
    );
  }
  return join(out);
}

/** The product record in the live shapes of the dataset's profile, as JSON text (fixed field order). */
export function liveProductJson(ds: LiveProductSource, index: number): string {
  const f = ds.productFacts(index);
  const profile = ds.profile as LiveProfile;
  const fr = ds.liveFragments!;
  // Drawn first, in this order, whatever the profile prints of them.
  const numbers = drawRecordNumbers(rngFor(ds.seed, SALT.productRecord, index));
  const id = productIdOf(index);
  const createdAt = ds.createdAt[index]!;
  const updatedAt = ds.updatedAt[index]!;
  const media = ds.productMedia(index);
  const enName = f.nameMask & 1 ? 0 : Math.log2(f.nameMask & -f.nameMask);
  let s = identityJson(ds, index, f, profile);
  s += storageAndPriceJson(ds, index, f, profile, numbers);
  s += relationsJson(ds, f, fr);
  s += `,"photos":${join(media.photos.map((m, k) => liveProductPhotoJson(ds, m, k + 1)))}`;
  s += `,"frontals":${join(media.frontals.map((m, k) => liveProductFrontalJson(ds, m, k + 1)))}`;
  s += `,"links":${join(media.links.map((m) => ds.mediaJson(m)))}`;
  s += `,"descriptions":${descriptionsJson(ds, index, f, createdAt, numbers.descriptionCount)}`;
  s += `,"leaflets":${leafletsJson(id, index, f.leafletMask, createdAt, updatedAt)}`;
  s += `,"meta":{"createdAt":${createdAt},"updatedAt":${updatedAt}}`;
  s += `,"embedUrl":"https://embed.catalog-sandbox.test/products/${id}?signature=${Math.imul(index + 1, 2654435761) >>> 0}"`;
  s += `,"publicPageUrl":"https://www.catalog-sandbox.test/p/${id}/${productSlug(ds, f, enName)}"}`;
  return s;
}

/** The record's own random numbers: measures (g, mm), pharmacist price, how many descriptions. */
interface RecordNumbers {
  weight: number;
  width: number;
  length: number;
  depth: number;
  pharmacistPrice: number;
  descriptionCount: number;
}

function drawRecordNumbers(rng: Rng): RecordNumbers {
  const weight = rng.between(10, 900);
  const width = rng.between(20, 200);
  const length = rng.between(20, 200);
  const depth = rng.between(10, 80);
  const pharmacistPrice = rng.between(150, 15000);
  const descriptionCount = rng.chance(0.3) ? 2 : 1;
  return { weight, width, length, depth, pharmacistPrice, descriptionCount };
}

/** From the opening brace to the region's own codes: id, status, names, flags and every code. */
function identityJson(ds: LiveProductSource, index: number, f: ProductFacts, profile: LiveProfile): string {
  const live = f.live!;
  const second = live.second;
  let s = `{"id":"${productIdOf(index)}","status":"${PRODUCT_STATUSES[f.status]}"`;
  if (f.replacement >= 0) s += `,"replacement":"${productIdOf(f.replacement)}"`;
  s += `,"name":${localizedJson(f.nameMask, (l) => productName(ds, f, l))}`;
  s += `,"seoName":${localizedJson(f.nameMask, (l) => productSlug(ds, f, l))}`;
  s += `,"requiresLegalText":${f.requiresLegalText},"isANutritionSupplement":${f.nutritionSupplement},"biocide":"${f.biocide}"`;
  if (profile === 'au') {
    s += `,"scheduleCode":"${f.scheduleCode!}","artgCategory":"${f.artgCategory!}","artgId":"${f.artgId!}"`;
    s += `,"gstApplicable":${live.gstApplicable!}` + text('pbs', f.pbs) + text('fred', f.fred) + text('zCode', f.zCode);
    s += text('snomedMpp', live.snomedMpp) + text('snomedTpp', live.snomedTpp) + text('snomedCtpp', live.snomedCtpp);
  }
  s += `,"officialDeletionAt":${ds.officialDeletionAt[index]! || null},"ean":${eansJson(f)}`;
  s += codesJson(f, profile);
  const hs = second.hsAsString ? `"${String(f.hsCode).padStart(6, '0')}"` : String(f.hsCode);
  s += `,"supplierReference":"${f.brand}${String(index + 1).padStart(4, '0')}","hsCode":${hs}`;
  if (profile === 'us') {
    s += text('ndc', second.ndc) + text('isbn10', second.isbn10) + text('isbn13', second.isbn13);
  }
  s += text('routeOfAdministration', second.routeOfAdministration);
  return s + regionalCodesJson(live, profile, ds.liveFragments!);
}

/** The codes only one region's service sends: be's CNK and categories, fr's CIP/ACL, de's PZN. */
function regionalCodesJson(live: LiveFacts, profile: LiveProfile, fr: LiveFragments): string {
  if (profile === 'be') {
    return (
      text('cnk', live.cnk) +
      (live.bcfi ? `,"bcfiCategory":${fr.bcfiCategory[live.bcfi - 1]!}` : '') +
      text('apbCategory', live.apbCategory)
    );
  }
  if (profile === 'fr')
    return text('cipOrAcl7', live.cipOrAcl7) + text('cip13', live.cip13) + text('acl13', live.acl13);
  if (profile === 'de') return text('pzn', live.pzn);
  return '';
}

/** Conservation, VAT and prices, measures and packaging. */
function storageAndPriceJson(
  ds: LiveProductSource,
  index: number,
  f: ProductFacts,
  profile: LiveProfile,
  n: RecordNumbers,
): string {
  const live = f.live!;
  const fr = ds.liveFragments!;
  const form = DOSAGE_FORMS[f.form]!;
  const vat = VAT_RATES[profile][live.vat]!;
  // Prices are integers in minor units; a touch raises the public price so an incremental extract sees a change.
  const publicPrice = Math.round(n.pharmacistPrice * 1.45 * (1 + vat / 100)) + ds.revisionOf(index) * 10;
  const cold = f.conservation !== 'room';
  const [lo, hi] = CONSERVATION_RANGES[f.conservation]!;
  let s = `,"conservationLabel":${fr.conservationLabel.get(f.conservation)!},"conservation":"${f.conservation}"`;
  if (cold || live.conservationRange) {
    s += `,"conservationMin":${conservationJson(lo, live.fahrenheit)},"conservationMax":${conservationJson(hi, live.fahrenheit)}`;
  }
  s += `,"vat":${vat},"publicPrice":${publicPrice}`;
  if (profile === 'be') s += `,"pharmacistPrice":${n.pharmacistPrice}`;
  if (live.second.weight !== undefined) s += `,"weight":${live.second.weight}`;
  s += live.floatMeasures
    ? measure('weight', n.weight / 1000, 'kg') +
      measure('width', n.width / 10, 'cm') +
      measure('length', n.length / 10, 'cm') +
      measure('depth', n.depth / 10, 'cm')
    : measure('weight', n.weight, 'g') +
      measure('width', n.width, 'mm') +
      measure('length', n.length, 'mm') +
      measure('depth', n.depth, 'mm');
  s += `,"packageContent":"${f.packContent} ${form.contentUnit}","packageQuantity":${f.packContent},"packagingUnit":"${form.packagingUnit}"`;
  return s;
}

/** ATC codes, categories, brand and family, lists, organizations, ingredients and species. */
function relationsJson(ds: LiveProductSource, f: ProductFacts, fr: LiveFragments): string {
  const second = f.live!.second;
  let s = `,"atc":"${f.atc[0]}","atcCategory":${JSON.stringify(f.atc)},"notApplicableField":${JSON.stringify(notApplicableFields(f))}`;
  s += `,"publicCategories":${join(f.publicCategories.map((c) => fr.publicCategory[c - 1]!))}`;
  s += `,"catalogCategories":${join(f.catalogCategories.map((c) => fr.catalogCategory.get(c)!))}`;
  s += `,"gs1Category":${f.gs1 ? ds.fragments.gs1.get(f.gs1)! : null}`;
  s += `,"hasCannabisData":${f.cannabis !== null},"cannabisData":${JSON.stringify(f.cannabis)}`;
  const brand = !f.brand ? '' : second.bareBrandIds ? String(f.brand) : fr.brand[f.brand - 1]!;
  s += `,"brands":[${brand}],"productFamily":[${f.family ? fr.family[f.family - 1]! : ''}]`;
  s += `,"attributes":[${f.attributes.join(',')}]`;
  s += `,"dietaryRestrictions":${join(f.dietary.map((d) => fr.dietary.get(d)!))},"colors":${join(f.colors.map((c) => fr.color.get(c)!))}`;
  s += `,"deleted":${f.deleted},"organizations":${join(f.organizations.map((o) => fr.organization[o - 1]!))}`;
  s += `,"activeIngredients":[${fr.ingredient[f.ingredient]!}${f.secondIngredient >= 0 ? `,${fr.ingredient[f.secondIngredient]!}` : ''}]`;
  s += `,"allowedSpecies":${join(f.species.map((c) => fr.species.get(c)!))}`;
  return s;
}
