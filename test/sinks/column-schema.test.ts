import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { SinkError } from '../../src/errors.js';
import { inferSchema, RecordShaper, type ColumnSchemaSettings, type Mismatch } from '../../src/sinks/column-schema.js';
import { columnHintFromZod, resourceSchemaFromContext } from '../../src/sinks/zod-column-hints.js';

const settings: ColumnSchemaSettings = { nested: 'flatten', timestamps: 'millis', timestampInput: 'seconds', excluded: new Set() };

const columnsOf = (sample: Record<string, unknown>[], s: Partial<ColumnSchemaSettings> = {}) =>
  inferSchema(sample, { ...settings, ...s }).schema.columns.map((c) => [c.name, c.list ? `${c.type}[]` : c.type]);

describe('column inference', () => {
  it('maps value kinds to column types in first-seen order, flattening objects', () => {
    expect(
      columnsOf([
        { id: 'a', n: 1, vat: 21, big: 2n ** 62n, ok: true, at: new Date(0), meta: { createdAt: 1, kind: 'x' }, codes: ['001'], ints: [1, 2] },
        { id: 'b', n: 2, vat: 5.5, ok: false, codes: [], ints: [3.5], extra: null },
      ]),
    ).toEqual([
      ['id', 'string'],
      ['n', 'int64'],
      ['vat', 'double'],
      ['big', 'int64'],
      ['ok', 'boolean'],
      ['at', 'timestamp'],
      ['meta_createdAt', 'timestamp'],
      ['meta_kind', 'string'],
      ['codes', 'string[]'],
      ['ints', 'double[]'],
      ['extra', 'json'],
    ]);
  });

  it('stores mixed, object-list and null-only fields as JSON text and says why', () => {
    const { schema, notes } = inferSchema([{ a: 'x', b: [{ k: 1 }], c: null, d: [] }, { a: 1, d: [] }], settings);
    expect(schema.columns.map((c) => [c.name, c.type, c.list])).toEqual([
      ['a', 'json', false],
      ['b', 'json', false],
      ['c', 'json', false],
      ['d', 'string', true],
    ]);
    expect(notes).toEqual([expect.stringMatching(/"a" mixes strings and integers/), expect.stringMatching(/"c" was null in every sampled record/)]);
  });

  it('uses timestampFields instead of the name rule, and nested: json', () => {
    expect(columnsOf([{ createdAt: 1, seenOn: 2 }], { timestampFields: ['seenOn'] })).toEqual([
      ['createdAt', 'int64'],
      ['seenOn', 'timestamp'],
    ]);
    expect(columnsOf([{ meta: { createdAt: 1 }, name: { en: 'x' } }], { nested: 'json' })).toEqual([
      ['meta', 'json'],
      ['name', 'json'],
    ]);
  });

  it('refuses two fields that flatten to the same column name', () => {
    expect(() => inferSchema([{ a_b: 1, a: { b: 2 } }], settings)).toThrow(SinkError);
    expect(() => inferSchema([{ a_b: 1, a: { b: 2 } }], settings)).toThrow(/"a_b" would hold both "a_b" and "a\.b"/);
  });

  it('shapes records into physical values and lists every misfit', () => {
    const { schema } = inferSchema([{ id: 'a', n: 1, meta: { createdAt: 10 }, tags: ['x'] }], settings);
    const shaper = new RecordShaper(schema);
    const problems: Mismatch[] = [];
    expect(shaper.shape({ id: 'b', n: 2, meta: { createdAt: 1.5 }, tags: ['y', null] }, problems).values).toEqual(['b', 2n, 1500n, ['y', null]]);
    expect(problems).toEqual([]);
    const row = shaper.shape({ id: 7, n: '2', meta: 'x', tags: [1], other: { deep: null }, more: 1 }, problems);
    expect(row.values).toEqual([null, null, null, null]);
    expect(problems.map((p) => `${p.kind} ${p.column}: ${p.expected} / ${p.actual}`)).toEqual([
      'type id: string / integer 7',
      'type n: int64 / string "2"',
      'type meta: an object (flattened into columns) / string "x"',
      'type tags: list of string / array [1 item]',
      'new-field more: no such column / integer 1',
    ]);
  });
});

describe('zod column hints', () => {
  it('maps a resource schema to column types', () => {
    const hint = columnHintFromZod(
      z.object({
        id: z.string(),
        status: z.enum(['active', 'inactive']),
        vat: z.number(),
        publicPrice: z.number().int(),
        small: z.int32(),
        serial: z.bigint(),
        deleted: z.boolean().optional(),
        ean: z.array(z.string()),
        photos: z.array(z.object({ url: z.string() })),
        name: z.record(z.string(), z.string()),
        code: z.string().transform((s) => s.length),
        parsed: z.preprocess((v) => v, z.number()),
        either: z.union([z.string(), z.null()]),
        mixed: z.union([z.string(), z.number()]),
        meta: z.object({ createdAt: z.int() }).nullable(),
      }),
    );
    expect(hint?.kind).toBe('object');
    const fields = hint?.kind === 'object' ? hint.fields : new Map();
    const described = Object.fromEntries([...fields].map(([k, h]) => [k, h.kind === 'leaf' ? `${h.decl.type}${h.decl.list ? '[]' : ''}` : 'object']));
    expect(described).toEqual({
      id: 'string',
      status: 'string',
      vat: 'double',
      publicPrice: 'int64',
      small: 'int32',
      serial: 'int64',
      deleted: 'boolean',
      ean: 'string[]',
      photos: 'json',
      parsed: 'double',
      either: 'string',
      mixed: 'json',
      meta: 'object',
    });
    // Hinted int fields named like timestamps become timestamps; a field seen only as null is
    // typed and expanded by the hint; a hinted field the sample never had gets no column
    // (transforms upstream may have dropped it).
    const { schema } = inferSchema([{ id: 'a', vat: 21, name: { en: 'x' }, meta: null }, { id: 'b', vat: 20, meta: { createdAt: 5 } }], settings, hint);
    expect(schema.columns.find((c) => c.name === 'meta_createdAt')?.type).toBe('timestamp');
    expect(schema.columns.find((c) => c.name === 'vat')?.type).toBe('double');
    expect(schema.columns.find((c) => c.name === 'name_en')?.type).toBe('string');
    expect(schema.columns.find((c) => c.name === 'serial')).toBeUndefined();
    // The sampled values win over a hint they contradict (normalize-codes made integer codes strings).
    const codes = inferSchema([{ publicPrice: '0012' }], settings, hint).schema;
    expect(codes.columns.find((c) => c.name === 'publicPrice')?.type).toBe('string');
  });

  it('finds the resource schema the runner put in ctx.services', () => {
    const products = z.object({ id: z.string() });
    expect(resourceSchemaFromContext({ source: { type: 'products.query', resource: 'product' }, services: { resourceSchemas: { product: products } } })).toBe(products);
    expect(resourceSchemaFromContext({ source: { type: 'products.query', resource: 'product' }, services: { resourceSchemas: (r: string) => (r === 'product' ? products : undefined) } })).toBe(products);
    expect(resourceSchemaFromContext({ source: { type: 'x' }, services: { resourceSchemas: { product: products } } })).toBeUndefined();
  });
});
