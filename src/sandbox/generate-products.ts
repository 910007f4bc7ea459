// Generates products. A product is never stored: `drawProductFacts` rebuilds
// its filterable facts from (seed, index) in a few microseconds, and
// `productJson` writes the full record as JSON text from those facts plus the
// dataset's mutable columns (timestamps, touches) when it is served. Draw
// order matters: a draw added in the middle changes every later value of that
// record, so append new draws at the end.
import { type Rng, rngFor } from './random.js';
import { SALT } from './timeline.js';
import { type JsonFragments, localeListJson, localizedJson, q } from './json-fragments.js';
import {
  CATEGORY_TREE,
  COLORS,
  CONSERVATION_LABELS,
  DESCRIPTION_TYPES,
  DIETARY_RESTRICTIONS,
  DOSAGE_FORMS,
  type IngredientWords,
  LOCALES,
  STRAINS,
  TARGET_GROUPS,
} from './vocabulary.js';
import type { ReferenceData } from './generate-reference.js';
import { type LiveFacts, ZERO_LED_HS_CODES, drawLiveFacts, drawSecondLook } from './live-facts.js';
import { LATE_FIELDS, type SandboxProfile, regionMask } from './profiles.js';

/**
 * What product records are drawn from: the dataset's columns and lookups (Dataset implements it).
 * Declared here rather than imported from dataset.ts, which imports this file.
 */
export interface ProductSource {
  readonly seed: number;
  readonly ref: ReferenceData;
  readonly fragments: JsonFragments;
  readonly createdAt: Uint32Array;
  readonly updatedAt: Uint32Array;
  readonly officialDeletionAt: Uint32Array;
  productFacts(index: number): ProductFacts;
  revisionOf(index: number): number;
  productMedia(index: number): { photos: number[]; frontals: number[]; links: number[] };
  mediaJson(m: number): string;
  productPhotoJson(m: number, displayOrder: number): string;
  productFrontalJson(m: number, displayOrder: number): string;
}

export const PRODUCT_STATUSES = ['active', 'inactive', 'replaced', 'no_selection'] as const;
export type ProductStatusName = (typeof PRODUCT_STATUSES)[number];

export const CONSERVATIONS = ['room', 'refrigerator', 'fresh', 'frozen'] as const;
const SCHEDULE_CODES = ['NS', 'S2', 'S3', 'S4', 'S4D', 'S5', 'S6', 'S7', 'S8', 'S9', 'S10'] as const;
const ARTG_CATEGORIES = [
  'assessed_listed',
  'listed',
  'listed_export_only',
  'registered',
  'registered_provisional',
  'registered_with_provisional',
] as const;
const CANNABIS_CATEGORIES = ['full_spectrum', 'broad_spectrum', 'isolate'] as const;
const CULTIVAR_TYPES = ['indica', 'sativa', 'hybrid'] as const;
const MINOR_CANNABINOIDS = [
  'CBG',
  'CBN',
  'CBC',
  'THCV',
  'CBDV',
  'CBDA',
  'CBGA',
  'THCA',
  'CBL',
  'CBT',
  'Δ8-THC',
] as const;
const TERPENES = [
  'Myrcene',
  'Limonene',
  'β-Caryophyllene',
  'α-Pinene',
  'β-Pinene',
  'Linalool',
  'Humulene',
  'Terpinolene',
  'Ocimene',
  'Bisabolol',
  'α-Terpineol',
  'Eucalyptol (1,8-Cineole)',
] as const;

/** Fixed-width product ids, so string order is generation order: `P0000001`. */
export const PRODUCT_ID_DIGITS = 7;
export const MAX_PRODUCTS = 10 ** PRODUCT_ID_DIGITS - 1;

export function productIdOf(index: number): string {
  return `P${String(index + 1).padStart(PRODUCT_ID_DIGITS, '0')}`;
}

/** The index of a product id, or -1 when it is not one of ours. */
export function productIndexOf(id: string, count: number): number {
  if (id.length !== PRODUCT_ID_DIGITS + 1 || id[0] !== 'P') return -1;
  const n = Number(id.slice(1));
  return Number.isInteger(n) && n >= 1 && n <= count ? n - 1 : -1;
}

export interface CannabisFacts {
  thcPercentage: number | null;
  cbdPercentage: number | null;
  thcCbdRatio: string | null;
  cannabisForm: string | null;
  cannabisCategory: string | null;
  strain: string | null;
  cultivarType: string | null;
  importerLicenseNumber: string | null;
  manufacturerLicenseNumber: string | null;
  minorCannabinoids: { name: string; percentage: number | null }[];
  terpenes: { name: string; percentage: number | null }[];
}

/** Everything about a product that filters and sortings look at, drawn from (seed, index). */
export interface ProductFacts {
  status: number;
  replacement: number;
  deleted: boolean;
  ingredient: number;
  secondIngredient: number;
  form: number;
  strength: number;
  packContent: number;
  nameMask: number;
  descriptionMask: number;
  leafletMask: number;
  brand: number;
  family: number;
  organizations: number[];
  publicCategories: number[];
  catalogCategories: string[];
  gs1: string | null;
  eanGtin8?: number;
  eanGtin12?: number;
  eanGtin13?: number;
  eanGtin14?: number;
  ean: number[];
  hsCode: number;
  /** Absent (with pbs, fred, zCode, scheduleCode, artgCategory) in the be and fr profiles. */
  artgId?: string;
  pbs?: string;
  fred?: string;
  zCode?: string;
  conservation: (typeof CONSERVATIONS)[number];
  species: string[];
  atc: string[];
  dietary: string[];
  colors: string[];
  attributes: number[];
  narcotic: string;
  biocide: string;
  scheduleCode?: string;
  artgCategory?: string;
  cannabis: CannabisFacts | null;
  requiresLegalText: boolean;
  nutritionSupplement: boolean | null;
  photos: number;
  frontals: number;
  links: number;
  /** Chance draw for an official deletion date; the date itself needs createdAt (see dataset). */
  deletionDraw: number;
  /** The live profiles' regional facts and shape choices; absent in `spec`. */
  live?: LiveFacts;
}

/** GS1 check digit of a code body (digits without the check digit). */
function withCheckDigit(body: number): number {
  let sum = 0;
  let weight = 3;
  for (let n = body; n > 0; n = Math.floor(n / 10)) {
    sum += (n % 10) * weight;
    weight = 4 - weight;
  }
  return body * 10 + ((10 - (sum % 10)) % 10);
}

/** A code of `digits` digits; about a fifth start with `00` (so the integer has fewer digits). */
function gtin(rng: ReturnType<typeof rngFor>, digits: number, prefix: number): number {
  const bodyDigits = digits - 1;
  if (rng.chance(0.2)) return withCheckDigit(rng.int(10 ** (bodyDigits - 2)));
  return withCheckDigit(
    prefix * 10 ** (bodyDigits - String(prefix).length) + rng.int(10 ** (bodyDigits - String(prefix).length)),
  );
}

const CANNABIS_ROOT = CATEGORY_TREE.findIndex((c) => c.name[0] === 'Medicinal cannabis');
const VETERINARY_ROOT = CATEGORY_TREE.findIndex((c) => c.type === 'veterinary_medicine');
const HYGIENE_ROOT = CATEGORY_TREE.findIndex((c) => c.name[0].startsWith('Hygiene'));
const GENERAL_ROOTS = CATEGORY_TREE.map((_, i) => i).filter(
  (i) => i !== CANNABIS_ROOT && i !== VETERINARY_ROOT && i !== HYGIENE_ROOT,
);
const CANNABIS_FORMS = DOSAGE_FORMS.map((f, i) => (f.cannabisForm ? i : -1)).filter((i) => i >= 0);

/** Lists the product draw picks from, computed once per dataset rather than per product. */
export interface ProductDrawContext {
  ref: ReferenceData;
  profile: SandboxProfile;
  cannabisIngredients: number[];
  publicChildren: number[][];
  catalogChildren: string[][];
  gs1Codes: string[];
}

export function productDrawContext(ref: ReferenceData, profile: SandboxProfile = 'spec'): ProductDrawContext {
  const roots = ref.publicCategories.filter((c) => c.parent === null);
  return {
    ref,
    profile,
    cannabisIngredients: ref.ingredients.map((g, i) => (g.words.cannabis ? i : -1)).filter((i) => i >= 0),
    publicChildren: roots.map((r) => ref.publicCategories.filter((c) => c.parent === r.id).map((c) => c.id)),
    catalogChildren: CATEGORY_TREE.map((_, r) => {
      const rootId = `C${String(r + 1).padStart(2, '0')}`;
      return ref.catalogCategories.filter((c) => c.record.parent === rootId && !c.deleted).map((c) => c.record.id);
    }),
    gs1Codes: ref.gs1Categories.map((g) => g.code as string),
  };
}

/**
 * Draws a product's filterable facts. The helpers below draw from one `rng` in the order they
 * are called here, which is the order the draws have always had: keep it (see the file comment).
 */
export function drawProductFacts(seed: number, index: number, count: number, ctx: ProductDrawContext): ProductFacts {
  const { ref } = ctx;
  const rng = rngFor(seed, SALT.product, index);
  const composition = drawComposition(rng, index, count, ctx);
  const words_ = ref.ingredients[composition.ingredient]!.words;
  // Spread in this order, the facts keep their field order (live-filters.ts walks their entries).
  const facts: ProductFacts = {
    ...composition,
    ...drawLocaleMasks(rng),
    ...drawOwnership(rng, ref),
    ...drawCategories(rng, words_, ctx),
    ...drawCodes(rng, ctx),
    ...drawHandling(rng, words_, composition.secondIngredient, ref),
    ...drawRegulation(rng, words_, composition, ref),
    ...drawMediaCounts(rng),
  };
  return ctx.profile === 'spec' ? facts : liveAdjusted(facts, seed, index, ctx.profile, count, ctx);
}

type Composition = Pick<
  ProductFacts,
  'status' | 'replacement' | 'deleted' | 'ingredient' | 'secondIngredient' | 'form' | 'strength' | 'packContent'
>;

/** Status, replacement, deleted flag and what the product is: ingredients, dosage form, strength, pack. */
function drawComposition(rng: Rng, index: number, count: number, ctx: ProductDrawContext): Composition {
  const { ref } = ctx;
  const status = rng.weighted([
    [0, 80],
    [1, 10],
    [2, 6],
    [3, 4],
  ] as const);
  const replacement = status === 2 && count > 1 ? (index + 1 + rng.int(count - 1)) % count : -1;
  const deleted = rng.chance(0.03);
  // Cannabis ingredients are over-weighted so a few thousand products carry cannabis data.
  const ingredient = rng.chance(0.08) ? rng.pick(ctx.cannabisIngredients) : rng.int(ref.ingredients.length);
  const words_ = ref.ingredients[ingredient]!.words;
  const secondIngredient = !words_.cannabis && rng.chance(0.1) ? rng.int(ref.ingredients.length) : -1;
  const form = words_.cannabis ? rng.pick(CANNABIS_FORMS) : rng.int(DOSAGE_FORMS.length);
  const strength = rng.pick(words_.strengths);
  const packContent = rng.pick(DOSAGE_FORMS[form]!.packContent);
  return { status, replacement, deleted, ingredient, secondIngredient, form, strength, packContent };
}

/** A locale mask: en 90%, nl 75%, fr 60%, de 50%; never empty. */
function drawLocaleMask(rng: Rng): number {
  let m =
    (rng.chance(0.9) ? 1 : 0) | (rng.chance(0.75) ? 2 : 0) | (rng.chance(0.6) ? 4 : 0) | (rng.chance(0.5) ? 8 : 0);
  if (m === 0) m = 1 << rng.int(4);
  return m;
}

function drawLocaleMasks(rng: Rng): Pick<ProductFacts, 'nameMask' | 'descriptionMask' | 'leafletMask'> {
  const nameMask = drawLocaleMask(rng);
  const descriptionMask = rng.chance(0.2) ? 0 : drawLocaleMask(rng);
  const leafletMask = rng.chance(0.5) ? 0 : drawLocaleMask(rng);
  return { nameMask, descriptionMask, leafletMask };
}

function drawOwnership(rng: Rng, ref: ReferenceData): Pick<ProductFacts, 'brand' | 'family' | 'organizations'> {
  const brand = rng.chance(0.92) ? rng.between(1, ref.brands.length) : 0;
  const brandEntry = brand ? ref.brands[brand - 1] : undefined;
  const family = brandEntry && rng.chance(0.6) ? rng.pick(brandEntry.families) : 0;
  const organizations = [brandEntry ? brandEntry.organization : rng.pick(ref.supplierIds)];
  if (ref.otherOrganizationIds.length && rng.chance(0.3)) organizations.push(rng.pick(ref.otherOrganizationIds));
  return { brand, family, organizations };
}

/** Categories under the root the ingredient belongs to (cannabis, veterinary, hygiene or a general one). */
function drawCategories(
  rng: Rng,
  words_: IngredientWords,
  ctx: ProductDrawContext,
): Pick<ProductFacts, 'publicCategories' | 'catalogCategories'> {
  const root = words_.cannabis
    ? CANNABIS_ROOT
    : words_.veterinary
      ? VETERINARY_ROOT
      : words_.biocide
        ? HYGIENE_ROOT
        : rng.pick(GENERAL_ROOTS);
  const publicCategories = rng.chance(0.1) ? [] : rng.subset(ctx.publicChildren[root]!, 1, 2);
  const catalogCategories = rng.chance(0.05) ? [] : rng.subset(ctx.catalogChildren[root]!, 1, 2);
  return { publicCategories, catalogCategories };
}

type Codes = Pick<
  ProductFacts,
  'gs1' | 'eanGtin8' | 'eanGtin12' | 'eanGtin13' | 'eanGtin14' | 'ean' | 'hsCode' | 'artgId' | 'pbs' | 'fred' | 'zCode'
>;

/** GS1 category, GTINs and EANs, HS code and the Australian codes (the live profiles drop or change some). */
function drawCodes(rng: Rng, ctx: ProductDrawContext): Codes {
  const gs1 = rng.chance(0.7) ? rng.pick(ctx.gs1Codes) : null;
  const eanGtin13 = rng.chance(0.95) ? gtin(rng, 13, 93) : undefined;
  const eanGtin14 =
    eanGtin13 !== undefined && rng.chance(0.7)
      ? withCheckDigit(rng.int(4) * 10 ** 12 + Math.floor(eanGtin13 / 10))
      : undefined;
  const eanGtin8 = rng.chance(0.1) ? gtin(rng, 8, 9) : undefined;
  const eanGtin12 = rng.chance(0.25) ? gtin(rng, 12, 3) : undefined;
  const ean = eanGtin13 === undefined ? [] : [eanGtin13];
  if (eanGtin13 !== undefined && rng.chance(0.2)) ean.push(gtin(rng, 13, 54));
  const hsCode = rng.pick([30049000, 30045000, 21069098, 33049900, 38089410, 30039000]);
  const artgId = String(rng.between(10000, 499999));
  const pbs = rng.chance(0.4)
    ? `${rng.between(1000, 13999)}${rng.pick(['A', 'B', 'K', 'T', 'X'] as const)}`
    : undefined;
  const fred = rng.chance(0.5) ? String(rng.between(1000000, 9999999)) : undefined;
  const zCode = rng.chance(0.3) ? `Z${rng.between(100000, 999999)}` : undefined;
  return { gs1, eanGtin8, eanGtin12, eanGtin13, eanGtin14, ean, hsCode, artgId, pbs, fred, zCode };
}

/** Storage, species, ATC codes and the descriptive lists (dietary restrictions, colors, attributes). */
function drawHandling(
  rng: Rng,
  words_: IngredientWords,
  secondIngredient: number,
  ref: ReferenceData,
): Pick<ProductFacts, 'conservation' | 'species' | 'atc' | 'dietary' | 'colors' | 'attributes'> {
  const conservation = rng.weighted([
    ['room', 80],
    ['refrigerator', 12],
    ['fresh', 5],
    ['frozen', 3],
  ] as const);
  const species = words_.veterinary
    ? ['veterinary']
    : words_.biocide
      ? rng.chance(0.5)
        ? ['surface_maintenance']
        : ['human', 'surface_maintenance']
      : rng.chance(0.03)
        ? ['human', 'phytopharmacy']
        : ['human'];
  const atc = [words_.atc, ...(secondIngredient >= 0 ? [ref.ingredients[secondIngredient]!.words.atc] : [])];
  const dietary = rng.chance(0.3) ? rng.subset(DIETARY_RESTRICTIONS, 1, 2).map((d) => d.id) : [];
  const colors = rng.chance(0.4) ? rng.subset(COLORS, 1, 2).map((c) => c.id) : [];
  const attributes = rng.chance(0.2) ? [rng.between(1, 40)] : [];
  return { conservation, species, atc, dietary, colors, attributes };
}

type Regulation = Pick<
  ProductFacts,
  'narcotic' | 'biocide' | 'scheduleCode' | 'artgCategory' | 'cannabis' | 'requiresLegalText' | 'nutritionSupplement'
>;

/** Narcotic and biocide status, schedule and ARTG category, cannabis data, legal text and supplement flags. */
function drawRegulation(rng: Rng, words_: IngredientWords, composition: Composition, ref: ReferenceData): Regulation {
  const narcotic = words_.cannabis
    ? rng.pick(['yes', 'assimilated'] as const)
    : rng.weighted([
        ['no', 85],
        ['unknown', 10],
        ['yes', 5],
      ] as const);
  const biocide = words_.biocide
    ? 'yes'
    : rng.weighted([
        ['no', 90],
        ['unknown', 10],
      ] as const);
  const scheduleCode = words_.cannabis ? rng.pick(['S4', 'S8'] as const) : rng.pick(SCHEDULE_CODES);
  const artgCategory = rng.pick(ARTG_CATEGORIES);
  const cannabis =
    words_.cannabis && rng.chance(0.9)
      ? drawCannabis(rng, DOSAGE_FORMS[composition.form]!.cannabisForm ?? null, composition.ingredient, ref)
      : null;
  const requiresLegalText = rng.chance(0.25);
  const nutritionSupplement = rng.chance(0.2) ? null : rng.chance(0.3);
  return { narcotic, biocide, scheduleCode, artgCategory, cannabis, requiresLegalText, nutritionSupplement };
}

/** Own media counts (photos, frontals, links) and the official-deletion chance draw. */
function drawMediaCounts(rng: Rng): Pick<ProductFacts, 'photos' | 'frontals' | 'links' | 'deletionDraw'> {
  const photos = rng.weighted([
    [0, 15],
    [1, 35],
    [2, 30],
    [3, 15],
    [4, 5],
  ] as const);
  const frontals = rng.weighted([
    [0, 40],
    [1, 50],
    [2, 10],
  ] as const);
  const links = rng.chance(0.25) ? 1 : 0;
  const deletionDraw = rng.next();
  return { photos, frontals, links, deletionDraw };
}

/** The spec facts changed to what a live region sends: its locales, its fields, replacements only late. */
function liveAdjusted(
  f: ProductFacts,
  seed: number,
  index: number,
  profile: Exclude<SandboxProfile, 'spec'>,
  count: number,
  ctx: ProductDrawContext,
): ProductFacts {
  f.nameMask = regionMask(profile, f.nameMask);
  if (f.descriptionMask) f.descriptionMask = regionMask(profile, f.descriptionMask);
  if (f.leafletMask) f.leafletMask = regionMask(profile, f.leafletMask);
  if (f.status === 2 && index < LATE_FIELDS.replacement) {
    f.status = 1;
    f.replacement = -1;
  }
  if (profile !== 'au') {
    f.artgId = f.pbs = f.fred = f.zCode = f.scheduleCode = f.artgCategory = undefined;
  }
  f.live = drawLiveFacts(seed, index, profile, f.eanGtin12 !== undefined, String(f.hsCode).startsWith('300'));
  // The UPC and its zero-padded EAN-13 form are one number: filters match either spelling.
  if (f.live.upcInEan) f.ean.push(f.eanGtin12!);
  const second = f.live.second;
  if (second.zeroLedHs >= 0) f.hsCode = ZERO_LED_HS_CODES[second.zeroLedHs]!;
  if (f.replacement >= 0 && second.nullCodes) {
    // Since 2024 a replaced product keeps its record but loses its codes (live service); the
    // filters read the facts, so a lookup by its old code no longer finds it either.
    f.ean = [];
    f.eanGtin8 = f.eanGtin12 = f.eanGtin13 = f.eanGtin14 = undefined;
    f.live.upcInEan = false;
    f.live.codesNulled = true;
  } else if (second.sharesGtin && index > 0 && !drawSecondLook(seed, index - 1).sharesGtin) {
    // The product before it is drawn again for its GTIN-14 (it never shares one itself, so no chain).
    const before = drawProductFacts(seed, index - 1, count, { ...ctx, profile: 'spec' });
    const nulled =
      before.replacement >= 0 && index - 1 >= LATE_FIELDS.replacement && drawSecondLook(seed, index - 1).nullCodes;
    if (before.eanGtin14 !== undefined && !nulled) f.eanGtin14 = before.eanGtin14;
  }
  return f;
}

/** Cannabis data: mostly complete, a third with many nulls, Unicode names (Δ8-THC, β-Caryophyllene). */
function drawCannabis(
  rng: ReturnType<typeof rngFor>,
  form: string | null,
  ingredient: number,
  ref: ReferenceData,
): CannabisFacts {
  const thcRich = ref.ingredients[ingredient]!.words.name[0].includes('Tetrahydrocannabinol');
  const sparse = rng.chance(0.3);
  const thc = thcRich ? rng.decimal(5, 30, 1) : rng.decimal(0, 1, 2);
  const cbd = thcRich ? rng.decimal(0, 5, 1) : rng.decimal(5, 25, 1);
  const ratio = (a: number, b: number) => `${Math.max(1, Math.round(a))}:${Math.max(1, Math.round(b))}`;
  const isFlower = form === 'flower' || form === 'oil';
  return {
    thcPercentage: sparse && rng.chance(0.5) ? null : thc,
    cbdPercentage: sparse && rng.chance(0.5) ? null : cbd,
    thcCbdRatio: sparse ? null : ratio(thc, cbd),
    cannabisForm: form,
    cannabisCategory: sparse ? null : rng.pick(CANNABIS_CATEGORIES),
    strain: isFlower && !sparse ? rng.pick(STRAINS) : null,
    cultivarType: isFlower && !sparse ? rng.pick(CULTIVAR_TYPES) : null,
    importerLicenseNumber: sparse ? null : `IL-${rng.between(10000, 99999)}`,
    manufacturerLicenseNumber: rng.chance(0.8) ? `ML-${rng.between(10000, 99999)}` : null,
    minorCannabinoids: rng
      .subset(MINOR_CANNABINOIDS, sparse ? 0 : 1, 4)
      .map((name) => ({ name, percentage: rng.chance(0.1) ? null : rng.decimal(0, 2, 2) })),
    terpenes: rng
      .subset(TERPENES, 0, sparse ? 1 : 5)
      .map((name) => ({ name, percentage: rng.chance(0.1) ? null : rng.decimal(0, 1.5, 2) })),
  };
}

/** The product's name in locale l (0..3), e.g. "Ølgaardcare Paracetamol 500 mg tablets". */
export function productName(ds: ProductSource, f: ProductFacts, l: number): string {
  const ing = ds.ref.ingredients[f.ingredient]!.words;
  const second = f.secondIngredient >= 0 ? `/${ds.ref.ingredients[f.secondIngredient]!.words.name[l]}` : '';
  const brand = f.brand ? `${ds.ref.brands[f.brand - 1]!.record.name} ` : '';
  return `${brand}${ing.name[l]}${second} ${f.strength} ${ing.unit} ${DOSAGE_FORMS[f.form]!.name[l]}`;
}

/** slug(productName(l)), from slugs of the parts computed once per dataset. */
export function productSlug(ds: ProductSource, f: ProductFacts, l: number): string {
  const fr = ds.fragments;
  const unit = ds.ref.ingredients[f.ingredient]!.words.unit;
  const parts = [
    f.brand ? fr.brandSlug[f.brand - 1]! : '',
    fr.ingredientSlug[f.ingredient]![l]!,
    f.secondIngredient >= 0 ? fr.ingredientSlug[f.secondIngredient]![l]! : '',
    String(f.strength).replace('.', '-'),
    unit === '%' ? '' : unit === 'µg' ? 'g' : unit.replace('/', '-').toLowerCase(),
    fr.formSlug[f.form]![l]!,
  ];
  return parts.filter((x) => x !== '').join('-');
}

/** Fields that do not apply to the product (the `notApplicableField` list). */
export function notApplicableFields(f: ProductFacts): string[] {
  const out: string[] = [];
  if (!f.cannabis) out.push('cannabisData');
  if (!f.pbs) out.push('pbs');
  if (f.conservation === 'room' && !f.live?.conservationRange) out.push('conservationMin', 'conservationMax');
  return out;
}

const join = (items: readonly string[]): string => `[${items.join(',')}]`;
const optional = (key: string, value: number | string | undefined): string =>
  value === undefined ? '' : `,"${key}":${typeof value === 'string' ? q(value) : value}`;
const measure = (key: string, value: number, unit: string) =>
  `,"${key}":${value},"${key}WithUnit":{"value":${value},"unit":"${unit}"}`;
const temperature = (c: number) =>
  `{"celsius":${c},"fahrenheit":${Math.round((c * 9) / 5 + 32)},"kelvin":${Math.round((c + 273.15) * 100) / 100}}`;

/**
 * The product record of the `spec` profile as JSON text, the way products/query and
 * products/stream return it (Dataset.productJson picks the live shapes for the other
 * profiles). Field order is fixed, so the same seed gives the same bytes.
 */
export function productJson(ds: ProductSource, index: number): string {
  const f = ds.productFacts(index);
  const fr = ds.fragments;
  const rng = rngFor(ds.seed, SALT.productRecord, index);
  const id = productIdOf(index);
  const createdAt = ds.createdAt[index]!;
  const updatedAt = ds.updatedAt[index]!;
  const form = DOSAGE_FORMS[f.form]!;
  const weight = rng.between(10, 900);
  const width = rng.between(20, 200);
  const length = rng.between(20, 200);
  const depth = rng.between(10, 80);
  const pharmacistPrice = rng.between(150, 15000);
  const vat = rng.pick([0, 0.1]);
  // A touch raises the public price a little, so an incremental extract sees a real change.
  const publicPrice = Math.round(pharmacistPrice * 1.45 * (1 + vat)) + ds.revisionOf(index) * 10;
  const cold = f.conservation !== 'room';
  const officialDeletionAt = ds.officialDeletionAt[index]!;
  const media = ds.productMedia(index);
  const enName = f.nameMask & 1 ? 0 : Math.log2(f.nameMask & -f.nameMask);
  let s = `{"id":"${id}","status":"${PRODUCT_STATUSES[f.status]}"`;
  if (f.replacement >= 0) s += `,"replacement":"${productIdOf(f.replacement)}"`;
  s += `,"name":${localizedJson(f.nameMask, (l) => productName(ds, f, l))}`;
  s += `,"seoName":${localizedJson(f.nameMask, (l) => productSlug(ds, f, l))}`;
  s += `,"requiresLegalText":${f.requiresLegalText},"isANutritionSupplement":${f.nutritionSupplement}`;
  s += `,"biocide":"${f.biocide}","scheduleCode":"${f.scheduleCode}","artgCategory":"${f.artgCategory}"`;
  s += `,"officialDeletionAt":${officialDeletionAt || null},"ean":[${f.ean.join(',')}]`;
  if (f.eanGtin14 !== undefined) s += `,"gtin":"${String(f.eanGtin14).padStart(14, '0')}"`;
  s +=
    optional('eanGtin8', f.eanGtin8) +
    optional('eanGtin12', f.eanGtin12) +
    optional('eanGtin13', f.eanGtin13) +
    optional('eanGtin14', f.eanGtin14);
  s += `,"supplierReference":"SR-${f.brand.toString(36).toUpperCase()}-${index.toString(36).toUpperCase()}"`;
  s +=
    `,"hsCode":${f.hsCode},"artgId":"${f.artgId!}"` +
    optional('pbs', f.pbs) +
    optional('fred', f.fred) +
    optional('zCode', f.zCode);
  s += `,"conservationLabel":${q(CONSERVATION_LABELS[f.conservation]!)}`;
  s += `,"conservationMin":${cold ? temperature(f.conservation === 'frozen' ? -25 : 2) : null}`;
  s += `,"conservationMax":${cold ? temperature(f.conservation === 'frozen' ? -18 : 8) : null}`;
  s += `,"conservation":"${f.conservation}","vat":${vat}`;
  s += `,"publicPrice":${publicPrice},"manufacturerPrice":${Math.round(pharmacistPrice * 0.8)},"pharmacistPrice":${pharmacistPrice}`;
  s +=
    measure('weight', weight, 'g') +
    measure('width', width, 'mm') +
    measure('length', length, 'mm') +
    measure('depth', depth, 'mm');
  s += `,"packageContent":"${f.packContent} ${form.contentUnit}","packageQuantity":${f.packContent},"packagingUnit":"${form.packagingUnit}"`;
  s += `,"atc":"${f.atc[0]}","atcCategory":${JSON.stringify(f.atc)},"notApplicableField":${JSON.stringify(notApplicableFields(f))}`;
  s += `,"publicCategories":${join(f.publicCategories.map((c) => fr.publicCategory[c - 1]!))}`;
  s += `,"catalogCategories":${join(f.catalogCategories.map((c) => fr.catalogCategory.get(c)!))}`;
  s += `,"gs1Category":${f.gs1 ? fr.gs1.get(f.gs1)! : null}`;
  s += `,"hasCannabisData":${f.cannabis !== null},"cannabisData":${JSON.stringify(f.cannabis)}`;
  s += `,"brands":[${f.brand ? fr.brand[f.brand - 1]! : ''}],"productFamily":[${f.family ? fr.family[f.family - 1]! : ''}]`;
  s += `,"attributes":[${f.attributes.join(',')}]`;
  s += `,"dietaryRestrictions":${join(f.dietary.map((d) => fr.dietary.get(d)!))},"colors":${join(f.colors.map((c) => fr.color.get(c)!))}`;
  s += `,"deleted":${f.deleted},"organizations":${join(f.organizations.map((o) => fr.organization[o - 1]!))}`;
  s += `,"activeIngredients":[${fr.ingredient[f.ingredient]!}${f.secondIngredient >= 0 ? `,${fr.ingredient[f.secondIngredient]!}` : ''}]`;
  s += `,"allowedSpecies":${join(f.species.map((c) => fr.species.get(c)!))}`;
  s += `,"photos":${join(media.photos.map((m, k) => ds.productPhotoJson(m, k + 1)))}`;
  s += `,"frontals":${join(media.frontals.map((m, k) => ds.productFrontalJson(m, k + 1)))}`;
  s += `,"links":${join(media.links.map((m) => ds.mediaJson(m)))}`;
  s += `,"descriptions":${descriptionsJson(ds, index, f, createdAt, rng)}`;
  s += `,"leaflets":${leafletsJson(id, index, f.leafletMask, createdAt, updatedAt)}`;
  s += `,"meta":{"createdAt":${createdAt},"updatedAt":${updatedAt}}`;
  s += `,"embedUrl":"https://embed.catalog-sandbox.test/products/${id}?signature=${Math.imul(index + 1, 2654435761) >>> 0}"`;
  s += `,"publicPageUrl":"https://www.catalog-sandbox.test/p/${id}/${productSlug(ds, f, enName)}"}`;
  return s;
}

export function leafletsJson(id: string, index: number, mask: number, createdAt: number, updatedAt: number): string {
  const out: string[] = [];
  LOCALES.forEach((locale, l) => {
    if (!(mask & (1 << l))) return;
    const k = out.length;
    const type = k % 2 === 0 ? 'pil' : 'spc';
    const url = `https://docs.catalog-sandbox.test/${id}/${type}-${locale}.pdf`;
    out.push(
      `{"id":${index * 4 + k + 1},"locales":["${locale}"],"type":"${type}","url":{"${locale}":"${url}"},"meta":{"createdAt":${createdAt},"updatedAt":${Math.max(createdAt, updatedAt - k * 86_400)}}}`,
    );
  });
  return join(out);
}

const CONTAINS = ['Contains', 'Bevat', 'Contient', 'Enthält'] as const;
const USAGE = [
  'Use as directed.',
  'Gebruik volgens voorschrift.',
  'Utiliser selon les indications.',
  'Nach Anweisung anwenden.',
] as const;

function descriptionsJson(
  ds: ProductSource,
  index: number,
  f: ProductFacts,
  createdAt: number,
  rng: ReturnType<typeof rngFor>,
): string {
  if (!f.descriptionMask) return '[]';
  const ing = ds.ref.ingredients[f.ingredient]!.words;
  const count = rng.chance(0.3) ? 2 : 1;
  const locales = localeListJson(f.descriptionMask);
  const out: string[] = [];
  for (let k = 0; k < count; k++) {
    const targetGroup = k === 0 ? 'public' : rng.pick(TARGET_GROUPS);
    const content = localizedJson(f.descriptionMask, (l) =>
      k === 0
        ? `${f.nameMask & (1 << l) ? productName(ds, f, l) : ing.name[l]}: ${CONTAINS[l]} ${ing.name[l]} ${f.strength} ${ing.unit}.`
        : USAGE[l]!,
    );
    out.push(
      `{"id":${index * 4 + k + 1},"locales":${locales},"targetGroups":["${targetGroup}"],"type":"${DESCRIPTION_TYPES[k]}","content":${content},"meta":{"createdAt":${createdAt},"updatedAt":${createdAt + k * 3600}}}`,
    );
  }
  return join(out);
}
