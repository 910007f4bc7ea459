import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { originOf, setOrigin } from '../../src/core/origin.js';
import { flattenLocalesStage } from '../../src/transforms/index.js';
import { flattenLocales } from '../../src/pipeline/code-api.js';
import { context, fixture, run } from './support.js';

const products = () => fixture<any[]>('products.json');

describe('flatten-locales', () => {
  it('writes one column per locale in place of the localized object, null where a locale is missing', async () => {
    const [p1, p2, p3] = await run(products(), flattenLocales({ locales: ['en', 'nl', 'fr'] }, context()));
    expect(p1).toMatchObject({
      name_en: 'Vitamin C 500 mg',
      name_nl: 'Vitamine C 500 mg',
      name_fr: 'Vitamine C 500 mg',
    });
    expect(p1).not.toHaveProperty('name');
    expect(p1).toMatchObject({ seoName_en: 'vitamin-c-500-mg', seoName_nl: 'vitamine-c-500-mg', seoName_fr: null });
    // a product with only a French name, and no seoName at all: every column exists
    expect(p2).toMatchObject({
      name_en: null,
      name_nl: null,
      name_fr: "Crème hydratante à l'aloe — 50 ml ✓",
      seoName_en: null,
      seoName_nl: null,
      seoName_fr: null,
    });
    // Unicode passes untouched
    expect(p3.name_en).toBe('Δ8-THC tincture 🌿');
    // the columns take the localized field's position
    const keys = Object.keys(p1);
    expect(keys.slice(keys.indexOf('status') + 1, keys.indexOf('status') + 4)).toEqual([
      'name_en',
      'name_nl',
      'name_fr',
    ]);
  });

  it('rewrites localized fields inside lists element by element', async () => {
    const [p1, , , p4] = await run(products(), flattenLocales({ locales: ['en', 'nl'] }, context()));
    expect(p1.brands).toEqual([
      { id: 11, name_en: 'Acme', name_nl: 'Acme NL', meta: { createdAt: 1600000000, updatedAt: 1600000001 } },
    ]);
    expect(p1.organizations.map((o: any) => [o.name_en, o.name_nl])).toEqual([
      [null, 'Leverancier BV'],
      ['Marketing Ltd', null],
    ]);
    expect(p1.descriptions[0]).toMatchObject({ id: 9001, content_en: 'Take one daily.', content_nl: null });
    expect(p1.descriptions[0]).not.toHaveProperty('content');
    // nested two lists deep: photos[].organizations[].name
    expect(p1.photos[0].organizations[0]).toEqual({ id: 501, name_en: null, name_nl: 'Leverancier BV' });
    expect(p4.brands.map((b: any) => b.name_en)).toEqual([null, 'Second']);
  });

  it('fills a fallback column with the first locale that has a non-empty value', async () => {
    const out = await run(
      products(),
      flattenLocales(
        { fallback: ['en', 'nl', 'fr'], fallbackLocaleColumn: '{field}_locale', fields: ['name'] },
        context(),
      ),
    );
    expect(out.map((p) => [p.name, p.name_locale])).toEqual([
      ['Vitamin C 500 mg', 'en'],
      ["Crème hydratante à l'aloe — 50 ml ✓", 'fr'],
      ['Δ8-THC tincture 🌿', 'en'],
      // en is an empty string: skipped
      ['Naam zonder Engels', 'nl'],
    ]);
    expect(out[0].seoName).toEqual({ en: 'vitamin-c-500-mg', nl: 'vitamine-c-500-mg' });
  });

  it('combines both modes, keeps the original on request and names columns by template', async () => {
    const [p1, p2] = await run(
      products(),
      flattenLocales(
        {
          locales: ['nl'],
          fallback: ['de', 'en'],
          columns: '{locale}__{field}',
          fallbackColumn: '{field}_any',
          keepOriginal: true,
          fields: ['name', 'brands[].name'],
        },
        context(),
      ),
    );
    expect(p1).toMatchObject({
      name: { en: 'Vitamin C 500 mg' },
      nl__name: 'Vitamine C 500 mg',
      name_any: 'Vitamin C 500 mg',
    });
    expect(p1.brands[0]).toMatchObject({ name: { en: 'Acme' }, nl__name: 'Acme NL', name_any: 'Acme' });
    expect(p2).toMatchObject({ nl__name: null, name_any: null });
  });

  it('keeps the origin and never changes the input', async () => {
    const input = products().map((p, i) => setOrigin(p, { endpoint: 'products.query', page: 0, index: i }));
    const snapshot = JSON.parse(JSON.stringify(input));
    const out = await run(input, flattenLocales({ locales: ['en'] }, context()));
    expect(originOf(out[2])).toEqual({ endpoint: 'products.query', page: 0, index: 2 });
    expect(JSON.parse(JSON.stringify(input))).toEqual(snapshot);
    // parts without localized fields are shared, not copied
    expect(out[2].cannabisData).toBe(input[2].cannabisData);
  });

  it('takes its default fields from the schema and checks listed ones', () => {
    const stage = flattenLocales({ locales: ['en'] }, context());
    expect(stage.fields).toEqual(
      expect.arrayContaining([
        'name',
        'seoName',
        'brands[].name',
        'descriptions[].content',
        'leaflets[].url',
        'photos[].organizations[].name',
      ]),
    );
    expect(() => flattenLocales({ locales: ['en'], fields: ['brands[].nam'] }, context())).toThrow(ConfigError);
    expect(() => flattenLocales({ locales: ['en'], fields: ['brands[].nam'] }, context())).toThrow(
      /did you mean "brands\[\]\.name"/,
    );
    // without a known resource, listed fields are taken as given
    expect(flattenLocales({ locales: ['en'], fields: ['title'] }, context({ source: { type: 'x' } })).fields).toEqual([
      'title',
    ]);
  });

  it('rejects option combinations that would lose data or collide', () => {
    const parse = (o: unknown) => flattenLocalesStage.options.safeParse(o);
    expect(parse({}).error?.issues[0]?.message).toMatch(/set locales/);
    expect(parse({ locales: ['en'], columns: '{field}' }).success).toBe(false);
    expect(parse({ fallback: ['en'], keepOriginal: true }).error?.issues[0]?.path).toEqual(['fallbackColumn']);
    expect(parse({ fallback: ['en'], keepOriginal: true, fallbackColumn: '{field}_default' }).success).toBe(true);
    expect(parse({ locales: [] }).success).toBe(false);
  });
});
