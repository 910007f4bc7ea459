// The DDL `catalog-streams schema` prints quotes what each dialect needs and nothing else (issue
// 25): plain lowercase names stay bare, camelCase names, keywords and a leading underscore
// (Athena) are quoted, double quotes for DuckDB, backticks for Spark and Athena/Hive. DuckDB runs
// the CREATE TABLE it is given, and its own list of reserved keywords is a subset of ours.
import { describe, expect, it } from 'vitest';
import { resourceSchemas } from '../../src/catalog/index.js';
import { recordSchemaFromZod } from '../../src/core/zod-column-hints.js';
import { columnSchemaFor } from '../../src/sinks/parquet/parquet-encoding.js';
import {
  athenaCreateTable,
  duckdbCreateTable,
  quoteIdentifier,
  sinkLayout,
  sparkCreateTable,
} from '../../src/sinks/shared/schema-ddl.js';
import { duckdbQuery } from '../helpers/duckdb.js';

const layout = sinkLayout('catalog/products/dt={date}/part-{part}.parquet', 's3://lake/');
const productColumns = (columnNames: 'as-is' | 'snake_case') =>
  columnSchemaFor(
    recordSchemaFromZod(resourceSchemas.product),
    { nested: 'flatten', lists: 'native', timestamps: 'millis', columnNames } as never,
    new Set(),
  );

describe('quoteIdentifier', () => {
  it.each([
    ['meta_updated_at', 'meta_updated_at', 'meta_updated_at', 'meta_updated_at'],
    ['meta_updatedAt', '"meta_updatedAt"', '`meta_updatedAt`', '`meta_updatedAt`'],
    ['_extra', '_extra', '_extra', '`_extra`'],
    ['order', '"order"', '`order`', '`order`'],
    ['date', '"date"', '`date`', '`date`'],
    ['user', '"user"', '`user`', '`user`'],
    ['3d_model', '"3d_model"', '`3d_model`', '`3d_model`'],
    ['name_fr-BE', '"name_fr-BE"', '`name_fr-BE`', '`name_fr-BE`'],
    ['say"hi`', '"say""hi`"', '`say"hi```', '`say"hi```'],
  ])('%s: duckdb %s, spark %s, athena %s', (name, duckdb, spark, athena) => {
    expect(quoteIdentifier(name, 'duckdb')).toBe(duckdb);
    expect(quoteIdentifier(name, 'spark')).toBe(spark);
    expect(quoteIdentifier(name, 'athena')).toBe(athena);
  });

  it('covers every keyword DuckDB reserves (duckdb_keywords())', async () => {
    const { rows } = await duckdbQuery(
      "SELECT keyword_name FROM duckdb_keywords() WHERE keyword_category = 'reserved' ORDER BY 1",
    );
    const bare = rows.map((r) => String(r.keyword_name)).filter((k) => quoteIdentifier(k, 'duckdb') === k);
    expect(bare).toEqual([]);
  });
});

describe('CREATE TABLE per dialect', () => {
  it('snake_case columns: DuckDB and Spark DDL name them bare; Athena backticks only _extra', () => {
    const schema = productColumns('snake_case');
    const duck = duckdbCreateTable('products', schema, layout);
    expect(duck).toContain('\n  meta_updated_at TIMESTAMP WITH TIME ZONE,');
    expect(duck).toContain('\n  conservation_min_celsius DOUBLE,');
    expect(duck).toContain('\n  gs1_category_active BOOLEAN,');
    expect(duck).toMatch(/\n {2}public_categories STRUCT\(id BIGINT, name JSON, parent BIGINT, "order" BIGINT, /);
    // only keywords are quoted
    const quoted = new Set([...duck.matchAll(/"([^"]+)"/g)].map((m) => m[1]));
    expect([...quoted].sort()).toEqual(['order']);
    const spark = sparkCreateTable('products', schema, layout);
    expect(spark).toContain("\n  ean_gtin13 STRING COMMENT 'code of 13 digits, leading zeros kept',");
    expect(spark).toContain('PARTITIONED BY (dt)');
    const athena = athenaCreateTable('products', schema, layout);
    expect(athena).toContain('\n  meta_updated_at timestamp,');
    expect(athena).toContain('\n  `_extra` string COMMENT');
    expect(athena).toMatch(/public_categories array<struct<id:bigint,name:string,parent:bigint,`order`:bigint,/);
    expect(athena).toContain('PARTITIONED BY (dt date)');
  });

  it('as-is columns: camelCase names are quoted (Athena lowercases them, as Glue stores them)', () => {
    const schema = productColumns('as-is');
    const duck = duckdbCreateTable('products', schema, layout);
    expect(duck).toContain('\n  "meta_updatedAt" TIMESTAMP WITH TIME ZONE,');
    expect(duck).toContain('\n  id VARCHAR,');
    expect(sparkCreateTable('products', schema, layout)).toContain('\n  `meta_updatedAt` TIMESTAMP,');
    expect(athenaCreateTable('products', schema, layout)).toContain('\n  meta_updatedat timestamp,');
  });

  it.each(['as-is', 'snake_case'] as const)(
    'DuckDB creates the table it is given (%s) with the columns and types the sink writes',
    async (naming) => {
      const schema = productColumns(naming);
      const ddl = duckdbCreateTable('products', schema, sinkLayout('products.parquet', '/tmp/'));
      const { rows } = await duckdbQuery(`${ddl.split('\n-- ')[0]}\nDESCRIBE products;`);
      expect(rows.map((r) => r.column_name)).toEqual(schema.columns.map((c) => c.name));
      expect(
        rows.find(
          (r) => r.column_name === (naming === 'as-is' ? 'conservationMin_celsius' : 'conservation_min_celsius'),
        ),
      ).toMatchObject({ column_type: 'DOUBLE' });
    },
  );
});
