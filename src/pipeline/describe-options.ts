// Describes a stage's options from its zod schema (through zod's JSON Schema
// export): name, type, default, required, description. `catalog-streams stages`
// prints it and the README reference is checked against it, so neither is a
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

export function typeLabel(s: JsonSchema | undefined): string {
  if (!s) return 'any';
  if (s.typeLabel) return s.typeLabel;
  if (s.enum) {
    const values = s.enum.map((v) => JSON.stringify(v));
    return values.length > MAX_ENUM ? `${values.slice(0, MAX_ENUM).join(' | ')} | …` : values.join(' | ');
  }
  if (s.const !== undefined) return JSON.stringify(s.const);
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) return [...new Set(alternatives.map(typeLabel))].join(' | ');
  if (s.type === 'array') return `${wrap(typeLabel(s.items))}[]`;
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
        lines.push(`      ${row.name}${row.required ? '' : '?'}: ${row.type}${dflt}${row.description ? `  — ${row.description}` : ''}`);
      }
    }
    lines.push('');
  }
  return lines.join('\n');
}

/** Markdown reference (the README's pipeline-file section embeds this). */
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
      out.push(`| \`${r.name}\` | \`${r.type.replace(/\|/g, '\\|')}\` | ${dflt} | ${(r.description ?? '').replace(/\|/g, '\\|')} |`);
    }
    out.push('');
  }
  return out.join('\n');
}
