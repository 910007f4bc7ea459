// The documentation the tests hold to its word: README.md and every page of docs/, and the fenced
// blocks in them with the file and line a failure should point at.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../cli/cli-process.js';

export interface DocFile {
  /** Relative to the repository: `README.md`, `docs/cli.md`. */
  file: string;
  text: string;
}

export interface DocBlock {
  file: string;
  /** The line of the block's first body line. */
  line: number;
  lang: string;
  body: string;
}

export function docFiles(): DocFile[] {
  const pages = readdirSync(join(REPO, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...pages].map((file) => ({ file, text: readFileSync(join(REPO, file), 'utf8') }));
}

export function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

/** Fenced blocks (indented ones too, as inside a list item), with their language tag ('' when none). */
export function fencedBlocks(doc: DocFile): DocBlock[] {
  return [...doc.text.matchAll(/^( *)```([\w-]*)\n([\s\S]*?)^\1```/gm)].map((m) => ({
    file: doc.file,
    line: lineOf(doc.text, m.index) + 1,
    lang: m[2]!,
    body: m[3]!,
  }));
}

export function allBlocks(): DocBlock[] {
  return docFiles().flatMap(fencedBlocks);
}

/** `file:line` for messages. */
export const at = (b: { file: string; line: number }) => `${b.file}:${b.line}`;
