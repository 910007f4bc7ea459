// JSON text as every format writes it (JSONL lines, CSV and Parquet JSON columns, `_extra`): one
// function in the shared layer, so no format imports another to write JSON the same way.

/**
 * `JSON.stringify(value)`, except that BigInt values become integer literals
 * (`{"id":12345678901234567890}`) instead of throwing. Byte-identical to
 * JSON.stringify for every value without a BigInt.
 */
export function stringifyJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (!(err instanceof TypeError) || !/BigInt/i.test(err.message)) throw err;
    return stringifyWithBigInt(value, '') ?? 'null';
  }
}

/** JSON.stringify semantics (toJSON, undefined/function/symbol omission) plus BigInt literals. */
function stringifyWithBigInt(value: unknown, key: string): string | undefined {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON(key: string): unknown }).toJSON(key);
  }
  switch (typeof value) {
    case 'bigint':
      return value.toString();
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
    case 'object': {
      if (value === null) return 'null';
      if (value instanceof Number || value instanceof String || value instanceof Boolean) return JSON.stringify(value);
      if (Array.isArray(value)) {
        return `[${value.map((item, i) => stringifyWithBigInt(item, String(i)) ?? 'null').join(',')}]`;
      }
      const parts: string[] = [];
      for (const k of Object.keys(value)) {
        const encoded = stringifyWithBigInt((value as Record<string, unknown>)[k], k);
        if (encoded !== undefined) parts.push(`${JSON.stringify(k)}:${encoded}`);
      }
      return `{${parts.join(',')}}`;
    }
    default:
      return JSON.stringify(value);
  }
}
