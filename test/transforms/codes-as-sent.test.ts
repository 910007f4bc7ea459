// Issue 35, item 10: codes kept as sent. `hsCode: "0402"` (a 4-digit HS heading) was written as
// "000402", a code that does not exist (HS chapters are 01-97). The rule, per code, in
// docs/lake-contract.md ("Codes, one by one"): a code that arrives as a string is kept exactly;
// an integer gets back the zeros JSON dropped: to the declared length where the length is fixed
// (EAN/GTIN, CNK, PZN, CIP...), the one zero of an odd digit count for hsCode, none for codes of
// varying length. normalize-codes, the JSONL encoding and the column converters (Parquet, CSV,
// tables) apply the same rule, with or without normalize-codes.
import { describe, expect, it } from 'vitest';
import { resourceSchemas } from '../../src/catalog/resources/index.js';
import { recordSchemaFromZod } from '../../src/core/zod-column-hints.js';
import { ColumnSchema, RecordShaper, type ColumnSchemaSettings } from '../../src/sinks/shared/column-schema.js';
import { jsonlFormat } from '../../src/sinks/jsonl/jsonl-encoding.js';
import { normalizeCodes, validate } from '../../src/pipeline/code-api.js';
import { context, run } from './support.js';

const minimal = (codes: Record<string, unknown>): Record<string, any> => ({
  id: 'C1',
  status: 'active',
  meta: { createdAt: 1, updatedAt: 2 },
  ...codes,
});

/** [field, what arrives, what is written]: the lake contract's table, one row per case. */
const CASES: [string, unknown, string][] = [
  // hsCode: an even digit count (2, 4, 6, 8, 10), never `00...`.
  ['hsCode', '0402', '0402'],
  ['hsCode', '04', '04'],
  ['hsCode', '030211', '030211'],
  ['hsCode', '30211', '30211'],
  ['hsCode', 402, '0402'],
  ['hsCode', 4, '04'],
  ['hsCode', 10, '10'],
  ['hsCode', 1001, '1001'],
  ['hsCode', 30211, '030211'],
  ['hsCode', 300490, '300490'],
  ['hsCode', 3004900, '03004900'],
  ['hsCode', 901210000, '0901210000'],
  // EAN/GTIN: fixed lengths; an integer is padded to it, a string kept.
  ['eanGtin13', 12345678905, '0012345678905'],
  ['eanGtin13', '12345678905', '12345678905'],
  ['eanGtin8', 1234, '00001234'],
  ['eanGtin8', '1234', '1234'],
  ['eanGtin12', 36000291452, '036000291452'],
  ['eanGtin14', 87123456789012, '87123456789012'],
  ['eanGtin14', 609500004711, '00609500004711'],
  ['gtin', 12345678905, '00012345678905'],
  ['gtin', '12345678905', '12345678905'],
  ['upc12', 12345678905, '012345678905'],
  // National codes of fixed length.
  ['cnk', 12345, '0012345'],
  ['cnk', '12345', '12345'],
  ['cnk', '0012345', '0012345'],
  ['pzn', 1234567, '01234567'],
  ['pzn', '1234567', '1234567'],
  ['cip13', 3400930000001, '3400930000001'],
  ['acl13', 401000000001, '0401000000001'],
  ['cipOrAcl7', 400930, '0400930'],
  ['cip7OrAcl7', '400930', '400930'],
  ['upc11', 1234567890, '01234567890'],
  ['upc10', 123456789, '0123456789'],
  ['isbn13', 978123456789, '0978123456789'],
  // Codes of varying length: digits as sent.
  ['artgId', 123, '123'],
  ['artgId', '0123', '0123'],
  ['snomedMp', 21360011000036, '21360011000036'],
];

describe('codes kept as sent (normalize-codes)', () => {
  it('hsCode "0402" stays "0402"; an integer gets back one zero when its digit count is odd, never more', async () => {
    const out = await run(
      [
        minimal({ id: 'a', hsCode: '0402' }),
        minimal({ id: 'b', hsCode: 402 }),
        minimal({ id: 'c', hsCode: 1001 }),
        minimal({ id: 'd', hsCode: 3004900 }),
      ],
      validate({}, context()),
      normalizeCodes({}, context()),
    );
    expect(out.map((p) => p.hsCode)).toEqual(['0402', '0402', '1001', '03004900']);
    // No written HS code starts with 00 (chapters are 01-97).
    expect(out.filter((p) => p.hsCode.startsWith('00'))).toEqual([]);
  });

  it.each(CASES)('%s: %j is written %j', async (field, sent, written) => {
    const [out] = await run([minimal({ [field]: sent })], normalizeCodes({}, context()));
    expect(out![field]).toBe(written);
  });

  it('a list of codes: integers to 13 digits (14 kept), strings as sent', async () => {
    const [out] = await run(
      [minimal({ ean: ['609500004711', 609500004711, 12345678901231], eanGtin13: ['12345', 12345] })],
      normalizeCodes({}, context()),
    );
    expect(out).toMatchObject({
      ean: ['609500004711', '0609500004711', '12345678901231'],
      eanGtin13: ['12345', '0000000012345'],
    });
  });
});

describe('codes kept as sent (writers, without normalize-codes)', () => {
  const productSchema = recordSchemaFromZod(resourceSchemas.product);

  it('JSONL writes each case as the lake contract says', async () => {
    const format = jsonlFormat({ gzip: false, ctx: { recordSchema: productSchema } });
    for (const [field, sent, written] of CASES) {
      // A code of varying length has no zeros to restore: JSONL keeps its integer (the column a string).
      if (typeof sent === 'number' && (field === 'artgId' || field.startsWith('snomed'))) continue;
      let emitted: Record<string, unknown> | undefined;
      await format.accept(minimal({ [field]: sent }), 1, (_record, item) => {
        emitted = item;
      });
      expect([field, sent, emitted?.[field]]).toEqual([field, sent, written]);
    }
  });

  it('Parquet, CSV and tables (the column converters) write each case as the lake contract says', () => {
    const settings: ColumnSchemaSettings = {
      nested: 'flatten',
      lists: 'native',
      timestamps: 'millis',
      timestampInput: 'seconds',
      prices: 'minor-units',
      excluded: new Set(),
    };
    const shaper = new RecordShaper(new ColumnSchema(productSchema, settings));
    for (const [field, sent, written] of CASES) {
      const column = shaper.schema.columns.findIndex((c) => c.name === field);
      const row = shaper.shape(minimal({ [field]: sent }));
      expect([field, sent, row.values[column]]).toEqual([field, sent, written]);
    }
    const hs = shaper.schema.describe().find((c) => c.name === 'hsCode');
    expect(hs?.description).toMatch(/even number of digits/);
  });
});
