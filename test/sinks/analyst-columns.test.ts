// Issue 25, analyst-friendly columns, read back the way an analyst meets them (DuckDB DESCRIBE and
// SELECT): `columnNames: snake_case` on the parquet, csv and table sinks (names, STRUCT members,
// collisions as config errors), the live conservation temperatures as DOUBLE columns whichever
// shape the service sent, GS1 `active` as BOOLEAN from its "true"/"false" text, what does not fit
// kept whole in `_extra`, and a table that refuses to switch naming between runs.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { resourceSchemas } from '../../src/catalog/index.js';
import { recordSchemaFromZod } from '../../src/core/zod-column-hints.js';
import type { RecordSchema } from '../../src/core/record-schema.js';
import { CatalogStreamsError, ConfigError } from '../../src/errors.js';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { planOrThrow } from '../../src/pipeline/plan.js';
import { columnSchemaFor } from '../../src/sinks/parquet/parquet-encoding.js';
import { csvSink, parquetSink, tableSink } from '../../src/sinks/index.js';
import { flattenLocales } from '../../src/pipeline/code-api.js';
import { duckdbQuery, parquetColumnTypes, sqlString } from '../helpers/duckdb.js';
import { liveProduct } from '../helpers/live-shapes.js';
import { lostLeaves } from '../helpers/lossless.js';
import { testContext } from '../helpers/stage-context.js';
import { tempDir } from './records.js';

type Rec = Record<string, any>;

/** The product records after flatten-locales [en, nl], as `products.query` + that transform declare them. */
const FLAT_SCHEMA: RecordSchema = planOrThrow(
  {
    name: 'flat',
    source: { type: 'products.query', filter: { status: 'active' } },
    transforms: [{ type: 'flatten-locales', locales: ['en', 'nl'] }],
    sinks: [{ type: 'jsonl', path: '-' }],
  },
  createRegistry(),
  { file: '<test>', baseDir: process.cwd() },
).recordSchema;

/**
 * Five products: the live service's shapes (temperatures as {value, unit}, GS1 active as text),
 * the spec's (bare numbers), and the misfits that must land in `_extra` whole.
 */
function products(): Rec[] {
  const base = liveProduct();
  const gs1 = (active: unknown) => ({ code: '10000456', level: 4, title: 'Supports', active });
  return [
    {
      ...base,
      id: 'M0000000001',
      seoName: { en: 'lumbar-support', nl: 'lendensteun' },
      gs1Category: gs1('true'),
      cannabisData: { thcPercentage: 0.2, cbdPercentage: 12.5 },
    },
    {
      ...base,
      id: 'M0000000002',
      // the spec profile's shape
      conservationMin: { celsius: 2, fahrenheit: 36, kelvin: 275.15 },
      conservationMax: { celsius: 8.5 },
      gs1Category: gs1('false'),
    },
    {
      ...base,
      id: 'M0000000003',
      // a unit that is not the column's, and a scale the schema does not name: both kept whole
      conservationMin: { celsius: { value: 59, unit: '°F' }, rankine: 500 },
      gs1Category: gs1('yes'),
    },
    { ...base, id: 'M0000000004', gs1Category: gs1(true), conservationMin: null },
    { ...base, id: 'M0000000005', gs1Category: null, conservationMax: { celsius: { value: -18.25, unit: '°C' } } },
  ];
}

async function writeParquet(file: string, options: Rec = {}): Promise<void> {
  const ctx = testContext({ fields: { recordSchema: FLAT_SCHEMA } });
  await pipeline(
    Readable.from(products()),
    flattenLocales({ locales: ['en', 'nl'] }, ctx),
    parquetSink({ path: file, ...options }, ctx),
  );
}

/** A value as the records had it: BIGINT as a number, a timestamp as unix seconds. */
function plain(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Date) return Math.floor(value.getTime() / 1000);
  if (Array.isArray(value)) return value.map(plain);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

const rowsOf = async (sql: string) => (await duckdbQuery(sql)).rows;
const extraOf = (row: Rec) => (row._extra === null ? null : (JSON.parse(String(row._extra)) as Rec));

describe('typed leaves: conservation temperatures and GS1 active (default naming)', () => {
  it('conservationMin_celsius is DOUBLE and gs1Category_active BOOLEAN; misfits are kept in _extra', async () => {
    const file = join(await tempDir('columns-'), 'products.parquet');
    await writeParquet(file);
    const types = await parquetColumnTypes(file);
    expect(types).toMatchObject({
      conservationMin_celsius: 'DOUBLE',
      conservationMin_fahrenheit: 'DOUBLE',
      conservationMin_kelvin: 'DOUBLE',
      conservationMax_celsius: 'DOUBLE',
      gs1Category_active: 'BOOLEAN',
      gs1Category_code: 'VARCHAR',
      cannabisData_thcPercentage: 'DOUBLE',
      meta_updatedAt: 'TIMESTAMP WITH TIME ZONE',
      seoName_en: 'VARCHAR',
      _extra: 'JSON',
    });
    const rows = await rowsOf(
      `SELECT id, conservationMin_celsius AS min_c, conservationMin_fahrenheit AS min_f, conservationMin_kelvin AS min_k,
              conservationMax_celsius AS max_c, gs1Category_active AS active, _extra
       FROM read_parquet(${sqlString(file)}) ORDER BY id`,
    );
    expect(rows.map(({ _extra, ...r }) => r)).toEqual([
      { id: 'M0000000001', min_c: 15, min_f: null, min_k: null, max_c: 25, active: true },
      { id: 'M0000000002', min_c: 2, min_f: 36, min_k: 275.15, max_c: 8.5, active: false },
      { id: 'M0000000003', min_c: null, min_f: null, min_k: null, max_c: 25, active: null },
      { id: 'M0000000004', min_c: null, min_f: null, min_k: null, max_c: 25, active: true },
      { id: 'M0000000005', min_c: 15, min_f: null, min_k: null, max_c: -18.25, active: null },
    ]);
    // Nothing of the live shapes' temperatures or flags was kept aside; only the misfits were, whole.
    expect(rows.map(extraOf)).toEqual([
      null,
      null,
      {
        'conservationMin.celsius': { value: 59, unit: '°F' },
        'conservationMin.rankine': 500,
        'gs1Category.active': 'yes',
      },
      null,
      null,
    ]);
  });

  it('the column descriptions say the unit and the text the flag comes from', () => {
    const schema = columnSchemaFor(
      recordSchemaFromZod(resourceSchemas.product),
      { nested: 'flatten' } as never,
      new Set(),
    );
    const described = Object.fromEntries(schema.describe().map((c) => [c.name, c]));
    expect(described.conservationMin_celsius).toEqual({
      name: 'conservationMin_celsius',
      type: 'DOUBLE',
      description: "in °C (the live service's {value, unit} written as its value)",
    });
    expect(described.conservationMax_fahrenheit!.description).toMatch(/^in °F/);
    expect(described.gs1Category_active).toMatchObject({ type: 'BOOLEAN' });
  });
});

describe('columnNames: snake_case', () => {
  it('parquet: every column and STRUCT member is a plain lowercase name; DuckDB reads types and values', async () => {
    const file = join(await tempDir('columns-'), 'products.parquet');
    await writeParquet(file, { columnNames: 'snake_case' });
    const types = await parquetColumnTypes(file);
    for (const name of Object.keys(types)) expect(name).toMatch(/^[a-z_][a-z0-9_]*$/);
    expect(types).toMatchObject({
      seo_name_en: 'VARCHAR',
      seo_name_nl: 'VARCHAR',
      meta_created_at: 'TIMESTAMP WITH TIME ZONE',
      meta_updated_at: 'TIMESTAMP WITH TIME ZONE',
      ean_gtin13: 'VARCHAR',
      cip_or_acl7: 'VARCHAR',
      hs_code: 'VARCHAR',
      public_price: 'BIGINT',
      requires_legal_text: 'BOOLEAN',
      cannabis_data_thc_percentage: 'DOUBLE',
      conservation_min_celsius: 'DOUBLE',
      gs1_category_active: 'BOOLEAN',
      weight_with_unit_value: 'DOUBLE',
      _extra: 'JSON',
    });
    // list members follow the naming too: photos[].photoType -> photo_type
    expect(types.photos).toMatch(/^STRUCT\(id BIGINT, .*, photo_type VARCHAR, .*display_order BIGINT, /);
    expect(Object.keys(types).some((n) => /[A-Z]/.test(n))).toBe(false);
    const rows = await rowsOf(
      `SELECT id, seo_name_en, ean_gtin13, public_price, cannabis_data_thc_percentage AS thc,
              conservation_min_celsius AS min_c, gs1_category_active AS active,
              epoch(meta_updated_at)::BIGINT AS updated, photos[1].photo_type AS photo_type, _extra
       FROM read_parquet(${sqlString(file)}) ORDER BY id LIMIT 3`,
    );
    expect(rows[0]).toEqual({
      id: 'M0000000001',
      seo_name_en: 'lumbar-support',
      ean_gtin13: '0609500004711',
      public_price: 4995n,
      thc: 0.2,
      min_c: 15,
      active: true,
      updated: 1700000000n,
      photo_type: 'packshot',
      _extra: null,
    });
    expect(rows[1]).toMatchObject({ min_c: 2, active: false });
    // lossless under either naming (test/helpers/lossless.ts): every value sent is in a column or in _extra
    const all = (await rowsOf(`SELECT * FROM read_parquet(${sqlString(file)}) ORDER BY id`)).map((r) => {
      const row = plain(r) as Rec;
      for (const [name, type] of Object.entries(types))
        if (type === 'JSON' && typeof row[name] === 'string') row[name] = JSON.parse(row[name] as string);
      return row;
    });
    expect(lostLeaves(products(), all, [{ type: 'flatten-locales', locales: ['en', 'nl'] }])).toEqual([]);
    // `_extra` keys stay record paths: they say where the value was in the record
    expect(extraOf(rows[2]!)).toEqual({
      'conservationMin.celsius': { value: 59, unit: '°F' },
      'conservationMin.rankine': 500,
      'gs1Category.active': 'yes',
    });
  });

  it('csv: the header has the snake_case names; values as the parquet sink writes them', async () => {
    const file = join(await tempDir('columns-'), 'products.csv');
    const ctx = testContext({ fields: { recordSchema: FLAT_SCHEMA } });
    await pipeline(
      Readable.from(products()),
      flattenLocales({ locales: ['en', 'nl'] }, ctx),
      csvSink({ path: file, columnNames: 'snake_case' }, ctx),
    );
    const header = (await readFile(file, 'utf8')).split('\r\n')[0]!.split(',');
    for (const name of header) expect(name).toMatch(/^[a-z_][a-z0-9_]*$/);
    expect(header).toEqual(expect.arrayContaining(['seo_name_en', 'meta_updated_at', 'conservation_min_celsius']));
    const rows = await rowsOf(
      `SELECT id, seo_name_en, conservation_min_celsius::DOUBLE AS min_c, gs1_category_active::BOOLEAN AS active
       FROM read_csv(${sqlString(file)}, header = true, all_varchar = true) ORDER BY id LIMIT 2`,
    );
    expect(rows).toEqual([
      { id: 'M0000000001', seo_name_en: 'lumbar-support', min_c: 15, active: true },
      { id: 'M0000000002', seo_name_en: null, min_c: 2, active: false },
    ]);
  });

  it('two fields under one snake_case name is a config error naming both and the way out', () => {
    const schema: RecordSchema = {
      fields: [
        { name: 'eanGtin13', type: { kind: 'string' } },
        { name: 'ean_gtin13', type: { kind: 'string' } },
      ],
    };
    const make = (columnNames: 'as-is' | 'snake_case') =>
      columnSchemaFor(schema, { nested: 'flatten', columnNames } as never, new Set());
    expect(make('as-is').columns.map((c) => c.name)).toEqual(['eanGtin13', 'ean_gtin13', '_extra']);
    let error: unknown;
    try {
      make('snake_case');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({
      code: 'config.column_name_clash',
      location: { path: 'columnNames' },
      message:
        'column "ean_gtin13" would hold both "eanGtin13" and "ean_gtin13" (columnNames: snake_case maps both to that name); ' +
        'rename one of them (the rename transform), or set columnNames: as-is',
    });
    // inside a STRUCT (nested: struct, LIST<STRUCT>) the same rule
    const nested: RecordSchema = {
      fields: [
        {
          name: 'brands',
          type: {
            kind: 'list',
            element: {
              kind: 'struct',
              fields: [
                { name: 'logoURL', type: { kind: 'string' } },
                { name: 'logo_url', type: { kind: 'string' } },
              ],
            },
          },
        },
      ],
    };
    expect(() =>
      columnSchemaFor(nested, { nested: 'flatten', lists: 'native', columnNames: 'snake_case' } as never, new Set()),
    ).toThrow('column "logo_url" would hold both "brands.logoURL" and "brands.logo_url"');
  });

  it('a Hive partition key names the record field: its column is left out under either naming', () => {
    const schema = columnSchemaFor(
      recordSchemaFromZod(resourceSchemas.product),
      { nested: 'flatten', columnNames: 'snake_case' } as never,
      new Set(['status', 'publicPrice']),
    );
    const names = schema.columns.map((c) => c.name);
    expect(names).not.toContain('status');
    expect(names).not.toContain('public_price');
  });
});

describe('table sink and columnNames', () => {
  const run = async (dir: string, day: string, records: Rec[], columnNames?: 'as-is' | 'snake_case') => {
    const ctx = testContext({ baseDir: dir, fields: { recordSchema: FLAT_SCHEMA } });
    ctx.run.id = `run-${day}`;
    ctx.run.startedAt = new Date(`${day}T02:00:00Z`);
    await pipeline(
      Readable.from(records),
      flattenLocales({ locales: ['en', 'nl'] }, ctx),
      tableSink({ path: 'table', ...(columnNames ? { columnNames } : {}), ignoreFields: ['meta_updatedAt'] }, ctx),
    );
  };

  it('snake_case snapshot and change files: names, types and values as DuckDB reads them', async () => {
    const dir = await tempDir('table-columns-');
    const first = products();
    await run(dir, '2026-05-01', first, 'snake_case');
    // day 2: one temperature moved, one flag flipped, one product gone from an incremental run's view
    const second = products().map((p) =>
      p.id === 'M0000000001'
        ? { ...p, conservationMin: { celsius: { value: 16.5, unit: '°C' } } }
        : p.id === 'M0000000002'
          ? { ...p, gs1Category: { ...p.gs1Category, active: 'true' } }
          : p.id === 'M0000000004'
            ? // only meta.updatedAt moved: ignoreFields names it by its record name under snake_case
              { ...p, meta: { ...p.meta, updatedAt: 1800000000 } }
            : p,
    );
    await run(dir, '2026-05-02', second, 'snake_case');
    const root = join(dir, 'table');
    const snapshot = join(root, 'snapshot/dt=2026-05-02/*.parquet');
    const changes = join(root, 'changes/dt=2026-05-02/*.parquet');
    const snapshotTypes = (await duckdbQuery(`DESCRIBE SELECT * FROM read_parquet(${sqlString(snapshot)})`)).rows;
    const typeOf = Object.fromEntries(snapshotTypes.map((r) => [r.column_name, r.column_type]));
    for (const name of Object.keys(typeOf)) expect(name).toMatch(/^[a-z_][a-z0-9_]*$/);
    expect(typeOf).toMatchObject({
      conservation_min_celsius: 'DOUBLE',
      gs1_category_active: 'BOOLEAN',
      meta_updated_at: 'TIMESTAMP WITH TIME ZONE',
      seo_name_en: 'VARCHAR',
    });
    expect(
      await rowsOf(
        `SELECT id, conservation_min_celsius AS min_c, gs1_category_active AS active
         FROM read_parquet(${sqlString(snapshot)}) ORDER BY id`,
      ),
    ).toEqual([
      { id: 'M0000000001', min_c: 16.5, active: true },
      { id: 'M0000000002', min_c: 2, active: true },
      { id: 'M0000000003', min_c: null, active: null },
      { id: 'M0000000004', min_c: null, active: true },
      { id: 'M0000000005', min_c: 15, active: null },
    ]);
    const changeTypes = Object.fromEntries(
      (await duckdbQuery(`DESCRIBE SELECT * FROM read_parquet(${sqlString(changes)})`)).rows.map((r) => [
        r.column_name,
        r.column_type,
      ]),
    );
    expect(changeTypes).toMatchObject({
      conservation_min_celsius: 'DOUBLE',
      gs1_category_active: 'BOOLEAN',
      _change: 'VARCHAR',
      _changed_at: 'TIMESTAMP WITH TIME ZONE',
      _run_id: 'VARCHAR',
    });
    expect(
      await rowsOf(
        `SELECT id, _change, conservation_min_celsius AS min_c, gs1_category_active AS active
         FROM read_parquet(${sqlString(changes)}) ORDER BY id`,
      ),
    ).toEqual([
      { id: 'M0000000001', _change: 'update', min_c: 16.5, active: true },
      { id: 'M0000000002', _change: 'update', min_c: 2, active: true },
    ]);
    const manifest = JSON.parse(await readFile(join(root, '_table.json'), 'utf8')) as Rec;
    const described = manifest.schemas[manifest.versions.at(-1).schemaHash] as Array<{ name: string }>;
    expect(described.map((c) => c.name)).toContain('conservation_min_celsius');
  });

  it.each([
    [
      'as-is',
      'snake_case',
      '(seoName_en -> seo_name_en, seoName_nl -> seo_name_nl, requiresLegalText -> requires_legal_text, and ',
    ],
    [
      'snake_case',
      'as-is',
      '(seo_name_en -> seoName_en, seo_name_nl -> seoName_nl, requires_legal_text -> requiresLegalText, and ',
    ],
  ] as const)(
    'a table written with columnNames: %s refuses a run with %s, saying how to go on',
    async (wrote, now, example) => {
      const dir = await tempDir('table-naming-');
      await run(dir, '2026-05-01', products(), wrote === 'as-is' ? undefined : wrote);
      const manifestBefore = await readFile(join(dir, 'table/_table.json'), 'utf8');
      let error: unknown;
      try {
        await run(dir, '2026-05-02', products(), now);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CatalogStreamsError);
      expect(error).toMatchObject({ code: 'table.column_names_changed' });
      const message = (error as Error).message;
      expect(message).toContain(`was written with columnNames: ${wrote}, this sink has columnNames: ${now}`);
      expect(message).toContain(example);
      expect(message).toContain(
        `set columnNames: ${wrote} to keep writing this table, or point path at a new folder to start a table with columnNames: ${now}`,
      );
      // nothing was published
      expect(await readFile(join(dir, 'table/_table.json'), 'utf8')).toBe(manifestBefore);
    },
  );
});
