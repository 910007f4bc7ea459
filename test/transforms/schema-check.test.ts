// The quick check validate runs before zod must never say "valid" where zod
// says invalid. Compared with zod on real sandbox records, on thousands of
// randomly broken copies of them, on the hand-made invalid fixtures, and on
// small schemas using each construct it mirrors (or refuses to).
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MediaRecord, Product, resourceSchemas } from '../../src/catalog/index.js';
import { Dataset } from '../../src/sandbox/index.js';
import { compileSchemaCheck } from '../../src/transforms/schema-check.js';
import { fixture } from './support.js';

/** Asserts quick(value) implies zod success; returns what quick said. */
function agree(schema: z.ZodType, value: unknown): boolean {
  const quick = compileSchemaCheck(schema)(value);
  if (quick && !schema.safeParse(value).success) {
    throw new Error(
      `quick check accepted a value zod rejects: ${JSON.stringify(value)?.slice(0, 400)}\n${JSON.stringify(schema.safeParse(value).error?.issues)}`,
    );
  }
  return quick;
}

function prng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Every [container, key] inside a value (object keys and array indexes). */
function slots(value: unknown, out: Array<[Record<string | number, unknown>, string | number]> = []): typeof out {
  if (Array.isArray(value)) value.forEach((v, i) => (out.push([value as never, i]), slots(v, out)));
  else if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      out.push([value as never, k]);
      slots(v, out);
    }
  }
  return out;
}

const REPLACEMENTS: unknown[] = [
  null,
  -1,
  0,
  1.5,
  NaN,
  Infinity,
  2 ** 60,
  99999999999999999,
  '',
  'x',
  'bogus',
  true,
  {},
  [],
  [1],
  { en: 5 },
  { en: 'a' },
  ['a'],
];

describe('compileSchemaCheck', () => {
  const ds = new Dataset({ products: 600, seed: 11, profile: 'spec' });

  it('accepts every valid sandbox product and media record (the fast path covers real data), as zod does', () => {
    for (let i = 0; i < ds.productCount; i++) expect(agree(Product, ds.product(i))).toBe(true);
    for (let m = 0; m < Math.min(ds.mediaCount, 600); m++) expect(agree(MediaRecord, ds.mediaRecord(m))).toBe(true);
  });

  it('never accepts a randomly broken record that zod rejects (5000 mutations)', () => {
    const random = prng(42);
    let rejected = 0;
    let accepted = 0;
    for (let n = 0; n < 5000; n++) {
      const record = ds.product(Math.floor(random() * ds.productCount)) as Record<string, unknown>;
      const places = slots(record);
      for (let k = 1 + Math.floor(random() * 2); k > 0; k--) {
        const [container, key] = places[Math.floor(random() * places.length)]!;
        if (random() < 0.15 && !Array.isArray(container)) delete container[key];
        else container[key] = REPLACEMENTS[Math.floor(random() * REPLACEMENTS.length)];
      }
      if (agree(Product, record)) accepted++;
      else rejected++;
    }
    // Not vacuous: many mutations break the record, some leave it valid (e.g. an extra or an optional field).
    expect(rejected).toBeGreaterThan(2000);
    expect(accepted).toBeGreaterThan(100);
  });

  it('leaves the hand-made invalid products to zod', () => {
    for (const { record } of fixture<Array<{ record: unknown }>>('invalid-products.json'))
      expect(agree(Product, record)).toBe(false);
  });

  it('runs refinements: a replacement on a product that is not replaced is left to zod', () => {
    const p = { ...ds.product(0), status: 'active', replacement: 'P0000002' };
    expect(agree(Product, p)).toBe(false);
  });

  it('agrees with zod on each construct, and says "don\'t know" for the ones it does not mirror', () => {
    const schemas: z.ZodType[] = [
      z.string().min(2).max(4),
      z.string().regex(/^a+$/),
      z.string().trim().min(1),
      z.email(),
      z.int().nonnegative(),
      z.number().gt(0).lt(10),
      z.number().multipleOf(3),
      z.int32(),
      z.boolean(),
      z.null(),
      z.enum(['a', 'b']),
      z.literal(5),
      z.string().optional(),
      z.string().nullable(),
      z.array(z.int()).min(1),
      z.strictObject({ a: z.string() }),
      z.object({ a: z.string() }),
      z.looseObject({ a: z.string().optional() }),
      // zod wants `a` present though its schema takes undefined
      z.object({ a: z.unknown() }),
      z.object({ a: z.union([z.string(), z.any()]) }),
      // undefined goes to the inner schema: exactOptional, and optional over a default
      z.object({ a: z.exactOptional(z.string()) }),
      z.object({ a: z.exactOptional(z.string().nullable()).nullable() }),
      z.object({ a: z.string().default('x').optional() }),
      z.object({ a: z.string() }).catchall(z.number()),
      z.record(z.string(), z.int()),
      z.record(z.enum(['en', 'nl']), z.string()),
      z.union([z.string(), z.int()]),
      z.discriminatedUnion('k', [z.object({ k: z.literal('a') }), z.object({ k: z.literal('b'), n: z.int() })]),
      z.xor([z.string(), z.string().min(1)]),
      z.string().default('d'),
      z.string().transform((s) => s.length),
      z.coerce.number(),
      z.object({ a: z.int() }).refine((o) => o.a > 1),
      z.object({ a: z.int() }).refine(async () => true),
      z.lazy(() => z.string()),
      z.unknown(),
    ];
    const values: unknown[] = [
      undefined,
      null,
      true,
      0,
      1,
      3,
      5,
      -2,
      1.5,
      NaN,
      Infinity,
      2 ** 31,
      2 ** 60,
      '',
      'a',
      'aa',
      'abcde',
      ' a ',
      'x@y.z',
      'en',
      [],
      [1],
      [1, 'a'],
      {},
      { a: 'x' },
      { a: undefined },
      { a: null },
      { a: 'x', b: 1 },
      { a: 'x', b: 'y' },
      { a: 2 },
      { a: 1 },
      { en: 'a' },
      { en: 'a', de: 'b' },
      { en: 1 },
      { k: 'a' },
      { k: 'b', n: 1 },
      { k: 'b' },
      { k: 'c' },
      Object.assign(Object.create(null), { en: 1 }),
      new Date(0),
    ];
    for (const schema of schemas) for (const value of values) agree(schema, value);
    // Constructs it refuses to mirror answer false even where zod accepts.
    expect(compileSchemaCheck(z.string().default('d'))('x')).toBe(false);
    expect(compileSchemaCheck(z.discriminatedUnion('k', [z.object({ k: z.literal('a') })]))({ k: 'a' })).toBe(false);
    expect(compileSchemaCheck(z.object({ a: z.int() }).refine(async () => true))({ a: 1 })).toBe(false);
    // And mirrored ones answer true where zod does.
    expect(compileSchemaCheck(z.strictObject({ a: z.string() }))({ a: 'x' })).toBe(true);
    expect(compileSchemaCheck(z.strictObject({ a: z.string() }))({ a: 'x', b: 1 })).toBe(false);
    expect(compileSchemaCheck(z.record(z.string(), z.string()))({ en: 'a', nl: 'b' })).toBe(true);
    expect(compileSchemaCheck(z.object({ a: z.string() }).catchall(z.number()))({ a: 'x', b: 1 })).toBe(true);
    expect(compileSchemaCheck(z.object({ a: z.string() }).catchall(z.number()))({ a: 'x', b: 'y' })).toBe(false);
  });

  it('compiles every resource schema', () => {
    for (const schema of Object.values(resourceSchemas)) expect(typeof compileSchemaCheck(schema)).toBe('function');
  });
});
