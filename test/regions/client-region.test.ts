// Issue 40, region presets in the code API: a CatalogClient made with a region takes its base URL
// from the region (with or without /v4 when one is given), and refuses a request whose filter the
// region does not take, or whose code has the wrong format, before sending it (the sandbox counts
// no request). The code formats themselves (regions.ts) are checked value by value.
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flattenLocales } from '../../src/index.js';
import { CatalogClient } from '../../src/client/catalog-client.js';
import { CODE_FORMATS, codeProblem, regionFilterIssues } from '../../src/catalog/regions.js';
import { RequestValidationError } from '../../src/errors.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let sb: TestSandbox;
beforeAll(async () => {
  sb = await startTestSandbox({ products: 200, seed: 40, profile: 'fr' });
});
afterAll(() => sb?.close());

const clientOf = (options: Partial<ConstructorParameters<typeof CatalogClient>[0]>) =>
  new CatalogClient({ ...sb.credentials, rateLimit: 0, ...options });

describe('the base URL of a region', () => {
  it('is the region`s API root (production or the vendor sandbox) unless one is given', async () => {
    expect(clientOf({ region: 'us' }).baseUrl).toBe('https://api.us.medipim.com');
    expect(clientOf({ region: 'fr', environment: 'sandbox' }).baseUrl).toBe('https://api.sandbox.medipim.fr');
    expect(() => clientOf({ region: 'au', environment: 'sandbox' })).toThrow(/au \(Australia\) has no sandbox/);
    expect(() => clientOf({})).toThrow(/give baseUrl, or region/);
  });

  it.each(['', '/', '/v4', '/v4/'])(
    'an explicit base URL ending in "%s" reaches the same endpoints',
    async (suffix) => {
      const client = clientOf({ region: 'fr', baseUrl: `${sb.url}${suffix}` });
      try {
        const page = await client.query('products.query', {
          filter: { status: 'active' },
          sorting: { id: 'ASC' },
          page: { no: 0, size: 10 },
        });
        expect(page.results).toHaveLength(10);
      } finally {
        await client.close();
      }
    },
  );
});

describe('what a region refuses is never sent', () => {
  it.each([
    [{ cnk: '0012345' }, 'filter.cnk', 'region fr (France) does not take the filter "cnk"'],
    [
      { and: [{ status: 'active' }, { pzn: '01234567' }] },
      'filter.and[1].pzn',
      'its regional product filters are: ecommerce, cip13, acl13, cipOrAcl7',
    ],
    [{ or: [{ cip13: '3400912345678' }, { cip13: '340091234567' }] }, 'filter.or[1].cip13', '"340091234567" is not'],
    [{ acl13: ['3401001234567', 3401001234] }, 'filter.acl13[1]', '3401001234 is not a valid ACL13 code'],
  ])('%j', async (filter, path, message) => {
    const client = clientOf({ region: 'fr', baseUrl: sb.url });
    sb.resetStats();
    try {
      const asked = client.query('products.query', {
        filter,
        sorting: { id: 'ASC' },
        page: { no: 0, size: 10 },
      } as any);
      const err = (await asked.catch((e: unknown) => e)) as RequestValidationError;
      expect(err).toBeInstanceOf(RequestValidationError);
      expect(err.path).toBe(path);
      expect(err.message).toContain(message);
    } finally {
      await client.close();
    }
    expect(sb.stats.requests).toBe(0);
  });

  it('a client without a region sends the same filter (the sandbox answers)', async () => {
    const client = clientOf({ baseUrl: sb.url });
    try {
      const page = await client.query('products.query', {
        filter: { ecommerce: 'yes' },
        sorting: { id: 'ASC' },
        page: { no: 0, size: 10 },
      });
      expect(page.results.length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  });
});

describe('flatten-locales in code', () => {
  it('takes the locales of the client`s region when given none, and its own otherwise', async () => {
    const client = clientOf({ region: 'fr', baseUrl: sb.url });
    const record = { id: 'P1', name: { fr: 'Nom', en: 'Name', nl: 'Naam' } };
    try {
      const byRegion = await Readable.from([record])
        .pipe(flattenLocales({ fields: ['name'] }, { client }))
        .toArray();
      expect(byRegion).toEqual([{ id: 'P1', name_fr: 'Nom', name_en: 'Name' }]);
      const own = await Readable.from([record])
        .pipe(flattenLocales({ fields: ['name'], locales: ['nl'] }, { client }))
        .toArray();
      expect(own).toEqual([{ id: 'P1', name_nl: 'Naam' }]);
    } finally {
      await client.close();
    }
    expect(() => flattenLocales({ fields: ['name'] })).toThrow(/set locales/);
  });
});

describe('code formats', () => {
  it.each([
    ['cnk', '0012345', true],
    ['cnk', 12345, true],
    ['cnk', '12345', false],
    ['cnk', '00123456', false],
    ['pzn', '01234567', true],
    ['pzn', 1234567, true],
    ['pzn', '1234567', false],
    ['cip13', '3400912345678', true],
    ['cip13', 3400912345678, true],
    ['cip13', 340091234567, false],
    ['cip13', '34009123456789', false],
    ['cipOrAcl7', '3400912', true],
    ['ean', '00012345678905', true],
    ['ean', '123456789012', true],
    ['ean', '12345678901', false],
    ['eanGtin8', '1234567', false],
    ['eanGtin14', '1234567890123x', false],
  ] as const)('%s %j: %s', (name, value, ok) => {
    expect(codeProblem(CODE_FORMATS[name]!, value) === undefined).toBe(ok);
  });

  it('every region takes the common filters, and each regional filter only in its regions', () => {
    expect(regionFilterIssues('au', 'product', { and: [{ status: 'active' }, { pbs: ['1234X'] }] })).toEqual([]);
    expect(regionFilterIssues('be', 'product', { not: { ecommerce: 'no' } })).toEqual([]);
    expect(regionFilterIssues('us', 'product', { ecommerce: 'no' }).map((i) => i.path)).toEqual([
      ['filter', 'ecommerce'],
    ]);
    expect(regionFilterIssues('de', 'organization', { apbNr: '123456' })[0]!.message).toContain(
      'documented for be (Belgium)',
    );
  });
});
