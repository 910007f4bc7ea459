import { describe, expect, it } from 'vitest';
import { ConfigError, DataError } from '../../src/errors.js';
import { originOf, setOrigin } from '../../src/core/origin.js';
import { InvalidRecordError } from '../../src/transforms/index.js';
import { normalizeCodes, validate } from '../../src/pipeline/code-api.js';
import { context, fixture, memorySinks, run } from './support.js';

const products = () => fixture<any[]>('products.json');
const minimal = (codes: Record<string, unknown>): Record<string, any> => ({
  id: 'C1',
  status: 'active',
  meta: { createdAt: 1, updatedAt: 2 },
  ...codes,
});

describe('normalize-codes', () => {
  it('pads codes to their declared length as strings, keeping leading zeros', async () => {
    const [p1, p2, p3, p4] = await run(products(), normalizeCodes({}, context()));
    expect(p1).toMatchObject({ eanGtin8: '00001234', eanGtin13: '0012345678905' });
    // ean[]: 13 digits, 14 for a 14-digit code
    expect(p1.ean).toEqual(['0012345678905', '5412345678908', '12345678901231']);
    expect(p2).toMatchObject({ eanGtin14: '87123456789012', ean: [] });
    expect(p3.eanGtin13).toBe('4006381333931');
    // 11-digit UPC-A to 12; an already normalized string passes unchanged
    expect(p4).toMatchObject({ eanGtin12: '036000291452', eanGtin13: '0012345678905' });
    // fields not present stay absent
    expect(p2).not.toHaveProperty('eanGtin13');
  });

  // Issue 35, item 10: a string is kept as sent (the service sent its zeros); only integers are padded.
  it('keeps a short digit string as sent, pads an integer, leaves null alone, keeps the origin and the input', async () => {
    const input = setOrigin(minimal({ eanGtin13: '12345678905', eanGtin8: null, ean: ['4006381333931', 0] }), {
      endpoint: 'products.stream',
      index: 4,
    });
    const [out] = await run([input], normalizeCodes({}, context()));
    expect(out).toMatchObject({ eanGtin13: '12345678905', eanGtin8: null, ean: ['4006381333931', '0000000000000'] });
    expect(originOf(out)).toEqual({ endpoint: 'products.stream', index: 4 });
    expect(input.eanGtin13).toBe('12345678905');
  });

  it('national codes: fixed-length integers padded (cnk 7, cip13/acl13 13, cipOrAcl7 7, pzn 8), strings and others kept as sent', async () => {
    const input = minimal({
      cnk: 12345,
      cip13: '3400930000001',
      acl13: 3401000000001,
      cipOrAcl7: '400930',
      cip7OrAcl7: 3400930,
      pzn: '1234567',
      artgId: '0123456',
      snomedMp: 21360011000036101n.toString(),
      snomedTpp: 933225691000036,
      eanGtin12: '609500004711',
      ean: ['609500004711', '0609500004711', 609500004711],
    });
    const [out] = await run([input], normalizeCodes({}, context()));
    expect(out).toMatchObject({
      cnk: '0012345',
      cip13: '3400930000001',
      acl13: '3401000000001',
      cipOrAcl7: '400930',
      cip7OrAcl7: '3400930',
      pzn: '1234567',
      artgId: '0123456',
      snomedMp: '21360011000036101',
      snomedTpp: '933225691000036',
      eanGtin12: '609500004711',
      ean: ['609500004711', '0609500004711', '0609500004711'],
    });
  });

  it('an integer national code past 2^53 or a malformed one is dead-lettered with the reason, never rounded', async () => {
    const sinks = memorySinks();
    const stage = normalizeCodes({ onInvalid: 'dead-letter', maxInvalid: 'none' }, context({ stages: [sinks.def] }));
    const out = await run(
      [
        minimal({ id: 'A', snomedMp: 21360011000036101 }),
        minimal({ id: 'B', cnk: '12-345' }),
        minimal({ id: 'C', cnk: '0012345' }),
      ],
      stage,
    );
    expect(out.map((r) => r.id)).toEqual(['C']);
    const letters = sinks.made.flatMap((s) => s.records);
    expect(letters.map((l) => [l.id, l.issues[0].path])).toEqual([
      ['A', 'snomedMp'],
      ['B', 'cnk'],
    ]);
    expect(letters[0].issues[0].message).toContain('beyond 2^53');
  });

  it('fails on a code with too many digits, naming record, field and value', async () => {
    const bad = setOrigin(minimal({ id: 'P0001234', eanGtin8: 123456789 }), {
      endpoint: 'products.query',
      page: 0,
      index: 3,
    });
    const err = await run([bad], normalizeCodes({}, context())).catch((e) => e);
    expect(err).toBeInstanceOf(InvalidRecordError);
    expect(err.message).toBe(
      'normalize-codes: product "P0001234" field eanGtin8: expected a code of at most 8 digits (an integer or a digit string), got number 123456789 (from products.query page 0, index 3)',
    );
  });

  it('rejects every kind of broken code by the shared policy (skip and dead-letter)', async () => {
    const broken = [
      minimal({ id: 'B1', eanGtin13: 12345678901234 }),
      minimal({ id: 'B2', ean: [4006381333931, 123456789012345] }),
      minimal({ id: 'B3', eanGtin14: 2 ** 53 + 2 }),
      minimal({ id: 'B4', eanGtin12: '03600029145X' }),
      minimal({ id: 'B5', eanGtin13: -5 }),
      minimal({ id: 'B6', eanGtin13: 12.5 }),
      minimal({ id: 'B7', eanGtin8: { code: 1 } }),
    ];
    const sinks = memorySinks();
    const stage = normalizeCodes({ onInvalid: 'dead-letter', maxInvalid: 'none' }, context({ stages: [sinks.def] }));
    const out = await run([...broken, ...products()], stage);
    expect(out.map((r) => r.id)).toEqual(products().map((p) => p.id));
    expect(stage.stats).toMatchObject({ in: 11, out: 4, invalid: 7, deadLettered: 7 });
    const letters = sinks.made[0]!.records;
    expect(sinks.made[0]!.path).toBe('out/test-codes-rejected.jsonl');
    expect(letters.map((l) => [l.id, l.issues.map((i: any) => i.path)])).toEqual([
      ['B1', ['eanGtin13']],
      ['B2', ['ean[1]']],
      ['B3', ['eanGtin14']],
      ['B4', ['eanGtin12']],
      ['B5', ['eanGtin13']],
      ['B6', ['eanGtin13']],
      ['B7', ['eanGtin8']],
    ]);
    expect(letters[2].issues[0].message).toContain('beyond 2^53, so JSON already lost digits');
    // the raw record is kept, not the half-normalized one
    expect(letters[1].record.ean).toEqual([4006381333931, 123456789012345]);
    expect(letters[0].stage).toBe('normalize-codes');
  });

  it('fails the run past maxInvalid, like validate', async () => {
    const broken = Array.from({ length: 5 }, (_, i) => minimal({ id: `B${i}`, eanGtin8: 123456789 }));
    const err = await run(
      [...products(), ...broken],
      normalizeCodes({ onInvalid: 'skip', maxInvalid: '50%' }, context()),
    ).catch((e) => e);
    expect(err).toBeInstanceOf(DataError);
    expect(err.code).toBe('data.max_invalid');
    expect(err.message).toMatch(/^normalize-codes: 5 invalid records of 9 \(55.56%\) exceed maxInvalid 50%/);
  });

  it('checks GS1 check digits on request', async () => {
    const stage = normalizeCodes({ checkDigit: true, onInvalid: 'skip', maxInvalid: 'none' }, context());
    const out = await run(
      [
        minimal({ id: 'ok', eanGtin13: 4006381333931, eanGtin12: 36000291452 }),
        minimal({ id: 'bad', eanGtin13: 4006381333932 }),
      ],
      stage,
    );
    expect(out.map((r) => r.id)).toEqual(['ok']);
    expect(stage.stats.invalid).toBe(1);
  });

  it('after validate, the two stages agree on what a valid code is', async () => {
    const out = await run(products().slice(0, 3), validate({}, context()), normalizeCodes({}, context()));
    expect(out.map((p) => p.eanGtin13 ?? null)).toEqual(['0012345678905', null, '4006381333931']);
  });

  it('takes its fields from the schema, or a checked list', () => {
    expect(normalizeCodes({}, context()).fields).toEqual([
      'ean',
      'gtin',
      'eanGtin8',
      'eanGtin12',
      'eanGtin13',
      'eanGtin14',
      'hsCode',
      'cnk',
      'cip13',
      'acl13',
      'cipOrAcl7',
      'cip7OrAcl7',
      'pzn',
      'upc12',
      'upc11',
      'upc10',
      'isbn13',
      'artgId',
      'snomedMp',
      'snomedMpp',
      'snomedMpuu',
      'snomedTp',
      'snomedTpp',
      'snomedTpuu',
      'snomedCtpp',
    ]);
    expect(normalizeCodes({ fields: ['ean[]', 'eanGtin13'] }, context()).fields).toEqual(['ean', 'eanGtin13']);
    expect(() => normalizeCodes({ fields: ['eanGtin15'] }, context())).toThrow(ConfigError);
    expect(() => normalizeCodes({ fields: ['eanGtn13'] }, context())).toThrow(/did you mean "eanGtin13"/);
  });

  it('with only some fields, leaves the others as they are', async () => {
    const [p1] = await run(products(), normalizeCodes({ fields: ['eanGtin13'] }, context()));
    expect(p1).toMatchObject({
      eanGtin13: '0012345678905',
      eanGtin8: 1234,
      ean: [12345678905, 5412345678908, 12345678901231],
    });
  });

  // Issue 24: the live service, second look.
  it('hsCode: a zero-led code stays (or becomes again) 6 digits; 8 and 10 digits are kept as sent', async () => {
    // (Issue 35, item 10: codes-as-sent.test.ts holds the 2-, 4- and odd-digit cases.)
    const out = await run(
      [
        minimal({ id: 'a', hsCode: '030211' }),
        minimal({ id: 'b', hsCode: 30211 }),
        minimal({ id: 'c', hsCode: 30049000 }),
        minimal({ id: 'd', hsCode: '0901210000' }),
        minimal({ id: 'e', hsCode: null }),
      ],
      validate({}, context()),
      normalizeCodes({}, context()),
    );
    expect(out.map((p) => p.hsCode)).toEqual(['030211', '030211', '30049000', '0901210000', null]);
  });

  it('a list where one code is declared (eanGtin13/14) keeps every code, each integer with its zeros', async () => {
    const [p] = await run(
      [minimal({ eanGtin13: ['609500004711', 5400000000017], eanGtin14: [609500004711] })],
      normalizeCodes({}, context()),
    );
    expect(p).toMatchObject({
      eanGtin13: ['609500004711', '5400000000017'],
      eanGtin14: ['00000609500004711'.slice(3)],
    });
  });

  it('a bad code in such a list is named by its index', async () => {
    const sinks = memorySinks();
    const stage = normalizeCodes({ onInvalid: 'dead-letter', maxInvalid: 'none' }, context({ stages: [sinks.def] }));
    const out = await run([minimal({ eanGtin13: ['0609500004711', 'x1'] })], stage);
    expect(out).toEqual([]);
    expect(sinks.made[0]!.records.map((l) => l.issues.map((i: any) => i.path))).toEqual([['eanGtin13[1]']]);
  });

  it('US codes: integers upc12 12 digits, upc11 11, upc10 10, gtin 14, all with their zeros; a string as sent', async () => {
    const [p] = await run(
      [minimal({ upc12: 12345678905, upc11: 1234567890, upc10: 123456789, gtin: '12345678905' })],
      normalizeCodes({}, context()),
    );
    expect(p).toMatchObject({
      upc12: '012345678905',
      upc11: '01234567890',
      upc10: '0123456789',
      gtin: '12345678905',
    });
  });
});
