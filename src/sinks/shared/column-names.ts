// Column naming of the sinks that shape columns (parquet, csv, s3 with either, table): the record's
// field names as they are (`meta_updatedAt`, `seoName_en`), or snake_case (`meta_updated_at`,
// `seo_name_en`), the form SQL engines take without quotes. A sink concern, not a transform's:
// JSONL writes records as they are, and the record paths users write (`columns:`,
// `timestampFields`, `_extra` keys, partition fields) stay the record's names whatever the naming.
// ARCHITECTURE.md, "Lake contract: column names and types" says why as-is is the default.
import { z } from 'zod';

export const COLUMN_NAMINGS = ['as-is', 'snake_case'] as const;
export type ColumnNaming = (typeof COLUMN_NAMINGS)[number];

/** `columnNames` of the formats that shape columns: one schema object, as the s3 sink merges the formats' options. */
export const columnNamesOption = z
  .enum(COLUMN_NAMINGS)
  .default('as-is')
  .describe(
    'Column names: as-is keeps the record field names (meta_updatedAt, seoName_en, eanGtin13); snake_case lowercases them with ' +
      'an underscore at each word boundary (meta_updated_at, seo_name_en, ean_gtin13, atcCode -> atc_code, URLs -> urls), ' +
      'the form Athena/Glue, Postgres and Snowflake read without quotes. Field paths in other options (columns, timestampFields) stay the record names. ' +
      'A table written with one naming refuses the other (start a new table to switch)',
  );

/**
 * snake_case of a record field name, deterministic and idempotent (a snake name maps to itself):
 * - a word boundary is a capital after a lowercase letter or a digit (`updatedAt` -> `updated_at`,
 *   `gtin14Code` -> `gtin14_code`), or the last capital of a run before a lowercase letter
 *   (`URLList` -> `url_list`, `photoURLs` -> `photo_urls`: a plural `s` stays with its acronym);
 * - digits stay with what precedes them (`eanGtin13` -> `ean_gtin13`, `cipOrAcl7` -> `cip_or_acl7`);
 * - existing underscores are kept as they are (`seoName_en` -> `seo_name_en`, `_extra` stays);
 * - any other character (`-`, `.`, a space, a non-ASCII letter) becomes `_`.
 */
export function snakeCase(name: string): string {
  let out = '';
  for (let i = 0; i < name.length; i++) {
    const c = name[i]!;
    if (/[A-Z]/.test(c)) {
      const prev = name[i - 1];
      const next = name[i + 1];
      const afterWord = prev !== undefined && /[a-z0-9]/.test(prev);
      // `URLList`: the L of List starts a word; `URLs`: a lone lowercase s after an acronym is its plural.
      const endsAcronym =
        prev !== undefined &&
        /[A-Z]/.test(prev) &&
        next !== undefined &&
        /[a-z]/.test(next) &&
        !(next === 's' && !/[a-z]/.test(name[i + 2] ?? ''));
      if ((afterWord || endsAcronym) && !out.endsWith('_')) out += '_';
      out += c.toLowerCase();
    } else if (/[a-z0-9_]/.test(c)) out += c;
    else out += '_';
  }
  return out;
}

/** The column name of a record field name under a naming. */
export function columnNamer(naming: ColumnNaming | undefined): (name: string) => string {
  return naming === 'snake_case' ? snakeCase : (name) => name;
}
