// --log-level, --log-format and --version. With json every stderr line is a
// JSON object: config errors and the --dry-run plan included; `pipeline` names
// one pipeline (a string), `pipelines` (an array) marks lines about the whole
// run. pretty writes sentences. The AWS SDK's Node 20 support notice is a debug
// line; any other process warning stays a warning.
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { CliIO } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';
import { REPO, cleanEnv, jsonLines, runCli, runMain, sandboxEnv, useSandboxWorkspace } from './cli-process.js';

/** The pipeline names of a shipped file, in order (the file decides how many there are). */
const namesOf = (text: string) => [...text.matchAll(/^name: (\S+)$/gm)].map((m) => m[1]!);
const REFERENCE = namesOf(readFileSync(join(REPO, 'pipelines/reference-data.yml'), 'utf8'));

describe('--version and --help', () => {
  it('--version prints the package version; --help lists the logging options', async () => {
    const pkg = JSON.parse(await readFile(`${REPO}/package.json`, 'utf8')) as { version: string };
    const version = await runCli(['--version'], { env: cleanEnv() });
    expect(version).toMatchObject({ code: 0, stdout: `${pkg.version}\n`, stderr: '' });
    const help = await runMain(['--help'], cleanEnv());
    expect(help.stdout).toContain('--log-level LEVEL');
    expect(help.stdout).toContain('--log-format FORMAT');
    expect(help.stdout).toContain('catalog-streams --version');
    const run = await runMain(['run', '--help'], cleanEnv());
    for (const flag of [
      '--log-level',
      '--log-format',
      '--metrics-file FILE',
      '--pushgateway URL',
      '--progress-interval',
      '--summary-file FILE',
    ])
      expect(run.stdout).toContain(flag);
    const doc = await readFile(`${REPO}/docs/cli.md`, 'utf8');
    for (const flag of [
      '--log-level',
      '--log-format',
      '--version',
      '--metrics-file',
      '--pushgateway',
      '--progress-interval',
      '--summary-file',
    ])
      expect(doc).toMatch(new RegExp(`[\\x60\\s]${flag}\\b`));
  });

  it.each([
    [['--log-level', 'loud', 'stages'], '--log-level must be one of error, warn, info, debug, got "loud"'],
    [['stages', '--log-format=xml'], '--log-format must be one of json, pretty, auto, got "xml"'],
    [['stages', '--log-level'], '--log-level needs a value (error, warn, info, debug)'],
  ])('%j: exit 2 with one JSON line off a terminal', async (argv, message) => {
    const { code, stderr, stdout } = await runMain(argv, cleanEnv());
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(jsonLines(stderr)).toEqual([
      { time: expect.any(String), level: 'error', event: 'error', code: 'usage', exitCode: 2, message },
    ]);
  });
});

describe('config errors', () => {
  it('json (auto off a terminal): one JSON line with the command, code, exit code, file, line, column and path', async () => {
    const file = 'fixtures/pipelines/page-size-33.yml';
    const { code, stderr, stdout } = await runCli(['validate', file], { env: cleanEnv() });
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(jsonLines(stderr)).toEqual([
      {
        time: expect.any(String),
        level: 'error',
        event: 'error',
        command: 'validate',
        code: 'config.invalid',
        exitCode: 2,
        file: expect.stringMatching(/\/fixtures\/pipelines\/page-size-33\.yml$/),
        line: 6,
        column: 13,
        path: 'source.pageSize',
        message: `${file}:6:13: source.pageSize: expected one of 10, 50, 100, 250, got 33`,
      },
    ]);
  });

  it('pretty on a terminal: the sentence', async () => {
    const { code, stderr } = await runMain(['validate', 'fixtures/pipelines/page-size-33.yml'], cleanEnv(), {
      tty: true,
    });
    expect(code).toBe(2);
    expect(stderr).toBe(
      'catalog-streams validate: fixtures/pipelines/page-size-33.yml:6:13: source.pageSize: expected one of 10, 50, 100, 250, got 33\n',
    );
  });
});

describe('runs and dry runs', () => {
  const shared = useSandboxWorkspace({ products: 600 });

  it('--dry-run with json: a `plan` line per pipeline (pipeline a string) and a `dry-run` line, all on stderr', async () => {
    const { code, stdout, stderr } = await runCli(['run', 'pipelines/demo.yml', '--dry-run'], {
      cwd: shared.ws.dir,
      env: sandboxEnv(shared.sandbox),
    });
    expect(code, stderr).toBe(0);
    expect(stdout).toBe('');
    const lines = jsonLines(stderr);
    expect(lines.map((l) => l.event)).toEqual(['plan', 'plan', 'dry-run']);
    expect(lines[0]).toMatchObject({
      level: 'info',
      pipeline: 'demo-products',
      source: 'products.query',
      total: expect.any(Number),
      requests: expect.any(Number),
      rateLimit: null,
    });
    expect(lines[0]!.outputs).toEqual([
      {
        sink: 'parquet',
        location: expect.stringMatching(/out\/demo\/products\/dt=\d{4}-\d\d-\d\d\/products\.parquet$/),
      },
    ]);
    expect(lines[1]).toMatchObject({ pipeline: 'demo-media', source: 'media.stream' });
    expect(lines[2]).toMatchObject({
      pipelines: ['demo-products', 'demo-media'],
      requests: lines[0]!.requests + lines[1]!.requests,
      message: 'dry run: nothing was written',
    });
  });

  it('two pipelines, json: each line names one pipeline or lists them all; never a comma-joined name', async () => {
    const { code, stderr } = await runCli(['run', 'pipelines/demo.yml', '--progress-interval', '0.1'], {
      cwd: shared.ws.dir,
      env: sandboxEnv(shared.sandbox),
    });
    expect(code, stderr).toBe(0);
    const lines = jsonLines(stderr);
    for (const l of lines) {
      if ('pipeline' in l) expect(['demo-products', 'demo-media']).toContain(l.pipeline);
      else expect(l.pipelines).toEqual(['demo-products', 'demo-media']);
    }
    expect(new Set(lines.filter((l) => l.event === 'committed').map((l) => l.pipeline))).toEqual(
      new Set(['demo-products', 'demo-media']),
    );
  });

  it('--log-level error: no info or warn lines, the summaries still; debug: every request', async () => {
    const quiet = await runCli(['run', 'pipelines/reference-data.yml', '--log-level', 'error'], {
      cwd: shared.ws.dir,
      env: sandboxEnv(shared.sandbox),
    });
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(jsonLines(quiet.stderr).map((l) => l.event)).toEqual(REFERENCE.map(() => 'summary'));
    const debug = await runCli(['run', 'pipelines/reference-data.yml', '--log-level=debug'], {
      cwd: shared.ws.dir,
      env: sandboxEnv(shared.sandbox),
    });
    expect(debug.code, debug.stderr).toBe(0);
    const requests = jsonLines(debug.stderr).filter((l) => l.event === 'request' && typeof l.pipeline === 'string');
    const summaries = jsonLines(debug.stderr).filter((l) => l.event === 'summary');
    expect(requests.length).toBe(summaries.reduce((n, s) => n + s.requests, 0));
  });

  it('--log-format pretty off a terminal: sentences, no JSON, the summary as text', async () => {
    const { code, stderr } = await runCli(['run', 'pipelines/reference-data.yml', '--log-format', 'pretty'], {
      cwd: shared.ws.dir,
      env: sandboxEnv(shared.sandbox),
    });
    expect(code, stderr).toBe(0);
    expect(stderr).not.toMatch(/^\{/m);
    expect(stderr).toMatch(new RegExp(`^· started: running ${REFERENCE.join(', ')} against `, 'm'));
    expect(stderr).toMatch(/^· brands: committed: parquet wrote .*brands\.parquet \([\d,]+ rows?, [\d,]+ bytes\)$/m);
    expect(stderr).toMatch(/^✓ brands succeeded in \d+:\d\d/m);
    expect(stderr).toMatch(
      /^ {2}read 30 records from brands\.query · [\d,]+ rec\/s · 1 page · 1 request · 0 retries · 0 × 429$/m,
    );
  });

  it('the AWS SDK notice that its 2027 releases need Node >= 22 is a debug line; other process warnings stay warnings', async () => {
    const run = async (level: string) => {
      let err = '';
      const warnings = new EventEmitter();
      const sink = (into: (s: string) => void) => new Writable({ write: (c, _e, cb) => (into(String(c)), cb()) });
      const io: CliIO = {
        stdout: sink(() => {}),
        stderr: sink((s) => (err += s)),
        env: sandboxEnv(shared.sandbox),
        signals: new EventEmitter(),
        warnings,
      };
      // Emitted once the run listens for warnings (the AWS SDK loads only after that).
      const sdk = Object.assign(
        new Error(
          'NodeVersionSupportWarning: The AWS SDK for JavaScript (v3)\nversions published after the first week of January 2027\nwill require node >=22.',
        ),
        { name: 'Warning' },
      );
      const other = Object.assign(new Error('something else'), { name: 'DeprecationWarning' });
      warnings.once('newListener', () =>
        queueMicrotask(() => [sdk, other].forEach((w) => warnings.emit('warning', w))),
      );
      const started = main(['run', `${shared.ws.dir}/pipelines/reference-data.yml`, '--log-level', level], io);
      expect(await started).toBe(0);
      return jsonLines(err).filter((l) => l.event === 'node.warning');
    };
    expect(await run('warn')).toEqual([
      expect.objectContaining({ level: 'warn', message: 'DeprecationWarning: something else' }),
    ]);
    const debug = await run('debug');
    expect(debug.map((l) => l.level).sort()).toEqual(['debug', 'warn']);
    expect(debug.find((l) => l.level === 'debug')!.message).toMatch(
      /^Warning: NodeVersionSupportWarning: The AWS SDK .* January 2027 will require node >=22\.$/,
    );
  });
});
