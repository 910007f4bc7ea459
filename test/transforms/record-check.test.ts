// validate's one walk must give the answer of its three (core/record-depth.ts's depth limit, zod,
// hasUnknown) wherever it gives one: PASS or UNDECLARED only where zod accepts and no field is too
// deep, UNDECLARED exactly where hasUnknown finds a field. Compared on real sandbox records, on
// randomly broken and extended copies of them, and on small schemas with each case the key loop
// handles apart (absent and undefined keys, __proto__, depth at the limit, open values).
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MediaRecord, Product, describeSchema } from '../../src/catalog/index.js';
import { MAX_RECORD_DEPTH, tooDeepFields } from '../../src/core/record-depth.js';
import { Dataset } from '../../src/sandbox/index.js';
import {
  PASS,
  UNDECLARED,
  UNSURE,
  compileRecordCheck,
  hasUnknown,
  knownShapeOf,
  type KnownShape,
} from '../../src/transforms/record-check.js';

/** Asserts the one walk agrees with validate's three on `record`; returns its verdict. */
function agree(schema: z.ZodType, known: KnownShape | undefined, record: object): number {
  const verdict = compileRecordCheck(schema, known)(record);
  if (verdict === UNSURE) return verdict;
  const why = () =>
    `${JSON.stringify(record)?.slice(0, 400)}\n${JSON.stringify(schema.safeParse(record).error?.issues)}`;
  if (tooDeepFields(record).length > 0) throw new Error(`one walk passed a too-deep record: ${why()}`);
  if (!schema.safeParse(record).success) throw new Error(`one walk passed a record zod rejects: ${why()}`);
  const unknown = known !== undefined && hasUnknown(known, record);
  if (unknown !== (verdict === UNDECLARED)) throw new Error(`one walk said undeclared ${!unknown}: ${why()}`);
  return verdict;
}

function prng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Every object inside a value, the value itself included. */
function objects(value: unknown, out: Array<Record<string, unknown>> = []): typeof out {
  if (Array.isArray(value)) for (const v of value) objects(v, out);
  else if (typeof value === 'object' && value !== null) {
    out.push(value as Record<string, unknown>);
    for (const v of Object.values(value)) objects(v, out);
  }
  return out;
}

/** A value `levels` levels deep (arrays in arrays). */
const nested = (levels: number): unknown => JSON.parse(`${'['.repeat(levels)}${']'.repeat(levels)}`);

const productKnown = knownShapeOf(describeSchema(Product));

const REPLACEMENTS: unknown[] = [null, undefined, -1, 0, 1.5, NaN, 2 ** 60, '', 'x', true, {}, [], [1], { en: 5 }];

describe('compileRecordCheck', () => {
  it('passes every sandbox product and media record of every profile, telling the ones with undeclared fields', () => {
    let undeclared = 0;
    for (const profile of ['spec', 'be', 'us'] as const) {
      const ds = new Dataset({ products: 300, seed: 5, profile });
      for (let i = 0; i < ds.productCount; i++) {
        const verdict = agree(Product, productKnown, ds.product(i));
        expect(verdict).not.toBe(UNSURE);
        if (verdict === UNDECLARED) undeclared++;
        expect(agree(Product, undefined, ds.product(i))).toBe(PASS);
      }
      const mediaKnown = knownShapeOf(describeSchema(MediaRecord));
      for (let m = 0; m < Math.min(ds.mediaCount, 300); m++)
        expect(agree(MediaRecord, mediaKnown, ds.mediaRecord(m))).not.toBe(UNSURE);
    }
    // Every field the sandbox's profiles send is declared (routeOfAdministration since issue 37), so a
    // first run warns about nothing; undeclared fields are told by the tests below.
    expect(undeclared).toBe(0);
  });

  it('agrees with zod, the depth limit and hasUnknown on 5000 broken or extended products', () => {
    const ds = new Dataset({ products: 300, seed: 9, profile: 'be' });
    const random = prng(7);
    const seen = new Set<number>();
    for (let n = 0; n < 5000; n++) {
      const record = ds.product(Math.floor(random() * ds.productCount));
      const inside = objects(record);
      for (let k = 1 + Math.floor(random() * 2); k > 0; k--) {
        const target = inside[Math.floor(random() * inside.length)]!;
        const keys = Object.keys(target);
        const key = keys[Math.floor(random() * keys.length)] ?? 'x';
        const roll = random();
        if (roll < 0.15) delete target[key];
        else if (roll < 0.3) target[`extra${n % 3}`] = random() < 0.5 ? 1 : nested(3);
        else if (roll < 0.35) target[key] = nested(MAX_RECORD_DEPTH);
        else target[key] = REPLACEMENTS[Math.floor(random() * REPLACEMENTS.length)];
      }
      seen.add(agree(Product, productKnown, record));
      agree(Product, undefined, record);
    }
    expect([...seen].sort()).toEqual([UNSURE, PASS, UNDECLARED]);
  });

  it('tells undeclared fields at nested levels and in lists of objects, and passes them when allowed', () => {
    const ds = new Dataset({ products: 5, seed: 3, profile: 'spec' });
    const base = ds.product(0) as Record<string, any>;
    expect(agree(Product, productKnown, base)).toBe(PASS);
    const extended = [
      { ...base, futureField: 1 },
      { ...base, meta: { ...base.meta, shiny: true } },
      { ...base, brands: [...base.brands, { ...base.brands[0], shiny: true }] },
      {
        ...base,
        publicCategories: [{ ...base.publicCategories[0], meta: { ...base.publicCategories[0].meta, x: 1 } }],
      },
    ];
    for (const record of extended) {
      expect(agree(Product, productKnown, record)).toBe(UNDECLARED);
      expect(agree(Product, undefined, record)).toBe(PASS);
    }
    // Open values take any key: a localized map, a measure's object, a field of unknown layout.
    const open = {
      ...base,
      name: { xx: 'a' },
      conservationMin: { celsius: { value: 2, unit: 'C', note: 'x' } },
      apbCategory: { a: 1 },
    };
    expect(agree(Product, productKnown, open)).toBe(PASS);
  });

  it('leaves records past the depth limit to validate, wherever the deep value is', () => {
    const ds = new Dataset({ products: 5, seed: 3, profile: 'spec' });
    const base = ds.product(0) as Record<string, any>;
    // The record is level 1: a value at level L may have MAX_RECORD_DEPTH - L + 1 levels.
    const places: Array<[level: number, (deep: unknown) => object]> = [
      [2, (deep) => ({ ...base, futureField: deep })],
      [2, (deep) => ({ ...base, apbCategory: deep })],
      [3, (deep) => ({ ...base, attributes: [deep] })],
      [4, (deep) => ({ ...base, conservationMin: { celsius: { value: 2, unit: 'C', deep } } })],
    ];
    for (const [level, place] of places) {
      const at = place(nested(MAX_RECORD_DEPTH - level + 1));
      const past = place(nested(MAX_RECORD_DEPTH - level + 2));
      expect(tooDeepFields(at)).toHaveLength(0);
      expect(tooDeepFields(past)).toHaveLength(1);
      for (const known of [productKnown, undefined]) {
        expect(agree(Product, known, past)).toBe(UNSURE);
        expect(agree(Product, known, at)).not.toBe(UNSURE);
      }
    }
  });

  it('holds the depth limit where the schema itself nests deeper', () => {
    let arrays: z.ZodType = z.int();
    let objects: z.ZodType = z.int();
    for (let i = 0; i < MAX_RECORD_DEPTH + 5; i++) {
      arrays = z.array(arrays);
      objects = z.object({ o: objects.optional() });
    }
    const record = z.object({ a: arrays, b: objects.optional() });
    const deepObject = (levels: number): unknown => (levels === 0 ? undefined : { o: deepObject(levels - 1) });
    expect(agree(record, undefined, { a: nested(MAX_RECORD_DEPTH - 1) })).toBe(PASS);
    expect(agree(record, undefined, { a: nested(MAX_RECORD_DEPTH) })).toBe(UNSURE);
    expect(agree(record, undefined, { a: [], b: deepObject(MAX_RECORD_DEPTH - 1) })).toBe(PASS);
    expect(agree(record, undefined, { a: [], b: deepObject(MAX_RECORD_DEPTH) })).toBe(UNSURE);
  });

  it('reads a __proto__ key of JSON.parse as the own field it is', () => {
    const ds = new Dataset({ products: 5, seed: 3, profile: 'spec' });
    const text = ds.productJson(0);
    const record = JSON.parse(`{"__proto__":{"x":1},${text.slice(1)}`) as object;
    expect(Object.keys(record)[0]).toBe('__proto__');
    expect(agree(Product, productKnown, record)).toBe(UNDECLARED);
    expect(agree(Product, undefined, record)).toBe(PASS);
    const deep = JSON.parse(`{"__proto__":${JSON.stringify(nested(MAX_RECORD_DEPTH))},${text.slice(1)}`) as object;
    expect(agree(Product, undefined, deep)).toBe(UNSURE);
    const strict = z.strictObject({ a: z.string() });
    expect(agree(strict, undefined, JSON.parse('{"a":"x","__proto__":1}'))).toBe(UNSURE);
    const loose = z.looseObject({ a: z.string() });
    expect(agree(loose, undefined, JSON.parse('{"a":"x","__proto__":1}'))).toBe(PASS);
    expect(agree(loose, knownShapeOf(describeSchema(loose)), JSON.parse('{"a":"x","__proto__":1}'))).toBe(UNDECLARED);
  });

  it('agrees with zod on absent, undefined and open keys and on each construct it walks', () => {
    const schemas: z.ZodType[] = [
      z.object({ a: z.string(), b: z.int().optional() }),
      z.looseObject({ a: z.string().optional(), b: z.unknown() }),
      z.strictObject({ a: z.string().nullable() }),
      z.object({ a: z.any() }),
      z.object({ a: z.union([z.string(), z.unknown()]) }),
      // undefined goes to the inner schema: exactOptional, and optional over a default
      z.object({ a: z.exactOptional(z.string()) }),
      z.object({ a: z.exactOptional(z.string().nullable()).nullable() }),
      z.object({ a: z.string().default('x').optional() }),
      z.object({ a: z.string() }).catchall(z.number()),
      z.object({ a: z.array(z.looseObject({ b: z.int() })) }),
      z.object({ a: z.record(z.string(), z.int()) }),
      z.object({ a: z.record(z.string(), z.looseObject({ b: z.int() })) }),
      z.object({ a: z.union([z.int(), z.looseObject({ b: z.int() })]) }),
      z.object({ a: z.discriminatedUnion('k', [z.object({ k: z.literal('a') })]).optional() }),
      z.object({ a: z.string().default('d') }),
      z.object({ toString: z.string().optional() }),
      z.object({ a: z.int() }).refine((o) => o.a > 1),
    ];
    const values: unknown[] = [
      {},
      { a: undefined },
      { a: 'x' },
      { a: 'x', b: undefined },
      { a: 'x', b: 1 },
      { a: 'x', b: 'y' },
      { a: null },
      { a: 2 },
      { a: 1 },
      { a: [] },
      { a: [{ b: 1 }, { b: 1, c: 2 }] },
      { a: [{ b: 'x' }] },
      { a: { b: 1 } },
      { a: { b: 1, c: { d: 1 } } },
      { a: { en: 1, nl: 2 } },
      { a: { k: 'a' } },
      { a: nested(MAX_RECORD_DEPTH) },
      { a: 'x', b: nested(MAX_RECORD_DEPTH) },
      { a: 'x', c: nested(MAX_RECORD_DEPTH - 1) },
      Object.assign(Object.create(null), { a: 'x' }),
      Object.assign(Object.create({ a: 'x' }), { b: 1 }),
      { toString: 'x' },
      new Date(0),
      // zod reads `a` where for-in does not see it: non-enumerable, or through the prototype
      Object.defineProperty({ a: 'x' }, 'b', { value: 'y', enumerable: false }),
      Object.defineProperty({}, 'a', { value: 5, enumerable: false }),
      new (class {
        get a() {
          return 5;
        }
      })(),
      [],
    ];
    const verdicts = new Set<number>();
    for (const schema of schemas) {
      const known = knownShapeOf(describeSchema(schema));
      for (const value of values) {
        verdicts.add(agree(schema, known, value as object));
        agree(schema, undefined, value as object);
      }
    }
    expect([...verdicts].sort()).toEqual([UNSURE, PASS, UNDECLARED]);
    // Required keys must be there even where their schema takes undefined, as zod has it.
    expect(compileRecordCheck(z.object({ a: z.unknown() }), undefined)({})).toBe(UNSURE);
    expect(compileRecordCheck(z.object({ a: z.unknown() }), undefined)({ a: undefined })).toBe(PASS);
    // Optional keys present as undefined are fine, absent ones cost nothing.
    expect(compileRecordCheck(z.object({ a: z.string().optional() }), undefined)({ a: undefined })).toBe(PASS);
    expect(compileRecordCheck(z.object({ a: z.string().optional() }), undefined)({})).toBe(PASS);
    expect(compileRecordCheck(z.object({ a: z.string() }), undefined)({})).toBe(UNSURE);
  });
});
