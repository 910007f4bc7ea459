import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import {
  buildPathTree,
  compileGetter,
  parseFieldPath,
  rewriteAtPaths,
  shallowCopy,
} from '../../src/core/field-path.js';
import { fixture } from './support.js';

const p1 = () => fixture<any[]>('products.json')[0];

describe('field paths', () => {
  it('parse keys, lists, positions and selections', () => {
    expect(parseFieldPath('organizations[type=supplier].name.en').steps).toEqual([
      { kind: 'key', key: 'organizations' },
      { kind: 'where', key: 'type', value: 'supplier' },
      { kind: 'key', key: 'name' },
      { kind: 'key', key: 'en' },
    ]);
    expect(parseFieldPath('photos[0].formats.large')).toMatchObject({ multi: false });
    expect(parseFieldPath('brands[].id')).toMatchObject({ multi: true });
    for (const bad of ['', '.a', 'a.', 'a..b', '[]', 'a[', 'a]b', 'a[x]', 'a[]b']) {
      expect(() => parseFieldPath(bad, 'fields[0]'), bad).toThrow(ConfigError);
    }
    expect(() => parseFieldPath('a..b', 'fields[3]')).toThrow(
      'fields[3]: invalid field path "a..b": empty field name at 2',
    );
  });

  it('read values, lists of values and selected elements', () => {
    const p = p1();
    expect(compileGetter('meta.updatedAt')(p)).toBe(1700000000);
    expect(compileGetter('id')(p)).toBe('P0000001');
    expect(compileGetter('weightWithUnit.unit.x')(p)).toBeUndefined();
    expect(compileGetter('cannabisData.thcPercentage')(p)).toBeUndefined();
    expect(compileGetter('brands[].id')(p)).toEqual([11]);
    expect(compileGetter('organizations[type=supplier].name.nl')(p)).toEqual(['Leverancier BV']);
    expect(compileGetter('organizations[id=502].type')(p)).toEqual(['marketing']);
    expect(compileGetter('photos[1].formats.medium')(p)).toBe('https://img/p1/1-medium.jpg');
    // two list steps flatten into one list; missing values are left out
    expect(compileGetter('photos[].organizations[].id')(p)).toEqual([501]);
    expect(compileGetter('photos[].formats.largeWebp')(p)).toEqual(['https://img/p1/2-large.webp']);
    expect(compileGetter('nothing[].id')(p)).toEqual([]);
  });

  it('rewrite copies along the paths and shares the rest', () => {
    const p = p1();
    const tree = buildPathTree([
      [parseFieldPath('name'), 'N'],
      [parseFieldPath('photos[].organizations[].name'), 'O'],
      [parseFieldPath('absent'), 'A'],
    ]);
    const seen: string[] = [];
    const out = rewriteAtPaths(
      p,
      tree,
      (o, key, value, leaf) => {
        seen.push(`${key}:${leaf}`);
        o[`${key}_x`] = value === undefined ? null : leaf;
      },
      true,
    );
    expect(seen).toEqual(['name:N', 'name:O', 'absent:A']);
    expect(out).toMatchObject({ name_x: 'N', absent_x: null });
    expect(out.photos).not.toBe(p.photos);
    expect((out.photos as any)[0].organizations[0]).toEqual({ id: 501, name_x: 'O' });
    expect((out.photos as any)[1]).not.toBe(p.photos[1]);
    expect(out.brands).toBe(p.brands);
    expect(p.name).toEqual({ en: 'Vitamin C 500 mg', nl: 'Vitamine C 500 mg', fr: 'Vitamine C 500 mg' });
    expect(() =>
      buildPathTree([
        [parseFieldPath('a[].b'), 1],
        [parseFieldPath('a.c'), 2],
      ]),
    ).toThrow(/both as a list and as an object/);
    expect(() => buildPathTree([[parseFieldPath('a[type=x].b'), 1]])).toThrow(/only field names and \[\]/);
  });
});

describe('shallowCopy', () => {
  it('copies like object spread: key order, symbols (the origin), an own __proto__ key, without sharing the object', () => {
    const origin = Symbol.for('catalog-streams.origin');
    const hidden = Symbol('hidden');
    const src = JSON.parse('{"b":1,"a":{"x":2},"2":"two","__proto__":{"polluted":true}}') as Record<
      string | symbol,
      unknown
    >;
    src[origin] = { endpoint: 'products.query', page: 1 };
    Object.defineProperty(src, hidden, { value: 'no', enumerable: false });
    const copy = shallowCopy(src);
    const spread = { ...src };
    expect(copy).not.toBe(src);
    expect(Reflect.ownKeys(copy)).toEqual(Reflect.ownKeys(spread));
    expect(copy).toStrictEqual(spread);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect((copy as Record<symbol, unknown>)[origin]).toBe(src[origin]);
    expect(copy.a).toBe(src.a);
  });
});
