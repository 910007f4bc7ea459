// The broken pipeline files of fixtures/pipelines/: each gives exactly one line
// on stderr naming file:line:column, the path and what was expected (with the
// closest valid name for a typo), and exit code 2, from `validate` and from
// `run` alike (nothing is sent: the checks need no network, and no connection
// is configured). `validate` runs as a real process for every file; `run` runs
// in-process (the same command code, cheaper) and as a process for a few.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { REPO, cleanEnv, runCli, runMain } from './cli-process.js';

const F = 'fixtures/pipelines';
/** The transform types as the registry lists them in messages (a new transform changes no expectation here). */
const TRANSFORMS = createRegistry().types('transform').join(', ');

const cases: Array<[file: string, message: string]> = [
  [
    'unknown-transform-type.yml',
    `${F}/unknown-transform-type.yml:8:13: transforms[1].type: unknown transform type "flaten-locales"; did you mean "flatten-locales"? (known: ${TRANSFORMS})`,
  ],
  [
    'unknown-top-level-key.yml',
    `${F}/unknown-top-level-key.yml:6:1: sink: unknown key "sink"; did you mean "sinks"? (allowed: name, description, connection, source, transforms, sinks, state, stallTimeout)`,
  ],
  [
    'status-no-selection.yml',
    `${F}/status-no-selection.yml:7:28: source.filter.and[0].status[1]: "no_selection" is not allowed; allowed: active, replaced, inactive`,
  ],
  ['page-size-33.yml', `${F}/page-size-33.yml:6:13: source.pageSize: expected one of 10, 50, 100, 250, got 33`],
  [
    'missing-env-var.yml',
    `${F}/missing-env-var.yml:4:12: connection.baseUrl: environment variable CATALOG_FIXTURE_BASE_URL is not set and has no default (write \${CATALOG_FIXTURE_BASE_URL:-default} to give one)`,
  ],
  [
    'invalid-yaml.yml',
    `${F}/invalid-yaml.yml:6:1: not valid YAML/JSON: Flow map in block collection must be sufficiently indented and end with a }`,
  ],
  [
    'state-on-organizations.yml',
    `${F}/state-on-organizations.yml:7:1: state: incremental state needs a source with an updatedSince filter (products.query, updates.query, media.query, products.stream, media.stream); "organizations.query" has none: reference data is small, extract it whole and remove \`state:\``,
  ],
  ['missing-sinks.yml', `${F}/missing-sinks.yml:2:1: sinks: required, but missing (expected a list)`],
  [
    'locales-not-a-list.yml',
    `${F}/locales-not-a-list.yml:8:14: transforms[0].locales: expected a list, got "en"; write [en] for a list of one`,
  ],
  [
    'or-with-1001-ids.yml',
    `${F}/or-with-1001-ids.yml:8:13: source.filter.or[1].id: lists 1001 codes inside \`or\`/\`not\`, more than the 1000 a query accepts; lists that long can only be split when they are at the top level of the filter or inside a top-level \`and\`: restructure the filter, or run one pipeline per part`,
  ],
  [
    'duplicate-pipeline-names.yml',
    `${F}/duplicate-pipeline-names.yml:6:7: name: pipelines 1 and 2 of the file are both named "reference"; names must be unique (they name state and outputs)`,
  ],
  [
    'custom-module-missing.yml',
    `${F}/custom-module-missing.yml:7:29: transforms[0].module: module "./no-such-transform.mjs" does not exist (looked for ${join(REPO, F, 'no-such-transform.mjs')}; relative paths start at the pipeline file's folder)`,
  ],
  [
    'timeout-without-unit.yml',
    `${F}/timeout-without-unit.yml:4:24: connection.timeouts.headers: expected a duration with a unit such as "500ms", "30s", "2m" or "1h", got 30 (a unit is required: "30s" or "30ms"?)`,
  ],
  [
    'negative-rate-limit.yml',
    `${F}/negative-rate-limit.yml:4:14: connection.rateLimit: must be above 0 (requests per minute of the credential; CATALOG_RATE_LIMIT=0 lifts the limit for a sandbox)`,
  ],
  [
    'sink-option-typo.json',
    `${F}/sink-option-typo.json:5:56: sinks[0].compresion: unknown key "compresion"; did you mean "compression"? (allowed: path, columns, columnNames, lineage, nested, lists, timestampFields, timestamps, timestampInput, prices, compression, rowGroupRows, rowGroupBytes, maxRows, maxBytes, maxOpenPartitions)`,
  ],
];

describe('broken pipeline files', () => {
  it.each(cases)('%s: one line with file:line:column, exit 2 from validate and run', async (file, message) => {
    const env = cleanEnv();
    const [validate, run] = await Promise.all([
      runCli(['validate', `${F}/${file}`, '--log-format', 'pretty'], { env }),
      runMain(['run', `${F}/${file}`, '--log-format', 'pretty'], env),
    ]);
    expect({ code: validate.code, stderr: validate.stderr, stdout: validate.stdout }).toEqual({
      code: 2,
      stderr: `catalog-streams validate: ${message}\n`,
      stdout: '',
    });
    expect({ code: run.code, stderr: run.stderr, stdout: run.stdout }).toEqual({
      code: 2,
      stderr: `catalog-streams run: ${message}\n`,
      stdout: '',
    });
  });

  it.each(['unknown-transform-type.yml', 'missing-env-var.yml', 'duplicate-pipeline-names.yml'])(
    '%s: the run process exits 2 with the same line',
    async (file) => {
      const [, message] = cases.find(([f]) => f === file)!;
      const run = await runCli(
        ['run', `${F}/${file}`, '--summary-file', 'never-written.json', '--log-format', 'pretty'],
        { env: cleanEnv() },
      );
      expect({ code: run.code, stderr: run.stderr, stdout: run.stdout }).toEqual({
        code: 2,
        stderr: `catalog-streams run: ${message}\n`,
        stdout: '',
      });
    },
  );

  it('covers every file of fixtures/pipelines', async () => {
    expect((await readdir(join(REPO, F))).sort()).toEqual(cases.map(([f]) => f).sort());
  });
});
