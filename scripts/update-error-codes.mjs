#!/usr/bin/env node
// Regenerates docs/errors.md from the error-code catalogue (src/error-codes.ts), so the docs say
// what the code raises (test/docs/error-codes.test.ts checks the file is current).
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { formatErrorCodesMarkdown } = await import(join(root, 'dist/src/error-codes.js'));
writeFileSync(join(root, 'docs/errors.md'), formatErrorCodesMarkdown());
console.log('docs/errors.md updated');
