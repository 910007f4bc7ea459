// Every file a comment or a doc points at exists: a pointer to a moved or deleted file sends the
// next reader nowhere. A path is looked up as written from the project root, then from `src/`,
// `src/sinks/` (ARCHITECTURE.md names sink files from there) and every folder above the citing
// file, the ways the comments and docs write them.
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const SKIP = new Set(['node_modules', 'dist', '.git', 'fixtures']);
/**
 * Paths in other projects the docs cite as sources (a live integration, the Iceberg spec, the
 * team's shared samples beside the project), not files of ours.
 */
const FOREIGN = /^(pages\/api\/medicines\.ts|format\/spec\.md|shared\/samples\/.*)$/;
/** A file name with at least one folder: `storage/bounded-read.ts`, `docs/security.md`. */
const CITED = /(?<![\w./@-])((?:[\w-]+\/)+[\w.-]+\.(?:ts|md|mjs|yml|sh))(?![\w/-])/g;

async function files(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const file = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await files(file)));
    else if (/\.(ts|md|mjs)$/.test(entry.name)) out.push(file);
  }
  return out;
}

/**
 * The text that cites: a doc whole, a source file's comments only (a test's string literal may
 * name a file that must not exist), and an error example's `file:line:col` is not a citation.
 */
function citations(text: string, file: string): string {
  const comments = file.endsWith('.md')
    ? text
    : text
        .split('\n')
        .filter((l) => /^\s*(\/\/|\/?\*)/.test(l))
        .join('\n');
  return comments.replace(/[\w./-]+\.yml:\d+:\d+/g, '');
}

function resolves(cited: string, from: string): boolean {
  const bases = [root, join(root, 'src'), join(root, 'src', 'sinks')];
  for (let dir = dirname(from); dir.startsWith(root); dir = dirname(dir)) bases.push(dir);
  return bases.some((base) => existsSync(join(base, cited)));
}

describe('cited paths', () => {
  it('every src/, test/, docs/ and scripts/ file named in a comment or a doc exists', async () => {
    const citing = [
      ...(await files(join(root, 'src'))),
      ...(await files(join(root, 'docs'))),
      ...(await files(join(root, 'test'))),
      ...(await files(join(root, 'scripts'))),
      join(root, 'README.md'),
      join(root, 'ARCHITECTURE.md'),
    ];
    const missing: string[] = [];
    for (const file of citing) {
      for (const m of citations(await readFile(file, 'utf8'), file).matchAll(CITED)) {
        const cited = m[1]!;
        if (FOREIGN.test(cited) || /[{}*]/.test(cited) || cited.startsWith('node_modules/')) continue;
        if (!resolves(cited, file)) missing.push(`${relative(root, file)}: ${cited}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
