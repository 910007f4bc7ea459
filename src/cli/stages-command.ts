// `catalog-streams stages`: every registered stage type with its options, types
// and defaults, derived from the zod schemas (never a hand-kept copy).
import { z } from 'zod';
import { endpoints } from '../catalog/index.js';
import { UsageError } from '../errors.js';
import { closestName } from '../closest-name.js';
import { builtinStages } from '../pipeline/builtins.js';
import type { StageDefinition } from '../core/stage.js';
import {
  type EnumCut,
  describeOptions,
  formatStageList,
  formatStageReference,
  typeLabel,
} from '../pipeline/describe-options.js';
import { type Command, parseOptions } from './command.js';
import type { CliIO } from './io.js';

const STAGES_USAGE = `Usage: catalog-streams stages [<type>] [--json | --markdown]

Lists every registered stage type with its options, types and defaults (from the
stages' own schemas); with a type (such as parquet), that stage alone. --markdown
prints the stage reference of docs/stages.md.
`;

async function stagesCommand(argv: string[], io: CliIO): Promise<number> {
  const positional = argv.filter((a) => !a.startsWith('-'));
  if (positional.length > 1)
    throw new UsageError(
      `stages: takes at most one stage type, got ${positional.length} (see 'catalog-streams stages --help')`,
    );
  const values = parseOptions(
    'stages',
    argv.filter((a) => a.startsWith('-')),
    { json: { type: 'boolean' }, markdown: { type: 'boolean' } } as const,
  );
  let defs: readonly StageDefinition[] = builtinStages;
  const wanted = positional[0];
  if (wanted !== undefined) {
    defs = builtinStages.filter((d) => d.type === wanted);
    if (defs.length === 0) {
      const types = [...new Set(builtinStages.map((d) => d.type))];
      const hint = closestName(wanted, types);
      throw new UsageError(
        `stages: no stage type "${wanted}"${hint ? `; did you mean "${hint}"?` : ''} (types: ${types.join(', ')})`,
      );
    }
  }
  if (values.json) {
    const list = defs.map((d) => ({
      kind: d.kind,
      type: d.type,
      description: d.description,
      options: describeOptions(d),
    }));
    io.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
  } else if (values.markdown) {
    io.stdout.write(formatStageReference(defs));
  } else {
    io.stdout.write(formatStageList(defs));
  }
  return 0;
}

export const stagesCommandDefinition: Command = {
  name: 'stages',
  summary: 'list every stage type with its options',
  usage: STAGES_USAGE,
  run: stagesCommand,
};

const FILTERS_USAGE = `Usage: catalog-streams filters [<endpoint>] [--json]

Lists each endpoint's filters with the shape of their parameters, and its
sortings, from the tables the sources and the request checks use. Filters
combine with and/or/not; a list of codes longer than 1000 at the top level
(or in a top-level \`and\`) is split into several queries by the source.
`;

type Json = Parameters<typeof typeLabel>[0] & {
  properties?: Record<string, Json>;
  required?: string[];
  anyOf?: Json[];
  oneOf?: Json[];
  items?: Json;
};

/** A parameter's shape as text: objects spelled out with their keys (`?` when optional). */
function shape(s: Json | undefined, cut: EnumCut, depth = 0): string {
  if (!s) return 'any';
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) {
    const shapes = [...new Set(alternatives.map((a) => shape(a, cut, depth)))];
    // `X | X[]` (one value or a list of them), the most common filter shape, said once.
    const one = shapes[0]!;
    if (shapes.length === 2 && (shapes[1] === `${one}[]` || shapes[1] === `(${one})[]`))
      return `${one}, or a list of them`;
    return shapes.join(' | ');
  }
  if (s.type === 'object' && s.properties && depth < 2) {
    const required = new Set(s.required ?? []);
    return `{ ${Object.entries(s.properties)
      .map(([k, v]) => `${k}${required.has(k) ? '' : '?'}: ${shape(v, cut, depth + 1)}`)
      .join(', ')} }`;
  }
  if (s.type === 'array' && s.items) {
    const item = shape(s.items, cut, depth);
    return `${item.includes('|') ? `(${item})` : item}[]`;
  }
  return typeLabel(s, cut);
}

const jsonSchema = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Json;

export interface EndpointFilters {
  endpoint: string;
  path: string;
  filterRequired: boolean;
  filters: { name: string; shape: string; codes: boolean }[];
  sortings: { name: string; shape: string }[];
}

/**
 * Every endpoint's filters and sortings. `full`: every value of every enum (for --json, which
 * scripts read); otherwise long enums are cut, the cut saying how many values it left out and
 * how to see them.
 */
export function describeEndpointFilters(opts: { full?: boolean } = {}): EndpointFilters[] {
  return Object.values(endpoints).map((e) => {
    const cut: EnumCut = {
      full: opts.full,
      more: (left) => `… (${left} more: catalog-streams filters ${e.name} --json)`,
    };
    return {
      endpoint: e.name,
      path: e.path,
      filterRequired: e.filterRequired,
      filters: Object.entries(e.filters as Record<string, z.ZodType>).map(([name, schema]) => ({
        name,
        shape: shape(jsonSchema(schema), cut),
        codes: e.codeFilters.includes(name),
      })),
      sortings: Object.entries(e.sortings as Record<string, z.ZodType>).map(([name, schema]) => ({
        name,
        shape: shape(jsonSchema(schema), cut),
      })),
    };
  });
}

/**
 * The filters reference of docs/filters.md (`npm run docs` writes it, a test compares): every
 * endpoint's filters and sortings with every enum value, as markdown tables.
 */
export function formatFiltersReference(list: EndpointFilters[] = describeEndpointFilters({ full: true })): string {
  // A `|` inside a table cell ends the cell, even in a code span.
  const code = (s: string) => `\`${s.replaceAll('|', '\\|')}\``;
  const lines: string[] = [];
  for (const e of list) {
    lines.push(`## \`${e.endpoint}\``, '');
    lines.push(`\`POST ${e.path}\`${e.filterRequired ? '; a filter is required' : ''}.`, '');
    lines.push('| filter | shape |', '|---|---|');
    for (const f of e.filters)
      lines.push(`| \`${f.name}\` | ${code(f.shape)}${f.codes ? ' (codes: up to 1000 per query)' : ''} |`);
    lines.push('', `Sortings: ${e.sortings.map((s) => `\`${s.name}\` \`${s.shape}\``).join(', ')}.`, '');
  }
  return lines.join('\n');
}

function formatEndpointFilters(list: EndpointFilters[]): string {
  const lines: string[] = [];
  for (const e of list) {
    lines.push(`${e.endpoint} (POST ${e.path})${e.filterRequired ? ': a filter is required' : ''}`);
    lines.push('  filters:');
    const width = Math.max(...e.filters.map((f) => f.name.length));
    for (const f of e.filters)
      lines.push(`    ${f.name.padEnd(width)}  ${f.shape}${f.codes ? '  (codes: up to 1000 per query)' : ''}`);
    lines.push(`  sortings: ${e.sortings.map((s) => `${s.name}: ${s.shape}`).join('; ')}`);
    lines.push('');
  }
  return lines.join('\n');
}

async function filtersCommand(argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseFiltersArgs(argv);
  let list = describeEndpointFilters({ full: values.json });
  if (positionals[0] !== undefined) {
    const names = list.map((e) => e.endpoint);
    if (!names.includes(positionals[0])) {
      const hint = closestName(positionals[0], names);
      throw new UsageError(
        `filters: no endpoint "${positionals[0]}"${hint ? `; did you mean "${hint}"?` : ''} (endpoints: ${names.join(', ')})`,
      );
    }
    list = list.filter((e) => e.endpoint === positionals[0]);
  }
  io.stdout.write(values.json ? `${JSON.stringify(list, null, 2)}\n` : formatEndpointFilters(list));
  return 0;
}

function parseFiltersArgs(argv: string[]): { values: { json?: boolean }; positionals: string[] } {
  const positional = argv.filter((a) => !a.startsWith('-'));
  if (positional.length > 1)
    throw new UsageError(
      `filters: takes at most one endpoint, got ${positional.length} (see 'catalog-streams filters --help')`,
    );
  const values = parseOptions(
    'filters',
    argv.filter((a) => a.startsWith('-')),
    { json: { type: 'boolean' } } as const,
  );
  return { values, positionals: positional };
}

export const filtersCommandDefinition: Command = {
  name: 'filters',
  summary: "list each endpoint's filters (parameter shapes) and sortings",
  usage: FILTERS_USAGE,
  run: filtersCommand,
};
