// Pipeline files built to exhaust the loader (issue 15 item 15): an alias bomb
// (aliases of aliases expanding to billions of nodes), brackets nested 100,000
// deep, block mappings nested hundreds deep, and a file far larger than any
// pipeline. Each is a bad pipeline file: exit 2 from `validate` and `run`, one
// line naming the file (`file:line:column: ...` where a place is known) and
// saying what to do, found without sending a request. Anchors and aliases used
// the ordinary way still work.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMain } from '../cli/cli-process.js';
import { workspace, type Workspace } from './support.js';

let ws: Workspace;
beforeAll(async () => {
  ws = await workspace();
});
afterAll(() => ws?.remove());

const TAIL = 'source: { type: products.query }\nsinks: [{ type: jsonl, path: out/products.jsonl }]\n';

/** Nine levels of nine aliases each: 9^10 strings once expanded. */
function aliasBomb(): string {
  const lines = ['name: bomb', 'a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
  for (let i = 1; i <= 9; i++)
    lines.push(
      `a${i}: &a${i} [${Array(9)
        .fill(`*a${i - 1}`)
        .join(', ')}]`,
    );
  return `${lines.join('\n')}\ndescription: *a9\n${TAIL}`;
}

const NESTED = 100_000;
const CASES = {
  'alias-bomb.yml': aliasBomb(),
  'nested-brackets.yml': `name: nested\n${TAIL}transforms: ${'['.repeat(NESTED)}${']'.repeat(NESTED)}\n`,
  'nested-blocks.yml': `name: deep\n${TAIL}description:\n${Array.from({ length: 300 }, (_, i) => `${'  '.repeat(i + 1)}k${i}:`).join('\n')} x\n`,
  'huge.yml': `name: huge\n${TAIL}description: "${'x'.repeat(3 * 1024 * 1024)}"\n`,
};

async function check(name: keyof typeof CASES, command: 'validate' | 'run') {
  const file = join(ws.dir, name);
  await writeFile(file, CASES[name]);
  // A connection that goes nowhere: nothing may be sent.
  return runMain([command, file, '--log-format', 'pretty'], {
    CATALOG_BASE_URL: 'http://127.0.0.1:9',
    CATALOG_API_KEY: 'k-0000000000',
    CATALOG_API_SECRET: 's-0000000000',
  });
}

describe('hostile pipeline files', () => {
  it.each(['validate', 'run'] as const)(
    'an alias bomb: %s exits 2 naming the file and the alias limit',
    async (command) => {
      const r = await check('alias-bomb.yml', command);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(
        new RegExp(`^catalog-streams ${command}: ${join(ws.dir, 'alias-bomb.yml')}:\\d+:\\d+: `),
      );
      expect(r.stderr).toContain('aliases');
      expect(r.stderr).toContain('at most 100');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    },
  );

  it.each(['validate', 'run'] as const)(
    '200 KB of nested [ ]: %s exits 2 at once, naming the file and the depth limit',
    { timeout: 20_000 },
    async (command) => {
      const r = await check('nested-brackets.yml', command);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(
        new RegExp(`^catalog-streams ${command}: ${join(ws.dir, 'nested-brackets.yml')}(:\\d+:\\d+)?: `),
      );
      expect(r.stderr).toContain('nested deeper than 64 levels');
      expect(r.stderr).not.toContain('call stack');
    },
  );

  it('block mappings nested 300 deep: exit 2 at the first level past the limit', async () => {
    const r = await check('nested-blocks.yml', 'validate');
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(
      new RegExp(
        `^catalog-streams validate: ${join(ws.dir, 'nested-blocks.yml')}:\\d+:\\d+: .*nested deeper than 64 levels`,
      ),
    );
  });

  it('a 3 MiB file: exit 2 before parsing, naming the size limit', async () => {
    const r = await check('huge.yml', 'validate');
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe(
      `catalog-streams validate: ${join(ws.dir, 'huge.yml')}: the file is 3.0 MiB; a pipeline file may be at most 1 MiB (long lists of codes belong in several pipelines or in code)\n`,
    );
  });

  it('anchors and aliases used the ordinary way still load', async () => {
    const file = join(ws.dir, 'anchors.yml');
    await writeFile(
      file,
      `name: anchors\nsource: { type: products.query, filter: { status: active } }\nsinks:\n  - { type: jsonl, path: out/a.jsonl }\n  - &rejected { type: jsonl, path: out/rejected.jsonl }\ntransforms:\n  - { type: validate, onInvalid: dead-letter, deadLetter: *rejected }\n`,
    );
    const r = await runMain(['validate', file, '--log-format', 'pretty']);
    expect(r.code, r.stderr).toBe(0);
  });
});
