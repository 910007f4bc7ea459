#!/usr/bin/env node
// Regenerates src/generated/stage-option-docs.ts (the option descriptions as JSDoc for
// the code API's types) from the stages' zod schemas; test/docs/option-docs.test.ts
// checks it is current. Run after changing a stage's options, then rebuild.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { builtinStages } = await import(join(root, 'dist/src/pipeline/builtins.js'));
const { formatOptionDocsModule } = await import(join(root, 'dist/src/pipeline/describe-options.js'));
writeFileSync(join(root, 'src/generated/stage-option-docs.ts'), formatOptionDocsModule(builtinStages));
console.log('src/generated/stage-option-docs.ts updated');
