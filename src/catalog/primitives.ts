// Building blocks shared by the resource and filter schemas. Some are single
// schema instances on purpose: schema walkers (flatten-locales, Parquet column
// inference) recognise a localized field or a unix timestamp by identity.
import { z } from 'zod';

/** A localized string: an object keyed by locale code (`en`, `nl`, `fr`, ...). */
export const Localized = z.record(z.string(), z.string()).meta({ catalogKind: 'localized' });
export type Localized = z.infer<typeof Localized>;

/** A unix timestamp in seconds (integer). Values beyond 2^53 are rejected, never rounded. */
export const UnixTimestamp = z.int().nonnegative().meta({ catalogKind: 'timestamp' });

/** `meta` on a record: creation and last update, unix timestamps. */
export const RecordMeta = z.looseObject({
  createdAt: UnixTimestamp,
  updatedAt: UnixTimestamp,
});

/** A non-negative safe integer (zod's int() already refuses values past 2^53). */
export const Id = z.int().nonnegative();

/** A GTIN/EAN code given as an integer that has at most `digits` digits (leading zeros dropped by JSON). */
export function gtinInteger(digits: number) {
  return z
    .int()
    .nonnegative()
    .max(10 ** digits - 1, { message: `must have at most ${digits} digits` })
    .meta({ catalogKind: 'gtin', digits });
}

/** The marker this module put on a schema (`{catalogKind, digits?}`), if any. */
export function catalogMetaOf(schema: z.ZodType): { catalogKind?: string; digits?: number } | undefined {
  return z.globalRegistry.get(schema) as { catalogKind?: string; digits?: number } | undefined;
}

/** What kind a schema was marked as by this module, if any. */
export function catalogKindOf(schema: z.ZodType): string | undefined {
  return catalogMetaOf(schema)?.catalogKind;
}

export const SortDirection = z.enum(['ASC', 'DESC']);
export type SortDirection = z.infer<typeof SortDirection>;
