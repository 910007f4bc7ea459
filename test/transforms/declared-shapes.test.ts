// Issue 37 item 7: a field the catalog declares keeps its column whatever shape the live service
// sends it in. eanGtin13/14 come as lists for one client (413 of the demo's 11,555 products had
// their EAN-13 only in `_extra`), brands as bare ids; each now fills the declared column, a list of
// several codes also fills the list column beside it, and every code stays exactly as sent.
import { describe, expect, it } from 'vitest';
import { Product } from '../../src/catalog/index.js';
import { recordSchemaFromZod } from '../../src/core/zod-column-hints.js';
import { ColumnSchema, RecordShaper, type ColumnSchemaSettings } from '../../src/sinks/shared/column-schema.js';
import { normalizeCodesStage } from '../../src/transforms/normalize-codes.js';
import { normalizeCodes } from '../../src/pipeline/code-api.js';
import { context, run } from './support.js';

const settings: ColumnSchemaSettings = {
  nested: 'flatten',
  lists: 'native',
  timestamps: 'millis',
  timestampInput: 'seconds',
  prices: 'minor-units',
  excluded: new Set(),
};

/** The product's columns as a Parquet/CSV/table sink makes them after normalize-codes (as in pipelines/demo.yml). */
function shaperAfterNormalizeCodes(s: Partial<ColumnSchemaSettings> = {}) {
  const input = recordSchemaFromZod(Product);
  const options = normalizeCodesStage.options.parse({});
  const schema = normalizeCodesStage.schema!(input, options, { resource: 'product' });
  return new RecordShaper(new ColumnSchema(schema, { ...settings, ...s }));
}

function row(shaper: RecordShaper, record: Record<string, unknown>) {
  const { values } = shaper.shape(record);
  const names = shaper.schema.columns.map((c) => c.name);
  return Object.fromEntries(names.map((n, i) => [n, values[i]]));
}

const meta = { createdAt: 1700000000, updatedAt: 1700000000 };

describe('declared fields keep their column in the live shapes (issue 37)', () => {
  it('eanGtin13List and eanGtin14List stand beside their code columns, typed as lists of codes', () => {
    const columns = shaperAfterNormalizeCodes().schema.describe();
    const names = columns.map((c) => c.name);
    expect(names.indexOf('eanGtin13List')).toBe(names.indexOf('eanGtin13') + 1);
    expect(names.indexOf('eanGtin14List')).toBe(names.indexOf('eanGtin14') + 1);
    expect(columns.find((c) => c.name === 'eanGtin13List')?.type).toBe('VARCHAR[]');
    // Only fields that may come as lists get one.
    expect(names).not.toContain('eanGtin8List');
    expect(names).not.toContain('gtinList');
    const snake = shaperAfterNormalizeCodes({ columnNames: 'snake_case' })
      .schema.describe()
      .map((c) => c.name);
    expect(snake).toContain('ean_gtin13_list');
  });

  it('a one-code list is that code; several: the first in the column, all of them beside it, zeros as sent', async () => {
    const records = [
      { id: 'A', status: 'active', meta, eanGtin13: ['0609500004711'], eanGtin14: ['00609500004711'] },
      { id: 'B', status: 'active', meta, eanGtin13: ['0609500004711', '5400000000017'] },
      { id: 'C', status: 'active', meta, eanGtin13: '0012345678905' },
      { id: 'D', status: 'active', meta, eanGtin13: [609500004711, '5400000000017'] },
    ];
    const normalized = await run(records, normalizeCodes({}, context()));
    const shaper = shaperAfterNormalizeCodes();
    const rows = normalized.map((r) => row(shaper, r));
    expect(rows.map((r) => [r.eanGtin13, r.eanGtin13List, r._extra])).toEqual([
      ['0609500004711', null, null],
      ['0609500004711', ['0609500004711', '5400000000017'], null],
      ['0012345678905', null, null],
      // an integer gets back the zeros JSON dropped; a digit string is kept exactly as sent
      ['0609500004711', ['0609500004711', '5400000000017'], null],
    ]);
    expect(rows[0]!.eanGtin14).toBe('00609500004711');
    expect(shaper.extraFields.size).toBe(0);
  });

  it('without normalize-codes the declared schema gives the same columns and values', () => {
    const shaper = new RecordShaper(new ColumnSchema(recordSchemaFromZod(Product), settings));
    const r = row(shaper, { id: 'B', status: 'active', meta, eanGtin13: ['5400000000017', '0609500004711'] });
    expect([r.eanGtin13, r.eanGtin13List, r._extra]).toEqual([
      '5400000000017',
      ['5400000000017', '0609500004711'],
      null,
    ]);
  });

  it('a list with a value that is no code is kept whole in _extra, nothing in the columns', () => {
    const shaper = shaperAfterNormalizeCodes();
    const r = row(shaper, { id: 'E', status: 'active', meta, eanGtin13: [{ code: 1 }, '5400000000017'] });
    expect([r.eanGtin13, r.eanGtin13List]).toEqual([null, null]);
    expect(JSON.parse(r._extra as string)).toEqual({ eanGtin13: [{ code: 1 }, '5400000000017'] });
  });

  it('bare brand ids fill brands[].id beside brand objects; routeOfAdministration has a text column', () => {
    const shaper = shaperAfterNormalizeCodes();
    const r = row(shaper, {
      id: 'F',
      status: 'active',
      meta,
      brands: [411, { id: 412, name: { en: 'Examplebrand' } }],
      routeOfAdministration: 'topical',
    });
    expect((r.brands as Array<{ id: bigint }>).map((b) => b.id)).toEqual([411n, 412n]);
    expect(r.routeOfAdministration).toBe('topical');
    expect(r._extra).toBeNull();
    // another shape of the undocumented field is still kept, in _extra
    const other = row(shaper, { id: 'G', status: 'active', meta, routeOfAdministration: { code: 'PO' } });
    expect(JSON.parse(other._extra as string)).toEqual({ routeOfAdministration: { code: 'PO' } });
  });
});
