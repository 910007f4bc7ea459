// Generates the small reference tables every product points into: brands,
// organizations, product families, public and catalog categories (trees), GS1
// categories and active ingredients. They are few (at most a few thousand rows)
// so they are built once and kept as ready records. Values that a filter needs
// but the spec shows no field for (an organization's VAT number and
// specializations, a catalog category's `deleted`) are kept beside the record,
// never in it: records carry only the fields the spec shows.
import type { Brand, CatalogCategory, Organization } from '../catalog/index.js';
import { Rng, rngFor } from './random.js';
import { CATALOG_START, GENERATION_EPOCH, SALT, timeBetween, updatedAfter } from './timeline.js';
import {
  ACTIVE_INGREDIENTS,
  BRAND_PREFIXES,
  BRAND_SUFFIXES,
  CATEGORY_TREE,
  CITIES,
  COMPANY_FORMS,
  GS1_CATEGORIES,
  type IngredientWords,
  words,
} from './vocabulary.js';

export type Meta = { createdAt: number; updatedAt: number };

type LocalizedText = Record<string, string>;

export interface BrandEntry {
  record: Brand;
  /** The brand's name in every locale, as products embed it. */
  embedded: { id: number; name: LocalizedText; meta: Meta };
  /** The supplier organization that owns the brand. */
  organization: number;
  families: number[];
}

export interface OrganizationEntry {
  record: Organization;
  /** The form embedded in products (localized name, region as a string). */
  embedded: Record<string, unknown> & { id: number; name: LocalizedText; type: string };
  vatNr: string;
  specializations: number[];
}

export interface FamilyEntry {
  embedded: { id: number; name: LocalizedText; meta: Meta };
  brand: number;
}

export interface PublicCategoryEntry {
  id: number;
  name: LocalizedText;
  parent: number | null;
  meta: Meta;
}

export interface CatalogCategoryEntry {
  record: CatalogCategory;
  deleted: boolean;
}

export interface IngredientEntry {
  embedded: { id: number; name: LocalizedText; meta: Meta };
  words: IngredientWords;
}

export interface ReferenceData {
  brands: BrandEntry[];
  organizations: OrganizationEntry[];
  families: FamilyEntry[];
  publicCategories: PublicCategoryEntry[];
  catalogCategories: CatalogCategoryEntry[];
  gs1Categories: Record<string, unknown>[];
  ingredients: IngredientEntry[];
  /** Organization ids by role, for drawing a product's organizations. */
  supplierIds: number[];
  otherOrganizationIds: number[];
}

/** Scales reference-table sizes with the catalog, within readable bounds. */
export function referenceSizes(productCount: number): { brands: number; organizations: number } {
  const brands = Math.min(5000, Math.max(30, Math.round(productCount / 25)));
  return { brands, organizations: Math.min(1500, Math.max(12, Math.round(brands / 3))) };
}

const meta = (rng: Rng, from = CATALOG_START - 2 * 365 * 86_400, to = GENERATION_EPOCH - 400 * 86_400): Meta => {
  const createdAt = timeBetween(rng, from, to);
  return { createdAt, updatedAt: updatedAfter(rng, createdAt) };
};

export function generateReferenceData(seed: number, productCount: number): ReferenceData {
  const rng = rngFor(seed, SALT.reference, 0);
  const sizes = referenceSizes(productCount);
  const publicCategories = buildPublicCategories(rng);
  const organizations = buildOrganizations(rng, sizes.organizations, publicCategories);
  const supplierIds = organizations.filter((o) => o.record.type === 'supplier').map((o) => o.record.id);
  const otherOrganizationIds = organizations.filter((o) => o.record.type !== 'supplier').map((o) => o.record.id);
  const brands: BrandEntry[] = [];
  const families: FamilyEntry[] = [];
  const prefixes = shuffled(rng, BRAND_PREFIXES);
  for (let b = 1; b <= sizes.brands; b++) {
    const k = b - 1;
    const round = Math.floor(k / (prefixes.length * BRAND_SUFFIXES.length));
    const name =
      `${prefixes[k % prefixes.length]}${BRAND_SUFFIXES[Math.floor(k / prefixes.length) % BRAND_SUFFIXES.length]}${round ? ` ${round + 1}` : ''}`.trim();
    const m = meta(rng);
    const organization = rng.pick(supplierIds);
    const entry: BrandEntry = {
      record: {
        id: b,
        name,
        logo: rng.chance(0.8) ? `https://media.catalog-sandbox.test/brands/${b}/logo.png` : null,
        meta: m,
      },
      embedded: { id: b, name: words([name, name, name, name]), meta: m },
      organization,
      families: [],
    };
    for (let f = rng.between(1, 2); f > 0; f--) {
      const id = families.length + 1;
      const line = rng.pick(['Kids', 'Forte', 'Plus', 'Sensitive', 'Night', 'Junior', 'Extra'] as const);
      families.push({
        embedded: {
          id,
          name: words([`${name} ${line}`, `${name} ${line}`, `${name} ${line}`, `${name} ${line}`]),
          meta: meta(rng),
        },
        brand: b,
      });
      entry.families.push(id);
    }
    brands.push(entry);
    const org = organizations[organization - 1]!.record;
    org.brands!.push(b);
    org.productFamilies!.push(...entry.families);
  }
  const ingredients = ACTIVE_INGREDIENTS.map((w, i) => ({
    embedded: { id: i + 1, name: words(w.name), meta: meta(rng) },
    words: w,
  }));
  const gs1Categories = GS1_CATEGORIES.map((g, i) => ({
    code: g.code,
    level: g.level,
    ...(g.parent ? { parent: g.parent } : {}),
    title: g.title,
    definition: `Includes any products that can be described as ${g.title.toLowerCase()}.`,
    definitionExcludes: 'Excludes products not intended for health or personal care.',
    active: i === GS1_CATEGORIES.length - 1 ? 'false' : 'true',
    meta: meta(rng),
  }));
  return {
    brands,
    organizations,
    families,
    publicCategories,
    catalogCategories: buildCatalogCategories(rng),
    gs1Categories,
    ingredients,
    supplierIds,
    otherOrganizationIds,
  };
}

function shuffled<T>(rng: Rng, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

function buildPublicCategories(rng: Rng): PublicCategoryEntry[] {
  const out: PublicCategoryEntry[] = [];
  for (const root of CATEGORY_TREE) {
    const parent = { id: out.length + 1, name: words(root.name), parent: null, meta: meta(rng) };
    out.push(parent);
    for (const child of root.children)
      out.push({ id: out.length + 1, name: words(child), parent: parent.id, meta: meta(rng) });
  }
  return out;
}

/** String ids `C01`, `C01.02`; descriptions miss some locales; a few retired (deleted) categories. */
function buildCatalogCategories(rng: Rng): CatalogCategoryEntry[] {
  const out: CatalogCategoryEntry[] = [];
  const description = (name: Record<string, string>) => {
    const mask = rng.chance(0.7) ? 0b1111 : rng.between(1, 15);
    const d: Record<string, string> = {};
    for (const [locale, text] of Object.entries(name))
      if (mask & (1 << Object.keys(name).indexOf(locale)))
        d[locale] = `${text}: ${locale === 'en' ? 'products and advice' : '…'}`;
    return d;
  };
  CATEGORY_TREE.forEach((root, r) => {
    const rootId = `C${String(r + 1).padStart(2, '0')}`;
    const rootName = words(root.name);
    out.push({
      record: {
        id: rootId,
        name: rootName,
        description: description(rootName),
        parent: null,
        order: r + 1,
        type: root.type,
      },
      deleted: false,
    });
    root.children.forEach((child, c) => {
      const name = words(child);
      out.push({
        record: {
          id: `${rootId}.${String(c + 1).padStart(2, '0')}`,
          name,
          description: description(name),
          parent: rootId,
          order: c + 1,
          type: root.type,
        },
        deleted: false,
      });
    });
    if (r % 3 === 0) {
      // A retired sub-category: still listed, flagged deleted, never used by products.
      const c = root.children.length;
      const name = words([
        `${root.name[0]} (retired)`,
        `${root.name[1]} (vervallen)`,
        `${root.name[2]} (retiré)`,
        `${root.name[3]} (eingestellt)`,
      ]);
      out.push({
        record: {
          id: `${rootId}.${String(c + 1).padStart(2, '0')}`,
          name,
          description: {},
          parent: rootId,
          order: c + 1,
          type: root.type,
        },
        deleted: true,
      });
    }
  });
  return out;
}

function buildOrganizations(rng: Rng, count: number, publicCategories: PublicCategoryEntry[]): OrganizationEntry[] {
  const out: OrganizationEntry[] = [];
  for (let id = 1; id <= count; id++) {
    // Organization 1 is always a supplier so every brand has an owner.
    const type =
      id === 1
        ? 'supplier'
        : rng.weighted([
            ['supplier', 5],
            ['marketing', 2.5],
            ['medical_professional', 1.5],
            ['other', 1],
          ] as const);
    const base = `${rng.pick(BRAND_PREFIXES).trim()}${rng.pick(['Pharma', 'Health', 'Distribution', 'Labs', 'Médical', 'Apotheke'] as const)}`;
    const name = `${base} ${rng.pick(COMPANY_FORMS)}${id > 60 ? ` ${id}` : ''}`;
    const m = meta(rng);
    const record: Organization = { id, name, type, brands: [], productFamilies: [], meta: m };
    const embedded: OrganizationEntry['embedded'] = { id, name: words([name, name, name, name]), type, meta: m };
    if (type === 'supplier') {
      const place = rng.pick(CITIES);
      const slug = base
        .toLowerCase()
        .normalize('NFKD')
        .replace(/[^a-z0-9]+/g, '');
      const street = `${rng.between(1, 250)} ${rng.pick(['Main Street', 'Stationsstraat', 'Rue de la Gare', 'Bahnhofstraße'] as const)}`;
      const email = `info@${slug || 'org'}${id}.example`;
      const url = `https://www.${slug || 'org'}${id}.example`;
      record.contactInformation = {
        address: street,
        zipCode: place.zip,
        city: place.city,
        region: { value: place.region, label: place.regionLabel },
        country: place.country,
        email,
        url,
      };
      embedded.contactInformation = {
        address: street,
        zipCode: place.zip,
        city: place.city,
        region: place.regionLabel,
        country: place.country,
        email,
        url,
      };
    }
    const vatNr = `${type === 'supplier' ? 'AU' : 'BE'}${String(rng.int(1e9)).padStart(9, '0')}${String(id).padStart(2, '0')}`;
    const specializations = rng.subset(publicCategories, 0, 3).map((c) => c.id);
    out.push({ record, embedded, vatNr, specializations });
  }
  return out;
}
