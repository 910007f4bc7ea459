// `validate` reports every problem of a broken file in one pass (issue 37, item 14). Before, a file
// with unset variables, a bad shape and bad stage options was reported in layers: the first unset
// variable, then (once fixed) the shape, then the stages, so a user fixed it in three or more runs.
// Now: each unset variable, each shape problem, and the options and cross checks ({run} with a
// state, a custom module that does not exist) of every stage, layer by layer; a
// problem under a path already reported (an unset variable's value, a shape problem) is not said twice.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, jsonLines, runCli, workspace } from './cli-process.js';

const BROKEN = `name: broken
connection: { rateLimit: -1, baseUrl: "\${NO_SUCH_URL}" }
colour: blue
state: { path: .state/broken.json, overlapSeconds: -5 }
source: { type: products.query, filter: { status: activ }, pagesize: 100 }
transforms:
  - { type: flaten-locales }
  - { type: pick }
  - { type: custom, module: ./missing.mjs }
sinks:
  - { type: parquet, path: "out/\${NO_SUCH_DIR}/broken.parquet" }
  - { type: jsonl, path: out/broken.jsonl }
  - { type: csv }
`;

describe('validate: every problem of a file in one pass', () => {
  let ws: Awaited<ReturnType<typeof workspace>>;
  beforeAll(async () => {
    ws = await workspace();
    await writeFile(join(ws.dir, 'broken.yml'), BROKEN);
  });
  afterAll(() => ws?.remove());

  it('unset variables, shape, stage options and cross checks together, each once', async () => {
    const { code, stdout, stderr } = await runCli(['validate', 'broken.yml'], { cwd: ws.dir, env: cleanEnv() });
    expect(code).toBe(2);
    expect(stdout).toBe('');
    const problems = jsonLines(stderr).map((l) => [l.code, l.path, l.line] as const);
    expect(problems).toEqual([
      ['config.missing_env', 'connection.baseUrl', 2],
      ['config.missing_env', 'sinks[0].path', 11],
      ['config.unknown_key', 'colour', 3],
      ['config.invalid', 'connection.rateLimit', 2],
      ['config.invalid', 'state.overlapSeconds', 4],
      ['config.unknown_key', 'source.pagesize', 5],
      ['config.invalid', 'source.filter.status', 5],
      ['config.unknown_type', 'transforms[0].type', 7],
      ['config.invalid', 'transforms[1].fields', 8],
      ['config.invalid', 'transforms[2].module', 9],
      ['config.invalid', 'sinks[2].path', 13],
      ['config.state_fixed_output', 'sinks[1].path', 12],
    ]);
    const messages = jsonLines(stderr).map((l) => l.message as string);
    expect(messages[0]).toContain('environment variable NO_SUCH_URL is not set');
    expect(messages[7]).toContain('did you mean "flatten-locales"?');
    expect(messages[9]).toContain('module "./missing.mjs" does not exist');
    expect(messages[11]).toContain('has no {run}');
  });

  it('the same file with its problems fixed validates', async () => {
    const fixed = BROKEN.replace('rateLimit: -1, baseUrl: "${NO_SUCH_URL}"', 'rateLimit: 100')
      .replace('colour: blue\n', '')
      .replace('overlapSeconds: -5', 'overlapSeconds: 5')
      .replace('status: activ }, pagesize', 'status: active }, pageSize')
      .replace('flaten-locales }', 'flatten-locales, locales: [en] }')
      .replace('{ type: pick }', '{ type: pick, fields: [id] }')
      .replace('  - { type: custom, module: ./missing.mjs }\n', '')
      .replace('out/${NO_SUCH_DIR}/broken.parquet', 'out/broken-{run}.parquet')
      .replace('out/broken.jsonl', '"out/broken-{run}.jsonl"')
      .replace('{ type: csv }', '{ type: csv, path: "out/broken-{run}.csv" }');
    await writeFile(join(ws.dir, 'fixed.yml'), fixed);
    const { code, stdout, stderr } = await runCli(['validate', 'fixed.yml'], { cwd: ws.dir, env: cleanEnv() });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('pipeline "broken" is valid');
  });
});
