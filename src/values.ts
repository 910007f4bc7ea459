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

/**
 * Whether a value has more than `levels` levels of objects and arrays (a scalar has 0), found
 * without recursion and without walking past `levels + 1`: safe on any depth (JSON.parse reads
 * any; recursive code overflows the stack at a few thousand levels).
 */
export function nestedDeeperThan(value: unknown, levels: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > levels) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}
