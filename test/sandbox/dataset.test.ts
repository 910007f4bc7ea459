// The generated catalog, fetched over loopback: every record passes the
// src/catalog schemas, records are consistent with each other, the data
// exercises the spec's corners, and the same seed gives the same bytes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_REACHABLE_RESULTS, resourceSchemas } from '../../src/catalog/index.js';
import { Dataset, GENERATION_EPOCH } from '../../src/sandbox/index.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

const PRODUCTS = 3000;
let sb: TestSandbox;
let products: any[];
let media: any[];
const reference: Record<string, any[]> = {};

beforeAll(async () => {
  sb = await startTestSandbox({ products: PRODUCTS, seed: 7 });
  products = (await sb.stream('/v4/products/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } })).lines.map(
    (l) => l.result,
  );
  media = (await sb.stream('/v4/media/stream', {})).lines.map((l) => l.result);
  for (const name of ['organizations', 'corrections', 'updates', 'catalog-categories', 'brands']) {
    reference[name] = (await sb.query(`/v4/${name}/query`, {})).results;
  }
});
afterAll(() => sb.close());

describe('generated records', () => {
  it('every product, media item and reference record validates against its resource schema', () => {
    expect(products).toHaveLength(PRODUCTS);
    expect(media).toHaveLength(sb.dataset.mediaCount);
    const check = (schema: keyof typeof resourceSchemas, records: any[]) => {
      expect(records.length).toBeGreaterThan(0);
      for (const r of records) {
        const parsed = resourceSchemas[schema].safeParse(r);
        if (!parsed.success)
          throw new Error(`${schema} ${JSON.stringify(r.id)}: ${JSON.stringify(parsed.error.issues)}`);
      }
    };
    check('product', products);
    check('media', media);
    check('organization', reference.organizations!);
    check('correction', reference.corrections!);
    check('news-item', reference.updates!);
    check('catalog-category', reference['catalog-categories']!);
    check('brand', reference.brands!);
  });

  it('ids: fixed-width product ids in generation order, integer reference ids, string catalog category ids', () => {
    expect(products[0].id).toBe('P0000001');
    expect(products.at(-1).id).toBe(`P${String(PRODUCTS).padStart(7, '0')}`);
    expect([...products.map((p) => p.id)].sort()).toEqual(products.map((p) => p.id));
    for (const name of ['organizations', 'corrections', 'updates', 'brands'])
      expect(reference[name]!.every((r) => Number.isInteger(r.id))).toBe(true);
    expect(reference['catalog-categories']!.every((c) => typeof c.id === 'string')).toBe(true);
  });

  it('is consistent: brands, organizations, families and categories exist; media link back to their products', () => {
    const brandIds = new Set(reference.brands!.map((b) => b.id));
    const orgIds = new Set(reference.organizations!.map((o) => o.id));
    const familyIds = new Set(reference.organizations!.flatMap((o) => o.productFamilies));
    const catalogIds = new Set(reference['catalog-categories']!.map((c) => c.id));
    const byId = new Map(products.map((p) => [p.id, p]));
    for (const p of products) {
      for (const b of p.brands) expect(brandIds.has(b.id)).toBe(true);
      for (const o of p.organizations) expect(orgIds.has(o.id)).toBe(true);
      for (const f of p.productFamily) expect(familyIds.has(f.id)).toBe(true);
      for (const c of p.catalogCategories) expect(catalogIds.has(c.id)).toBe(true);
      if (p.replacement) expect(byId.has(p.replacement)).toBe(true);
    }
    // A brand belongs to the organization that lists it.
    const ownerOf = new Map(reference.organizations!.flatMap((o) => o.brands.map((b: number) => [b, o.id])));
    for (const p of products)
      for (const b of p.brands) expect(p.organizations.map((o: any) => o.id)).toContain(ownerOf.get(b.id));
    // Every media item lists products whose photos/frontals/links show it (by URL), and back.
    const urlsOf = (p: any) =>
      new Set([...p.photos, ...p.frontals].map((x: any) => x.formats.thumbnail).concat(p.links.map((l: any) => l.url)));
    for (const m of media) {
      expect(m.products.length).toBeGreaterThan(0);
      const key = m.kind === 'link' ? m.url : m.formats.thumbnail;
      for (const id of m.products) expect(urlsOf(byId.get(id)).has(key)).toBe(true);
    }
    const mediaUrls = new Set(media.map((m) => (m.kind === 'link' ? m.url : m.formats.thumbnail)));
    for (const p of products) for (const u of urlsOf(p)) expect(mediaUrls.has(u)).toBe(true);
    expect(media.some((m) => m.products.length > 1)).toBe(true);
    // Catalog categories form a tree: parents exist, no cycles, roots have parent null.
    const cats = new Map(reference['catalog-categories']!.map((c) => [c.id, c]));
    for (const c of cats.values()) {
      const seen = new Set<string>();
      for (let cur = c; cur.parent !== null; cur = cats.get(cur.parent)) {
        expect(cats.has(cur.parent)).toBe(true);
        expect(seen.has(cur.id)).toBe(false);
        seen.add(cur.id);
      }
    }
    expect([...cats.values()].filter((c) => c.parent === null).length).toBeGreaterThan(1);
    // Corrections and news items point at existing products.
    for (const c of reference.corrections!) expect(byId.has(c.product)).toBe(true);
    for (const n of reference.updates!) for (const id of n.products ?? []) expect(byId.has(id)).toBe(true);
  });

  it('exercises the spec corners', () => {
    const some = (pred: (p: any) => boolean) => products.filter(pred).length;
    // EAN/GTIN codes with leading zeros: the integer has fewer digits than declared.
    expect(some((p) => p.eanGtin13 !== undefined && p.eanGtin13 < 1e11)).toBeGreaterThan(PRODUCTS * 0.1);
    expect(
      some((p) => p.eanGtin13 !== undefined && p.eanGtin13 < 1e11) / some((p) => p.eanGtin13 !== undefined),
    ).toBeLessThan(0.3);
    expect(some((p) => p.eanGtin14 === undefined)).toBeGreaterThan(0);
    expect(some((p) => p.eanGtin8 !== undefined && p.eanGtin8 < 1e6)).toBeGreaterThan(0);
    expect(products.every((p) => p.ean.every((e: number) => Number.isSafeInteger(e) && e < 1e14))).toBe(true);
    // Missing locales, including names without en.
    expect(some((p) => p.name.en === undefined)).toBeGreaterThan(0);
    expect(some((p) => Object.keys(p.name).length === 4)).toBeGreaterThan(0);
    // Status corners.
    for (const s of ['active', 'inactive', 'replaced', 'no_selection'])
      expect(some((p) => p.status === s)).toBeGreaterThan(0);
    expect(products.filter((p) => p.status === 'replaced').every((p) => typeof p.replacement === 'string')).toBe(true);
    expect(products.filter((p) => p.status !== 'replaced').every((p) => p.replacement === undefined)).toBe(true);
    expect(some((p) => p.deleted)).toBeGreaterThan(0);
    // Cannabis data: null, sparse, and full with Unicode names.
    expect(some((p) => p.cannabisData === null && !p.hasCannabisData)).toBeGreaterThan(0);
    expect(
      some(
        (p) =>
          p.cannabisData?.thcPercentage !== null &&
          p.cannabisData?.minorCannabinoids.length &&
          p.cannabisData?.terpenes.length,
      ),
    ).toBeGreaterThan(0);
    expect(some((p) => p.cannabisData && Object.values(p.cannabisData).includes(null))).toBeGreaterThan(0);
    expect(some((p) => p.cannabisData?.minorCannabinoids.some((c: any) => c.name === 'Δ8-THC'))).toBeGreaterThan(0);
    expect(some((p) => p.cannabisData?.terpenes.some((t: any) => t.name === 'β-Caryophyllene'))).toBeGreaterThan(0);
    // Media corners.
    expect(some((p) => p.photos.length === 0)).toBeGreaterThan(0);
    expect(
      some((p) => p.frontals.some((f: any) => f.formats.largeWebp === undefined && f.formats.largeJpg)),
    ).toBeGreaterThan(0);
    expect(
      media.filter((m) => m.kind === 'frontal').every((m) => 'mediumJpeg' in m.formats && !('large' in m.formats)),
    ).toBe(true);
    // Prices are integer cents.
    expect(products.every((p) => Number.isInteger(p.publicPrice) && Number.isInteger(p.pharmacistPrice))).toBe(true);
  });

  it('spreads timestamps over years, shares createdAt in bulk imports, keeps updatedAt in [createdAt, epoch)', () => {
    const years = new Set(products.map((p) => new Date(p.meta.createdAt * 1000).getUTCFullYear()));
    expect(Math.min(...years)).toBe(2015);
    expect(Math.max(...years)).toBe(2025);
    for (const p of products) {
      expect(p.meta.updatedAt).toBeGreaterThanOrEqual(p.meta.createdAt);
      expect(p.meta.updatedAt).toBeLessThan(GENERATION_EPOCH);
    }
    const perInstant = new Map<number, number>();
    for (const p of products) perInstant.set(p.meta.createdAt, (perInstant.get(p.meta.createdAt) ?? 0) + 1);
    const shared = [...perInstant.values()].filter((n) => n >= 100);
    expect(shared.length).toBeGreaterThanOrEqual(3);
  });
});

describe('bulk imports', () => {
  it('puts one import across the result-window boundary in createdAt order', () => {
    const ds = new Dataset({ products: 12_000, seed: 3, profile: 'spec' });
    const straddle = ds.bulkImports.find((b) => b.straddlesWindow)!;
    expect(straddle.size).toBeGreaterThanOrEqual(100);
    const sorted = [...ds.createdAt].sort((a, b) => a - b);
    const first = sorted.indexOf(straddle.at);
    const last = sorted.lastIndexOf(straddle.at);
    expect(first).toBeLessThan(MAX_REACHABLE_RESULTS);
    expect(last).toBeGreaterThanOrEqual(MAX_REACHABLE_RESULTS);
  });

  it('bulkInstant puts exactly that many products (at least) on one instant', () => {
    const ds = new Dataset({ products: 15_000, bulkInstant: 11_000, profile: 'spec' });
    const b = ds.bulkImports.at(-1)!;
    expect(b.size).toBe(11_000);
    expect(ds.createdAt.filter((t) => t === b.at).length).toBeGreaterThanOrEqual(11_000);
  });
});

describe('determinism', () => {
  it('the same seed serves the same bytes; another seed does not', async () => {
    const body = {
      filter: { createdAt: 0 },
      sorting: { name: { direction: 'ASC', locale: 'fr' } },
      page: { no: 1, size: 100 },
    };
    const [a, b, c] = await Promise.all([
      startTestSandbox({ products: 800, seed: 42 }),
      startTestSandbox({ products: 800, seed: 42 }),
      startTestSandbox({ products: 800, seed: 43 }),
    ]);
    try {
      const pages = await Promise.all([a, b, c].map((s) => s.post('/v4/products/query', body)));
      expect(pages[0]!.status).toBe(200);
      expect(pages[0]!.body.equals(pages[1]!.body)).toBe(true);
      expect(pages[0]!.body.equals(pages[2]!.body)).toBe(false);
      const streams = await Promise.all(
        [a, b].map((s) => s.post('/v4/media/stream', { sorting: { createdAt: 'DESC' } })),
      );
      expect(streams[0]!.body.equals(streams[1]!.body)).toBe(true);
      for (const path of [
        '/v4/organizations/query',
        '/v4/corrections/query',
        '/v4/updates/query',
        '/v4/brands/query',
      ]) {
        const [x, y] = await Promise.all([a, b].map((s) => s.post(path, {})));
        expect(x!.body.equals(y!.body)).toBe(true);
      }
    } finally {
      await Promise.all([a, b, c].map((s) => s.close()));
    }
  });
});
