// `catalog-streams validate <pipeline-file>`: checks a file without touching the
// network (shape, stage options, filters against the source endpoint, state).
import { createRegistry } from '../pipeline/builtins.js';
import { loadPipelineFile } from '../pipeline/loader.js';
import { regionSummary } from '../pipeline/region-preset.js';
import { type Command, parseOptions } from './command.js';
import type { CliIO } from './io.js';

const VALIDATE_USAGE = `Usage: catalog-streams validate <pipeline-file>

Checks a pipeline file without touching the network: its shape, every stage's
options, filters against the source endpoint, and incremental state. Exit 0 when
valid, 2 when not, with every problem found in one pass (unset variables, the
file's shape, each stage's options, the {run} and module checks), one line each
naming file:line:column and the path.
`;

async function validateCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals } = parseOptions('validate', argv, {}, { exactly: 1, what: 'one pipeline file' });
  const pipelines = await loadPipelineFile(positionals[0]!, createRegistry(), { env: io.env });
  for (const p of pipelines) {
    const c = p.config;
    const stages = [c.source.type, ...c.transforms.map((t) => t.type)].join(' -> ');
    io.stdout.write(
      `✓ ${positionals[0]}: pipeline "${c.name}" is valid: ${stages} -> ${c.sinks.map((s) => s.type).join(' + ')}${c.state ? ` (incremental, state ${c.state.path})` : ''}\n`,
    );
    const region = regionSummary(p.plan);
    if (region) io.stdout.write(`  ${region}\n`);
  }
  return 0;
}

export const validateCommandDefinition: Command = {
  name: 'validate',
  summary: 'check a pipeline file without touching the network',
  usage: VALIDATE_USAGE,
  run: validateCommand,
};
