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
import { stringifyJson } from '../shared/json-text.js';
import {
  checkNoLineageField,
  LINEAGE_COLUMNS,
  lineageClash,
  lineageJsonSuffix,
  type LineageValues,
} from '../shared/lineage.js';

/** Writes records as JSON lines into one destination (see TextLinesEncoder). */
export class JsonlEncoder extends TextLinesEncoder<Record<string, unknown>> {
  constructor(dest: ByteDestination, options: { gzip: boolean; lineage?: LineageValues | undefined }) {
    const withLineage = options.lineage ? lineageJsonSuffix(options.lineage) : undefined;
    super(dest, {
      gzip: options.gzip,
      line: withLineage
        ? (record) => `${withLineage(stringifyJson(record))}\n`
        : (record) => `${stringifyJson(record)}\n`,
    });
  }
}

// ---------------------------------------------------------------------------
// Codes padded like Parquet does: only the code fields of the schema are looked at,
// and a record is copied (along the path) only when one of them holds an integer.
// The schema is turned once into a function per level (which keys to look at, and
// what to do with each), so a record costs a few property reads, not a walk of a tree.

type Pad = (value: unknown) => unknown;

function padCode(code: CodeInfo): Pad {
  return (value) => {
    if (typeof value === 'number')
      return Number.isSafeInteger(value) && value >= 0 ? integerCode(String(value), code) : value;
    if (typeof value === 'bigint') return value >= 0n ? integerCode(value.toString(), code) : value;
    return value;
  };
}

function padList(element: Pad): Pad {
  return (value) => {
    if (!Array.isArray(value)) return value;
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const fixed = element(value[i]);
      if (fixed !== value[i]) (out ??= [...value])[i] = fixed;
    }
    return out ?? value;
  };
}

function padStruct(keys: string[], pads: Pad[]): Pad {
  return (value) => {
    if (!isPlainObject(value)) return value;
    let out: Record<string, unknown> | undefined;
    for (let k = 0; k < keys.length; k++) {
      const v = value[keys[k]!];
      if (v === undefined || v === null) continue;
      const fixed = pads[k]!(v);
      if (fixed !== v) (out ??= { ...value })[keys[k]!] = fixed;
    }
    return out ?? value;
  };
}

/** What pads the codes of a value of this type; undefined when it holds none that get zeros back. */
function codePad(type: FieldType): Pad | undefined {
  if (type.kind === 'string') return type.code && restoresZeros(type.code) ? padCode(type.code) : undefined;
  if (type.kind === 'list') {
    const element = codePad(type.element);
    return element ? padList(element) : undefined;
  }
  if (type.kind === 'struct') {
    const keys: string[] = [];
    const pads: Pad[] = [];
    for (const f of type.fields) {
      const pad = codePad(f.type);
      if (!pad) continue;
      keys.push(f.name);
      pads.push(pad);
    }
    return keys.length ? padStruct(keys, pads) : undefined;
  }
  return undefined;
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
  /** `lineage: true`: `_run_id` and `_extracted_at` appended to every line (shared/lineage.ts). */
  lineage?: LineageValues | undefined;
  /** The sink's type, for messages. */
  stage?: string;
}): RecordEncoding<Record<string, unknown>> {
  const schema = options.ctx?.recordSchema;
  const pad = schema ? codePad({ kind: 'struct', fields: schema.fields }) : undefined;
  const { lineage } = options;
  const stage = options.stage ?? 'jsonl';
  if (lineage) {
    const clash = schema?.fields.find((f) => (LINEAGE_COLUMNS as readonly string[]).includes(f.name));
    if (clash) throw lineageClash(clash.name);
  }
  const padded: (record: Record<string, unknown>) => Record<string, unknown> = pad
    ? (record) => pad(record) as Record<string, unknown>
    : (record) => record;
  return {
    accept: lineage
      ? (record, _ordinal, emit) => {
          // A member of that name would be written twice in the line.
          checkNoLineageField(record, stage);
          return emit(record, padded(record));
        }
      : (record, _ordinal, emit) => emit(record, padded(record)),
    flush: async () => {},
    createEncoder: (destination) => new JsonlEncoder(destination, options),
    canWriteEmpty: () => true,
    describeSchema: () => null,
    close: async () => {},
    abort: async () => {},
  };
}
