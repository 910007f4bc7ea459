// The error-code catalogue (src/error-codes.ts) against the code and the docs: docs/errors.md is
// generated from it and current; every code the source can raise (found by reading the source as
// text, test/helpers/code-literals.ts) has an entry; every entry is raised somewhere (no dead
// entries); the exit codes agree with the CLI's contract (DESIGN.md: 0, 1, 2, plus run's signal
// exits); the error classes and `catalog-streams explain` read the same entries.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { NetworkFailure, StreamProblem } from '../../src/client/errors.js';
import { runCommandDefinition } from '../../src/cli/run-command.js';
import {
  ERROR_CODES,
  ERROR_CODE_FAMILIES,
  EXIT_CODES,
  describeCode,
  formatErrorCodesMarkdown,
} from '../../src/error-codes.js';
import { CatalogStreamsError, ConfigError, DataError, MissingDependencyError, UsageError } from '../../src/errors.js';
import { SIGV4_FEATURE } from '../../src/sinks/table/iceberg/sigv4-signer.js';
import { S3_FEATURES } from '../../src/storage/s3-sdk.js';
import { REPO, runMain } from '../cli/cli-process.js';
import { scanCodes } from '../helpers/code-literals.js';

// The values each code template of the source is built from. A Record over the union makes the
// compiler fail when a value is added to the type and not here.
const NETWORK_FAILURES: Record<NetworkFailure, true> = {
  unreachable: true,
  timeout: true,
  reset: true,
  truncated: true,
  failed: true,
};
const STREAM_PROBLEMS: Record<StreamProblem, true> = {
  malformed_line: true,
  line_too_long: true,
  index_gap: true,
  short: true,
  error_line: true,
  total_changed: true,
  empty: true,
  resume_exhausted: true,
  resume_not_exact: true,
  out_of_order: true,
  repeated_id: true,
};
/** `state.${action}`: the actions its one caller passes, read from the source like the codes. */
const stateActions = [
  ...readFileSync(join(REPO, 'src/pipeline/state.ts'), 'utf8').matchAll(/this\.#failure\('([a-z]+)'/g),
].map((m) => m[1]!);

const TEMPLATE_VALUES: Record<string, readonly string[]> = {
  'network.': Object.keys(NETWORK_FAILURES),
  'stream.': Object.keys(STREAM_PROBLEMS),
  'dependency.missing.': [...Object.keys(S3_FEATURES), SIGV4_FEATURE],
  'state.': stateActions,
};

const scan = scanCodes(REPO);
const catalogued = new Set(ERROR_CODES.map((e) => e.code));

describe('the error-code catalogue', () => {
  it('docs/errors.md is generated from it and current (npm run docs)', () => {
    expect(readFileSync(join(REPO, 'docs/errors.md'), 'utf8')).toBe(formatErrorCodesMarkdown());
  });

  it('has an entry for every code literal of the source', () => {
    // The scan itself must find codes of every shape, or a broken scan would pass everything.
    const found = new Set(scan.codes.map((c) => c.code));
    for (const shape of ['usage', 'config.syntax', 'api.rate_limited', 'auth.forbidden', 'state_saved', 'node.warning'])
      expect(found, shape).toContain(shape);
    const missing = scan.codes.filter((c) => !catalogued.has(c.code)).map((c) => `${c.code} (${c.file}:${c.line})`);
    expect(missing, 'codes the source raises that src/error-codes.ts lacks').toEqual([]);
  });

  it('has an entry for every value of every code template (or a family for values it does not choose)', () => {
    expect(scan.templates.map((t) => t.code).sort()).toEqual([
      'api.',
      'dependency.missing.',
      'network.',
      'state.',
      'stream.',
    ]);
    expect(stateActions).toEqual(['read', 'write']);
    for (const t of scan.templates) {
      const family = ERROR_CODE_FAMILIES.find((f) => f.prefix === t.code);
      if (family) continue;
      const values = TEMPLATE_VALUES[t.code];
      expect(values, `${t.file}:${t.line} builds codes from ${t.code}\${...}: enumerate its values here`).toBeDefined();
      for (const v of values!) expect(catalogued, `${t.code}${v} (${t.file}:${t.line})`).toContain(`${t.code}${v}`);
    }
  });

  it('has no dead entries: each is raised somewhere in the source', () => {
    const raised = new Set([
      ...scan.codes.map((c) => c.code),
      ...scan.templates.flatMap((t) => (TEMPLATE_VALUES[t.code] ?? []).map((v) => `${t.code}${v}`)),
    ]);
    expect(ERROR_CODES.map((e) => e.code).filter((c) => !raised.has(c))).toEqual([]);
    for (const f of ERROR_CODE_FAMILIES) expect(scan.templates.map((t) => t.code)).toContain(f.prefix);
  });

  it('lists each code once, sorted, with what an entry of its kind needs', () => {
    const codes = ERROR_CODES.map((e) => e.code);
    expect(new Set(codes).size).toBe(codes.length);
    expect(codes).toEqual([...codes].sort());
    for (const e of [...ERROR_CODES, ...ERROR_CODE_FAMILIES]) {
      expect(e.meaning.length, e.code).toBeGreaterThan(10);
      expect(e.action.length, e.code).toBeGreaterThan(3);
      if (e.kind === 'error') {
        expect([1, 2], e.code).toContain(e.exitCode);
        expect(['retry', 'fix'], e.code).toContain(e.remedy);
      } else
        expect({ exitCode: e.exitCode, remedy: e.remedy }, e.code).toEqual({ exitCode: undefined, remedy: undefined });
    }
  });

  it('gives exit 2 to bad usage and bad pipeline files only, exit 1 to every failed run (DESIGN.md exit codes)', () => {
    for (const e of ERROR_CODES.filter((x) => x.kind === 'error')) {
      const usage =
        e.code === 'usage' ||
        e.code.startsWith('config.') ||
        e.code === 'request.invalid' ||
        e.code === 'registry.duplicate';
      expect(e.exitCode, e.code).toBe(usage ? 2 : 1);
      // A bad file fails the same way every time: a scheduler must not retry it.
      if (usage) expect(e.remedy, e.code).toBe('fix');
    }
    // The exit codes the run command documents are the catalogue's, no more, no fewer.
    const documented = /Exit codes: ([^\n]+)/.exec(runCommandDefinition.usage)![1]!;
    expect([...documented.matchAll(/\b(\d+) /g)].map((m) => Number(m[1]))).toEqual(EXIT_CODES.map((e) => e.exitCode));
    expect(EXIT_CODES.find((e) => e.exitCode === 2)!.remedy).toBe('fix');
  });

  it('is where the error classes take their exit code from', () => {
    expect(new ConfigError('x', {}, { code: 'config.syntax' }).exitCode).toBe(2);
    expect(new UsageError('x').exitCode).toBe(describeCode('usage')!.exitCode);
    expect(new DataError('x', { code: 'source.total_mismatch' }).exitCode).toBe(1);
    expect(new MissingDependencyError('s3-sink', ['a'], 'x').exitCode).toBe(
      describeCode('dependency.missing.s3-sink')!.exitCode,
    );
    // The catalogue wins over a class's own idea; a code it does not know (a custom stage's) keeps the class's.
    expect(new CatalogStreamsError('state.locked', 'x', { exitCode: 2 }).exitCode).toBe(1);
    expect(new ConfigError('x', {}, { code: 'my.custom_code' }).exitCode).toBe(2);
    expect(new CatalogStreamsError('my.custom_code', 'x').exitCode).toBe(1);
  });
});

describe('catalog-streams explain and help errors', () => {
  it('prints an entry as text and as JSON', async () => {
    const text = await runMain(['explain', 'state.locked']);
    expect(text.code, text.stderr).toBe(0);
    const entry = describeCode('state.locked')!;
    expect(text.stdout).toBe(
      `state.locked: error, exit 1, may pass when run again\n  what: ${entry.meaning}\n  do:   ${entry.action}\n`,
    );
    const json = await runMain(['explain', 'config.syntax', '--json']);
    expect(JSON.parse(json.stdout)).toEqual({ ...describeCode('config.syntax') });
  });

  it("answers a family's code under that code, and an exit code with what a scheduler should do", async () => {
    const api = JSON.parse((await runMain(['explain', 'api.bad_request', '--json'])).stdout);
    expect(api).toMatchObject({ code: 'api.bad_request', family: 'api.<API error code or HTTP status>', exitCode: 1 });
    const exit = JSON.parse((await runMain(['explain', '143', '--json'])).stdout);
    expect(exit).toEqual(EXIT_CODES.find((e) => e.exitCode === 143));
    const notExit = await runMain(['explain', '3', '--log-format', 'pretty']);
    expect(notExit.code).toBe(2);
    expect(notExit.stderr).toMatch(/3 is not an exit code of catalog-streams \(exit codes: 0, 1, 2, 129, 130, 143\)/);
  });

  it('refuses an unknown code with exit 2 and the closest code', async () => {
    const r = await runMain(['explain', 'state.lockd', '--log-format', 'pretty']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^catalog-streams explain: no code "state.lockd"; did you mean "state.locked"\?/);
  });

  it('help errors lists every exit code and every code', async () => {
    const r = await runMain(['help', 'errors']);
    expect(r.code, r.stderr).toBe(0);
    for (const e of EXIT_CODES) expect(r.stdout).toMatch(new RegExp(`^ +${e.exitCode} {2}`, 'm'));
    for (const e of [...ERROR_CODES, ...ERROR_CODE_FAMILIES]) expect(r.stdout).toContain(`  ${e.code} `);
    expect((await runMain(['explain', '--all'])).stdout).toBe(r.stdout);
  });
});
