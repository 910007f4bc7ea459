// The sandbox's error answers over loopback (ARCHITECTURE.md, API rules bodies): 400 for
// structural problems, 422 with violations for values a filter does not
// accept, 401 for missing or wrong credentials, 404/405/415, and the
// per-credential rolling-window rate limit (429 too_many_requests).
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENDPOINT_NAMES, endpoints } from '../../src/catalog/index.js';
import { REGIONAL_TABLES } from '../../src/sandbox/profiles.js';
import { basicAuthorization, startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let sb: TestSandbox;
beforeAll(async () => {
  sb = await startTestSandbox({ products: 300 });
});
afterAll(() => sb.close());

const q = (extra: Record<string, unknown> = {}) => ({
  filter: { status: 'active' },
  sorting: { id: 'ASC' },
  page: { no: 0, size: 10 },
  ...extra,
});

async function expectError(
  path: string,
  body: unknown,
  status: number,
  code: string,
  opts: Parameters<TestSandbox['post']>[2] = {},
) {
  const answer = await sb.post(path, body, opts);
  expect(answer.status, answer.text).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  const error = answer.json().error;
  expect(error).toMatchObject({ status, code });
  expect(typeof error.message).toBe('string');
  return error;
}

describe('400 bad_request', () => {
  it.each([
    ['page size 33', q({ page: { no: 0, size: 33 } }), 'page.size'],
    [
      'an unknown filter, even nested',
      q({ filter: { and: [{ status: 'active' }, { not: { colour: 'red' } }] } }),
      'filter.and[1].not.colour',
    ],
    [
      'more than 1000 ids',
      q({ filter: { id: Array.from({ length: 1001 }, (_, i) => `P${String(i + 1).padStart(7, '0')}`) } }),
      'filter.id',
    ],
    ['an unknown top-level key', q({ pages: 1 }), 'pages'],
    ['an unknown sorting', q({ sorting: { popularity: 'ASC' } }), 'sorting.popularity'],
    ['two keys in one filter', q({ filter: { status: 'active', brand: 1 } }), 'filter'],
    ['an empty and', q({ filter: { and: [] } }), 'filter.and'],
    ['a missing page on products/query', { filter: { status: 'active' }, sorting: { id: 'ASC' } }, 'page'],
    ['a filter name that is an Object.prototype property', q({ filter: { constructor: 1 } }), 'filter.constructor'],
    ['a sorting name that is an Object.prototype property', q({ sorting: { toString: 'ASC' } }), 'sorting.toString'],
  ])('%s', async (_what, body, path) => {
    const error = await expectError('/v4/products/query', body, 400, 'bad_request');
    expect(error.message.startsWith(`${path}:`), error.message).toBe(true);
  });

  it('an offset past the 10000 cap has its own code, result_window_exceeded', async () => {
    const error = await expectError(
      '/v4/products/query',
      q({ page: { no: 40, size: 250 } }),
      400,
      'result_window_exceeded',
    );
    expect(error.message).toContain('10000');
  });

  it('invalid JSON, a non-object body, page on a stream, sorting on catalog-categories', async () => {
    await expectError('/v4/brands/query', undefined, 400, 'bad_request', { rawBody: '{"filter": ' });
    await expectError('/v4/brands/query', [1, 2], 400, 'bad_request');
    await expectError('/v4/media/stream', { page: { no: 0, size: 10 } }, 400, 'bad_request');
    await expectError('/v4/catalog-categories/query', { sorting: { id: 'ASC' } }, 400, 'bad_request');
  });

  it('an empty body is a valid brands query', async () => {
    const answer = await sb.post('/v4/brands/query', undefined, { rawBody: '' });
    expect(answer.status).toBe(200);
    expect(answer.json().meta.total).toBe(sb.dataset.ref.brands.length);
    expect((await sb.post('/v4/brands/query', {})).status).toBe(200);
  });
});

describe('422 validation_failed', () => {
  it('status no_selection is not a value the products filter accepts; every violation is listed', async () => {
    const error = await expectError(
      '/v4/products/query',
      q({ filter: { or: [{ status: 'no_selection' }, { conservation: ['room', 'warm'] }] } }),
      422,
      'validation_failed',
    );
    expect(error.violations).toEqual([
      { path: 'filter.or[0].status', message: expect.stringContaining('"no_selection" is not allowed') },
      { path: 'filter.or[1].conservation[1]', message: expect.stringContaining('"warm" is not allowed') },
    ]);
  });

  it.each([
    ['a sorting direction', q({ sorting: { id: 'UP' } }), 'sorting.id'],
    ['a search type', q({ filter: { search: { query: 'x', locale: 'en', type: 'regex' } } }), 'filter.search.type'],
    ['a hasContent flag', q({ filter: { hasContent: { flag: 'video', locale: 'en' } } }), 'filter.hasContent.flag'],
    ['a timestamp range', q({ filter: { createdAt: { from: 10, until: 5 } } }), 'filter.createdAt'],
  ])('%s', async (_what, body, path) => {
    const error = await expectError('/v4/products/query', body, 422, 'validation_failed');
    expect(error.violations[0].path).toBe(path);
  });

  it('corrections status solved (the filter takes open, in_progress, handled)', async () => {
    const error = await expectError(
      '/v4/corrections/query',
      { filter: { status: 'solved' } },
      422,
      'validation_failed',
    );
    expect(error.violations[0].path).toBe('filter.status');
  });
});

describe('401 authentication.not_authenticated', () => {
  it('without credentials, with a wrong secret, with a malformed header, also on admin routes', async () => {
    await expectError('/v4/products/query', q(), 401, 'authentication.not_authenticated', { authorization: null });
    await expectError('/v4/products/query', q(), 401, 'authentication.not_authenticated', {
      authorization: basicAuthorization(sb.credentials.apiKey, 'wrong'),
    });
    await expectError('/v4/products/stream', q(), 401, 'authentication.not_authenticated', {
      authorization: 'Bearer abc',
    });
    await expectError('/_sandbox/stats', undefined, 401, 'authentication.not_authenticated', {
      authorization: null,
      method: 'GET',
    });
  });
});

describe('every endpoint', () => {
  // The regional reference tables are not the spec profile's (below, against fr).
  const regional = new Set<string>(REGIONAL_TABLES.fr);
  const paths = ENDPOINT_NAMES.filter((n) => !regional.has(n)).map((n) => endpoints[n].path);

  it.each(paths)(
    '%s: 401 without credentials, 400 for an unknown key, 422 for a bad sorting direction',
    async (path) => {
      await expectError(path, {}, 401, 'authentication.not_authenticated', { authorization: null });
      await expectError(path, { filters: {} }, 400, 'bad_request');
      if (path !== '/v4/catalog-categories/query')
        await expectError(path, { ...validBody(path), sorting: { id: 'SIDEWAYS' } }, 422, 'validation_failed');
    },
  );

  /** A valid body for each endpoint: products need filter and sorting (and page on query). */
  const validBody = (path: string) =>
    path === '/v4/products/query'
      ? q()
      : path === '/v4/products/stream'
        ? { filter: { status: 'active' }, sorting: { id: 'ASC' } }
        : {};

  it('shares one request budget per credential across all endpoints', async () => {
    const limited = await startTestSandbox({ dataset: sb.dataset, rateLimit: paths.length });
    try {
      const body = validBody;
      for (const path of paths) expect([200, 204]).toContain((await limited.post(path, body(path))).status);
      for (const path of paths) await expectErrorOn(limited, path, body(path), 429, 'too_many_requests');
    } finally {
      await limited.close();
    }
  });
});

describe('the regional reference endpoints (issue 24)', () => {
  const paths = REGIONAL_TABLES.fr.map((n) => endpoints[n as keyof typeof endpoints].path);
  let fr: TestSandbox;
  beforeAll(async () => {
    fr = await startTestSandbox({ products: 100, profile: 'fr' });
  });
  afterAll(() => fr?.close());

  it.each(paths)(
    '%s: 401 without credentials, 400 for an unknown key, 422 for a bad sorting direction (fr)',
    async (path) => {
      const answer = await fr.post(path, {}, { authorization: null });
      expect(answer.status, answer.text).toBe(401);
      await expectErrorOn(fr, path, { filters: {} }, 400, 'bad_request');
      await expectErrorOn(fr, path, { sorting: { id: 'SIDEWAYS' } }, 422, 'validation_failed');
      expect((await fr.post(path, {})).status).toBe(200);
    },
  );

  it.each(paths)('%s: 404 from the spec profile, which has no such table', async (path) => {
    expect((await expectError(path, {}, 404, 'not_found')).message).toContain('not served by the "spec" profile');
  });
});

async function expectErrorOn(sandbox: TestSandbox, path: string, body: unknown, status: number, code: string) {
  const answer = await sandbox.post(path, body);
  expect(answer.status, `${path}: ${answer.text}`).toBe(status);
  expect(answer.json().error).toMatchObject({ status, code });
}

describe('routing', () => {
  it('404 for an unknown path, 405 for a wrong method, 415 for a non-JSON body', async () => {
    await expectError('/v4/products/embed', {}, 404, 'not_found');
    // products/find is served (GET, see find-route.ts): POST is the wrong method there.
    expect((await expectError('/v4/products/find', {}, 405, 'method_not_allowed')).message).toContain('GET');
    const error = await expectError('/v4/products/query', undefined, 405, 'method_not_allowed', { method: 'GET' });
    expect(error.message).toContain('POST');
    await expectError('/v4/brands/query', undefined, 415, 'unsupported_media_type', {
      rawBody: 'id=1',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
  });
});

describe('429 too_many_requests', () => {
  it('allows `rateLimit` requests per window per credential, then answers 429 without Retry-After', async () => {
    const other = { apiKey: 'second-key', apiSecret: 'second-secret' };
    const limited = await startTestSandbox({ dataset: sb.dataset, rateLimit: 3, extraCredentials: [other] });
    try {
      for (let i = 0; i < 3; i++) expect((await limited.post('/v4/brands/query', {})).status).toBe(200);
      const refused = await limited.post('/v4/brands/query', {});
      expect(refused.status).toBe(429);
      expect(refused.json().error).toMatchObject({ status: 429, code: 'too_many_requests' });
      expect(refused.headers['retry-after']).toBeUndefined();
      // Another credential has its own budget; admin routes are not limited.
      expect(
        (
          await limited.post(
            '/v4/brands/query',
            {},
            { authorization: basicAuthorization(other.apiKey, other.apiSecret) },
          )
        ).status,
      ).toBe(200);
      expect((await limited.post('/_sandbox/stats', undefined, { method: 'GET' })).status).toBe(200);
      expect(limited.stats.rateLimited).toBe(1);
      expect(limited.stats.byEndpoint['brands.query']).toEqual({ 200: 4, 429: 1 });
    } finally {
      await limited.close();
    }
  });

  it('is a rolling window: budget returns as allowed requests age out; refused requests do not use budget', async () => {
    const limited = await startTestSandbox({ dataset: sb.dataset, rateLimit: 2, rateLimitWindowMs: 700 });
    try {
      const status = async () => (await limited.post('/v4/brands/query', {})).status;
      expect([await status(), await status(), await status()]).toEqual([200, 200, 429]);
      await sleep(350);
      expect(await status()).toBe(429); // still two allowed in the last 700 ms
      await sleep(450);
      // Both allowed requests left the window; the two 429s did not count.
      expect([await status(), await status(), await status()]).toEqual([200, 200, 429]);
    } finally {
      await limited.close();
    }
  });

  it('sends Retry-After when asked to', async () => {
    const limited = await startTestSandbox({ dataset: sb.dataset, rateLimit: 1, retryAfter: true });
    try {
      await limited.post('/v4/brands/query', {});
      const refused = await limited.post('/v4/brands/query', {});
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(59);
    } finally {
      await limited.close();
    }
  });
});
