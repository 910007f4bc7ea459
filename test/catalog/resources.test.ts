import { describe, expect, it } from 'vitest';
import { Product, describeSchema, localizedFieldPaths, resourceSchemas } from '../../src/catalog/index.js';

const minimal = { id: 'P1', status: 'active', meta: { createdAt: 1, updatedAt: 2 } };

describe('resource schemas', () => {
  it('accept a full product from the spec corners', () => {
    const p = {
      ...minimal,
      status: 'replaced',
      replacement: 'P2',
      name: { en: 'Vitamin C', nl: 'Vitamine C' },
      eanGtin13: 12345678905,
      eanGtin8: 1234,
      ean: [12345678905, 5412345678908],
      cannabisData: {
        thcPercentage: null,
        minorCannabinoids: [{ name: 'Δ8-THC', percentage: 0.2 }],
        terpenes: [{ name: 'β-Caryophyllene', percentage: null }],
      },
      frontals: [
        {
          photoType: 'packshot',
          displayOrder: 1,
          formats: { largeJpg: 'https://x/l.jpg', mediumJpeg: 'https://x/m.jpg' },
        },
      ],
      photos: [{ photoType: 'lifestyle_image', displayOrder: 1, formats: { largeWebp: 'https://x/l.webp' } }],
      organizations: [{ id: 3, name: { en: 'Acme' }, type: 'supplier', contactInformation: { country: 'BE' } }],
      futureField: { anything: true },
    };
    const r = Product.safeParse(p);
    expect(r.success, JSON.stringify(r.error?.issues)).toBe(true);
    expect((r.data as Record<string, unknown>).futureField).toEqual({ anything: true });
  });

  it('reject what the spec forbids, at the right path', () => {
    const cases: [unknown, string][] = [
      [{ ...minimal, status: 'gone' }, 'status'],
      [{ ...minimal, eanGtin13: 12345678901234 }, 'eanGtin13'],
      [{ ...minimal, eanGtin14: 2 ** 53 }, 'eanGtin14'],
      [{ ...minimal, replacement: 'P9' }, 'replacement'],
      [{ ...minimal, cannabisData: { cannabisForm: 'cookie' } }, 'cannabisData.cannabisForm'],
      [{ ...minimal, meta: { createdAt: 1.5, updatedAt: 2 } }, 'meta.createdAt'],
      [{ ...minimal, publicPrice: 12.5 }, 'publicPrice'],
    ];
    for (const [value, path] of cases) {
      const r = Product.safeParse(value);
      expect(r.success, path).toBe(false);
      expect(r.error!.issues.map((i) => i.path.join('.'))).toContain(path);
    }
  });

  it('are readable as data: localized fields, timestamps and codes', () => {
    const paths = localizedFieldPaths(Product);
    expect(paths).toEqual(
      expect.arrayContaining([
        'name',
        'seoName',
        'brands[].name',
        'descriptions[].content',
        'leaflets[].url',
        'photos[].organizations[].name',
      ]),
    );
    const info = describeSchema(Product);
    expect(info.fields!.meta!.fields!.createdAt!.kind).toBe('timestamp');
    expect(info.fields!.eanGtin13).toMatchObject({ kind: 'gtin', digits: 13, optional: true });
    expect(info.fields!.ean!.element).toMatchObject({ kind: 'gtin', digits: 14 });
    expect(info.fields!.isANutritionSupplement).toMatchObject({ kind: 'boolean', nullable: true });
    expect(info.fields!.vat!.kind).toBe('float');
    expect(info.fields!.status!.enumValues).toContain('no_selection');
    expect(Object.keys(resourceSchemas)).toHaveLength(10);
  });
});
