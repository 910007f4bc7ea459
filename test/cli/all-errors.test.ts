// A pipeline file with several mistakes reports all of them at once (up to
// MAX_REPORTED), each with file:line:column and its path: as lines of one
// message in pretty, as one JSON line each in json. One mistake stays one line.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { MAX_REPORTED, PipelineFileErrors, parsePipelines } from '../../src/pipeline/loader.js';
import { cleanEnv, jsonLines, runCli, workspace } from './cli-process.js';

const MANY = `name: many
source: { type: products.query, pageSize: 33, filter: { status: no_selection } }
transforms:
  - { type: flaten-locales }
  - { type: pick }
sinks:
  - { type: parquet, compresion: snappy }
---
name: second
source: { type: brands.query, pageSize: 7 }
sinks: [{ type: jsonl }]
`;

describe('every pipeline-file error at once', () => {
  let ws: Awaited<ReturnType<typeof workspace>>;
  beforeAll(async () => {
    ws = await workspace();
  });
  afterAll(() => ws?.remove());

  it('lists each problem of each pipeline of the file, in order, with line, column and path', () => {
    let error: unknown;
    try {
      parsePipelines(MANY, createRegistry(), { env: {}, displayName: 'many.yml' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(PipelineFileErrors);
    const issues = (error as PipelineFileErrors).issues;
    expect(issues.map((i) => `${i.location.line}:${i.location.column} ${i.location.path}`)).toEqual([
      '2:65 source.filter.status',
      '2:43 source.pageSize',
      '4:13 transforms[0].type',
      '5:5 transforms[1].fields',
      '7:22 sinks[0].compresion',
      '7:5 sinks[0].path',
      '10:41 source.pageSize',
      '11:9 sinks[0].path',
    ]);
    expect((error as Error).message.split('\n')[0]).toBe('8 problems:');
    expect((error as PipelineFileErrors).exitCode).toBe(2);
  });

  it(`the CLI: one JSON line per problem; pretty: one message listing them; past ${MAX_REPORTED}, a count`, async () => {
    await writeFile(join(ws.dir, 'many.yml'), MANY);
    const json = await runCli(['validate', 'many.yml'], { cwd: ws.dir, env: cleanEnv() });
    expect(json.code).toBe(2);
    const lines = jsonLines(json.stderr);
    expect(lines).toHaveLength(8);
    expect(
      lines.every(
        (l) =>
          l.level === 'error' &&
          l.command === 'validate' &&
          l.file === join(ws.dir, 'many.yml') &&
          typeof l.line === 'number' &&
          typeof l.path === 'string',
      ),
    ).toBe(true);

    const transforms = Array.from({ length: MAX_REPORTED + 5 }, (_, i) => `  - { type: pick, felds${i}: [] }`).join(
      '\n',
    );
    await writeFile(
      join(ws.dir, 'lots.yml'),
      `name: lots\nsource: { type: brands.query }\ntransforms:\n${transforms}\nsinks: [{ type: jsonl, path: out/x.jsonl }]\n`,
    );
    const pretty = await runCli(['run', 'lots.yml', '--log-format', 'pretty'], { cwd: ws.dir, env: cleanEnv() });
    expect(pretty.code).toBe(2);
    const text = pretty.stderr.trimEnd().split('\n');
    expect(text[0]).toBe(`catalog-streams run: ${(MAX_REPORTED + 5) * 2} problems:`);
    expect(text).toHaveLength(1 + MAX_REPORTED + 1);
    expect(text.at(-1)).toBe(`  … and ${(MAX_REPORTED + 5) * 2 - MAX_REPORTED} more`);
  });
});
