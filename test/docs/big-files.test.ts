// No file in src/ over 500 lines without a written reason (issue 38): ARCHITECTURE.md's "Files over
// 500 lines" section names each one, so a new big file needs a reason or a split, and the list
// cannot keep names that are gone or back under the limit.
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const MAX_LINES = 500;
const SECTION = '### Files over 500 lines';

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const file = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sourceFiles(file)));
    else if (entry.name.endsWith('.ts')) out.push(file);
  }
  return out;
}

/** Lines as `wc -l` counts them (newlines), the count the figures use. */
function lineCount(text: string): number {
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** src/ files over the limit, as paths from the project root. */
async function bigFiles(): Promise<string[]> {
  const big: string[] = [];
  for (const file of await sourceFiles(join(root, 'src'))) {
    if (lineCount(await readFile(file, 'utf8')) > MAX_LINES) big.push(relative(root, file).split('\\').join('/'));
  }
  return big.sort();
}

/** The files the section names: each entry is a list item starting with the file's path. */
function listedFiles(architecture: string): string[] {
  const start = architecture.indexOf(SECTION);
  if (start < 0) return [];
  const rest = architecture.slice(start + SECTION.length);
  const end = rest.search(/^#{1,3} /m);
  const section = end < 0 ? rest : rest.slice(0, end);
  return [...section.matchAll(/^- `(src\/[^`]+\.ts)`:/gm)].map((m) => m[1]!).sort();
}

describe('files over 500 lines', () => {
  it('parses the list items of the section and nothing after it', () => {
    const text = `${SECTION}\n\nintro \`src/a.ts\`\n\n- \`src/b.ts\`: why\n- \`src/c/d.ts\`: why\n\n## Next\n\n- \`src/e.ts\`: no\n`;
    expect(listedFiles(text)).toEqual(['src/b.ts', 'src/c/d.ts']);
  });

  it('ARCHITECTURE.md names exactly the src/ files over 500 lines', async () => {
    const listed = listedFiles(await readFile(join(root, 'ARCHITECTURE.md'), 'utf8'));
    const big = await bigFiles();
    expect(listed.length, `no "${SECTION}" list in ARCHITECTURE.md`).toBeGreaterThan(0);
    const unlisted = big.filter((f) => !listed.includes(f));
    const stale = listed.filter((f) => !big.includes(f));
    expect(
      unlisted,
      `over ${MAX_LINES} lines with no reason: split the file, or add one line under "${SECTION}" in ARCHITECTURE.md saying why it is one file`,
    ).toEqual([]);
    expect(stale, `listed under "${SECTION}" but gone or no longer over ${MAX_LINES} lines: remove the line`).toEqual(
      [],
    );
  });
});
