import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtinStages } from '../../src/pipeline/builtins.js';
import { formatStageReference } from '../../src/pipeline/describe-options.js';
import { commands } from '../../src/cli/main.js';
import { formatFiltersReference } from '../../src/cli/stages-command.js';
import { REPO } from '../cli/cli-process.js';
import { docFiles, fencedBlocks, lineOf } from './doc-blocks.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const stagesDoc = readFileSync(new URL('../../docs/stages.md', import.meta.url), 'utf8');
const filtersDoc = readFileSync(new URL('../../docs/filters.md', import.meta.url), 'utf8');

/** What a generated reference holds between its `<!-- name:begin -->` and `<!-- name:end -->` markers. */
function between(doc: string, marker: string): string {
  const begin = `<!-- ${marker}:begin -->`;
  return doc.slice(doc.indexOf(begin) + begin.length, doc.indexOf(`<!-- ${marker}:end -->`));
}

describe('README and the stage reference', () => {
  it('docs/stages.md has the stage reference generated from the schemas (run `npm run docs` after changing options)', () => {
    expect(between(stagesDoc, 'stages')).toBe(`\n${formatStageReference(builtinStages)}`);
  });

  it("docs/filters.md has every endpoint's filters generated from the schemas, every enum value spelled out", () => {
    const block = between(filtersDoc, 'filters');
    expect(block).toBe(`\n${formatFiltersReference()}`);
    expect(block).not.toContain('…');
    expect(block).toMatch(/## `products\.query`[\s\S]*\| `updatedSince` \|/);
  });

  it('the README names the two set-up commands and links the stage reference; docs/stages.md every stage type', () => {
    expect(readme).toContain('npm ci && npm run demo');
    expect(readme).toContain('npm ci && npm test');
    expect(readme).toContain('(docs/stages.md)');
    for (const def of builtinStages) expect(stagesDoc).toContain(`\`${def.type}\``);
  });

  it('the README stays a front page: at most ~250 lines, the three jobs, links into docs/', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
    for (const page of ['docs/lake-loading.md', 'docs/nightly-runs.md', 'docs/transforms-in-code.md'])
      expect(readme).toContain(`(${page})`);
  });
});

/** GitHub's heading anchors: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

// Linked by these pages, brought by other branches of issue 25 (the error-code catalogue, the
// orchestrator examples): a link to them is not broken, only early.
const PENDING = new Set(['docs/errors.md', 'examples/airflow', 'examples/dagster']);

it('docs/cli.md has a row for every command of the CLI', () => {
  const cli = readFileSync(new URL('../../docs/cli.md', import.meta.url), 'utf8');
  const rows = [...cli.matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1]);
  expect(rows, 'docs/cli.md, "Commands": one row per command, in the order of `catalog-streams --help`').toEqual(
    commands.map((c) => c.name),
  );
});

describe('links and diagrams of the README and docs/', () => {
  const docs = docFiles();
  const anchors = new Map(
    docs.map((d) => [
      d.file,
      new Set([...d.text.replace(/^( *)```[\s\S]*?^\1```/gm, '').matchAll(/^#+ (.*)$/gm)].map((m) => anchorOf(m[1]!))),
    ]),
  );

  it('every code block is of a language some test runs or checks', () => {
    // sh, cron and unlabeled: readme-commands (and scheduling); yaml: validated there, a CronJob run by
    // scheduling; sql, sparksql: sql-blocks; js: code-blocks; json: changing-catalog; mermaid: below;
    // icebergsql (Spark, Trino, Athena over the Iceberg tables): checked in sql-blocks; text: sample
    // output, shown as printed.
    const known = new Set([
      'sh',
      'cron',
      '',
      'yaml',
      'sql',
      'sparksql',
      'icebergsql',
      'js',
      'mjs',
      'json',
      'mermaid',
      'text',
    ]);
    const blocks = docs.flatMap(fencedBlocks);
    expect(blocks.filter((b) => !known.has(b.lang)).map((b) => `${b.file}:${b.line}: ${b.lang}`)).toEqual([]);
  });

  it('every relative link names a file of the repository, and every #anchor a heading of its page', () => {
    const broken: string[] = [];
    for (const d of docs) {
      for (const m of d.text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const link = m[1]!;
        if (/^https?:/.test(link)) continue;
        const [path, anchor] = link.split('#') as [string, string | undefined];
        const target = path ? normalize(join(dirname(d.file), path)).replace(/\/$/, '') : d.file;
        const where = `${d.file}:${lineOf(d.text, m.index)}: ${link}`;
        if (!existsSync(join(REPO, target))) {
          if (!PENDING.has(target)) broken.push(`${where} (no ${target})`);
        } else if (anchor && !anchors.get(target)?.has(anchor)) broken.push(`${where} (no heading #${anchor})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('every docs/ page is linked from the README or from another page', () => {
    const linked = new Set(
      docs.flatMap((d) =>
        [...d.text.matchAll(/\]\(([^)#\s]+\.md)(#[^)]*)?\)/g)].map((m) => normalize(join(dirname(d.file), m[1]!))),
      ),
    );
    expect(docs.map((d) => d.file).filter((f) => f !== 'README.md' && !linked.has(f))).toEqual([]);
  });

  it('has the diagrams of the run phases, the publication protocol, the incremental window and the table layout', () => {
    const mermaid = (file: string) =>
      fencedBlocks(docs.find((d) => d.file === file)!).filter((b) => b.lang === 'mermaid');
    const [phases, publication] = mermaid('docs/publication.md');
    expect(phases?.body).toMatch(/preflight[\s\S]*assembling[\s\S]*streaming[\s\S]*committing/);
    expect(publication?.body).toMatch(/stage[\s\S]*hold[\s\S]*publish[\s\S]*settle[\s\S]*revoke/i);
    expect(mermaid('docs/nightly-runs.md')[0]?.body).toMatch(/updatedSince[\s\S]*until: T - 1 s[\s\S]*overlapSeconds/);
    expect(mermaid('docs/tables.md')[0]?.body).toMatch(
      /_table\.json[\s\S]*snapshot\/dt=[\s\S]*changes\/dt=[\s\S]*_table\/state-/,
    );
  });
});
