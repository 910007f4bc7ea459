// JSON Lines encoding shared by the jsonl sink and the s3 sink (format: jsonl):
// one `JSON.stringify(record)` per line, `\n`-terminated, optionally gzip'd.
// BigInt values are written as bare integers, without quotes or loss. Codes the
// records' schema declares (EAN/GTIN, CNK...) that arrive as integers are written
// as zero-padded strings, as in Parquet: leading zeros survive in every output.
import type { ByteDestination } from '../shared/byte-destination.js';
import { TextLinesEncoder } from '../shared/text-lines-encoder.js';
import type { RecordEncoding } from '../shared/record-sink.js';
import type { CodeInfo, FieldType } from '../../core/record-schema.js';
import { integerCode, restoresZeros } from '../../core/integer-code.js';
import type { StageContext } from '../../core/stage.js';
import { isPlainObject } from '../../values.js';

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

/** Writes records as JSON lines into one destination (see TextLinesEncoder). */
export class JsonlEncoder extends TextLinesEncoder<Record<string, unknown>> {
  constructor(dest: ByteDestination, options: { gzip: boolean }) {
    super(dest, { gzip: options.gzip, line: (record) => `${stringifyJson(record)}\n` });
  }
}

// ---------------------------------------------------------------------------
// Codes padded like Parquet does: only the code fields of the schema are looked at,
// and a record is copied (along the path) only when one of them holds an integer.

type CodeNode = { code: CodeInfo } | { element: CodeNode } | { fields: Map<string, CodeNode> };

function codeNode(type: FieldType): CodeNode | undefined {
  if (type.kind === 'string') return type.code && restoresZeros(type.code) ? { code: type.code } : undefined;
  if (type.kind === 'list') {
    const element = codeNode(type.element);
    return element ? { element } : undefined;
  }
  if (type.kind === 'struct') {
    const fields = new Map<string, CodeNode>();
    for (const f of type.fields) {
      const node = codeNode(f.type);
      if (node) fields.set(f.name, node);
    }
    return fields.size ? { fields } : undefined;
  }
  return undefined;
}

function padCodes(node: CodeNode, value: unknown): unknown {
  if ('code' in node) {
    let digits: string;
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) digits = String(value);
    else if (typeof value === 'bigint' && value >= 0n) digits = value.toString();
    else return value;
    return integerCode(digits, node.code);
  }
  if ('element' in node) {
    if (!Array.isArray(value)) return value;
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const fixed = padCodes(node.element, value[i]);
      if (fixed !== value[i]) (out ??= [...value])[i] = fixed;
    }
    return out ?? value;
  }
  if (!isPlainObject(value)) return value;
  let out: Record<string, unknown> | undefined;
  for (const [key, child] of node.fields) {
    const v = value[key];
    if (v === undefined || v === null) continue;
    const fixed = padCodes(child, v);
    if (fixed !== v) (out ??= { ...value })[key] = fixed;
  }
  return out ?? value;
}

/**
 * JSON Lines as a record format: every record is written as it comes, except that the codes
 * of the pipeline's derived schema (ctx.recordSchema) that hold integers
 * are written as padded strings. Dead-letter outputs get no derived schema: they keep a
 * rejected record exactly as the stage received it.
 */
export function jsonlFormat(options: {
  gzip: boolean;
  ctx?: Pick<StageContext, 'recordSchema'>;
}): RecordEncoding<Record<string, unknown>> {
  const schema = options.ctx?.recordSchema;
  const codes = schema ? codeNode({ kind: 'struct', fields: schema.fields }) : undefined;
  return {
    accept: codes
      ? (record, _ordinal, emit) => emit(record, padCodes(codes, record) as Record<string, unknown>)
      : (record, _ordinal, emit) => emit(record, record),
    flush: async () => {},
    createEncoder: (destination) => new JsonlEncoder(destination, options),
    canWriteEmpty: () => true,
    describeSchema: () => null,
    close: async () => {},
    abort: async () => {},
  };
}
