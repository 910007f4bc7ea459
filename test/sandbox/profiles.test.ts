// Sandbox profiles: `spec` serves the documented shapes, `au`/`be`/`fr`/`us` the
// live service's (issue 11 facts 1-12, shared/samples/live-shapes.json; issue 24
// facts 7-16, shared/samples/live-shapes-2.md) with each region's locales and fields; filters keep matching on the new shapes;
// output is deterministic per seed; --profile and CATALOG_SANDBOX_PROFILE
// choose the profile on the CLI.
import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { DEFAULT_PROFILE, Dataset, type SandboxProfile } from '../../src/sandbox/index.js';
import { LATE_FIELDS } from '../../src/sandbox/profiles.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

const COUNT = 3000;
const LOCALES_OF: Record<Exclude<SandboxProfile, 'spec'>, string[]> = {
  be: ['nl', 'fr', 'en', 'de'],
  fr: ['fr', 'en'],
  de: ['de', 'en'],
  au: ['en'],
  us: ['en'],
};
const REGIONAL: Record<Exclude<SandboxProfile, 'spec'>, string[]> = {
  be: ['cnk', 'bcfiCategory', 'apbCategory'],
  fr: ['cipOrAcl7', 'cip13', 'acl13'],
  de: ['pzn'],
  au: ['gstApplicable', 'artgId', 'scheduleCode', 'snomedMpp', 'snomedTpp', 'snomedCtpp'],
  us: ['upc12', 'upc11', 'upc10', 'gtin', 'ndc', 'isbn10', 'isbn13'],
};

describe.each(['be', 'fr', 'de', 'au', 'us'] as const)('profile %s', (profile) => {
  let sb: TestSandbox;
  let products: any[];
  beforeAll(async () => {
    sb = await startTestSandbox({ products: COUNT, seed: 5, profile });
    products = (await sb.stream('/v4/products/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } })).lines.map(
      (l) => l.result,
    );
  });
  afterAll(() => sb.close());

  const all = <T>(pick: (p: any) => T[] | T | undefined): T[] => products.flatMap((p) => pick(p) ?? []) as T[];

  it('codes are digit strings with leading zeros; ean[] may hold a UPC beside its zero-padded EAN-13', () => {
    for (const key of ['eanGtin8', 'eanGtin12', 'eanGtin13', 'eanGtin14'] as const) {
      const width = Number(key.slice(7));
      const values = all<string>((p) => p[key]);
      expect(values.length, key).toBeGreaterThan(0);
      for (const v of values) expect(v, key).toMatch(new RegExp(`^\\d{${width}}$`));
    }
    expect(all<string>((p) => p.eanGtin13).some((v) => v.startsWith('00'))).toBe(true);
    for (const v of all<unknown>((p) => p.gtin)) expect(v).toMatch(/^\d{14}$/);
    for (const v of all<unknown>((p) => p.ean)) expect(v).toMatch(/^\d{12,13}$/);
    const pair = products.find((p) => p.ean.length >= 2 && p.ean.at(-1) === `0${p.ean.at(-2)}`);
    expect(pair.ean.at(-2)).toBe(pair.eanGtin12);
  });

  it('brand and organization names are plain strings; contact data has nulls and empty strings', () => {
    expect(
      all<any>((p) => p.brands)
        .filter((b) => typeof b === 'object')
        .every((b) => typeof b.name === 'string'),
    ).toBe(true);
    const orgs = all<any>((p) => p.organizations);
    expect(orgs.every((o) => typeof o.name === 'string')).toBe(true);
    const contact = orgs.flatMap((o) => Object.values(o.contactInformation));
    expect(contact).toContain(null);
    expect(contact).toContain('');
    expect(contact.some((v) => typeof v === 'string' && v.length > 0)).toBe(true);
  });

  it('measures in kg/g/cm/mm, floats only late; conservation as {celsius: {value, unit}}; integer VAT', () => {
    const units = new Set(all<string>((p) => [p.weightWithUnit.unit, p.widthWithUnit.unit]));
    expect([...units].sort()).toEqual(['cm', 'g', 'kg', 'mm']);
    const firstFloat = products.findIndex((p) => !Number.isInteger(p.weightWithUnit.value));
    expect(firstFloat).toBeGreaterThanOrEqual(LATE_FIELDS.floatMeasure);
    const ranges = all<any>((p) => [p.conservationMin, p.conservationMax].filter((r) => r !== undefined));
    expect(ranges.length).toBeGreaterThan(0);
    for (const r of ranges) expect(r.celsius).toEqual({ value: expect.any(Number), unit: '°C' });
    expect(ranges.some((r) => r.fahrenheit?.unit === '°F')).toBe(true);
    for (const p of products) {
      expect(Object.keys(p.conservationLabel).sort()).toEqual([...LOCALES_OF[profile]].sort());
      expect(Number.isInteger(p.vat)).toBe(true);
      expect(Number.isInteger(p.publicPrice)).toBe(true);
    }
  });

  it('photos carry ids and miss optional fields; frontals carry type, displayOrder and the extra format keys', () => {
    const photos = all<any>((p) => p.photos);
    expect(photos.every((ph) => Number.isInteger(ph.id))).toBe(true);
    for (const key of ['displayOrder', 'locales', 'targetGroups', 'meta', 'visibleSides']) {
      expect(
        photos.some((ph) => ph[key] === undefined),
        key,
      ).toBe(true);
      expect(
        photos.some((ph) => ph[key] !== undefined),
        key,
      ).toBe(true);
    }
    const frontals = all<any>((p) => p.frontals);
    expect(
      frontals.every((f) => f.type === 'frontal' && Number.isInteger(f.id) && Number.isInteger(f.displayOrder)),
    ).toBe(true);
    const keys = new Set(frontals.flatMap((f) => Object.keys(f.formats)));
    for (const k of ['medium', 'mediumJpeg', 'large', 'largePng', 'huge', 'hugePng']) expect(keys.has(k), k).toBe(true);
    const groups = new Set(all<string>((p) => p.frontals.flatMap((f: any) => f.targetGroups)));
    expect([...groups].sort()).toEqual([
      'doctor',
      'homecare',
      'hospital',
      'nurse',
      'pharmacist',
      'physiotherapist',
      'public',
      'webshop',
    ]);
  });

  it('descriptions carry descriptionTag and the observed types; publicCategories carry order', () => {
    const descriptions = all<any>((p) => p.descriptions);
    expect(new Set(descriptions.map((d) => d.descriptionTag))).toEqual(new Set(['user_generated', 'system_generated']));
    expect(new Set(descriptions.map((d) => d.type)).size).toBeGreaterThan(15);
    expect(all<any>((p) => p.publicCategories).every((c) => Number.isInteger(c.order))).toBe(true);
  });

  it('serves only the region`s locales and its regional fields, some only late in id order', () => {
    const allowed = new Set(LOCALES_OF[profile]);
    for (const p of products) {
      for (const l of Object.keys(p.name)) expect(allowed.has(l), `${p.id} name.${l}`).toBe(true);
      for (const d of p.descriptions) for (const l of Object.keys(d.content)) expect(allowed.has(l)).toBe(true);
    }
    for (const field of REGIONAL[profile])
      expect(
        products.some((p) => p[field] !== undefined),
        field,
      ).toBe(true);
    const others = Object.entries(REGIONAL)
      .filter(([k]) => k !== profile)
      .flatMap(([, v]) => v)
      .filter((f) => !REGIONAL[profile].includes(f));
    for (const field of others)
      expect(
        products.some((p) => p[field] !== undefined),
        field,
      ).toBe(false);
    // de has no late regional field (its pzn is on most products from the first).
    const late = ({ be: 'bcfiCategory', fr: 'acl13', au: 'snomedCtpp', us: 'ndc' } as Record<string, string>)[profile];
    if (late) expect(products.findIndex((p) => p[late] !== undefined)).toBeGreaterThanOrEqual(LATE_FIELDS.regional);
    expect(products.findIndex((p) => p.replacement !== undefined)).toBeGreaterThanOrEqual(LATE_FIELDS.replacement);
    if (profile === 'be') {
      for (const p of products.filter((x) => x.cnk)) expect(p.cnk).toMatch(/^\d{7}$/);
      expect(products.find((p) => p.bcfiCategory).bcfiCategory.id).toMatch(/^0+\d+$/);
    }
    if (profile === 'au') expect(products.every((p) => typeof p.gstApplicable === 'boolean')).toBe(true);
  });

  it('filters match the new shapes: ean by digit string (the UPC pair by either spelling), hasContent by region locale', async () => {
    const ids = async (filter: unknown) =>
      (await sb.stream('/v4/products/stream', { filter, sorting: { id: 'ASC' } })).lines.map((l) => l.result.id);
    const padded = products.find((p) => typeof p.eanGtin13 === 'string' && p.eanGtin13.startsWith('00'));
    expect(await ids({ ean: [padded.eanGtin13] })).toEqual(
      products.filter((p) => p.ean.includes(padded.eanGtin13)).map((p) => p.id),
    );
    const pair = products.find((p) => p.ean.length >= 2 && p.ean.at(-1) === `0${p.ean.at(-2)}`);
    expect(await ids({ ean: pair.eanGtin12 })).toContain(pair.id);
    expect(await ids({ eanGtin13: Number(padded.eanGtin13) })).toContain(padded.id);
    const locale = LOCALES_OF[profile].at(-1)!;
    expect(await ids({ hasContent: { flag: 'name', locale } })).toEqual(
      products.filter((p) => p.name[locale] !== undefined).map((p) => p.id),
    );
    expect(await ids({ and: [{ status: 'replaced' }, { createdAt: 0 }] })).toEqual(
      products.filter((p) => p.status === 'replaced').map((p) => p.id),
    );
    if (profile !== 'au') expect(await ids({ scheduleCode: 'S2' })).toEqual([]);
  });

  // Issue 24, facts 7, 8, 11-14, 16: what the second look found, served by every live profile.
  it('hsCode: zero-led codes both as digit strings and as the integers that lost the zero', () => {
    const hs = products.map((p) => p.hsCode);
    expect(hs).toContain('030211');
    expect(hs.some((v) => typeof v === 'number' && String(v).length === 5)).toBe(true);
    expect(hs.some((v) => typeof v === 'string' && /^\d{8}$/.test(v))).toBe(true);
    expect(hs.some((v) => typeof v === 'number' && String(v).length === 8)).toBe(true);
  });

  it('the deprecated weight: integers and decimals', () => {
    const weights = all<number>((p) => p.weight);
    expect(weights.some((w) => !Number.isInteger(w))).toBe(true);
    expect(weights.some((w) => Number.isInteger(w))).toBe(true);
  });

  it('replaced products: some with ean emptied and the GTIN fields null, each with its replacement', () => {
    const nulled = products.filter((p) => p.eanGtin13 === null);
    expect(nulled.length).toBeGreaterThan(0);
    for (const p of nulled) {
      expect(p).toMatchObject({ status: 'replaced', replacement: expect.stringMatching(/^P\d{7}$/), ean: [] });
      expect([p.eanGtin8, p.eanGtin12, p.eanGtin14]).toEqual([null, null, null]);
      if (profile === 'us') expect([p.gtin, p.upc12, p.upc11, p.upc10]).toEqual([null, null, null, null]);
    }
    expect(products.some((p) => p.status === 'replaced' && typeof p.eanGtin13 === 'string')).toBe(true);
  });

  it('brands as bare ids on some products; eanGtin13/14 as lists on some', () => {
    const bare = products.filter((p) => p.brands.some((b: unknown) => Number.isInteger(b)));
    expect(bare.length).toBeGreaterThan(0);
    const lists = products.filter((p) => Array.isArray(p.eanGtin13));
    expect(lists.length).toBeGreaterThan(0);
    expect(lists.some((p) => p.eanGtin13.length === 2)).toBe(true);
    expect(products.some((p) => Array.isArray(p.eanGtin14))).toBe(true);
  });

  it('one GTIN-14 on two products, and a lookup by it finds both', async () => {
    const byCode = new Map<string, string[]>();
    for (const p of products)
      for (const c of [p.eanGtin14].flat()) if (typeof c === 'string') byCode.set(c, [...(byCode.get(c) ?? []), p.id]);
    const shared = [...byCode].filter(([, ids]) => ids.length > 1);
    expect(shared.length).toBeGreaterThan(0);
    const [code, ids] = shared[0]!;
    const found = (await sb.stream('/v4/products/stream', { filter: { eanGtin14: code }, sorting: { id: 'ASC' } }))
      .lines;
    expect(found.map((l) => l.result.id)).toEqual(ids);
  });

  it('correction statuses come from both spec lists, with the observed types', async () => {
    const { lines } = await sb
      .stream('/v4/corrections/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } })
      .catch(() => ({ lines: [] as any[] }));
    const records = lines.length ? lines.map((l: any) => l.result) : sb.dataset.corrections.map((c) => c.record);
    expect(new Set(records.map((c: any) => c.status))).toEqual(
      new Set(['open', 'in_progress', 'handled', 'solved', 'closed']),
    );
    expect(new Set(records.map((c: any) => c.type))).toEqual(
      new Set(['missing_photo', 'wrong_description', 'wrong_photo']),
    );
  });
});

describe('profiles: faults', () => {
  it('invalidRecordRate breaks live records too: 14-digit string eanGtin13 or a bogus status', async () => {
    const sb = await startTestSandbox({ products: 400, seed: 21, profile: 'be', faults: { invalidRecordRate: 0.05 } });
    try {
      const served = (
        await sb.stream('/v4/products/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } })
      ).lines.map((l) => l.result);
      const broken = served.filter((p) => p.status === 'bogus' || p.eanGtin13 === '12345678901234');
      expect(broken.length).toBe(sb.stats.faults.invalidRecords);
      expect(broken.some((p) => p.eanGtin13 === '12345678901234')).toBe(true);
      expect(broken.some((p) => p.status === 'bogus')).toBe(true);
    } finally {
      await sb.close();
    }
  });
});

describe('profiles: determinism and defaults', () => {
  it('the same seed and profile give the same bytes; profiles differ', () => {
    const json = (profile: SandboxProfile) => {
      const ds = new Dataset({ products: 300, seed: 9, profile });
      return Array.from({ length: 300 }, (_, i) => ds.productJson(i)).join('\n');
    };
    expect(json('be')).toBe(json('be'));
    expect(json('au')).not.toBe(json('be'));
    expect(json('spec')).not.toBe(json('fr'));
  });

  it(`the default profile is ${DEFAULT_PROFILE}`, () => {
    expect(new Dataset({ products: 10 }).profile).toBe(DEFAULT_PROFILE);
    expect(() => new Dataset({ products: 10, profile: 'nl' as SandboxProfile })).toThrow(
      /profile must be one of spec, au, be, de, fr, us/,
    );
  });
});

describe('--profile and CATALOG_SANDBOX_PROFILE', () => {
  const capture = (env: NodeJS.ProcessEnv = {}) => {
    const out: string[] = [];
    const err: string[] = [];
    const sink = (into: string[]) =>
      new Writable({
        write(chunk, _encoding, callback) {
          into.push(String(chunk));
          callback();
        },
      });
    const signals = new EventEmitter();
    return {
      io: { stdout: sink(out), stderr: sink(err), env, signals },
      signals,
      out: () => out.join(''),
      err: () => err.join(''),
    };
  };
  const firstLine = async (out: () => string) => {
    for (let i = 0; i < 200 && !out().includes('\n'); i++) await new Promise((r) => setTimeout(r, 25));
    return out().split('\n')[0]!;
  };

  it.each([
    [['--profile', 'fr'], {}, 'fr'],
    [[], { CATALOG_SANDBOX_PROFILE: 'au' }, 'au'],
    [['--profile', 'spec'], { CATALOG_SANDBOX_PROFILE: 'au' }, 'spec'],
  ] as const)('sandbox %j with env %j serves %s', async (args, env, profile) => {
    const c = capture({ ...env });
    const exit = main(['sandbox', '--port', '0', '--products', '30', ...args], c.io);
    const line = await firstLine(c.out);
    expect(line).toContain(`30 products, seed 1, profile ${profile})`);
    c.signals.emit('SIGTERM');
    expect(await exit).toBe(0);
  });

  it('an unknown profile is a usage error naming the choices', async () => {
    const c = capture();
    expect(await main(['sandbox', '--port', '0', '--profile', 'nl', '--log-format', 'pretty'], c.io)).toBe(2);
    expect(c.err()).toContain(
      'sandbox --profile: "nl" is not a sandbox profile; choose one of spec, au, be, de, fr, us',
    );
    const r = capture({ CATALOG_SANDBOX_PROFILE: 'xx' });
    expect(await main(['sandbox', '--port', '0', '--log-format', 'pretty'], r.io)).toBe(2);
    expect(r.err()).toContain('CATALOG_SANDBOX_PROFILE: "xx" is not a sandbox profile');
  });

  it('run --profile without --sandbox is a usage error', async () => {
    const c = capture();
    expect(await main(['run', 'pipelines/demo.yml', '--profile', 'be'], c.io)).toBe(2);
    expect(c.err()).toContain('--profile chooses the embedded sandbox');
  });
});

describe('profile us: the US service (issue 24, fact 16)', () => {
  let sb: TestSandbox;
  let products: any[];
  beforeAll(async () => {
    sb = await startTestSandbox({ products: COUNT, seed: 5, profile: 'us' });
    products = (await sb.stream('/v4/products/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } })).lines.map(
      (l) => l.result,
    );
  });
  afterAll(() => sb.close());

  it('upc12/11/10 with their zeros, the gtin padded to 14, subdivision regions, sparse fields', () => {
    const upc = products.filter((p) => typeof p.upc12 === 'string');
    expect(upc.length).toBeGreaterThan(0);
    for (const p of upc) {
      expect(p.upc12).toMatch(/^\d{12}$/);
      expect(p.upc11).toBe(p.upc12.slice(0, 11));
      expect(p.upc10).toBe(p.upc12.slice(1, 11));
    }
    expect(upc.some((p) => p.upc12.startsWith('0'))).toBe(true);
    expect(products.some((p) => typeof p.gtin === 'string' && p.gtin.startsWith('00'))).toBe(true);
    const regions = products.flatMap((p) => p.organizations.map((o: any) => o.contactInformation.region));
    expect(regions.filter((r) => typeof r === 'string').every((r) => /^US-[A-Z]{2}$/.test(r))).toBe(true);
    expect(regions.some((r) => typeof r === 'string')).toBe(true);
    expect(products.some((p) => /^\d{5}-\d{3}-\d{2}$/.test(p.ndc ?? ''))).toBe(true);
    expect(products.some((p) => typeof p.routeOfAdministration === 'string')).toBe(true);
    expect(products.some((p) => p.leaflets.length > 0)).toBe(true);
    for (const p of products) expect(Object.keys(p.name)).toEqual(['en']);
  });
});

describe('regional reference tables (issue 24, fact 15)', () => {
  const tables = ['active-ingredients', 'product-families', 'atc-categories', 'osp-categories'];
  it.each([
    ['spec', []],
    ['be', ['active-ingredients', 'product-families', 'atc-categories']],
    ['fr', ['active-ingredients', 'product-families', 'atc-categories', 'osp-categories']],
    ['au', ['active-ingredients', 'product-families', 'atc-categories']],
    ['us', ['active-ingredients', 'product-families']],
  ] as const)('profile %s serves %j, and answers 404 for the others', async (profile, served) => {
    const sb = await startTestSandbox({ products: 300, seed: 5, profile });
    try {
      for (const table of tables) {
        const res = await fetch(`${sb.url}/v4/${table}/query`, {
          method: 'POST',
          headers: { authorization: sb.authorization, 'content-type': 'application/json' },
          body: '{}',
        });
        expect([table, res.status]).toEqual([table, (served as readonly string[]).includes(table) ? 200 : 404]);
        await res.arrayBuffer();
      }
    } finally {
      await sb.close();
    }
  });

  it('fr: OSP ids are strings with zeros, parents as integers and as strings; ATC ids are codes whose parent is one level up', async () => {
    const sb = await startTestSandbox({ products: 300, seed: 5, profile: 'fr' });
    try {
      const osp = (await sb.query<any>('/v4/osp-categories/query', {})).results;
      expect(osp.some((c) => /^0+\d+$/.test(c.id))).toBe(true);
      expect(osp.some((c) => /[A-Z]/.test(c.id))).toBe(true);
      expect(osp.some((c) => Number.isInteger(c.parent))).toBe(true);
      expect(osp.some((c) => typeof c.parent === 'string')).toBe(true);
      const ids = new Set(osp.map((c) => c.id));
      for (const c of osp.filter((x) => x.parent !== null))
        expect(ids.has(typeof c.parent === 'number' ? String(c.parent).padStart(7, '0') : c.parent)).toBe(true);
      const atc = (await sb.query<any>('/v4/atc-categories/query', {})).results;
      const codes = new Set(atc.map((c) => c.id));
      expect(codes.has('N02BE01')).toBe(true);
      expect(atc.find((c) => c.id === 'N02BE01').parent).toBe('N02BE');
      for (const c of atc) if (c.parent !== null) expect(codes.has(c.parent)).toBe(true);
      const products = (
        await sb.stream('/v4/products/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } })
      ).lines.map((l) => l.result);
      for (const code of products.flatMap((p) => p.atcCategory)) expect(codes.has(code), code).toBe(true);
      const ingredients = (await sb.query<any>('/v4/active-ingredients/query', {})).results;
      const families = (await sb.query<any>('/v4/product-families/query', {})).results;
      for (const p of products) {
        for (const i of p.activeIngredients) expect(ingredients.map((x) => x.id)).toContain(i.id);
        for (const f of p.productFamily) expect(families.map((x) => x.id)).toContain(f.id);
      }
    } finally {
      await sb.close();
    }
  });
});
