// Issue 11, first paragraph, at the stage level: the observed product (fixtures/live) through
// validate and flatten-locales; every shape of the issue's list through the resource schemas.
import { describe, expect, it } from 'vitest';
import { Correction, MediaRecord, Product } from '../../src/catalog/index.js';
import { flattenLocales, normalizeCodes, selectMediaFormat, validate } from '../../src/pipeline/code-api.js';
import { liveProduct, liveShapes } from '../helpers/live-shapes.js';
import { context, memorySinks, run } from './support.js';

function deadLetterContext() {
  const sinks = memorySinks();
  return { ctx: context({ stages: [sinks.def] }), sinks };
}

describe('the observed product (issue 11)', () => {
  it('validate passes it: none of the 12 former issues (digit-string codes, float weight, plain names, null contacts)', async () => {
    const { ctx, sinks } = deadLetterContext();
    const stage = validate({ onInvalid: 'dead-letter' }, ctx);
    const input = liveProduct();
    const out = await run([input], stage);
    expect(sinks.made.flatMap((s) => s.records)).toEqual([]);
    expect(out).toEqual([input]);
    expect(stage.stats).toMatchObject({ in: 1, out: 1, invalid: 0 });
  });

  it('flatten-locales puts plain-string brand and organization names into every locale column', async () => {
    const [p] = await run([liveProduct()], flattenLocales({ locales: ['en', 'nl', 'fr'] }, context()));
    expect(p.brands[0]).toMatchObject({
      id: 411,
      name_en: 'Examplebrand',
      name_nl: 'Examplebrand',
      name_fr: 'Examplebrand',
    });
    expect(p.organizations.map((o: any) => [o.name_en, o.name_nl, o.name_fr])).toEqual([
      ['Examplebrand', 'Examplebrand', 'Examplebrand'],
      ['Example Distribution Pty', 'Example Distribution Pty', 'Example Distribution Pty'],
    ]);
    // localized objects still give null where a locale is missing
    expect(p).toMatchObject({
      name_en: 'Lumbar Support Xxl 4711',
      name_nl: null,
      name_fr: null,
      conservationLabel_en: 'Room temperature',
    });
  });

  it('flatten-locales fallback takes a plain string whatever the chain', async () => {
    const [p] = await run(
      [liveProduct()],
      flattenLocales({ fallback: ['nl', 'fr'], fallbackLocaleColumn: '{field}_locale' }, context()),
    );
    expect(p.brands[0]).toMatchObject({ name: 'Examplebrand', name_locale: null });
  });

  it('flatten-locales keeps a value that is neither text nor a localized object under its own name', async () => {
    const input = { ...liveProduct(), name: 42, seoName: true };
    const [p] = await run([input], flattenLocales({ locales: ['en'] }, context()));
    expect(p).toMatchObject({ name: 42, seoName: true });
    expect(p).not.toHaveProperty('name_en');
  });

  it('the core stages keep every value and normalize the codes', async () => {
    const { ctx } = deadLetterContext();
    const [p] = await run(
      [liveProduct()],
      validate({ onInvalid: 'dead-letter' }, ctx),
      flattenLocales({ locales: ['en', 'nl', 'fr'] }, ctx),
      selectMediaFormat({}, ctx),
      normalizeCodes({ onInvalid: 'dead-letter' }, ctx),
    );
    expect(p).toMatchObject({
      // Strings as sent (issue 35): the 12-digit UPC stays beside its 13-digit form.
      ean: ['609500004711', '0609500004711'],
      eanGtin12: '609500004711',
      eanGtin13: '0609500004711',
      artgId: '123456',
      photo_url: 'https://assets.example/media/large/a1.webp',
      photo_format: 'largeWebp',
      weightWithUnit: { value: 0.37, unit: 'kg' },
      vat: 0,
    });
  });
});

describe('resource schemas accept the documented and the observed shapes', () => {
  const minimal = { id: 'P1', status: 'active', meta: { createdAt: 1, updatedAt: 2 } };
  const ok = (value: unknown) => {
    const r = Product.safeParse(value);
    expect(r.success, JSON.stringify(r.error?.issues)).toBe(true);
  };
  const bad = (value: unknown, path: string) => {
    const r = Product.safeParse(value);
    expect(r.success, path).toBe(false);
    expect(r.error!.issues.map((i) => i.path.join('.'))).toContain(path);
  };

  it('codes as integers or digit strings with leading zeros (facts 1 and 10)', () => {
    ok({
      ...minimal,
      ean: ['609500004711', '0609500004711', 5412345678908],
      eanGtin8: '00001234',
      eanGtin14: '00012345678905',
    });
    ok({
      ...minimal,
      cnk: '0012345',
      cip13: '3400930000001',
      acl13: '3401000000001',
      cipOrAcl7: '3400930',
      cip7OrAcl7: '3400930',
    });
    ok({ ...minimal, cnk: 12345, snomedMp: '21360011000036101', snomedTpp: 933225691000036100n.toString() });
    bad({ ...minimal, eanGtin13: '12345678901234' }, 'eanGtin13');
    bad({ ...minimal, eanGtin13: '0609-500' }, 'eanGtin13');
    bad({ ...minimal, cnk: '12345678' }, 'cnk');
    bad({ ...minimal, cnk: 'A12' }, 'cnk');
  });

  it('measures as floats in kg, g, cm, mm (fact 3); an unknown unit is still an issue', () => {
    ok({
      ...minimal,
      weightWithUnit: { value: 0.37, unit: 'kg' },
      widthWithUnit: { value: 15, unit: 'cm' },
      depthWithUnit: { value: 2.5, unit: 'mm' },
    });
    ok({ ...minimal, weightWithUnit: { value: 370, unit: 'g' } });
    bad({ ...minimal, weightWithUnit: { value: 1, unit: 'stone' } }, 'weightWithUnit.unit');
    bad({ ...minimal, weightWithUnit: { value: -1, unit: 'kg' } }, 'weightWithUnit.value');
  });

  it('contact fields null or empty (fact 4), conservation per scale and a localized label (fact 5), integer vat (fact 6)', () => {
    const s = liveShapes();
    ok(s.product_au);
    ok({
      ...minimal,
      organizations: [
        {
          id: 1,
          name: 'Acme',
          type: 'supplier',
          contactInformation: { address: null, zipCode: '', city: null, email: null, url: '' },
        },
      ],
      conservationMin: { celsius: { value: 2, unit: '°C' }, fahrenheit: { value: 35.6, unit: '°F' } },
      conservationMax: null,
      conservationLabel: { en: 'Refrigerator', nl: 'Koelkast' },
      vat: 21,
    });
    bad({ ...minimal, vat: 'high' }, 'vat');
    bad({ ...minimal, conservationMin: { celsius: { value: 'cold', unit: '°C' } } }, 'conservationMin.celsius');
  });

  it('photos with ids and without the optional fields, frontals with the extra format keys (fact 7)', () => {
    const s = liveShapes();
    ok({ ...minimal, photos: s.product_au.photos, frontals: [s.frontal_be] });
    const m = MediaRecord.safeParse(s.frontal_be);
    expect(m.success, JSON.stringify(m.error?.issues)).toBe(true);
    bad({ ...minimal, frontals: [{ ...s.frontal_be, type: 'backside' }] }, 'frontals.0.type');
    bad({ ...minimal, photos: [{ id: 1, visibleSides: ['inside'] }] }, 'photos.0.visibleSides.0');
    bad({ ...minimal, photos: [{ id: 1, targetGroups: ['aliens'] }] }, 'photos.0.targetGroups.0');
  });

  it('descriptions with descriptionTag and the observed types (fact 8), public categories with order (fact 9)', () => {
    const s = liveShapes();
    ok({
      ...minimal,
      descriptions: [
        s.description_be,
        { ...s.description_be, type: 'pregnancy_description_extended', descriptionTag: 'system_generated' },
      ],
    });
    ok({ ...minimal, publicCategories: s.product_au.publicCategories });
    bad(
      { ...minimal, descriptions: [{ ...s.description_be, descriptionTag: 'ai_generated' }] },
      'descriptions.0.descriptionTag',
    );
    bad({ ...minimal, descriptions: [{ ...s.description_be, type: 'horoscope' }] }, 'descriptions.0.type');
  });

  it('regional fields of be, fr and au (fact 10)', () => {
    const { be, fr, au } = liveShapes().regional_fields;
    ok({ ...minimal, ...be });
    ok({ ...minimal, ...fr });
    ok({ ...minimal, ...au });
    bad({ ...minimal, gstApplicable: 'yes' }, 'gstApplicable');
  });

  it('correction statuses of both lists and the observed types (fact 11)', () => {
    for (const status of ['open', 'in_progress', 'handled', 'solved', 'closed']) {
      for (const type of ['missing_photo', 'wrong_description', 'wrong_photo']) {
        const r = Correction.safeParse({ id: 1, product: 'P1', status, type });
        expect(r.success, `${status} ${type}`).toBe(true);
      }
    }
    expect(Correction.safeParse({ id: 1, product: 'P1', status: 'lost' }).success).toBe(false);
  });

  it('keeps the identity strict: id, status, meta', () => {
    bad({ ...minimal, id: '' }, 'id');
    bad({ ...minimal, status: 'gone' }, 'status');
    bad({ ...minimal, meta: { createdAt: 1, updatedAt: 'today' } }, 'meta.updatedAt');
  });
});
