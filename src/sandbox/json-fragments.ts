// Pre-serialized JSON of the reference objects products embed (brands,
// organizations, categories, ingredients, ...). Records are written as JSON
// text rather than built as objects and passed to JSON.stringify: serving is
// then mostly string concatenation of these fragments, which is what lets one
// core serve tens of thousands of products per second.
import type { ReferenceData } from './generate-reference.js';
import { ALLOWED_SPECIES, COLORS, DIETARY_RESTRICTIONS, DOSAGE_FORMS, LOCALES, words } from './vocabulary.js';

/** A JSON string literal. */
export const q = (s: string): string => JSON.stringify(s);

/** `{"en":"...","nl":"..."}` for the locales in `mask` (en=1, nl=2, fr=4, de=8). */
export function localizedJson(mask: number, text: (locale: number) => string): string {
  let out = '{';
  for (let l = 0; l < LOCALES.length; l++) {
    if (!(mask & (1 << l))) continue;
    if (out.length > 1) out += ',';
    out += `"${LOCALES[l]}":${q(text(l))}`;
  }
  return `${out}}`;
}

/** `["en","fr"]` for a locale mask. */
export function localeListJson(mask: number): string {
  return `[${LOCALES.filter((_, l) => mask & (1 << l))
    .map((l) => `"${l}"`)
    .join(',')}]`;
}

/** Lower-case ASCII slug for seoName and page URLs (Greek letters kept, accents dropped). */
export function slug(s: string): string {
  return s
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^a-z0-9δ]+/g, '-')
    .replace(/^-|-$/g, '');
}

export class JsonFragments {
  readonly brand: string[];
  readonly brandSlug: string[];
  readonly family: string[];
  readonly organization: string[];
  /** `[{"id":..,"name":{..}}]`: the organizations list of a photo owned by this organization's product. */
  readonly photoOrganizations: string[];
  readonly publicCategory: string[];
  readonly catalogCategory: Map<string, string>;
  readonly gs1: Map<string, string>;
  readonly ingredient: string[];
  /** Slug of an ingredient name and of a form name, per locale. */
  readonly ingredientSlug: string[][];
  readonly formSlug: string[][];
  readonly species: Map<string, string>;
  readonly dietary: Map<string, string>;
  readonly color: Map<string, string>;

  constructor(ref: ReferenceData) {
    const s = JSON.stringify;
    this.brand = ref.brands.map((b) => s(b.embedded));
    this.brandSlug = ref.brands.map((b) => slug(b.record.name));
    this.family = ref.families.map((f) => s(f.embedded));
    this.organization = ref.organizations.map((o) => s(o.embedded));
    this.photoOrganizations = ref.organizations.map((o) => s([{ id: o.record.id, name: o.embedded.name }]));
    this.publicCategory = ref.publicCategories.map((c) => s(c));
    this.catalogCategory = new Map(ref.catalogCategories.map((c) => [c.record.id, s(c.record)]));
    this.gs1 = new Map(ref.gs1Categories.map((g) => [g.code as string, s(g)]));
    this.ingredient = ref.ingredients.map((g) => s(g.embedded));
    this.ingredientSlug = ref.ingredients.map((g) => g.words.name.map(slug));
    this.formSlug = DOSAGE_FORMS.map((f) => f.name.map(slug));
    this.species = new Map(ALLOWED_SPECIES.map((x) => [x.code, s({ id: x.id, name: words(x.name) })]));
    this.dietary = new Map(DIETARY_RESTRICTIONS.map((x) => [x.id, s({ id: x.id, name: words(x.name) })]));
    this.color = new Map(COLORS.map((x) => [x.id, s({ id: x.id, name: words(x.name) })]));
  }
}
