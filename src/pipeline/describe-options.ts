// Describes a stage's options from its zod schema (through zod's JSON Schema
// export): name, type, default, required, description. `catalog-streams stages`
// prints it and docs/stages.md is checked against it, so neither is a
// hand-kept copy.
import { z } from 'zod';
import type { StageDefinition } from '../core/stage.js';

export interface OptionRow {
  name: string;
  type: string;
  required: boolean;
  default?: unknown;
  description?: string;
}

type JsonSchema = {
  /** Set by a schema's .meta() where the JSON Schema cannot say it (filters, sortings). */
  typeLabel?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
};

const MAX_ENUM = 8;

/**
 * How a long enum is cut: `full` keeps every value (machine-readable output must not lose any);
 * `more` words the cut (default `…`), given how many values it left out.
 */
export interface EnumCut {
  full?: boolean;
  more?: (left: number) => string;
}

export function typeLabel(s: JsonSchema | undefined, cut: EnumCut = {}): string {
  if (!s) return 'any';
  if (s.typeLabel) return s.typeLabel;
  if (s.enum) {
    const values = s.enum.map((v) => JSON.stringify(v));
    // A worded cut costs as much as a value or two: it hides three at least.
    if (cut.full || values.length <= MAX_ENUM + (cut.more ? 2 : 0)) return values.join(' | ');
    return `${values.slice(0, MAX_ENUM).join(' | ')} | ${cut.more?.(values.length - MAX_ENUM) ?? '…'}`;
  }
  if (s.const !== undefined) return JSON.stringify(s.const);
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) return [...new Set(alternatives.map((a) => typeLabel(a, cut)))].join(' | ');
  if (s.type === 'array') return `${wrap(typeLabel(s.items, cut))}[]`;
  if (s.type === 'object') {
    if (!s.properties) return 'object';
    const keys = Object.keys(s.properties);
    return `{${keys.slice(0, 6).join(', ')}${keys.length > 6 ? ', …' : ''}}`;
  }
  if (Array.isArray(s.type)) return s.type.join(' | ');
  return s.type ?? 'any';
}

function wrap(label: string): string {
  return label.includes('|') ? `(${label})` : label;
}

export function describeOptions(def: Pick<StageDefinition, 'options'>): OptionRow[] {
  const schema = z.toJSONSchema(def.options, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).map(([name, prop]) => ({
    name,
    type: typeLabel(prop),
    required: required.has(name) && prop.default === undefined,
    ...(prop.default !== undefined ? { default: prop.default } : {}),
    ...(prop.description ? { description: prop.description } : {}),
  }));
}

/** Plain-text listing for `catalog-streams stages`. */
export function formatStageList(defs: readonly StageDefinition[]): string {
  const lines: string[] = [];
  for (const kind of ['source', 'transform', 'sink'] as const) {
    const ofKind = defs.filter((d) => d.kind === kind);
    if (ofKind.length === 0) continue;
    lines.push(`${kind === 'source' ? 'SOURCES' : kind === 'transform' ? 'TRANSFORMS' : 'SINKS'}`);
    for (const def of ofKind) {
      lines.push(`  ${def.type}  ${def.description}`);
      for (const row of describeOptions(def)) {
        const dflt = row.default !== undefined ? ` = ${JSON.stringify(row.default)}` : '';
        lines.push(
          `      ${row.name}${row.required ? '' : '?'}: ${row.type}${dflt}${row.description ? `  — ${row.description}` : ''}`,
        );
      }
    }
    lines.push('');
  }
  return lines.join('\n');
}

/** Markdown reference (docs/stages.md embeds this). */
export function formatStageReference(defs: readonly StageDefinition[]): string {
  const out: string[] = [];
  for (const def of defs) {
    out.push(`#### \`${def.type}\` (${def.kind})`, '', def.description, '');
    const rows = describeOptions(def);
    if (rows.length === 0) {
      out.push('No options.', '');
      continue;
    }
    out.push('| option | type | default | description |', '|---|---|---|---|');
    for (const r of rows) {
      const dflt = r.default !== undefined ? `\`${JSON.stringify(r.default)}\`` : r.required ? 'required' : '';
      out.push(
        `| \`${r.name}\` | \`${r.type.replace(/\|/g, '\\|')}\` | ${dflt} | ${(r.description ?? '').replace(/\|/g, '\\|')} |`,
      );
    }
    out.push('');
  }
  return out.join('\n');
}

/** A description as a JSDoc body: `*\/` cannot end the comment early, and a leading `@` is not read as a tag. */
function jsdoc(text: string, indent: string): string {
  const body = text.replaceAll('*/', '*\\/').replace(/(^|\s)@/g, '$1\\@');
  const lines = body.split('\n').flatMap((l) => wrapWords(l, 100));
  return [`${indent}/**`, ...lines.map((l) => `${indent} * ${l}`.trimEnd()), `${indent} */`].join('\n');
}

function wrapWords(line: string, width: number): string[] {
  const out: string[] = [];
  let current = '';
  for (const word of line.split(' ')) {
    if (current !== '' && current.length + 1 + word.length > width) {
      out.push(current);
      current = word;
    } else current = current === '' ? word : `${current} ${word}`;
  }
  out.push(current);
  return out;
}

/**
 * The TypeScript module `npm run docs` writes to src/generated/stage-option-docs.ts: every
 * stage's option keys with their description (and default) as JSDoc. The code API's option
 * types are intersected with these (`WithOptionDocs`), so an editor shows the description on
 * hover, from the same zod `.describe()` text docs/stages.md and `stages` print.
 */
export function formatOptionDocsModule(defs: readonly StageDefinition[]): string {
  const out = [
    "// Generated by `npm run docs` (scripts/update-stage-option-docs.mjs) from the stages' zod",
    '// descriptions; test/docs/option-docs.test.ts fails when it drifts. Do not edit by hand.',
    '',
    "/** Each stage type's option keys, documented; the types come from the stage's own option types. */",
    'export interface StageOptionDocs {',
  ];
  for (const def of defs) {
    out.push(`  ${JSON.stringify(def.type)}: {`);
    for (const row of describeOptions(def)) {
      const dflt = row.default !== undefined ? `\n\nDefault: \`${JSON.stringify(row.default)}\`` : '';
      out.push(jsdoc(`${row.description ?? ''}${dflt}`.trim(), '    '), `    ${row.name}?: unknown;`);
    }
    out.push('  };');
  }
  out.push(
    '}',
    '',
    '/**',
    " * A stage's code-API options with the JSDoc of `StageOptionDocs[Type]`: the intersection keeps",
    ' * `Options` exactly (each documented key is `unknown`) and lends its keys their descriptions.',
    ' */',
    'export type WithOptionDocs<Type extends keyof StageOptionDocs, Options> = Options & StageOptionDocs[Type];',
    '',
  );
  return out.join('\n');
}
