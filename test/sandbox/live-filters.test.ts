// Issue 24 (the live service, second look), sandbox side: under the live profiles (be, fr, au)
// the sandbox answers lookups wrapped ({product}/{media}), takes the media filter `type` and
// refuses the spec's guessed `kind` (400), serves the media, product and organization filters
// public clients of the live service use, and the hasContent flags name/media/descriptions; a
// 7-digit cipOrAcl7 search also returns products whose 13-digit codes merely start with it. The
// spec profile keeps its answers and refuses the live-only names. Each filter is checked alone
// and inside and/or/not against a predicate over the served records (or, where a record states
// nothing, the dataset fact live-filters.ts documents).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIVE_MEDIA_FILTERS, LIVE_PRODUCT_FILTERS } from '../../src/catalog/index.js';
import {
  mediaAvailable,
  mediaLinkType,
  mediaPublished,
  organizationNumbers,
  productEcommerce,
  productPrescription,
} from '../../src/sandbox/live-filters.js';
import type { SandboxProfile } from '../../src/sandbox/profiles.js';
import { localeBit } from '../../src/sandbox/vocabulary.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

const LIVE = ['be', 'fr', 'au'] as const;
const sandboxes: Partial<Record<SandboxProfile, TestSandbox>> = {};
const products: Partial<Record<SandboxProfile, any[]>> = {};
const media: Partial<Record<SandboxProfile, any[]>> = {};

beforeAll(async () => {
  for (const profile of [...LIVE, 'spec'] as const) {
    // fr: acl13 appears only from product 2,500 on (LATE_FIELDS.regional).
    const sb = await startTestSandbox({ products: profile === 'fr' ? 2800 : 1500, seed: 24, profile });
    sandboxes[profile] = sb;
    products[profile] = (
      await sb.stream('/v4/products/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } })
    ).lines.map((l) => l.result);
    media[profile] = (await sb.stream('/v4/media/stream', {})).lines.map((l) => l.result);
  }
});
afterAll(async () => {
  for (const sb of Object.values(sandboxes)) await sb.close();
});

const sb = (p: SandboxProfile) => sandboxes[p]!;
async function productIds(profile: SandboxProfile, filter: unknown): Promise<string[]> {
  const { lines } = await sb(profile).stream('/v4/products/stream', { filter, sorting: { id: 'ASC' } });
  return lines.map((l) => l.result.id);
}
async function mediaIds(profile: SandboxProfile, filter: unknown, sorting?: unknown): Promise<number[]> {
  const { lines } = await sb(profile).stream('/v4/media/stream', { filter, ...(sorting ? { sorting } : {}) });
  return lines.map((l) => l.result.id);
}

/** Checks a leaf alone and inside and/or/not against `match` over `records`. */
async function checkLeaf<R extends { id: unknown }>(
  records: R[],
  ask: (filter: unknown) => Promise<unknown[]>,
  leaf: unknown,
  match: (r: R, i: number) => boolean,
  other: { filter: unknown; match: (r: R, i: number) => boolean },
): Promise<void> {
  const want = (pred: (r: R, i: number) => boolean) => records.filter((r, i) => pred(r, i)).map((r) => r.id);
  const alone = want(match);
  expect(alone.length, 'the test value must match some records').toBeGreaterThan(0);
  expect(alone.length, 'the test value must not match every record').toBeLessThan(records.length);
  expect(await ask(leaf)).toEqual(alone);
  expect(await ask({ and: [leaf, other.filter] })).toEqual(want((r, i) => match(r, i) && other.match(r, i)));
  expect(await ask({ or: [leaf, other.filter] })).toEqual(want((r, i) => match(r, i) || other.match(r, i)));
  expect(await ask({ not: leaf })).toEqual(want((r, i) => !match(r, i)));
}

describe('lookups under the live profiles answer {product} / {media} (F1)', () => {
  it.each(LIVE)('%s: products/find and media/find wrap the record; spec answers it bare', async (profile) => {
    for (const p of [profile, 'spec'] as const) {
      const product = products[p]![7];
      const found = await sb(p).post(`/v4/products/find?id=${product.id}`, undefined, { method: 'GET' });
      expect(found.status).toBe(200);
      expect(found.json()).toEqual(p === 'spec' ? product : { product });
      const item = media[p]![3];
      const m = await sb(p).post(`/v4/media/find?id=${item.id}`, undefined, { method: 'GET' });
      expect(m.json()).toEqual(p === 'spec' ? item : { media: item });
    }
    const missing = await sb(profile).post('/v4/products/find?id=P9999999', undefined, { method: 'GET' });
    expect(missing.status).toBe(404);
  });
});

describe('media filters under the live profiles (F1, F3)', () => {
  const other = { filter: { type: 'photo' }, match: (r: any) => r.kind === 'photo' };

  it.each(LIVE)('%s: `type` filters the media type; `kind` is refused with 400 naming `type`', async (profile) => {
    const all = media[profile]!;
    await checkLeaf(
      all,
      (f) => mediaIds(profile, f),
      { type: ['frontal', 'link'] },
      (r) => r.kind !== 'photo',
      {
        filter: { photoType: 'packshot' },
        match: (r) => r.photoType === 'packshot',
      },
    );
    const refused = await sb(profile).post('/v4/media/stream', { filter: { and: [{ kind: 'frontal' }] } });
    expect(refused.status).toBe(400);
    expect(refused.json().error.message).toMatch(
      /^filter\.and\[0\]\.kind: unknown filter "kind"; did you mean "type"\?/,
    );
  });

  it('spec keeps `kind` (our earlier decision) and takes `type`; it refuses the live-only names', async () => {
    const frontals = media.spec!.filter((r) => r.kind === 'frontal').map((r) => r.id);
    expect(await mediaIds('spec', { kind: 'frontal' })).toEqual(frontals);
    expect(await mediaIds('spec', { type: 'frontal' })).toEqual(frontals);
    for (const name of LIVE_MEDIA_FILTERS) {
      const value = name === 'touchedAt' ? 0 : name === 'published' || name === 'available' ? true : 'x';
      const answer = await sb('spec').post('/v4/media/stream', { filter: { [name]: value } });
      expect(answer.status, name).toBe(400);
      expect(answer.json().error.message).toContain(`unknown filter "${name}"`);
    }
    for (const name of LIVE_PRODUCT_FILTERS) {
      const answer = await sb('spec').post('/v4/products/stream', { filter: { [name]: true }, sorting: { id: 'ASC' } });
      expect(answer.status, name).toBe(400);
    }
    expect((await sb('spec').post('/v4/organizations/query', { filter: { apbNr: '1' } })).status).toBe(400);
  });

  const mediaCases: { name: string; value: (all: any[]) => unknown; match: (r: any, v: any) => boolean }[] = [
    { name: 'published', value: () => false, match: (r) => !mediaPublished(r.id - 1) },
    { name: 'available', value: () => true, match: (r) => mediaAvailable(r.id - 1) },
    {
      name: 'organization',
      value: (all) => [all[0].organizations[0].id],
      match: (r, v) => v.includes(sb('be').dataset.organization1[sb('be').dataset.mediaOwner(r.id - 1)]),
    },
    { name: 'targetGroup', value: () => 'pharmacist', match: (r) => (r.targetGroups ?? []).includes('pharmacist') },
    {
      name: 'linkType',
      value: () => ['brochure', 'video'],
      match: (r, v) => v.includes(mediaLinkType(sb('be').dataset, r.id - 1)),
    },
    {
      // Frontal records state no locales; the dataset's mask is what photos and links state.
      name: 'locale',
      value: () => ['de'],
      match: (r) => {
        const suited = (sb('be').dataset.mediaLocales[r.id - 1]! & localeBit('de')) !== 0;
        if (r.locales) expect(r.locales.includes('de')).toBe(suited);
        return suited;
      },
    },
    {
      name: 'touchedAt',
      value: (all) => [...all.map((r) => r.meta.updatedAt)].sort((a, b) => a - b)[Math.floor(all.length * 0.8)],
      match: (r, v) => r.meta.updatedAt >= v,
    },
  ];

  it('cover every media filter the spec does not have', () => {
    expect(mediaCases.map((c) => c.name).sort()).toEqual([...LIVE_MEDIA_FILTERS].sort());
  });

  it.each(mediaCases)('be: $name alone and inside and/or/not', async ({ name, value, match }) => {
    const all = media.be!;
    const v = value(all);
    await checkLeaf(
      all,
      (f) => mediaIds('be', f),
      { [name]: v },
      (r) => match(r, v),
      other,
    );
  });

  it('be: the touchedAt sorting orders by meta.updatedAt (ties by id), both directions', async () => {
    const all = media.be!;
    const asc = [...all].sort((a, b) => a.meta.updatedAt - b.meta.updatedAt || a.id - b.id).map((r) => r.id);
    expect(await mediaIds('be', undefined, { touchedAt: 'ASC' })).toEqual(asc);
    const desc = [...all].sort((a, b) => b.meta.updatedAt - a.meta.updatedAt || a.id - b.id).map((r) => r.id);
    expect(await mediaIds('be', undefined, { touchedAt: 'DESC' })).toEqual(desc);
  });
});

describe('product filters of the live service (F1, F2, F3)', () => {
  const facts = (p: SandboxProfile, i: number) => sb(p).dataset.productFacts(i);

  it('be: cnk, as strings with their zeros or as integers', async () => {
    const all = products.be!;
    const withCnk = all.filter((p) => p.cnk !== undefined);
    const codes = [withCnk[0].cnk, withCnk[5].cnk];
    expect(codes[0]).toMatch(/^00\d{5}$/);
    await checkLeaf(
      all,
      (f) => productIds('be', f),
      { cnk: codes },
      (p) => codes.includes(p.cnk),
      {
        filter: { status: 'active' },
        match: (p) => p.status === 'active',
      },
    );
    expect(await productIds('be', { cnk: Number(codes[0]) })).toEqual([withCnk[0].id]);
  });

  it('fr: cip13 and acl13 match their codes exactly', async () => {
    const all = products.fr!;
    const cip = all.find((p) => p.cip13)!.cip13;
    await checkLeaf(
      all,
      (f) => productIds('fr', f),
      { cip13: cip },
      (p) => p.cip13 === cip,
      {
        filter: { status: 'active' },
        match: (p) => p.status === 'active',
      },
    );
    const acl = all.filter((p) => p.acl13).map((p) => p.acl13);
    expect(acl.length).toBeGreaterThan(0);
    expect(await productIds('fr', { acl13: acl[0] })).toEqual(all.filter((p) => p.acl13 === acl[0]).map((p) => p.id));
  });

  it('fr: a 7-digit cipOrAcl7 search also returns products whose cip13/acl13 merely start with it', async () => {
    const all = products.fr!;
    // A code that both a product carries as its cipOrAcl7 and another's cip13 starts with.
    const code = all
      .map((p) => p.cipOrAcl7)
      .find((c) => c && all.some((q) => q.cipOrAcl7 !== c && (q.cip13?.startsWith(c) || q.acl13?.startsWith(c))));
    expect(code, 'the data must hold a 7-digit code that prefixes an unrelated product').toBeDefined();
    const prefix = (p: any) => p.cipOrAcl7 === code || p.cip13?.startsWith(code) || p.acl13?.startsWith(code);
    const got = await productIds('fr', { cipOrAcl7: code });
    expect(got).toEqual(all.filter(prefix).map((p) => p.id));
    const unrelated = all.filter((p) => got.includes(p.id) && p.cipOrAcl7 !== code);
    expect(unrelated.length).toBeGreaterThan(0);
    await checkLeaf(all, (f) => productIds('fr', f), { cipOrAcl7: code }, prefix, {
      filter: { status: 'active' },
      match: (p) => p.status === 'active',
    });
  });

  it.each(LIVE)('%s: media, ecommerce, prescription, locale', async (profile) => {
    const all = products[profile]!;
    const f = (i: number) => facts(profile, i);
    const ds = sb(profile).dataset;
    const ids = [3, 40, 41];
    const linked = new Set(ids.flatMap((id) => ds.mediaProductIndexes(id - 1)));
    const other = { filter: { status: 'active' }, match: (p: any) => p.status === 'active' };
    await checkLeaf(
      all,
      (q) => productIds(profile, q),
      { media: ids },
      (_p, i) => linked.has(i),
      other,
    );
    expect(await productIds(profile, { media: ids })).toEqual(
      media[profile]!.filter((m) => ids.includes(m.id))
        .flatMap((m) => m.products)
        .filter((x, k, a) => a.indexOf(x) === k)
        .sort(),
    );
    // `ecommerce` is documented for be and fr only (issue 40): the au service refuses it.
    if (profile !== 'au')
      await checkLeaf(
        all,
        (q) => productIds(profile, q),
        { ecommerce: ['no', 'unknown'] },
        (_p, i) => productEcommerce(f(i), i) !== 'yes',
        other,
      );
    else
      expect(
        (await sb(profile).post('/v4/products/stream', { filter: { ecommerce: 'no' }, sorting: { id: 'ASC' } })).status,
      ).toBe(400);
    await checkLeaf(
      all,
      (q) => productIds(profile, q),
      { prescription: true },
      (_p, i) => productPrescription(f(i)),
      other,
    );
    const locale = profile === 'be' ? 'de' : 'en';
    if (profile !== 'au')
      await checkLeaf(
        all,
        (q) => productIds(profile, q),
        { locale },
        (p) => p.name[locale] !== undefined,
        other,
      );
    else expect(await productIds(profile, { locale: 'en' })).toEqual(all.map((p) => p.id));
  });

  it('be: apbCategory takes the string codes products carry (one or more)', async () => {
    const all = products.be!;
    expect(all.some((p) => p.apbCategory === 'homeopathy')).toBe(true);
    await checkLeaf(
      all,
      (q) => productIds('be', q),
      { apbCategory: ['homeopathy'] },
      (p) => p.apbCategory === 'homeopathy',
      { filter: { apbCategory: 'medical_device' }, match: (p) => p.apbCategory === 'medical_device' },
    );
  });

  it.each(LIVE)('%s: hasContent flags name, media and descriptions; another flag is refused', async (profile) => {
    const all = products[profile]!;
    const locale = profile === 'au' ? 'en' : 'fr';
    const other = { filter: { status: 'active' }, match: (p: any) => p.status === 'active' };
    const cases: [string, (p: any) => boolean][] = [
      ['name', (p) => p.name[locale] !== undefined],
      [
        'media',
        (p) => (p.photos ?? []).some((ph: any) => (ph.locales ?? null) === null || ph.locales.includes(locale)),
      ],
      ['descriptions', (p) => (p.descriptions ?? []).some((d: any) => d.content?.[locale] !== undefined)],
    ];
    for (const [flag, match] of cases) {
      const got = await productIds(profile, { hasContent: { flag, locale } });
      expect(got.length, flag).toBeGreaterThan(0);
      if (flag === 'media') expect(got.every((id) => all.find((p) => p.id === id).photos?.length > 0)).toBe(true);
      else if (all.every(match)) expect(got).toEqual(all.map((p) => p.id));
      else await checkLeaf(all, (q) => productIds(profile, q), { hasContent: { flag, locale } }, match, other);
    }
    const refused = await sb(profile).post('/v4/products/stream', {
      filter: { hasContent: { flag: 'photo', locale } },
      sorting: { id: 'ASC' },
    });
    expect(refused.status).toBe(422);
    expect(refused.json().error.message).toContain('allowed: name, media, descriptions');
  });
});

describe('organization filters of the live service (F2)', () => {
  it('be: apbNr and rizivNr, as integers or strings', async () => {
    const { results } = await sb('be').query('/v4/organizations/query', {});
    const entries = sb('be').dataset.ref.organizations;
    const numbered = entries.filter((e) => organizationNumbers('be', e));
    expect(numbered.length).toBeGreaterThan(1);
    const [a, b] = numbered.map((e) => ({ id: e.record.id, ...organizationNumbers('be', e)! }));
    const ids = async (filter: unknown) =>
      (await sb('be').query('/v4/organizations/query', { filter })).results.map((r: any) => r.id);
    expect(await ids({ apbNr: a!.apbNr })).toEqual([a!.id]);
    expect(await ids({ apbNr: [Number(a!.apbNr), b!.apbNr] })).toEqual([a!.id, b!.id]);
    expect(await ids({ rizivNr: Number(b!.rizivNr) })).toEqual([b!.id]);
    expect(await ids({ or: [{ rizivNr: a!.rizivNr }, { apbNr: b!.apbNr }] })).toEqual([a!.id, b!.id]);
    expect(await ids({ not: { apbNr: a!.apbNr } })).toEqual(
      results.map((r: any) => r.id).filter((id: number) => id !== a!.id),
    );
  });
});
