// Every products filter of spec §4.2 over loopback, alone and inside
// and/or/not, against an independent predicate over the served records
// (ARCHITECTURE.md, API rules semantics: a list matches any value; {from, until} inclusive;
// plain createdAt/updatedSince mean "since"; plain officialDeletionAt means
// "exactly"). products/stream returns every match, so sets compare exactly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIVE_PRODUCT_FILTERS, productFilters } from '../../src/catalog/index.js';
import type { ProductFacts } from '../../src/sandbox/generate-products.js';
import { ALLOWED_SPECIES } from '../../src/sandbox/vocabulary.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let sb: TestSandbox;
let products: any[];
let facts: ProductFacts[];

async function ids(filter: unknown): Promise<string[]> {
  const { lines } = await sb.stream('/v4/products/stream', { filter, sorting: { id: 'ASC' } });
  return lines.map((l) => l.result.id);
}

const expected = (pred: (p: any, i: number) => boolean) => products.filter((p, i) => pred(p, i)).map((p) => p.id);
const first = <T>(pick: (p: any, i: number) => T | undefined): T => {
  for (let i = 0; i < products.length; i++) {
    const v = pick(products[i], i);
    if (v !== undefined && v !== null) return v;
  }
  throw new Error('no product has the value the test needs');
};

beforeAll(async () => {
  sb = await startTestSandbox({ products: 1000, seed: 11 });
  products = (await sb.stream('/v4/products/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } })).lines.map(
    (l) => l.result,
  );
  facts = products.map((_, i) => sb.dataset.productFacts(i));
});
afterAll(() => sb.close());

type Case = { name: string; make: () => { value: unknown; match: (p: any, i: number) => boolean } };
const speciesId = (code: string) => ALLOWED_SPECIES.find((s) => s.code === code)!.id;
/** The value below which 85% of the values lie (a filter on it keeps answers small). */
const upperQuantile = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length * 0.85)]!;
/** A case whose filter value is `value` and that matches products `match(p, i, value)`. */
const c = <V>(name: string, value: () => V, match: (p: any, v: V, i: number) => boolean): Case => ({
  name,
  make: () => {
    const v = value();
    return { value: v, match: (p, i) => match(p, v, i) };
  },
});
const anyId = (list: { id: unknown }[], ids: unknown[]) => list.some((x) => ids.includes(x.id));

/** One case per filter; the value is taken from the data so the result is neither empty nor everything. */
const cases: Case[] = [
  c(
    'id',
    () => [products[3].id, products[700].id, 'P9999999'],
    (p, v) => v.includes(p.id),
  ),
  c(
    'status',
    () => ['replaced', 'inactive'],
    (p, v) => v.includes(p.status),
  ),
  c(
    'organization',
    () => products[5].organizations[0].id,
    (p, v) => anyId(p.organizations, [v]),
  ),
  c(
    'publicCategory',
    () => [first((p) => p.publicCategories[0]?.id)],
    (p, v) => anyId(p.publicCategories, v),
  ),
  c(
    'catalogCategories',
    () => first((p) => p.catalogCategories[0]?.id),
    (p, v) => anyId(p.catalogCategories, [v]),
  ),
  c(
    'brand',
    () => [first((p) => p.brands[0]?.id), first((p, i) => (i > 9 ? p.brands[0]?.id : undefined))],
    (p, v) => anyId(p.brands, v),
  ),
  c(
    'productFamily',
    () => first((p) => p.productFamily[0]?.id),
    (p, v) => anyId(p.productFamily, [v]),
  ),
  c(
    'search',
    () => ({ query: 'PARACETAMOL', locale: 'en' }),
    (p) => p.name.en?.toLowerCase().includes('paracetamol') ?? false,
  ),
  c(
    'minimumContent',
    () => false,
    (p) => !(p.photos.length > 0 && p.descriptions.length > 0 && p.publicCategories.length > 0),
  ),
  c(
    'hasContent',
    () => ({ flag: 'description', locale: 'fr' }),
    (p) => p.descriptions.some((d: any) => d.content.fr !== undefined),
  ),
  // A leading-zero EAN given as a zero-padded string, and one as an integer.
  c(
    'ean',
    () => [
      String(first((p) => p.ean.find((e: number) => e < 1e11))).padStart(13, '0'),
      first((p, i) => (i > 0 ? p.ean[0] : undefined)),
    ],
    (p, v) => p.ean.some((e: number) => v.map(Number).includes(e)),
  ),
  c(
    'gtin',
    () => String(first((p) => p.eanGtin14)).padStart(14, '0'),
    (p, v) => p.eanGtin14 === Number(v),
  ),
  c(
    'eanGtin8',
    () => [first((p) => p.eanGtin8)],
    (p, v) => v.includes(p.eanGtin8),
  ),
  c(
    'eanGtin12',
    () => first((p) => p.eanGtin12),
    (p, v) => p.eanGtin12 === v,
  ),
  c(
    'eanGtin13',
    () => [first((p) => p.eanGtin13), first((p, i) => (i > 20 ? p.eanGtin13 : undefined))],
    (p, v) => v.includes(p.eanGtin13),
  ),
  c(
    'eanGtin14',
    () => first((p, i) => (i > 50 ? p.eanGtin14 : undefined)),
    (p, v) => p.eanGtin14 === v,
  ),
  c(
    'hsCode',
    () => ['30049000', 38089410],
    (p) => p.hsCode === 30049000 || p.hsCode === 38089410,
  ),
  c(
    'artgId',
    () => products[10].artgId,
    (p, v) => p.artgId === v,
  ),
  c(
    'pbs',
    () => [first((p) => p.pbs), first((p, i) => (i > 100 ? p.pbs : undefined))],
    (p, v) => v.includes(p.pbs),
  ),
  c(
    'fred',
    () => first((p) => p.fred),
    (p, v) => p.fred === v,
  ),
  c(
    'zCode',
    () => [first((p) => p.zCode)],
    (p, v) => v.includes(p.zCode),
  ),
  c(
    'activeIngredient',
    () => [1, 27],
    (p, v) => anyId(p.activeIngredients, v),
  ),
  c(
    'conservation',
    () => ['refrigerator', 'frozen'],
    (p, v) => v.includes(p.conservation),
  ),
  c(
    'allowedSpecies',
    () => 'veterinary',
    (p) => anyId(p.allowedSpecies, [speciesId('veterinary')]),
  ),
  c(
    'atcCategory',
    () => ['N02BE01', 'A11CC05'],
    (p, v) => p.atcCategory.some((x: string) => v.includes(x)),
  ),
  c(
    'gs1Category',
    () => ['51101700'],
    (p) => p.gs1Category?.code === '51101700',
  ),
  c(
    'hasCannabisData',
    () => true,
    (p) => p.hasCannabisData === true,
  ),
  c(
    'cannabisForm',
    () => ['oil', 'flower'],
    (p, v) => v.includes(p.cannabisData?.cannabisForm),
  ),
  c(
    'cannabisCategory',
    () => 'isolate',
    (p) => p.cannabisData?.cannabisCategory === 'isolate',
  ),
  c(
    'cultivarType',
    () => ['indica'],
    (p) => p.cannabisData?.cultivarType === 'indica',
  ),
  c(
    'thcPercentage',
    () => ({ min: 10 }),
    (p) => typeof p.cannabisData?.thcPercentage === 'number' && p.cannabisData.thcPercentage >= 10,
  ),
  c(
    'cbdPercentage',
    () => ({ min: 5, max: 10 }),
    (p) =>
      typeof p.cannabisData?.cbdPercentage === 'number' &&
      p.cannabisData.cbdPercentage >= 5 &&
      p.cannabisData.cbdPercentage <= 10,
  ),
  c(
    'thcCbdRatio',
    () => [first((p) => p.cannabisData?.thcCbdRatio)],
    (p, v) => v.includes(p.cannabisData?.thcCbdRatio),
  ),
  c(
    'strain',
    () => first((p) => p.cannabisData?.strain).toUpperCase(),
    (p, v) => p.cannabisData?.strain?.toUpperCase() === v,
  ),
  c(
    'terpene',
    () => ['β-Caryophyllene'],
    (p) => p.cannabisData?.terpenes.some((t: any) => t.name === 'β-Caryophyllene') ?? false,
  ),
  c(
    'minorCannabinoid',
    () => 'Δ8-THC',
    (p) => p.cannabisData?.minorCannabinoids.some((t: any) => t.name === 'Δ8-THC') ?? false,
  ),
  // narcotic has no record field in the spec: the dataset's facts say what the filter sees.
  c(
    'narcotic',
    () => 'yes',
    (_p, _v, i) => facts[i]!.narcotic === 'yes',
  ),
  c(
    'biocide',
    () => 'unknown',
    (p) => p.biocide === 'unknown',
  ),
  c(
    'scheduleCode',
    () => 'S4',
    (p) => p.scheduleCode === 'S4',
  ),
  c(
    'artgCategory',
    () => 'listed',
    (p) => p.artgCategory === 'listed',
  ),
  c(
    'attributes',
    () => [first((p) => p.attributes[0]), String(first((p, i) => (i > 200 ? p.attributes[0] : undefined)))],
    (p, v) => p.attributes.some((a: number) => v.map(Number).includes(a)),
  ),
  c(
    'dietaryRestrictions',
    () => 'vegan',
    (p) => anyId(p.dietaryRestrictions, ['vegan']),
  ),
  c(
    'colors',
    () => ['blue', 'red'],
    (p, v) => anyId(p.colors, v),
  ),
  c(
    'notApplicableField',
    () => ['pbs'],
    (p) => p.notApplicableField.includes('pbs'),
  ),
  c(
    'officialDeletionAt',
    () => first((p) => p.officialDeletionAt),
    (p, v) => p.officialDeletionAt === v,
  ),
  c(
    'createdAt',
    () => upperQuantile(products.map((p) => p.meta.createdAt)),
    (p, v) => p.meta.createdAt >= v,
  ),
  c(
    'updatedSince',
    () => upperQuantile(products.map((p) => p.meta.updatedAt)),
    (p, v) => p.meta.updatedAt >= v,
  ),
];

describe('products filters', () => {
  it('covers every filter of the spec (those of the live service only: test/sandbox/live-filters.test.ts)', () => {
    const live = new Set<string>(LIVE_PRODUCT_FILTERS);
    expect(cases.map((c) => c.name).sort()).toEqual(
      Object.keys(productFilters)
        .filter((n) => !live.has(n))
        .sort(),
    );
  });

  it.each(cases)('$name alone and inside and/or/not', async (testCase) => {
    const { value, match } = testCase.make();
    const leaf = { [testCase.name]: value };
    const alone = expected(match);
    expect(alone.length, 'the test value must match some products').toBeGreaterThan(0);
    expect(alone.length, 'the test value must not match every product').toBeLessThan(products.length);
    expect(await ids(leaf)).toEqual(alone);
    expect(await ids({ and: [leaf, { status: 'active' }] })).toEqual(
      expected((p, i) => match(p, i) && p.status === 'active'),
    );
    const brand = products[0].brands[0]?.id ?? 1;
    expect(await ids({ or: [leaf, { brand }] })).toEqual(expected((p, i) => match(p, i) || anyId(p.brands, [brand])));
    // `not` inside `and` keeps the answer small while checking the complement exactly.
    expect(await ids({ and: [{ not: leaf }, { status: 'inactive' }] })).toEqual(
      expected((p, i) => !match(p, i) && p.status === 'inactive'),
    );
  });
});

describe('filter parameter forms', () => {
  it('timestamp filters take {from, until} (inclusive, each optional) as well as a plain value', async () => {
    const sorted = [...new Set(products.map((p) => p.meta.createdAt))].sort((a, b) => a - b);
    const from = sorted[100]!;
    const until = sorted[300]!;
    expect(await ids({ createdAt: { from, until } })).toEqual(
      expected((p) => p.meta.createdAt >= from && p.meta.createdAt <= until),
    );
    expect(await ids({ createdAt: { until } })).toEqual(expected((p) => p.meta.createdAt <= until));
    expect(await ids({ updatedSince: { from } })).toEqual(expected((p) => p.meta.updatedAt >= from));
    const dates = [...new Set(products.map((p) => p.officialDeletionAt).filter((d) => d !== null))].sort(
      (a, b) => a - b,
    );
    expect(await ids({ officialDeletionAt: { from: dates[2], until: dates[10] } })).toEqual(
      expected(
        (p) => p.officialDeletionAt !== null && p.officialDeletionAt >= dates[2] && p.officialDeletionAt <= dates[10],
      ),
    );
  });

  it('search takes type contains, startsWith and exact, case-insensitively, in the given locale', async () => {
    const name = first((p) => p.name.nl);
    expect(await ids({ search: { query: name.toUpperCase(), locale: 'nl', type: 'exact' } })).toEqual(
      expected((p) => p.name.nl?.toLowerCase() === name.toLowerCase()),
    );
    const prefix = name.split(' ')[0]!.toLowerCase();
    expect(await ids({ search: { query: prefix, locale: 'nl', type: 'startsWith' } })).toEqual(
      expected((p) => p.name.nl?.toLowerCase().startsWith(prefix) ?? false),
    );
    expect(await ids({ search: { query: 'comprimés', locale: 'fr', type: 'contains' } })).toEqual(
      expected((p) => p.name.fr?.toLowerCase().includes('comprimés') ?? false),
    );
    expect(await ids({ search: { query: 'paracetamol', locale: 'xx' } })).toEqual([]);
  });

  it('hasContent takes the flags name, photo and leaflet too', async () => {
    expect(await ids({ hasContent: { flag: 'name', locale: 'en' } })).toEqual(expected((p) => p.name.en !== undefined));
    expect(await ids({ hasContent: { flag: 'photo', locale: 'de' } })).toEqual(
      expected((p) => p.photos.some((ph: any) => ph.locales.includes('de'))),
    );
    expect(await ids({ hasContent: { flag: 'leaflet', locale: 'nl' } })).toEqual(
      expected((p) => p.leaflets.some((l: any) => l.url.nl !== undefined)),
    );
  });

  it('combinators nest', async () => {
    const filter = {
      or: [
        { and: [{ status: 'active' }, { not: { hasCannabisData: false } }] },
        { not: { or: [{ status: 'active' }, { status: 'inactive' }, { status: 'replaced' }] } },
      ],
    };
    expect(await ids(filter)).toEqual(
      expected((p) => (p.status === 'active' && p.hasCannabisData) || p.status === 'no_selection'),
    );
  });
});
