#!/usr/bin/env node
// Regenerates the stage reference in docs/stages.md from the stages' zod schemas (run
// after changing a stage's options; test/docs/readme.test.ts checks it).
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { builtinStages } = await import(join(root, 'dist/src/pipeline/builtins.js'));
const { formatStageReference } = await import(join(root, 'dist/src/pipeline/describe-options.js'));
const file = join(root, 'docs/stages.md');
const text = readFileSync(file, 'utf8');
const begin = '<!-- stages:begin -->';
const end = '<!-- stages:end -->';
const i = text.indexOf(begin);
const j = text.indexOf(end);
if (i < 0 || j < i)
  throw new Error(`${file} has no ${begin} ... ${end} markers: put them back around the stage reference`);
writeFileSync(file, `${text.slice(0, i + begin.length)}\n${formatStageReference(builtinStages)}${text.slice(j)}`);
console.log('docs/stages.md stage reference updated');
