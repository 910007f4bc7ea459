// Every filter of media/stream and of the reference endpoints (organizations,
// corrections, updates, catalog-categories, brands) over loopback, alone and
// inside and/or/not, against an independent predicate over the served
// records (or, for values the spec shows no field for, the dataset's entry).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIVE_MEDIA_FILTERS, LIVE_ORGANIZATION_FILTERS, endpoints } from '../../src/catalog/index.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let sb: TestSandbox;
const all: Record<string, any[]> = {};

const PATHS = {
  media: '/v4/media/stream',
  organizations: '/v4/organizations/query',
  corrections: '/v4/corrections/query',
  updates: '/v4/updates/query',
  'catalog-categories': '/v4/catalog-categories/query',
  brands: '/v4/brands/query',
} as const;
type Resource = keyof typeof PATHS;

async function ids(resource: Resource, filter: unknown): Promise<unknown[]> {
  if (resource === 'media') return (await sb.stream(PATHS.media, { filter })).lines.map((l) => l.result.id);
  return (await sb.query(PATHS[resource], { filter })).results.map((r: any) => r.id);
}

beforeAll(async () => {
  sb = await startTestSandbox({ products: 1200, seed: 9 });
  all.media = (await sb.stream(PATHS.media, {})).lines.map((l) => l.result);
  for (const r of Object.keys(PATHS).filter((k) => k !== 'media'))
    all[r] = (await sb.query(PATHS[r as Resource], {})).results;
});
afterAll(() => sb.close());

type Case = { resource: Resource; name: string; value: () => unknown; match: (r: any, v: any) => boolean };
const quantile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.floor(values.length * q)]!;
const org = (r: any) => sb.dataset.ref.organizations[r.id - 1]!;
const correction = (r: any) => sb.dataset.corrections[r.id - 1]!;
const category = (r: any) => sb.dataset.ref.catalogCategories.find((c) => c.record.id === r.id)!;
const firstOf = (resource: Resource, pick: (r: any) => unknown) =>
  all[resource]!.map(pick).find((v) => v !== undefined && v !== null);

const cases: Case[] = [
  { resource: 'media', name: 'id', value: () => [1, '5', 40, 99_999_999], match: (r) => [1, 5, 40].includes(r.id) },
  {
    resource: 'media',
    name: 'product',
    value: () => ['P0000002', 'P0000100'],
    match: (r, v) => r.products.some((p: string) => v.includes(p)),
  },
  { resource: 'media', name: 'type', value: () => ['frontal', 'link'], match: (r, v) => v.includes(r.kind) },
  {
    resource: 'media',
    name: 'photoType',
    value: () => 'lifestyle_image',
    match: (r) => r.photoType === 'lifestyle_image',
  },
  {
    resource: 'media',
    name: 'createdAt',
    value: () =>
      quantile(
        all.media!.map((m) => m.meta.createdAt),
        0.8,
      ),
    match: (r, v) => r.meta.createdAt >= v,
  },
  {
    resource: 'media',
    name: 'updatedSince',
    value: () => ({
      from: quantile(
        all.media!.map((m) => m.meta.updatedAt),
        0.7,
      ),
    }),
    match: (r, v) => r.meta.updatedAt >= v.from,
  },

  { resource: 'organizations', name: 'id', value: () => [1, 3, 99_999], match: (r) => [1, 3].includes(r.id) },
  { resource: 'organizations', name: 'type', value: () => 'marketing', match: (r) => r.type === 'marketing' },
  {
    resource: 'organizations',
    name: 'name',
    value: () => all.organizations![4].name.toUpperCase(),
    match: (r, v) => r.name.toUpperCase() === v,
  },
  {
    resource: 'organizations',
    name: 'searchName',
    value: () => 'PHARMA',
    match: (r) => r.name.toLowerCase().includes('pharma'),
  },
  {
    resource: 'organizations',
    name: 'specializations',
    value: () => [firstOf('organizations', (r) => org(r).specializations[0])],
    match: (r, v) => org(r).specializations.some((s) => v.includes(s)),
  },
  {
    resource: 'organizations',
    name: 'vatNr',
    value: () => org(all.organizations![2]).vatNr.toLowerCase(),
    match: (r, v) => org(r).vatNr === v.toUpperCase(),
  },

  {
    resource: 'corrections',
    name: 'product',
    value: () => all.corrections![0].product,
    match: (r, v) => r.product === v,
  },
  {
    resource: 'corrections',
    name: 'status',
    value: () => 'handled',
    match: (r) => r.status === 'solved' || r.status === 'closed',
  },
  {
    resource: 'corrections',
    name: 'organization',
    value: () => correction(all.corrections![0]).organization,
    match: (r, v) => correction(r).organization === v,
  },
  {
    resource: 'corrections',
    name: 'search',
    value: () => 'PHOTO',
    match: (r) => r.text.toLowerCase().includes('photo'),
  },
  { resource: 'corrections', name: 'locale', value: () => ['fr', 'de'], match: (r, v) => v.includes(r.locale) },
  { resource: 'corrections', name: 'type', value: () => 'wrong_price', match: (r) => r.type === 'wrong_price' },
  {
    resource: 'corrections',
    name: 'createdBy',
    value: () => String(correction(all.corrections![0]).createdBy),
    match: (r, v) => correction(r).createdBy === Number(v),
  },
  {
    resource: 'corrections',
    name: 'createdAt',
    value: () =>
      quantile(
        all.corrections!.map((c) => c.meta.createdAt),
        0.5,
      ),
    match: (r, v) => r.meta.createdAt >= v,
  },

  { resource: 'updates', name: 'id', value: () => 5, match: (r) => r.id === 5 },
  {
    resource: 'updates',
    name: 'organization',
    value: () => [all.updates![0].organization, all.updates![1].organization],
    match: (r, v) => v.includes(r.organization),
  },
  { resource: 'updates', name: 'newsType', value: () => ['brand', 'product'], match: (r, v) => v.includes(r.type) },
  {
    resource: 'updates',
    name: 'createdAt',
    value: () => ({
      from: quantile(
        all.updates!.map((u) => u.meta.createdAt),
        0.2,
      ),
      until: quantile(
        all.updates!.map((u) => u.meta.createdAt),
        0.6,
      ),
    }),
    match: (r, v) => r.meta.createdAt >= v.from && r.meta.createdAt <= v.until,
  },
  {
    resource: 'updates',
    name: 'updatedSince',
    value: () =>
      quantile(
        all.updates!.map((u) => u.meta.updatedAt),
        0.5,
      ),
    match: (r, v) => r.meta.updatedAt >= v,
  },
  { resource: 'updates', name: 'locale', value: () => 'de', match: (r) => r.locales.includes('de') },
  {
    resource: 'updates',
    name: 'product',
    value: () => [firstOf('updates', (r) => r.products?.[0])],
    match: (r, v) => (r.products ?? []).some((p: string) => v.includes(p)),
  },
  {
    resource: 'updates',
    name: 'publicCategory',
    value: () => firstOf('updates', (r) => r.publicCategories?.[0]),
    match: (r, v) => (r.publicCategories ?? []).includes(v),
  },
  {
    resource: 'updates',
    name: 'brand',
    value: () => [firstOf('updates', (r) => r.brands?.[0])],
    match: (r, v) => (r.brands ?? []).some((b: number) => v.includes(b)),
  },
  {
    resource: 'updates',
    name: 'targetGroup',
    value: () => 'pharmacist',
    match: (r) => r.targetGroups.includes('pharmacist'),
  },

  { resource: 'catalog-categories', name: 'id', value: () => 'C02', match: (r) => r.id === 'C02' },
  { resource: 'catalog-categories', name: 'parent', value: () => 'C01', match: (r) => r.parent === 'C01' },
  {
    resource: 'catalog-categories',
    name: 'search',
    value: () => ({ query: 'PAIN', locale: 'en' }),
    match: (r) => r.name.en.toLowerCase().includes('pain'),
  },
  { resource: 'catalog-categories', name: 'deleted', value: () => true, match: (r) => category(r).deleted },

  { resource: 'brands', name: 'id', value: () => [1, 2, 3, 99_999], match: (r) => [1, 2, 3].includes(r.id) },
  { resource: 'brands', name: 'search', value: () => 'CARE', match: (r) => r.name.toLowerCase().includes('care') },
];

/** A second filter to combine with, per resource. */
const other: Record<Resource, { filter: unknown; match: (r: any) => boolean }> = {
  media: { filter: { type: 'photo' }, match: (r) => r.kind === 'photo' },
  organizations: { filter: { type: 'supplier' }, match: (r) => r.type === 'supplier' },
  corrections: { filter: { locale: 'en' }, match: (r) => r.locale === 'en' },
  updates: { filter: { newsType: 'organization' }, match: (r) => r.type === 'organization' },
  'catalog-categories': { filter: { parent: 'C05' }, match: (r) => r.parent === 'C05' },
  brands: { filter: { id: [4, 5] }, match: (r) => r.id === 4 || r.id === 5 },
};

describe('media and reference filters', () => {
  it('cover every filter of every endpoint the spec profile serves (the live ones: live-filters.test.ts)', () => {
    const live: Record<string, readonly string[]> = {
      'media.stream': LIVE_MEDIA_FILTERS,
      'organizations.query': LIVE_ORGANIZATION_FILTERS,
    };
    const names = (e: keyof typeof endpoints) =>
      Object.keys(endpoints[e].filters)
        .filter((n) => !(live[e] ?? []).includes(n))
        .sort();
    const of = (r: Resource) =>
      cases
        .filter((c) => c.resource === r)
        .map((c) => c.name)
        .sort();
    expect(of('media')).toEqual(names('media.stream'));
    expect(of('organizations')).toEqual(names('organizations.query'));
    expect(of('corrections')).toEqual(names('corrections.query'));
    expect(of('updates')).toEqual(names('updates.query'));
    expect(of('catalog-categories')).toEqual(names('catalog-categories.query'));
    expect(of('brands')).toEqual(names('brands.query'));
  });

  it.each(cases)('$resource $name alone and inside and/or/not', async ({ resource, name, value, match }) => {
    const v = value();
    const leaf = { [name]: v };
    const records = all[resource]!;
    const want = (pred: (r: any) => boolean) => records.filter(pred).map((r) => r.id);
    const alone = want((r) => match(r, v));
    expect(alone.length, 'the test value must match some records').toBeGreaterThan(0);
    expect(alone.length, 'the test value must not match every record').toBeLessThan(records.length);
    expect(await ids(resource, leaf)).toEqual(alone);
    const o = other[resource];
    expect(await ids(resource, { and: [leaf, o.filter] })).toEqual(want((r) => match(r, v) && o.match(r)));
    expect(await ids(resource, { or: [leaf, o.filter] })).toEqual(want((r) => match(r, v) || o.match(r)));
    expect(await ids(resource, { not: leaf })).toEqual(want((r) => !match(r, v)));
  });

  it('corrections status open matches only open ones (handled is the only grouped value)', async () => {
    expect(await ids('corrections', { status: 'open' })).toEqual(
      all.corrections!.filter((c) => c.status === 'open').map((c) => c.id),
    );
  });
});
