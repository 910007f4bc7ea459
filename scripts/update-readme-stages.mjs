#!/usr/bin/env node
// Regenerates the README's stage reference from the stages' zod schemas (run
// after changing a stage's options; test/docs/readme.test.ts checks it).
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { builtinStages } = await import(join(root, 'dist/src/pipeline/builtins.js'));
const { formatStageReference } = await import(join(root, 'dist/src/pipeline/describe-options.js'));
const file = join(root, 'README.md');
const text = readFileSync(file, 'utf8');
const begin = '<!-- stages:begin -->';
const end = '<!-- stages:end -->';
const i = text.indexOf(begin);
const j = text.indexOf(end);
if (i < 0 || j < i) throw new Error('README.md has no stages:begin/end markers');
writeFileSync(file, `${text.slice(0, i + begin.length)}\n${formatStageReference(builtinStages)}${text.slice(j)}`);
console.log('README.md stage reference updated');
