// Durations in pipeline files: "500ms", "30s", "2m", "1h" (a unit is required:
// a bare 30 could be seconds or milliseconds, and a timeout off by 1000x is a
// bug nobody sees until production).
import { z } from 'zod';

const UNITS_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
const DURATION = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/;

/** Milliseconds of "30s"-style text, or undefined when it is not one (or not positive). */
export function parseDurationMs(text: string): number | undefined {
  const m = DURATION.exec(text);
  if (!m) return undefined;
  const ms = Math.round(Number(m[1]) * UNITS_MS[m[2] as keyof typeof UNITS_MS]);
  return ms > 0 && Number.isSafeInteger(ms) ? ms : undefined;
}

/** A zod schema for a duration option: text in, milliseconds out. */
export function duration() {
  return z.union([z.string(), z.number()]).transform((value, ctx) => {
    const ms = typeof value === 'string' ? parseDurationMs(value) : undefined;
    if (ms === undefined) {
      const hint =
        typeof value === 'number'
          ? ` (a unit is required: "${value}s" or "${value}ms"?)`
          : DURATION.test(value)
            ? ' (it must be above zero)'
            : '';
      ctx.addIssue({
        code: 'custom',
        message: `expected a duration with a unit such as "500ms", "30s", "2m" or "1h", got ${JSON.stringify(value)}${hint}`,
      });
      return z.NEVER;
    }
    return ms;
  });
}
