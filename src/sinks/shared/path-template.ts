// Output path/key templates shared by the jsonl, parquet and s3 sinks.
//
// Rules (the stage reference, docs/stages.md, repeats them):
// - `{name}`  the run name (ctx.run.name).
// - `{run}`   the run id (ctx.run.id).
// - `{date}`  the run's start date in UTC, `YYYY-MM-DD` (ctx.run.startedAt), the same for
//             every file of the run even when it runs past midnight.
// - `{part}`  the part number, zero-padded to 5 digits (`00000`, `00001`, ...; wider past
//             99999). Parts are numbered from 0 separately for each partition. A template
//             needs `{part}` when the sink may write more than one file for the same
//             partition (maxRows/maxBytes rotation, or closing partitions past
//             maxOpenPartitions).
// - `key={field}` a Hive-style partition: the whole path segment (or the start of a file
//             name) is `key=` followed by a placeholder naming a record field (`a.b` for a
//             nested one). The field's value picks the output: one open output per distinct
//             value. Reserved names (`name`, `run`, `date`, `part`) always mean the run
//             values above, never a record field.
// - Values are written as Hive does: `null`, a missing field and `""` become
//   `__HIVE_DEFAULT_PARTITION__`; strings, numbers, booleans and bigints are written as text,
//   escaping `"#%'*/:=?\[]^{}`, control characters and a value of `.` or `..` as `%XX`; an
//   object or array value is an error.
// - Any other `{...}` and any stray `{` or `}` is a configuration error (a typo such as
//   `{dat}` must not silently become a partition field).
import { ConfigError, SinkError } from '../../errors.js';
import { closestName } from '../../closest-name.js';

export const HIVE_DEFAULT_PARTITION = '__HIVE_DEFAULT_PARTITION__';
const RUN_PLACEHOLDERS = ['name', 'run', 'date', 'part'] as const;
const FIELD_PATH = /^[A-Za-z_$][\w$-]*(?:\.[A-Za-z_$][\w$-]*)*$/;

type Token = { literal: string } | { field: number } | { part: true };

export interface RunValues {
  name: string;
  id: string;
  startedAt: Date;
}

export interface PartitionField {
  /** Dotted path of the record field. */
  path: string[];
  /** The Hive key before `=`. */
  key: string;
}

/** A run id as newRunId() makes it (`20260102T030405Z-a1b2c3`). */
export const RUN_ID_PATTERN = '\\d{8}T\\d{6}Z-[0-9a-f]{6}';

/** What a partition value matches in `pattern`: no other part of a pattern has this text. */
const FIELD_VALUE = '[^/\\\\]*';

export class PathTemplate {
  readonly source: string;
  readonly fields: readonly PartitionField[];
  readonly hasPart: boolean;
  /** Whether the template names the run (`{run}`): each run then writes outputs of its own. */
  readonly hasRun: boolean;
  /**
   * Matches every path this template renders, for any partition values, part numbers and run
   * ids (the other run values fixed): the outputs of earlier runs of the same dataset.
   */
  readonly pattern: RegExp;
  readonly #tokens: Token[];
  /** `pattern` with a group per partition field (kept apart: `pattern.source` names datasets' records). */
  readonly #capture: RegExp;

  private constructor(source: string, tokens: Token[], fields: PartitionField[], hasRun: boolean, pattern: string) {
    this.source = source;
    this.#tokens = tokens;
    this.fields = fields;
    this.hasPart = tokens.some((t) => 'part' in t);
    this.hasRun = hasRun;
    this.pattern = new RegExp(`^${pattern}$`);
    this.#capture = new RegExp(`^${pattern.replaceAll(FIELD_VALUE, `(${FIELD_VALUE})`)}$`);
  }

  /**
   * Parses a template and fills in the run values (`{name}`, `{run}`, `{date}`) at once.
   * `option` names the option in error messages (`path`, `key`, `manifestKey`).
   */
  static parse(source: string, run: RunValues, option = 'path'): PathTemplate {
    const tokens: Token[] = [];
    const fields: PartitionField[] = [];
    let hasRun = false;
    let pattern = '';
    const pushLiteral = (text: string, asPattern = escapeRegExp(text)) => {
      pattern += asPattern;
      if (!text) return;
      const last = tokens.at(-1);
      if (last && 'literal' in last) last.literal += text;
      else tokens.push({ literal: text });
    };
    const fail = (message: string) => {
      throw new ConfigError(`${option} "${source}": ${message}`, { path: option }, { code: 'config.template' });
    };

    let i = 0;
    while (i < source.length) {
      const open = source.indexOf('{', i);
      const close = source.indexOf('}', i);
      if (close !== -1 && (open === -1 || close < open)) fail(`unmatched "}" at position ${close}`);
      if (open === -1) {
        pushLiteral(source.slice(i));
        break;
      }
      pushLiteral(source.slice(i, open));
      const end = source.indexOf('}', open);
      if (end === -1) fail(`unmatched "{" at position ${open}`);
      const name = source.slice(open + 1, end).trim();
      i = end + 1;
      switch (name) {
        case 'name':
          pushLiteral(escapePathValue(run.name));
          continue;
        case 'run':
          hasRun = true;
          pushLiteral(escapePathValue(run.id), RUN_ID_PATTERN);
          continue;
        case 'date':
          pushLiteral(run.startedAt.toISOString().slice(0, 10));
          continue;
        case 'part':
          tokens.push({ part: true });
          // Exactly what formatPart writes: five digits, or more without a leading zero.
          pattern += '(?:\\d{5}|[1-9]\\d{5,})';
          continue;
      }
      // A record field: only in the Hive form `key={field}`, right after `key=`.
      const before = source.slice(0, open);
      const segmentStart = Math.max(before.lastIndexOf('/'), before.lastIndexOf('\\')) + 1;
      const hive = /^([^/\\{}=]+)=$/.exec(source.slice(segmentStart, open));
      if (!hive || !FIELD_PATH.test(name)) {
        const hint = closestName(name, [...RUN_PLACEHOLDERS]);
        fail(
          `unknown placeholder {${name}}${hint ? `; did you mean {${hint}}?` : ''} ` +
            `(placeholders: {name} {run} {date} {part}, and key={field} for a Hive partition taken from a record field)`,
        );
      }
      fields.push({ path: name.split('.'), key: hive![1]! });
      tokens.push({ field: fields.length - 1 });
      pattern += FIELD_VALUE;
    }
    return new PathTemplate(source, tokens, fields, hasRun, pattern);
  }

  /** The escaped partition values of a record, one per partition field (empty when unpartitioned). */
  partitionValues(
    record: Record<string, unknown>,
    describeRecord: (record: Record<string, unknown>) => string,
  ): string[] {
    const values: string[] = new Array(this.fields.length);
    for (let f = 0; f < this.fields.length; f++) {
      const field = this.fields[f]!;
      let value: unknown = record;
      for (const key of field.path)
        value = value == null || typeof value !== 'object' ? undefined : (value as Record<string, unknown>)[key];
      if (value === null || value === undefined || value === '') {
        values[f] = HIVE_DEFAULT_PARTITION;
      } else if (
        typeof value === 'string' ||
        typeof value === 'number' ||
        typeof value === 'bigint' ||
        typeof value === 'boolean'
      ) {
        values[f] = escapePathValue(String(value));
      } else if (value instanceof Date) {
        values[f] = escapePathValue(value.toISOString());
      } else {
        throw new SinkError(
          `partition field "${field.path.join('.')}" of ${describeRecord(record)} is ${Array.isArray(value) ? 'an array' : 'an object'}; ` +
            `a partition value must be a string, number or boolean`,
          { code: 'sink.partition' },
        );
      }
    }
    return values;
  }

  /**
   * The escaped value the record field `field` (dotted) has in `rendered`, a path this template
   * renders; undefined when the template has no such partition or the path is not one of its own.
   */
  fieldValue(rendered: string, field: string): string | undefined {
    const index = this.fields.findIndex((f) => f.path.join('.') === field);
    if (index < 0) return undefined;
    return this.#capture.exec(rendered)?.[index + 1];
  }

  /** The path of part `part` of the partition with these (escaped) values. */
  render(partitionValues: readonly string[], part: number): string {
    let out = '';
    for (const token of this.#tokens) {
      if ('literal' in token) out += token.literal;
      else if ('part' in token) out += formatPart(part);
      else out += partitionValues[token.field];
    }
    return out;
  }

  /**
   * The rendered text before the first per-record or per-part placeholder, cut back to the
   * last `/`: the folder shared by every output of the run (`catalog/products/dt=2026-01-02/`).
   */
  fixedPrefix(): string {
    let out = '';
    for (const token of this.#tokens) {
      if (!('literal' in token)) break;
      out += token.literal;
    }
    return out.slice(0, out.lastIndexOf('/') + 1);
  }

  /** Whether the template contains per-record or per-part placeholders. */
  get isDynamic(): boolean {
    return this.#tokens.some((t) => !('literal' in t));
  }
}

export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function formatPart(part: number): string {
  return String(part).padStart(5, '0');
}

// eslint-disable-next-line no-control-regex -- control characters are among what Hive escapes
const HIVE_ESCAPED = /[\u0000-\u001f\u007f"#%'*/:=?\\[\]^{}]/g;

/** Hive's escaping of a partition value, plus `.`/`..` and `}` so a value can never climb out of its folder. */
export function escapePathValue(value: string): string {
  if (value === '.' || value === '..') return value.replace(/\./g, '%2E');
  return value.replace(HIVE_ESCAPED, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}
