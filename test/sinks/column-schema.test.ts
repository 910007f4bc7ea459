// The column schema comes from the record contract, not from records (issue 12):
// these replace the inference tests (sample, lock, mismatch) the old design had.
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { gtinCode, Localized, LocalizedOrText, nationalCode, UnixTimestamp } from '../../src/catalog/primitives.js';
import { resourceSchemas } from '../../src/catalog/resources/index.js';
import { leafPaths, type RecordSchema } from '../../src/core/record-schema.js';
import {
  ColumnSchema,
  RecordShaper,
  withDeclaredColumns,
  type ColumnSchemaSettings,
} from '../../src/sinks/shared/column-schema.js';
import { recordSchemaFromZod, resourceSchemaFromContext } from '../../src/core/zod-column-hints.js';

const settings: ColumnSchemaSettings = {
  nested: 'flatten',
  lists: 'native',
  timestamps: 'millis',
  timestampInput: 'seconds',
  prices: 'minor-units',
  excluded: new Set(),
};

const columnsOf = (schema: RecordSchema, s: Partial<ColumnSchemaSettings> = {}) =>
  new ColumnSchema(schema, { ...settings, ...s }).describe().map((c) => [c.name, c.type]);

const declared = z.object({
  id: z.string(),
  status: z.enum(['active', 'inactive']),
  vat: z.number(),
  publicPrice: z.int(),
  small: z.int32(),
  serial: z.bigint(),
  deleted: z.boolean().optional(),
  eanGtin13: gtinCode(13).optional(),
  ean: z.array(gtinCode(14)),
  cnk: nationalCode(7, true),
  artgId: nationalCode(undefined, false).optional(),
  name: Localized,
  weight: z.union([z.int(), z.number()]),
  mixed: z.union([z.string(), z.number()]),
  either: z.union([z.string(), z.null()]),
  brands: z.array(
    z.object({ id: z.int(), name: LocalizedOrText, meta: z.object({ createdAt: UnixTimestamp }).optional() }),
  ),
  meta: z.object({ createdAt: UnixTimestamp, updatedAt: z.int() }).nullable(),
  anything: z.unknown(),
});

describe('record schema from a zod declaration', () => {
  it('reads types, codes, localized fields, unions and nesting as data', () => {
    const paths = Object.fromEntries(leafPaths(recordSchemaFromZod(declared)).map((l) => [l.path, l.type]));
    expect(paths).toEqual({
      id: { kind: 'string' },
      status: { kind: 'string' },
      vat: { kind: 'double' },
      publicPrice: { kind: 'int64', price: true },
      small: { kind: 'int32' },
      serial: { kind: 'int64' },
      deleted: { kind: 'boolean' },
      eanGtin13: { kind: 'string', code: { digits: 13, padTo: 13 } },
      'ean[]': { kind: 'string', code: { digits: 14, padTo: 13 } },
      cnk: { kind: 'string', code: { digits: 7, padTo: 7 } },
      artgId: { kind: 'string', code: { digits: undefined, padTo: 0 } },
      name: { kind: 'json', localized: true },
      weight: { kind: 'double' },
      mixed: { kind: 'json' },
      either: { kind: 'string' },
      'brands[].id': { kind: 'int64' },
      'brands[].name': { kind: 'json', localized: true },
      'brands[].meta.createdAt': { kind: 'timestamp' },
      'meta.createdAt': { kind: 'timestamp' },
      'meta.updatedAt': { kind: 'int64' },
      anything: { kind: 'json' },
    });
  });

  it('gives every shipped resource a schema with no field left untyped', () => {
    for (const [name, schema] of Object.entries(resourceSchemas)) {
      const leaves = leafPaths(recordSchemaFromZod(schema));
      // the smallest resources (dietary restriction, color) are an id and a localized name
      expect(
        leaves.map((l) => l.path),
        name,
      ).toContain('id');
      expect(leaves.length, name).toBeGreaterThanOrEqual(2);
      expect(
        leaves.filter((l) => typeof (l.type as { kind?: unknown }).kind !== 'string'),
        name,
      ).toEqual([]);
    }
  });

  it('finds the resource schema the runner put in ctx.resourceSchemas', () => {
    const products = z.object({ id: z.string() });
    expect(
      resourceSchemaFromContext({
        source: { type: 'products.query', resource: 'product' },
        resourceSchemas: { product: products },
      }),
    ).toBe(products);
    expect(
      resourceSchemaFromContext({
        source: { type: 'products.query', resource: 'product' },
        resourceSchemas: (r: string) => (r === 'product' ? products : undefined),
      }),
    ).toBe(products);
    expect(
      resourceSchemaFromContext({ source: { type: 'x' }, resourceSchemas: { product: products } }),
    ).toBeUndefined();
  });
});

describe('column schema', () => {
  const schema = recordSchemaFromZod(declared);

  it('flattens objects, keeps lists of objects as LIST<STRUCT>, codes as VARCHAR, and ends with _extra', () => {
    expect(columnsOf(schema)).toEqual([
      ['id', 'VARCHAR'],
      ['status', 'VARCHAR'],
      ['vat', 'DOUBLE'],
      ['publicPrice', 'BIGINT'],
      ['small', 'INTEGER'],
      ['serial', 'BIGINT'],
      ['deleted', 'BOOLEAN'],
      ['eanGtin13', 'VARCHAR'],
      ['ean', 'VARCHAR[]'],
      ['cnk', 'VARCHAR'],
      ['artgId', 'VARCHAR'],
      ['name', 'JSON'],
      ['weight', 'DOUBLE'],
      ['mixed', 'JSON'],
      ['either', 'VARCHAR'],
      ['brands', 'STRUCT(id BIGINT, name JSON, meta STRUCT(createdAt TIMESTAMP WITH TIME ZONE))[]'],
      ['meta_createdAt', 'TIMESTAMP WITH TIME ZONE'],
      ['meta_updatedAt', 'TIMESTAMP WITH TIME ZONE'],
      ['anything', 'JSON'],
      ['_extra', 'JSON'],
    ]);
  });

  it('applies nested, lists, prices, timestampFields and partition keys', () => {
    const cols = Object.fromEntries(
      columnsOf(schema, {
        nested: 'struct',
        lists: 'json',
        prices: 'decimal',
        timestampFields: ['meta.createdAt'],
        excluded: new Set(['status']),
      }),
    );
    expect(cols).toMatchObject({
      meta: 'STRUCT(createdAt TIMESTAMP WITH TIME ZONE, updatedAt BIGINT)',
      brands: 'JSON',
      publicPrice: 'DECIMAL(18,2)',
    });
    expect(cols.status).toBeUndefined();
    expect(Object.fromEntries(columnsOf(schema, { nested: 'json' }))).toMatchObject({ meta: 'JSON' });
  });

  it('adds declared columns, also inside list elements, and refuses clashes', () => {
    const withCnk = withDeclaredColumns(schema, {
      region: 'string',
      'brands[].logo': 'string',
      'meta.source': 'string',
      vat: 'string',
    });
    const cols = Object.fromEntries(columnsOf(withCnk));
    expect(cols).toMatchObject({ region: 'VARCHAR', meta_source: 'VARCHAR', vat: 'VARCHAR' });
    expect(cols.brands).toMatch(/logo VARCHAR\)\[\]$/);
    expect(() => withDeclaredColumns(schema, { 'id.x': 'string' })).toThrow(/"id\.x": "id" is not an object/);
    expect(
      () =>
        new ColumnSchema(
          {
            fields: [
              { name: 'a_b', type: { kind: 'int64' } },
              { name: 'a', type: { kind: 'struct', fields: [{ name: 'b', type: { kind: 'int64' } }] } },
            ],
          },
          settings,
        ),
    ).toThrow(ConfigError);
  });

  it('hashes the columns: the same schema gives the same hash, another type another hash', () => {
    const a = new ColumnSchema(schema, settings).hash;
    expect(new ColumnSchema(recordSchemaFromZod(declared), settings).hash).toBe(a);
    expect(new ColumnSchema(schema, { ...settings, prices: 'decimal' }).hash).not.toBe(a);
  });
});

describe('record shaper', () => {
  const shaper = new RecordShaper(new ColumnSchema(recordSchemaFromZod(declared), settings));
  const index = (name: string) => shaper.schema.columns.findIndex((c) => c.name === name);

  it('pads integer codes, converts nested timestamps, and keeps undeclared and misfit values in _extra by path', () => {
    const seen: string[] = [];
    shaper.onNewExtraField = (path) => seen.push(path);
    const row = shaper.shape({
      id: 'P1',
      eanGtin13: 65699514566,
      ean: [12345, 'x1', null],
      cnk: 12345,
      artgId: 123,
      vat: 'high',
      brands: [{ id: 1, name: { en: 'A' }, logo: 'l.png', meta: { createdAt: 10 } }, { id: 'two' }],
      meta: { createdAt: 5, updatedAt: 6, source: 'feed' },
      region: { code: 'BE' },
    });
    const values = row.values;
    expect(values[index('eanGtin13')]).toBe('0065699514566');
    expect(values[index('ean')]).toEqual(['0000000012345', 'x1', null]);
    expect(values[index('cnk')]).toBe('0012345');
    expect(values[index('artgId')]).toBe('123');
    expect(values[index('vat')]).toBeNull();
    expect(values[index('brands')]).toEqual([
      { id: 1n, name: '{"en":"A"}', meta: { createdAt: 10_000n } },
      { id: null, name: null, meta: null },
    ]);
    expect(values[index('meta_createdAt')]).toBe(5000n);
    expect(JSON.parse(values[index('_extra')] as string)).toEqual({
      vat: 'high',
      'brands[0].logo': 'l.png',
      'brands[1].id': 'two',
      'meta.source': 'feed',
      region: { code: 'BE' },
    });
    expect(seen).toEqual(['vat', 'brands[].logo', 'brands[].id', 'meta.source', 'region']);
    // A record with nothing undeclared has a null _extra; counts are per record.
    expect(shaper.shape({ id: 'P2', brands: [{ logo: 'x' }, { logo: 'y' }] }).values[index('_extra')]).toBe(
      '{"brands[0].logo":"x","brands[1].logo":"y"}',
    );
    expect(shaper.shape({ id: 'P3' }).values[index('_extra')]).toBeNull();
    expect(shaper.extraFields.get('brands[].logo')).toBe(2);
  });
});
