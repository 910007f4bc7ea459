// `catalog-streams stages`: every registered stage type with its options, types
// and defaults, derived from the zod schemas (never a hand-kept copy).
import { builtinStages } from '../pipeline/builtins.js';
import { describeOptions, formatStageList, formatStageReference } from '../pipeline/describe-options.js';
import { type Command, parseOptions } from './command.js';
import type { CliIO } from './io.js';

const STAGES_USAGE = `Usage: catalog-streams stages [--json | --markdown]

Lists every registered stage type with its options, types and defaults (from the
stages' own schemas).
`;

async function stagesCommand(argv: string[], io: CliIO): Promise<number> {
  const values = parseOptions('stages', argv, { json: { type: 'boolean' }, markdown: { type: 'boolean' } } as const);
  if (values.json) {
    const list = builtinStages.map((d) => ({ kind: d.kind, type: d.type, description: d.description, options: describeOptions(d) }));
    io.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
  } else if (values.markdown) {
    io.stdout.write(formatStageReference(builtinStages));
  } else {
    io.stdout.write(formatStageList(builtinStages));
  }
  return 0;
}

export const stagesCommandDefinition: Command = {
  name: 'stages',
  summary: 'list every stage type with its options',
  usage: STAGES_USAGE,
  run: stagesCommand,
};
