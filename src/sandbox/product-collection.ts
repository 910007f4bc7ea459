// Products as a query-engine collection: every products/query filter and
// sorting of spec §4.2. Filters on stored columns (status, brand,
// organization, timestamps, locale masks) read typed arrays; the others redraw
// the product's facts from the seed, which costs about a microsecond, so even
// rare filters over 1M products answer in about a second.
import type { Dataset } from './dataset.js';
import { anyIn, numberSet, rangeTest, stringSet, textTest, timestampPredicate } from './filter-values.js';
import { PRODUCT_STATUSES, type ProductFacts, notApplicableFields, productName } from './generate-products.js';
import { type Collection, FilterValueError, type Path, type Predicate, type SortKey } from './query-engine.js';
import { LOCALES, localeBit } from './vocabulary.js';
import { liveProductLeaf } from './live-filters.js';

export const CONTENT_FLAGS = ['name', 'description', 'photo', 'leaflet'] as const;

/** Status rank for the `status` sorting: alphabetical by status name. */
const STATUS_RANK = PRODUCT_STATUSES.map((s) => [...PRODUCT_STATUSES].sort().indexOf(s));

export class ProductCollection implements Collection {
  readonly name = 'products';
  #lastIndex = -1;
  #lastFacts: ProductFacts | undefined;

  constructor(private readonly ds: Dataset) {}

  size(): number {
    return this.ds.productCount;
  }

  version(): number {
    return this.ds.version;
  }

  json(i: number): string {
    return this.ds.productJson(i);
  }

  hidden(): ReadonlySet<number> {
    return this.ds.hidden;
  }

  /** Facts of product i; consecutive predicates on the same product draw them once. */
  #facts(i: number): ProductFacts {
    if (i !== this.#lastIndex) {
      this.#lastFacts = this.ds.productFacts(i);
      this.#lastIndex = i;
    }
    return this.#lastFacts!;
  }

  /** Whether product i has a photo, optionally one suited to the locales in `mask`. */
  #hasPhoto(i: number, mask = 0b1111): boolean {
    const ds = this.ds;
    for (const m of ds.productMedia(i).photos) if (ds.mediaLocales[m]! & mask) return true;
    return false;
  }

  leaf(name: string, value: unknown, path: Path): Predicate {
    if (this.ds.profile !== 'spec') {
      const live = liveProductLeaf(
        this.ds,
        (i) => this.#facts(i),
        (i, mask) => this.#hasPhoto(i, mask),
        name,
        value,
        path,
      );
      if (live) return live;
    }
    const predicate =
      this.#columnLeaf(name, value, path) ?? this.#factLeaf(name, value) ?? this.#cannabisLeaf(name, value);
    if (predicate) return predicate;
    throw new FilterValueError(path, `the sandbox does not implement filter "${name}"`);
  }

  /** Filters on the stored columns (and name search): no facts drawn unless the filter needs them. */
  #columnLeaf(name: string, value: unknown, path: Path): Predicate | undefined {
    const ds = this.ds;
    switch (name) {
      case 'id': {
        const set = new Set([...stringSet(value)].map((id) => ds.productIndex(id)));
        return (i) => set.has(i);
      }
      case 'status': {
        const set = new Set([...stringSet(value)].map((s) => (PRODUCT_STATUSES as readonly string[]).indexOf(s)));
        return (i) => set.has(ds.status[i]!);
      }
      case 'organization': {
        const set = numberSet(value);
        return (i) => set.has(ds.organization1[i]!) || set.has(ds.organization2[i]!);
      }
      case 'brand': {
        const set = numberSet(value);
        return (i) => set.has(ds.brand[i]!);
      }
      case 'search': {
        const { query, locale, type } = value as { query: string; locale: string; type?: string };
        const test = textTest(query, type, [...path, 'type']);
        const l = LOCALES.indexOf(locale as (typeof LOCALES)[number]);
        if (l < 0) return () => false;
        return (i) => (ds.nameLocales[i]! & (1 << l) ? test(productName(ds, this.#facts(i), l)) : false);
      }
      case 'minimumContent': {
        const want = value as boolean;
        return (i) => (this.#hasPhoto(i) && ds.descriptionLocales[i]! !== 0 && ds.hasPublicCategory[i] === 1) === want;
      }
      case 'hasContent':
        return this.#hasContentLeaf(value, path);
      case 'hasCannabisData':
        return (i) => (ds.hasCannabis[i] === 1) === value;
      case 'officialDeletionAt':
        return timestampPredicate(value, 'equal', (i) => ds.officialDeletionAt[i]!);
      case 'createdAt':
        return timestampPredicate(value, 'since', (i) => ds.createdAt[i]!);
      case 'updatedSince':
        return timestampPredicate(value, 'since', (i) => ds.updatedAt[i]!);
      default:
        return undefined;
    }
  }

  #hasContentLeaf(value: unknown, path: Path): Predicate {
    const ds = this.ds;
    const { flag, locale } = value as { flag: string; locale: string };
    const bit = localeBit(locale);
    switch (flag) {
      case 'name':
        return (i) => (ds.nameLocales[i]! & bit) !== 0;
      case 'description':
        return (i) => (ds.descriptionLocales[i]! & bit) !== 0;
      case 'leaflet':
        return (i) => (ds.leafletLocales[i]! & bit) !== 0;
      case 'photo':
        return (i) => bit !== 0 && this.#hasPhoto(i, bit);
      default:
        throw new FilterValueError([...path, 'flag'], `"${flag}" is not allowed; allowed: ${CONTENT_FLAGS.join(', ')}`);
    }
  }

  /** Filters on the drawn facts: categories, codes, ingredients and the descriptive lists. */
  #factLeaf(name: string, value: unknown): Predicate | undefined {
    const f = (i: number) => this.#facts(i);
    const strings = () => stringSet(value);
    const numbers = () => numberSet(value);
    switch (name) {
      case 'publicCategory': {
        const set = numbers();
        return (i) => anyIn(set, f(i).publicCategories);
      }
      case 'catalogCategories': {
        const set = strings();
        return (i) => anyIn(set, f(i).catalogCategories);
      }
      case 'productFamily':
        return this.#oneOf(numbers(), (x) => x.family);
      case 'ean': {
        const set = numbers();
        return (i) => anyIn(set, f(i).ean);
      }
      case 'gtin':
      case 'eanGtin14':
        return this.#oneOf(numbers(), (x) => x.eanGtin14);
      case 'eanGtin8':
      case 'eanGtin12':
      case 'eanGtin13':
      case 'hsCode':
        return this.#oneOf(numbers(), (x) => x[name]);
      case 'artgId':
      case 'pbs':
      case 'fred':
      case 'zCode':
      case 'conservation':
        return this.#oneOf(strings(), (x) => x[name]);
      case 'activeIngredient': {
        const set = numbers();
        return (i) =>
          set.has(f(i).ingredient + 1) || (f(i).secondIngredient >= 0 && set.has(f(i).secondIngredient + 1));
      }
      case 'allowedSpecies':
        return this.#anyOf(strings(), (x) => x.species);
      case 'atcCategory':
        return this.#anyOf(strings(), (x) => x.atc);
      case 'dietaryRestrictions':
        return this.#anyOf(strings(), (x) => x.dietary);
      case 'colors':
        return this.#anyOf(strings(), (x) => x.colors);
      case 'notApplicableField':
        return this.#anyOf(strings(), notApplicableFields);
      case 'attributes':
        return this.#anyOf(numbers(), (x) => x.attributes);
      case 'gs1Category':
        return this.#oneOf(strings(), (x) => x.gs1);
      case 'narcotic':
      case 'biocide':
      case 'scheduleCode':
      case 'artgCategory':
        return (i) => f(i)[name] === value;
      default:
        return undefined;
    }
  }

  /** Filters on the cannabis data (products without it never match). */
  #cannabisLeaf(name: string, value: unknown): Predicate | undefined {
    const f = (i: number) => this.#facts(i);
    switch (name) {
      case 'cannabisForm':
      case 'cannabisCategory':
      case 'cultivarType':
      case 'thcCbdRatio':
        return this.#oneOf(stringSet(value), (x) => x.cannabis?.[name]);
      case 'thcPercentage':
      case 'cbdPercentage': {
        const test = rangeTest(value);
        return (i) => test(f(i).cannabis?.[name]);
      }
      case 'strain': {
        const want = String(value).toLowerCase();
        return (i) => f(i).cannabis?.strain?.toLowerCase() === want;
      }
      case 'terpene':
        return this.#anyOf(stringSet(value), (x) => x.cannabis?.terpenes.map((t) => t.name));
      case 'minorCannabinoid':
        return this.#anyOf(stringSet(value), (x) => x.cannabis?.minorCannabinoids.map((t) => t.name));
      default:
        return undefined;
    }
  }

  /** Matches when the product's value (absent values never match) is one of `set`. */
  #oneOf<T>(set: Set<T>, get: (f: ProductFacts) => T | null | undefined): Predicate {
    return (i) => {
      const v = get(this.#facts(i));
      return v !== undefined && v !== null && set.has(v);
    };
  }

  #anyOf<T>(set: Set<T>, get: (f: ProductFacts) => readonly T[] | undefined): Predicate {
    return (i) => anyIn(set, get(this.#facts(i)));
  }

  sortKey(name: string, param: unknown): SortKey {
    const ds = this.ds;
    switch (name) {
      case 'createdAt':
        return { kind: 'number', key: (i) => ds.createdAt[i]! };
      case 'touchedAt':
        return { kind: 'number', key: (i) => ds.updatedAt[i]! };
      case 'statusTouchedAt':
        return { kind: 'number', key: (i) => ds.statusTouchedAt[i]! };
      case 'status':
        return { kind: 'number', key: (i) => STATUS_RANK[ds.status[i]!]! };
      case 'pbs':
        return { kind: 'string', key: (i) => this.#facts(i).pbs };
      case 'name': {
        const l = LOCALES.indexOf((param as { locale: string }).locale as (typeof LOCALES)[number]);
        return {
          kind: 'string',
          key: (i) =>
            l >= 0 && ds.nameLocales[i]! & (1 << l) ? productName(ds, this.#facts(i), l).toLowerCase() : undefined,
        };
      }
      default:
        throw new FilterValueError(['sorting', name], `the sandbox does not implement sorting "${name}"`);
    }
  }
}
