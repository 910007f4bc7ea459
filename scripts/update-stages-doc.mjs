#!/usr/bin/env node
// Regenerates the generated references of docs/ from the zod schemas: the stage reference of
// docs/stages.md and the filters reference of docs/filters.md (run after changing a stage's
// options or an endpoint's filters; test/docs/readme.test.ts checks both).
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { builtinStages } = await import(join(root, 'dist/src/pipeline/builtins.js'));
const { formatStageReference } = await import(join(root, 'dist/src/pipeline/describe-options.js'));
const { formatFiltersReference } = await import(join(root, 'dist/src/cli/stages-command.js'));

function replaceBetween(relative, marker, body) {
  const file = join(root, relative);
  const text = readFileSync(file, 'utf8');
  const begin = `<!-- ${marker}:begin -->`;
  const end = `<!-- ${marker}:end -->`;
  const i = text.indexOf(begin);
  const j = text.indexOf(end);
  if (i < 0 || j < i)
    throw new Error(`${relative} has no ${begin} ... ${end} markers: put them back around the reference`);
  writeFileSync(file, `${text.slice(0, i + begin.length)}\n${body}${text.slice(j)}`);
  console.log(`${relative}: ${marker} reference updated`);
}

replaceBetween('docs/stages.md', 'stages', formatStageReference(builtinStages));
replaceBetween('docs/filters.md', 'filters', formatFiltersReference());
