// Finds the codes the toolkit's source can raise, by reading the source as text (what a reviewer
// greps for), so the error-code catalogue (src/error-codes.ts) is checked against the code and not
// against itself. What counts as a code:
// - `code: '<x>'`, `code: cond ? '<x>' : '<y>'` and `code ?? '<x>'` (error options, events, log lines);
// - `super('<x>'` in an errors.ts (a class's fixed code: `usage`, `aborted`);
// - any dotted lower-case literal (`'config.too_deep'`), which is how codes travel as plain
//   arguments (`fail(..., 'config.syntax')`, `progress.log('warn', 'node.warning')`), except the
//   dotted literals that are not codes (file names, stage types, metadata keys, option paths);
// - a template in a code position (`` `network.${failure}` ``): its prefix, which the caller
//   must enumerate.
// Comments are left out: a comment naming a code does not raise it.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** zod's own issue codes (`ctx.addIssue({code: 'custom'})`): the schema library's, not ours. */
const ZOD_ISSUE_CODES = new Set(['custom', 'invalid_type']);

/** Dotted literals that are option paths, not codes. */
const OPTION_PATHS = new Set([
  'state.path',
  'source.type',
  'connection.credentials',
  'connection.environment',
  'table.path',
]);

function isNotACode(literal: string): boolean {
  return (
    // File names and extensions (`_table.json`, `previous-state.v8.gz`).
    /\.(json|jsonl|ya?ml|parquet|gz|csv|ts|js|mjs|lock|v8|md)$/.test(literal) ||
    // Stage types (`products.query`, `media.find`).
    /\.(query|stream|find)$/.test(literal) ||
    // Parquet and file metadata keys, not codes.
    literal.startsWith('catalog-streams.') ||
    /^[\d.]+$/.test(literal) ||
    OPTION_PATHS.has(literal)
  );
}

export interface CodeUse {
  code: string;
  file: string;
  line: number;
}

export interface ScanResult {
  codes: CodeUse[];
  /** Prefixes of codes built from templates (`network.`), each to be enumerated by the caller. */
  templates: CodeUse[];
}

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) {
      // The sandbox is the simulated service: its codes are the API's (`authentication.not_authenticated`),
      // answered in HTTP bodies, not raised by the toolkit; generated files hold documentation.
      if (entry.name === 'sandbox' || entry.name === 'generated') continue;
      yield* sourceFiles(full);
      // The catalogue itself is what is checked, not a place that raises codes.
    } else if (entry.name.endsWith('.ts') && entry.name !== 'error-codes.ts') yield full;
  }
}

/** The source line without its comment (whole-line comments, JSDoc lines, and ` // ...` tails). */
function codeOf(line: string): string {
  const t = line.trim();
  if (t.startsWith('//') || t.startsWith('*') || t.startsWith('/*')) return '';
  return line.replace(/\s\/\/\s.*$/, '');
}

export function scanCodes(repo: string): ScanResult {
  const codes: CodeUse[] = [];
  const templates: CodeUse[] = [];
  for (const full of sourceFiles(join(repo, 'src'))) {
    const file = relative(repo, full);
    const isErrorsFile = file.endsWith('errors.ts');
    readFileSync(full, 'utf8')
      .split('\n')
      .forEach((raw, i) => {
        const text = codeOf(raw);
        // A code is lower-case words joined by `.`, `_` or `-`: not a message (`code: 'see ...'`), not
        // a system error code compared against (`code: 'EEXIST'`).
        const add = (code: string) => {
          if (/^[a-z][a-z0-9_.-]*$/.test(code)) codes.push({ code, file, line: i + 1 });
        };
        for (const m of text.matchAll(/\bcode:\s*'([^']+)'/g)) if (!ZOD_ISSUE_CODES.has(m[1]!)) add(m[1]!);
        for (const m of text.matchAll(/\bcode:\s*[^'\n,{}]*?\?\s*'([^']+)'\s*:\s*'([^']+)'/g)) {
          add(m[1]!);
          add(m[2]!);
        }
        for (const m of text.matchAll(/\bcode \?\? '([^']+)'/g)) add(m[1]!);
        if (isErrorsFile) for (const m of text.matchAll(/\bsuper\(\s*'([a-z][a-z0-9_.-]*)'/g)) add(m[1]!);
        for (const m of text.matchAll(/'([a-z][a-z0-9-]*(?:\.[a-z0-9_-]+)+)'/g)) if (!isNotACode(m[1]!)) add(m[1]!);
        for (const m of text.matchAll(
          /(?:\bsuper\(|CatalogStreamsError\(|\bcode:\s*|\bcode \?\? )\s*`([a-z][a-z0-9_.-]*\.)\$\{/g,
        ))
          templates.push({ code: m[1]!, file, line: i + 1 });
      });
  }
  return { codes, templates };
}
