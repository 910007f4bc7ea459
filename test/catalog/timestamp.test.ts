// Times as people write them (issue 25): ISO 8601 dates and date-times beside unix seconds,
// wherever a filter takes a time; the wire carries seconds only.
import { describe, expect, it } from 'vitest';
import {
  RequestValidationError,
  Timestamp,
  TimestampFilter,
  checkRequest,
  isoSeconds,
  toWireRequest,
  validateRequest,
  type MediaFilter,
  type ProductFilter,
} from '../../src/index.js';

const JAN_1 = 1_704_067_200; // 2024-01-01T00:00:00Z
const page = { no: 0, size: 250 } as const;

describe('Timestamp', () => {
  it.each([
    ['2024-01-01', JAN_1],
    ['2024-01-01T00:00:00Z', JAN_1],
    ['2024-01-01T12:30:00Z', JAN_1 + 12 * 3600 + 30 * 60],
    ['2024-01-01T12:30Z', JAN_1 + 12 * 3600 + 30 * 60],
    ['2024-01-01T12:30:00+02:00', JAN_1 + 10 * 3600 + 30 * 60],
    ['2024-01-01T00:00:00-05:30', JAN_1 + 5 * 3600 + 30 * 60],
    ['2024-01-01T12:30:00+0200', JAN_1 + 10 * 3600 + 30 * 60],
    ['2024-01-01T12:30:00.000Z', JAN_1 + 12 * 3600 + 30 * 60],
    // No zone: UTC, the same instant on every machine.
    ['2024-01-01T12:30:00', JAN_1 + 12 * 3600 + 30 * 60],
    ['2024-02-29', 1_709_164_800],
    [JAN_1, JAN_1],
    [0, 0],
  ])('%j is unix seconds %i', (input, seconds) => {
    expect(Timestamp.parse(input)).toBe(seconds);
  });

  it.each(['2024-02-30', '2023-02-29', '2024-13-01', '2024-01-01T24:00:00Z', '2024-1-1', 'yesterday', ''])(
    'refuses %j as not a date, naming both forms',
    (input) => {
      const r = Timestamp.safeParse(input);
      expect(r.success).toBe(false);
      expect(r.error!.issues[0]!.message).toBe(
        `${JSON.stringify(input)} is not a date; write 2024-01-31, 2024-01-31T12:00:00Z or unix seconds`,
      );
    },
  );

  it('refuses a millisecond timestamp with a hint, never sends it', () => {
    const r = Timestamp.safeParse(1_704_067_200_000);
    expect(r.error!.issues[0]!.message).toMatch(/^1704067200000 looks like milliseconds; .*write 1704067200/);
  });

  it('refuses fractions, negatives, digit strings and other types', () => {
    const message = (v: unknown) => Timestamp.safeParse(v).error?.issues[0]?.message;
    expect(message(1.5)).toMatch(/^1\.5 is not a time/);
    expect(message(-1)).toMatch(/^-1 is not a time/);
    expect(message('1704067200')).toMatch(/^"1704067200" is a string of digits; write unix seconds as a number/);
    expect(message('2024-01-01T12:00:00.5Z')).toMatch(/fraction of a second/);
    expect(message('1969-12-31')).toMatch(/before 1970/);
    expect(message(true)).toMatch(/^true is not a time; write 2024-01-31/);
  });

  it('shows seconds as ISO without milliseconds', () => {
    expect(isoSeconds(JAN_1)).toBe('2024-01-01T00:00:00Z');
  });
});

describe('TimestampFilter', () => {
  it('takes ranges in either form and compares them as instants', () => {
    expect(TimestampFilter.parse({ from: '2024-01-01', until: JAN_1 + 86_399 })).toEqual({
      from: JAN_1,
      until: JAN_1 + 86_399,
    });
    expect(TimestampFilter.safeParse({ from: '2024-01-02', until: '2024-01-01T23:00:00-02:00' }).success).toBe(true);
    expect(TimestampFilter.safeParse({ from: '2024-01-02', until: '2024-01-01' }).error!.issues[0]!.message).toMatch(
      /after/,
    );
  });

  it('names the field path, the value and both forms in a request check', () => {
    const issues = checkRequest('products.query', {
      filter: { and: [{ status: 'active' }, { updatedSince: { from: '2024-13-01' } }] },
      sorting: { id: 'ASC' },
      page,
    });
    expect(issues).toEqual([
      {
        path: ['filter', 'and', 1, 'updatedSince', 'from'],
        message: '"2024-13-01" is not a date; write 2024-01-31, 2024-01-31T12:00:00Z or unix seconds',
      },
    ]);
    const err = (() => {
      try {
        validateRequest('products.query', { filter: { createdAt: '2024-02-30' }, sorting: { id: 'ASC' }, page });
      } catch (e) {
        return e as RequestValidationError;
      }
    })();
    expect(err).toBeInstanceOf(RequestValidationError);
    expect(err!.message).toContain('filter.createdAt: "2024-02-30" is not a date; write 2024-01-31');
  });

  it('an object of the wrong keys is told about its keys, not about dates', () => {
    const [issue] = checkRequest('products.query', {
      filter: { updatedSince: { since: '2024-01-01' } },
      sorting: { id: 'ASC' },
      page,
    });
    expect(issue!.message).toMatch(/since/);
    expect(issue!.message).not.toMatch(/not a date/);
  });

  it('goes on the wire in unix seconds, under deprecated names too', () => {
    const filter: ProductFilter = {
      and: [{ updatedSince: { from: '2024-01-01', until: JAN_1 + 10 } }, { createdAt: '2024-01-01T02:00:00+02:00' }],
    };
    expect(toWireRequest('products.query', { filter, sorting: { id: 'ASC' }, page }).body.filter).toEqual({
      and: [{ updatedSince: { from: JAN_1, until: JAN_1 + 10 } }, { createdAt: JAN_1 }],
    });
    const media: MediaFilter = { updatedSince: '2024-01-01' };
    expect(toWireRequest('media.stream', { filter: media }).body.filter).toEqual({ updatedSince: JAN_1 });
  });
});
