#!/usr/bin/env node
// The checks `npm test` runs before vitest: the type check and build of src and test into dist/
// (which the suite's CLI tests run), the layers of src/ (lint:deps), ESLint and Prettier. Each is
// one single-threaded process, and none reads what another writes (only the suite reads dist/),
// so they run side by side: one after another they took their whole CPU time in wall time
// (tsc 26 s, prettier 19 s, eslint 17 s, depcruise 5 s on CI's two cores; issue 38 item 8).
// Each check's output is printed whole when it ends, so two never interleave; the exit code is 1
// when any check failed, after all have ended.
import { spawn } from 'node:child_process';

const CHECKS = [
  ['tsc', 'tsc -p tsconfig.json'],
  ['format:check', 'npm run -s format:check'],
  ['lint', 'npm run -s lint'],
  ['lint:deps', 'npm run -s lint:deps'],
];

/** Runs `command` in a shell (npm and the local bins resolve as in `npm run`); resolves with its exit code and output. */
function run(command) {
  return new Promise((resolve) => {
    const child = spawn(command, { shell: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const output = [];
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    child.on('error', (err) => resolve({ code: 1, output: String(err) }));
    child.on('close', (code) => resolve({ code: code ?? 1, output: Buffer.concat(output).toString() }));
  });
}

const results = await Promise.all(
  CHECKS.map(async ([name, command]) => {
    const { code, output } = await run(command);
    process.stdout.write(`== ${name} (${command}): ${code === 0 ? 'ok' : `failed, exit ${code}`}\n${output}`);
    return code;
  }),
);
process.exitCode = results.some((code) => code !== 0) ? 1 : 0;
