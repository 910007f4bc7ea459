// Records nested deeper than the stages can handle. JSON.parse reads any depth
// (V8's parser is iterative), but JSON.stringify, structuredClone and every
// recursive walk throw "Maximum call stack size exceeded" at a few thousand
// levels (about 2,000 to 5,000 on Node 20's default stack, fewer in a deeper
// call chain). One record with a 200,000-deep array made every run fail with
// that message, naming no record, every night. Catalog records nest a few
// levels; anything past MAX_RECORD_DEPTH is not data a stage can use.
// validate measures it (a recursion bounded by the limit, never deeper) and
// sets such a record aside with its id and origin; the dead letter keeps the
// too-deep fields as their JSON text, written without recursion, so nothing
// is lost and nothing overflows.

/** Levels of objects and arrays a record may have (the record itself is level 1). */
export const MAX_RECORD_DEPTH = 256;

/** The top-level fields of `record` whose value nests more than `limit - 1` levels (so the record more than `limit`). */
export function tooDeepFields(record: object, limit = MAX_RECORD_DEPTH): string[] {
  let out: string[] | undefined;
  for (const key in record) {
    const value = (record as Record<string, unknown>)[key];
    if (typeof value === 'object' && value !== null && deeperThan(value, limit - 1)) (out ??= []).push(key);
  }
  return out ?? [];
}

/** Whether `value` (an object or array, level 1) has more than `levels` levels. Recursion stops at `levels`. */
export function deeperThan(value: object, levels: number): boolean {
  if (levels <= 0) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (typeof v === 'object' && v !== null && deeperThan(v, levels - 1)) return true;
    }
    return false;
  }
  for (const key in value) {
    const v = (value as Record<string, unknown>)[key];
    if (typeof v === 'object' && v !== null && deeperThan(v, levels - 1)) return true;
  }
  return false;
}

/** How many levels `value` has, counted without recursion (for messages; any depth). */
export function depthOf(value: unknown): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (d > max) max = d;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, d + 1]);
    }
  }
  return max;
}

/** JSON.stringify of plain JSON data at any depth (an explicit stack instead of recursion). */
export function stringifyDeep(value: unknown): string {
  const parts: string[] = [];
  // Each frame: a value to write, or a closing bracket / separator already decided.
  const stack: Array<{ value: unknown } | { text: string }> = [{ value }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    if ('text' in frame) {
      parts.push(frame.text);
      continue;
    }
    const v = frame.value;
    if (typeof v !== 'object' || v === null) {
      parts.push(JSON.stringify(v) ?? 'null');
      continue;
    }
    const array = Array.isArray(v);
    const entries: Array<[string | undefined, unknown]> = array
      ? (v as unknown[]).map((x) => [undefined, x === undefined || typeof x === 'function' ? null : x])
      : Object.entries(v).filter(([, x]) => x !== undefined && typeof x !== 'function');
    parts.push(array ? '[' : '{');
    stack.push({ text: array ? ']' : '}' });
    for (let i = entries.length - 1; i >= 0; i--) {
      const [k, x] = entries[i]!;
      stack.push({ value: x });
      stack.push({ text: `${i > 0 ? ',' : ''}${k === undefined ? '' : `${JSON.stringify(k)}:`}` });
    }
  }
  return parts.join('');
}

/** The record with each of `fields` replaced by its JSON text: a copy any stage can write. */
export function withFieldsAsText(record: object, fields: readonly string[]): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...(record as Record<string, unknown>) };
  for (const f of fields) copy[f] = stringifyDeep(copy[f]);
  return copy;
}
