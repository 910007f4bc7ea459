import { describe, expect, it } from 'vitest';
import {
  MAX_CODES_PER_FILTER,
  RequestValidationError,
  checkRequest,
  endpoints,
  validateRequest,
  type ProductFilter,
} from '../../src/index.js';

const page = { no: 0, size: 250 } as const;

describe('validateRequest', () => {
  it('accepts a valid products query with nested combinators', () => {
    const filter: ProductFilter = {
      and: [{ status: ['active', 'replaced'] }, { or: [{ brand: 3 }, { not: { createdAt: { from: 1, until: 2 } } }] }],
    };
    expect(() => validateRequest('products.query', { filter, sorting: { id: 'ASC' }, page })).not.toThrow();
    expect(
      checkRequest('products.query', { filter, sorting: { name: { direction: 'DESC', locale: 'nl' } }, page }),
    ).toEqual([]);
  });

  it('rejects page size 33 naming page.size and the allowed sizes', () => {
    const err = catchError(() =>
      validateRequest('products.query', {
        filter: { status: 'active' },
        sorting: { id: 'ASC' },
        page: { no: 0, size: 33 },
      }),
    );
    expect(err).toBeInstanceOf(RequestValidationError);
    expect(err.message).toMatch(/page\.size/);
    expect(err.message).toMatch(/10, 50, 100, 250/);
    expect((err as RequestValidationError).exitCode).toBe(2);
  });

  it('rejects status no_selection with the allowed values and the path inside and/or', () => {
    const err = catchError(() =>
      validateRequest('products.query', {
        filter: { and: [{ brand: 1 }, { status: ['active', 'no_selection'] }] },
        sorting: { id: 'ASC' },
        page,
      }),
    );
    expect(err.message).toContain('filter.and[1].status[1]');
    expect(err.message).toContain('"no_selection" is not allowed; allowed: active, replaced, inactive');
  });

  it('rejects a filter name the endpoint lacks and lists the real ones', () => {
    const issues = checkRequest('brands.query', { filter: { status: 'active' } });
    expect(issues).toHaveLength(1);
    expect(issues[0]!.path).toEqual(['filter', 'status']);
    expect(issues[0]!.message).toMatch(/unknown filter "status".*id, search, and, or, not/);
  });

  it('suggests the closest filter or sorting name for a typo (code API and pipeline files alike), and none for a stranger', () => {
    const typo = checkRequest('products.query', {
      filter: { and: [{ staus: 'active' }] },
      sorting: { craetedAt: 'ASC' },
      page,
    });
    expect(
      typo.map((i) => [i.path.join('.'), i.message.replace(/ this endpoint's filters are: .*| allowed: .*/, '')]),
    ).toEqual([
      ['filter.and.0.staus', 'unknown filter "staus"; did you mean "status"?'],
      ['sorting.craetedAt', 'unknown sorting "craetedAt"; did you mean "createdAt"?'],
    ]);
    const stranger = checkRequest('products.query', { filter: { popularity: 'high' }, page });
    expect(stranger[0]!.message).toMatch(/^unknown filter "popularity"; this endpoint's filters are: id, status, /);
  });

  it('rejects 1001 ids and accepts 1000', () => {
    const ids = Array.from({ length: MAX_CODES_PER_FILTER + 1 }, (_, i) => `P${i}`);
    expect(
      checkRequest('products.query', { filter: { id: ids.slice(0, 1000) }, sorting: { id: 'ASC' }, page }),
    ).toEqual([]);
    const issues = checkRequest('products.query', { filter: { id: ids }, sorting: { id: 'ASC' }, page });
    expect(issues[0]!.message).toMatch(/more than 1000 codes/);
  });

  it('rejects an offset past the 10000 cap on products.query only', () => {
    expect(
      checkRequest('products.query', {
        filter: { status: 'active' },
        sorting: { id: 'ASC' },
        page: { no: 39, size: 250 },
      }),
    ).toEqual([]);
    const issues = checkRequest('products.query', {
      filter: { status: 'active' },
      sorting: { id: 'ASC' },
      page: { no: 40, size: 250 },
    });
    expect(issues[0]!.message).toMatch(/offset 10000 is past the 10000/);
    expect(checkRequest('brands.query', { page: { no: 400, size: 250 } })).toEqual([]);
    // size defaults to 100: page 100 is offset 10000
    expect(
      checkRequest('products.query', { filter: { status: 'active' }, sorting: { id: 'ASC' }, page: { no: 99 } }),
    ).toEqual([]);
    expect(
      checkRequest('products.query', { filter: { status: 'active' }, sorting: { id: 'ASC' }, page: { no: 100 } })[0]!
        .message,
    ).toMatch(/offset 10000/);
  });

  it('knows required keys, empty bodies and endpoints without sorting or page', () => {
    expect(checkRequest('brands.query', {})).toEqual([]);
    expect(checkRequest('products.query', {}).map((i) => i.path.join('.'))).toEqual(['filter', 'sorting', 'page']);
    expect(checkRequest('catalog-categories.query', { sorting: { id: 'ASC' } })[0]!.message).toMatch(
      /takes no sorting/,
    );
    expect(checkRequest('media.stream', { page })[0]!.message).toMatch(/unknown key "page"/);
  });

  it('checks timestamp filters and one-key objects', () => {
    expect(
      checkRequest('products.query', { filter: { updatedSince: { from: 10 } }, sorting: { id: 'ASC' }, page }),
    ).toEqual([]);
    expect(checkRequest('products.query', { filter: { updatedSince: {} }, sorting: { id: 'ASC' }, page })).not.toEqual(
      [],
    );
    expect(
      checkRequest('products.query', {
        filter: { updatedSince: { from: 5, until: 4 } },
        sorting: { id: 'ASC' },
        page,
      })[0]!.message,
    ).toMatch(/after/);
    expect(
      checkRequest('products.query', { filter: { brand: 1, status: 'active' }, sorting: { id: 'ASC' }, page })[0]!
        .message,
    ).toMatch(/exactly one key/);
    expect(checkRequest('products.query', { filter: { and: [] }, sorting: { id: 'ASC' }, page })[0]!.message).toMatch(
      /non-empty list/,
    );
  });

  it('describes endpoints as data', () => {
    expect(endpoints['products.query'].codeFilters).toEqual(
      expect.arrayContaining(['id', 'ean', 'eanGtin13', 'eanGtin14', 'brand', 'organization']),
    );
    expect(endpoints['products.query'].codeFilters).not.toContain('status');
    expect(endpoints['products.query'].incremental).toBe(true);
    expect(endpoints['media.stream'].incremental).toBe(true);
    expect(endpoints['brands.query'].incremental).toBe(false);
  });
});

function catchError(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}
