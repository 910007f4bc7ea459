// What a new user types to read about one thing: `stages parquet` (that stage's description and
// options, the data of the generated stage reference, docs/stages.md) and `help run` (that command's
// help, as `run --help`). A name that is not there is exit 2 with a did-you-mean.
import { describe, expect, it } from 'vitest';
import { builtinStages } from '../../src/pipeline/builtins.js';
import { describeOptions, formatStageReference } from '../../src/pipeline/describe-options.js';
import { cleanEnv, runCli } from './cli-process.js';

const parquet = builtinStages.find((d) => d.type === 'parquet')!;

describe('stages <type>', () => {
  it('prints that stage alone: its description and every option', async () => {
    const r = await runCli(['stages', 'parquet'], { env: cleanEnv() });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`  parquet  ${parquet.description}`);
    for (const o of describeOptions(parquet)) expect(r.stdout).toContain(`      ${o.name}${o.required ? '' : '?'}: `);
    expect(r.stdout).not.toMatch(/\n {2}jsonl /);
  });

  it('--json and --markdown give the same data as the stage reference', async () => {
    const json = await runCli(['stages', 'parquet', '--json'], { env: cleanEnv() });
    expect(JSON.parse(json.stdout)).toEqual([
      { kind: 'sink', type: 'parquet', description: parquet.description, options: describeOptions(parquet) },
    ]);
    const markdown = await runCli(['stages', '--markdown', 'parquet'], { env: cleanEnv() });
    expect(markdown.stdout).toBe(formatStageReference([parquet]));
  });

  it('an unknown type is exit 2 with a did-you-mean', async () => {
    const r = await runCli(['stages', 'parqet', '--log-format', 'pretty'], { env: cleanEnv() });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^catalog-streams stages: no stage type "parqet"; did you mean "parquet"\?/);
  });
});

describe('help <command>', () => {
  it("prints the command's help, as <command> --help does", async () => {
    const viaHelp = await runCli(['help', 'run'], { env: cleanEnv() });
    const viaFlag = await runCli(['run', '--help'], { env: cleanEnv() });
    expect(viaHelp.code, viaHelp.stderr).toBe(0);
    expect(viaHelp.stdout).toMatch(/^Usage: catalog-streams run /);
    expect(viaHelp.stdout).toBe(viaFlag.stdout);
    const index = await runCli(['help'], { env: cleanEnv() });
    expect(index.stdout).toMatch(/^Usage: catalog-streams <command>/);
  });

  it('an unknown command is exit 2 with a did-you-mean', async () => {
    const r = await runCli(['help', 'rn', '--log-format', 'pretty'], { env: cleanEnv() });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^catalog-streams help: unknown command "rn"; did you mean "run"\?/);
  });
});
