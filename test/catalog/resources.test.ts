import { describe, expect, it } from 'vitest';
import { Product, describeSchema, localizedFieldPaths, resourceSchemas } from '../../src/catalog/index.js';
import { recordSchemaFromZod } from '../../src/core/zod-column-hints.js';

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
    expect(Object.keys(resourceSchemas)).toHaveLength(14);
  });
});

// Issue 24, the live service's second look: shapes the schemas accept, at the resource level.
describe('resource schemas: the live service, second look', () => {
  const ok = (value: object) => {
    const r = Product.safeParse({ ...minimal, ...value });
    expect(r.success, JSON.stringify(r.error?.issues)).toBe(true);
  };

  it('hsCode: a code with its leading zero as a string, or as the integer that lost it; never a float or letters', () => {
    ok({ hsCode: '030211' });
    ok({ hsCode: 30211 });
    ok({ hsCode: '0901210000' });
    for (const bad of [3021.1, 'HS030211', '12345678901'])
      expect(Product.safeParse({ ...minimal, hsCode: bad }).success, String(bad)).toBe(false);
    expect(describeSchema(Product).fields!.hsCode).toMatchObject({ kind: 'code', digits: 10, evenDigits: true });
  });

  it('weight (deprecated) is a decimal, and a DOUBLE column', () => {
    ok({ weight: 12.5, weightWithUnit: { value: 0.0125, unit: 'kg' } });
    const weight = recordSchemaFromZod(Product).fields.find((f) => f.name === 'weight');
    expect(weight?.type).toEqual({ kind: 'double' });
    const hs = recordSchemaFromZod(Product).fields.find((f) => f.name === 'hsCode');
    expect(hs?.type).toEqual({ kind: 'string', code: { digits: 10, padTo: 0, evenDigits: true } });
  });

  it('a replaced product with its codes nulled keeps its replacement', () => {
    const replaced = {
      ...minimal,
      status: 'replaced',
      replacement: 'MD0A1B2C3D',
      ean: [],
      eanGtin8: null,
      eanGtin12: null,
      eanGtin13: null,
      eanGtin14: null,
      gtin: null,
    };
    const r = Product.safeParse(replaced);
    expect(r.success, JSON.stringify(r.error?.issues)).toBe(true);
    expect(r.data).toMatchObject({ replacement: 'MD0A1B2C3D', eanGtin13: null });
  });

  it('brands as bare ids and eanGtin13/14 as lists are accepted, and the columns keep their types', () => {
    ok({ brands: [411, 412] });
    ok({ brands: [411, { id: 412, name: 'Examplebrand' }] });
    ok({ eanGtin13: ['0609500004711', '5400000000017'], eanGtin14: ['00609500004711'] });
    const columns = recordSchemaFromZod(Product).fields;
    expect(columns.find((f) => f.name === 'eanGtin13')?.type).toMatchObject({ kind: 'string', code: { padTo: 13 } });
    expect(columns.find((f) => f.name === 'brands')?.type).toMatchObject({ kind: 'list', element: { kind: 'struct' } });
    expect(localizedFieldPaths(Product)).toContain('brands[].name');
    // a brand object with a wrong member is still wrong
    expect(Product.safeParse({ ...minimal, brands: [{ id: 'x', name: 'A' }] }).success).toBe(false);
    expect(Product.safeParse({ ...minimal, eanGtin13: ['060950000471X'] }).success).toBe(false);
  });

  it('US codes: upc10/11/12 and a gtin zero-padded to 14 digits', () => {
    ok({
      upc12: '012345678905',
      upc11: '01234567890',
      upc10: '1234567890',
      gtin: '00012345678905',
      ndc: '12345-678-90',
    });
    const info = describeSchema(Product).fields!;
    expect(info.upc12).toMatchObject({ kind: 'gtin', digits: 12 });
    expect(info.upc11).toMatchObject({ kind: 'code', digits: 11, pad: true });
    expect(info.gtin).toMatchObject({ kind: 'gtin', digits: 14 });
  });

  it('regional reference tables: string ids kept, an osp parent as integer or string, a string column', () => {
    const osp = resourceSchemas['osp-category'];
    for (const parent of [18, '0000018', null])
      expect(osp.safeParse({ id: '1A02B04', name: { fr: 'Soins' }, parent, order: 3 }).success, String(parent)).toBe(
        true,
      );
    expect(osp.safeParse({ id: 18 }).success).toBe(false);
    expect(recordSchemaFromZod(osp).fields.find((f) => f.name === 'parent')?.type).toMatchObject({ kind: 'string' });
    expect(resourceSchemas['atc-category'].safeParse({ id: 'A01AB03', parent: 'A01AB' }).success).toBe(true);
    expect(resourceSchemas['active-ingredient'].safeParse({ id: 7, name: { en: 'Zinc' } }).success).toBe(true);
    expect(resourceSchemas['product-family'].safeParse({ id: 7, name: 'Kids' }).success).toBe(true);
  });
});
