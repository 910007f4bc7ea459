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

/**
 * Localized text that the live service sometimes sends as one plain string (embedded brand and
 * organization names: `"Thermoskin"`); a plain string is locale-independent text.
 */
export const LocalizedOrText = z.union([z.string(), Localized]).meta({ catalogKind: 'localized' });

/**
 * A code of digits (`digits` at most) sent as an integer (JSON dropped its leading zeros) or as a
 * digit string with them (the live service); an integer past 2^53 is refused, never rounded.
 */
function digitCode(digits: number | undefined, meta: CatalogMeta) {
  const most = digits === undefined ? '' : ` of at most ${digits} digits`;
  const asInteger = z.int().nonnegative();
  const asString = z.string().regex(digits === undefined ? /^\d+$/ : new RegExp(`^\\d{1,${digits}}$`), {
    message: `must be a string of digits${most}`,
  });
  return z
    .union(
      [
        digits === undefined
          ? asInteger
          : asInteger.max(10 ** digits - 1, { message: `must have at most ${digits} digits` }),
        asString,
      ],
      {
        error: `must be a code${most}: an integer or a string of digits`,
      },
    )
    .meta(meta);
}

/** A GTIN/EAN code of at most `digits` digits: an integer, or a digit string with its leading zeros. */
export function gtinCode(digits: number) {
  return digitCode(digits, { catalogKind: 'gtin', digits });
}

/**
 * A national product code (CNK, CIP/ACL, PZN, ARTG, SNOMED CT...): an integer or a digit string.
 * `pad`: the code has a fixed length (`digits`) and lost leading zeros are restored; otherwise
 * its digits are kept as sent.
 */
export function nationalCode(digits: number | undefined, pad: boolean) {
  return digitCode(digits, { catalogKind: 'code', ...(digits !== undefined ? { digits } : {}), pad });
}

/**
 * A Harmonised System code: a chapter (2 digits), heading (4), subheading (6), CN (8) or TARIC (10)
 * code: always an even digit count, and never `00...` (chapters are 01-97). Chapters 01-09 start
 * with a zero that an integer loses (the vendor's own example is `"010203"`; the live service
 * sends `"030211"` or 30211, and 4-digit headings such as `"0402"`), so an integer of an odd digit
 * count gets that one zero back (`evenDigits`); a string is kept as sent.
 */
export function hsCode() {
  return digitCode(10, { catalogKind: 'code', digits: 10, evenDigits: true });
}

/**
 * An identifier a reference table sends as a string or, in some versions of the vendor's docs, an
 * integer (`osp-categories` `parent`: `"0000018"` or 18). Written as a string column: an integer
 * becomes its digits, never an integer column that a string id could not join or fit.
 */
export const TextOrIntegerId = z
  .union([z.string(), z.int().nonnegative()], { error: 'must be an identifier: a string or an integer' })
  .meta({ catalogKind: 'text-id' });

/**
 * A number in `unit`: bare as the spec sends it (`{"celsius": 2}`), or `{value, unit}` as the live
 * service does (`{"celsius": {"value": 15, "unit": "°C"}}`). Typed columns hold the number (DOUBLE);
 * an object in another unit, or with more than value and unit, is kept whole where the column
 * cannot hold it (`_extra`).
 */
export function measure(unit: string) {
  return z
    .union([z.number(), z.looseObject({ value: z.number(), unit: z.string() })])
    .meta({ catalogKind: 'measure', unit });
}

/**
 * A flag the spec types as a string and the service sends as "true"/"false" (GS1 category
 * `active`); a JSON boolean is accepted too. Typed columns are BOOLEAN: "true" and "false" are
 * written as booleans, any other text is kept whole where the column cannot hold it (`_extra`).
 * Validation stays as loose as the spec's string, so no record is rejected for another spelling.
 */
export const BooleanText = z.union([z.boolean(), z.string()]).meta({ catalogKind: 'boolean-text' });

/**
 * `primary`, or one of `others`: shapes the live service sends for the same field (bare brand
 * ids beside brand objects, a list of codes beside one code). Column types and stages follow
 * `primary`; a value of another shape is kept where the primary's type cannot hold it (`_extra`).
 */
export function orAlso<T extends z.ZodType>(primary: T, ...others: [z.ZodType, ...z.ZodType[]]) {
  return z.union([primary, ...others]).meta({ catalogPrimary: true });
}

export interface CatalogMeta {
  [key: string]: unknown;
  catalogKind?: string;
  digits?: number;
  pad?: boolean;
  /** An integer of an odd digit count lost one leading zero (hsCode): it gets that one back. */
  evenDigits?: boolean;
  /** The unit of a `measure`. */
  unit?: string;
  /** A union whose first option gives the field's type (`orAlso`). */
  catalogPrimary?: boolean;
}

/** The marker this module put on a schema (`{catalogKind, digits?, pad?}`), if any. */
export function catalogMetaOf(schema: z.ZodType): CatalogMeta | undefined {
  return z.globalRegistry.get(schema) as CatalogMeta | undefined;
}

/** What kind a schema was marked as by this module, if any. */
export function catalogKindOf(schema: z.ZodType): string | undefined {
  return catalogMetaOf(schema)?.catalogKind;
}

export const SortDirection = z.enum(['ASC', 'DESC']);
export type SortDirection = z.infer<typeof SortDirection>;
