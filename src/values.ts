// Value helpers shared by every layer: what counts as a record-like object, and how a value is
// named in an error message. One definition each, so a message reads the same from any stage.

/** An object literal or a null-prototype object (a parsed JSON object), not an array, Date, Buffer or class instance. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * A value as a record issue (dead letters, validate and normalize-codes errors) shows it:
 * `number 12345678901234`, `string "gone"`, `an array of 3`, `an object`, `null`, `nothing (the field is missing)`.
 * Dead-letter files carry this text, so it is part of their format. (Parquet column errors name a value
 * for a column type instead: column-schema.ts describeColumnValue.)
 */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing (the field is missing)';
  if (value === null) return 'null';
  if (typeof value === 'string')
    return `string ${JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value)}`;
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}
