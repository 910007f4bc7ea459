// Times as people write them, wherever a user gives one (filters, ranges): an ISO 8601 date or
// date-time, or unix seconds. The API takes unix seconds, so the schema's output is seconds and
// the wire never sees a string. A date-time without a zone is UTC: a run must mean the same
// instant on every machine (a laptop, CI, a server abroad), and the API's own times are UTC.
import { z } from 'zod';

/** What a refused time is told to look like. */
export const TIMESTAMP_FORMS = '2024-01-31, 2024-01-31T12:00:00Z or unix seconds';

/** Unix seconds from 10^12 on are year 33658 or later: a millisecond timestamp given by mistake. */
const FIRST_MILLISECONDS = 1e12;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?([Zz]|[+-]\d{2}:?\d{2})?$/;

/**
 * Unix seconds of `value` (an ISO 8601 date or date-time, or unix seconds), or why it is not a
 * time: a sentence starting with the value, to follow a field path.
 */
export function toUnixSeconds(value: unknown): number | string {
  const shown = typeof value === 'string' ? JSON.stringify(value) : describe(value);
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value < 0)
      return `${shown} is not a time; write ${TIMESTAMP_FORMS} (a whole, non-negative number)`;
    if (value >= FIRST_MILLISECONDS)
      return `${shown} looks like milliseconds; the API takes seconds: write ${Math.floor(value / 1000)}, or ${TIMESTAMP_FORMS}`;
    // Unsafe integers are refused rather than sent rounded; they are past FIRST_MILLISECONDS anyway.
    return value;
  }
  if (typeof value !== 'string') return `${shown} is not a time; write ${TIMESTAMP_FORMS}`;
  const text = value.trim();
  if (/^\d+$/.test(text))
    return `${shown} is a string of digits; write unix seconds as a number (without quotes), or a date: ${TIMESTAMP_FORMS}`;
  const notDate = `${shown} is not a date; write ${TIMESTAMP_FORMS}`;
  const d = DATE.exec(text);
  const t = d ? undefined : DATE_TIME.exec(text);
  const parts = d ?? t;
  if (!parts) return notDate;
  const [year, month, day, hour = 0, minute = 0, second = 0] = parts
    .slice(1, 7)
    .map((p) => (p === undefined ? 0 : Number(p)));
  const fraction = t?.[7];
  const zone = t?.[8];
  const ms = Date.UTC(year!, month! - 1, day!, hour!, minute!, second!);
  const back = new Date(ms);
  // Date.UTC rolls 2024-02-30 over to March 1st; a round trip catches every out-of-range part.
  if (
    back.getUTCFullYear() !== year ||
    back.getUTCMonth() !== month! - 1 ||
    back.getUTCDate() !== day ||
    back.getUTCHours() !== hour ||
    back.getUTCMinutes() !== minute ||
    back.getUTCSeconds() !== second
  )
    return notDate;
  if (fraction !== undefined && /[1-9]/.test(fraction))
    return `${shown} has a fraction of a second; the API filters whole seconds: write ${TIMESTAMP_FORMS}`;
  let offsetSeconds = 0;
  if (zone !== undefined && zone.toUpperCase() !== 'Z') {
    const m = /^([+-])(\d{2}):?(\d{2})$/.exec(zone)!;
    const hours = Number(m[2]);
    const minutes = Number(m[3]);
    if (hours > 23 || minutes > 59) return notDate;
    offsetSeconds = (m[1] === '-' ? -1 : 1) * (hours * 3600 + minutes * 60);
  }
  const seconds = ms / 1000 - offsetSeconds;
  if (seconds < 0) return `${shown} is before 1970-01-01T00:00:00Z, which unix seconds cannot say`;
  return seconds;
}

/** `2024-01-01T00:00:00Z`: unix seconds as people read them (whole seconds, so no `.000`). */
export function isoSeconds(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace(/\.000Z$/, 'Z');
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  return String(v);
}

/**
 * A time a user writes: an ISO 8601 date (`2024-01-01`: 00:00:00 UTC), a date-time
 * (`2024-01-01T12:30:00Z`, `+02:00`; no zone: UTC) or unix seconds. Parses to unix seconds.
 */
export const Timestamp = z
  .unknown()
  .transform((value, ctx) => {
    const seconds = toUnixSeconds(value);
    if (typeof seconds === 'number') return seconds;
    // invalid_type for a value of another shape, so a union (`TimestampFilter`) prefers the
    // branch that shape belongs to when it reports.
    const shapeless = typeof value !== 'string' && typeof value !== 'number';
    ctx.addIssue(
      shapeless
        ? { code: 'invalid_type', expected: 'string', input: value, message: seconds }
        : { code: 'custom', input: value, message: seconds },
    );
    return z.NEVER;
  })
  .meta({ typeLabel: 'date | unix seconds' }) as unknown as z.ZodType<number, string | number>;
