// The page scanner splits a page body into its records without parsing them;
// the client's lazy pages parse each record when read. Both must give exactly
// what JSON.parse of the whole body gives, and refuse (or fail like it) on
// anything else.
import { describe, expect, it } from 'vitest';
import { ApiError, CatalogClient } from '../../src/client/index.js';
import { isTruncatedJson, scanPage } from '../../src/client/page-scanner.js';

const bytes = (text: string) => Buffer.from(text, 'utf8');

/** The records the scan finds, parsed, and the skeleton parsed. */
function split(text: string): { skeleton: unknown; records: unknown[] } | undefined {
  const b = bytes(text);
  const scanned = scanPage(b);
  if (!scanned) return undefined;
  return {
    skeleton: JSON.parse(scanned.skeleton),
    records: scanned.starts.map((s, i) => JSON.parse(b.toString('utf8', s, scanned.ends[i]))),
  };
}

function prng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** A random JSON value with the characters that trouble a scanner: quotes, backslashes, brackets in strings, multibyte text. */
function randomValue(random: () => number, depth = 0): unknown {
  const pick = Math.floor(random() * (depth > 3 ? 5 : 7));
  const words = ['a', '"q"', 'back\\slash', '\\"', '{[', ']}', 'é日本🙂', ',', ':', '', ' \n\t', '\u0000\u001f'];
  switch (pick) {
    case 0:
      return null;
    case 1:
      return random() < 0.5;
    case 2:
      return Math.round((random() - 0.5) * 1e6) / (random() < 0.5 ? 1 : 1000);
    case 3:
    case 4:
      return Array.from(
        { length: 1 + Math.floor(random() * 3) },
        () => words[Math.floor(random() * words.length)],
      ).join('');
    case 5:
      return Array.from({ length: Math.floor(random() * 4) }, () => randomValue(random, depth + 1));
    default:
      return Object.fromEntries(
        Array.from({ length: Math.floor(random() * 4) }, (_, i) => [
          `${words[Math.floor(random() * words.length)]}${i}`,
          randomValue(random, depth + 1),
        ]),
      );
  }
}

describe('scanPage', () => {
  it('finds each record of a page, whatever its content, and a skeleton with the meta', () => {
    const random = prng(7);
    for (let n = 0; n < 300; n++) {
      const results = Array.from({ length: Math.floor(random() * 6) }, () => randomValue(random));
      const page = { meta: { total: results.length, page: { no: 0, offset: 0, size: 250 } }, results };
      const text = random() < 0.5 ? JSON.stringify(page) : JSON.stringify(page, null, 1 + Math.floor(random() * 3));
      const got = split(text)!;
      expect(got.records).toEqual(results);
      expect(got.skeleton).toEqual({ ...page, results: [] });
    }
  });

  it('takes any key order and spacing, and keys that look like "results" in strings', () => {
    const text = ' \n{ "x" : "\\"results\\":[1]" , "results" : [ {"a":"]"} ,\n 2 , "s" ] , "meta" : {"total":3} } \n';
    expect(split(text)).toEqual({
      skeleton: { x: '"results":[1]', results: [], meta: { total: 3 } },
      records: [{ a: ']' }, 2, 's'],
    });
    expect(split('{"meta":{"total":0},"results":[]}')).toEqual({
      skeleton: { meta: { total: 0 }, results: [] },
      records: [],
    });
  });

  it('leaves what it does not understand to a whole-body parse', () => {
    for (const text of [
      '',
      '[1,2]',
      '{"meta":{"total":1}}',
      '{"results":{"a":1}}',
      '{"results":[1],"results":[2]}',
      '{"results":[1,2}',
      '{"results":[1 2]}',
      '{"results":[1],}',
      '{"results":["cut',
      '{"results":[{"a":1}]} trailing',
      '{"results":[1]',
      '\ufeff{"results":[]}',
    ]) {
      expect(scanPage(bytes(text)), text).toBeUndefined();
    }
  });
});

describe('CatalogClient.lazyPage', () => {
  const client = new CatalogClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k', apiSecret: 's', rateLimit: 0 });
  const body = { filter: { status: 'active' } };

  it('parses records when read, each time afresh, and refuses to after release()', () => {
    let released = 0;
    const page = client.lazyPage(
      'products.query',
      body,
      bytes('{"meta":{"total":2},"results":[{"id":"P1"},{"id":"P2"}]}'),
      () => released++,
    );
    expect(page.meta).toEqual({ total: 2 });
    expect(page.length).toBe(2);
    expect(page.record(1)).toEqual({ id: 'P2' });
    expect(page.record(1)).not.toBe(page.record(1));
    page.release();
    page.release();
    expect(released).toBe(1);
    expect(() => page.record(0)).toThrow(/after release/);
  });

  it('reads a body with a byte order mark, and a body the scan leaves alone, like JSON.parse', () => {
    expect(
      client.lazyPage('products.query', body, bytes('\ufeff{"meta":{"total":1},"results":[{"id":"P1"}]}')).record(0),
    ).toEqual({ id: 'P1' });
    const whole = client.lazyPage(
      'products.query',
      body,
      bytes('{"results":[{"id":"P1"}],"results":[{"id":"P2"}],"meta":{"total":1}}'),
    );
    expect(whole.record(0)).toEqual({ id: 'P2' });
  });

  it('a body that stops before its JSON ends is truncated (retried), a complete one that is not a page is not', () => {
    for (const text of [
      '',
      '  ',
      '{"meta":{"total":1},"results":[1]',
      '{"meta":{"total":1},"results":[{"id":"P1',
      '\ufeff[{"a":"}"',
    ]) {
      expect(isTruncatedJson(bytes(text)), JSON.stringify(text)).toBe(true);
    }
    for (const text of ['{"meta":{"total":1},"results":[1]}', '<html>502</html>', 'null', '{"a":1}}', '{"a":"}"}']) {
      expect(isTruncatedJson(bytes(text)), JSON.stringify(text)).toBe(false);
    }
  });

  it('a body that is not a page, or not JSON around the records, is an ApiError at once', () => {
    for (const text of ['{"meta":{"total":-1},"results":[]}', '{"meta":{"total":1},"results":[1],"x":tru}', 'null']) {
      const err = (() => {
        try {
          client.lazyPage('products.query', body, bytes(text));
        } catch (e) {
          return e;
        }
      })() as ApiError;
      expect(err, text).toBeInstanceOf(ApiError);
      expect(err.code).toBe('api.invalid_response');
    }
  });

  it('a record that is not JSON is an ApiError naming it when it is read; the records before it are fine', () => {
    const page = client.lazyPage(
      'products.query',
      body,
      bytes('{"meta":{"total":2},"results":[{"id":"P1"},{"id":P2}]}'),
    );
    expect(page.record(0)).toEqual({ id: 'P1' });
    const err = (() => {
      try {
        page.record(1);
      } catch (e) {
        return e;
      }
    })() as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.code).toBe('api.invalid_response');
    expect(err.message).toMatch(/record 1 of the page/);
  });
});
