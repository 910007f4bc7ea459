// Every command the README and the docs/ pages show runs somewhere: in another test (the reviewed
// map below names the test file, and the file must hold the command's argv), in a script CI runs,
// or here, as a user types it: each line through `/bin/sh -c`, in a project where the packed
// tarball was installed by the docs' own `npm install ./catalog-streams-<version>.tgz` (a copy of
// the suite's one install, test/helpers/packed-project.ts, which runs that line by the shell; so
// `npx catalog-streams` is the installed bin, found as npx finds it), with copies of pipelines/
// and examples/ beside it, against the sandbox on loopback. A command added to a
// page that nothing runs fails the first test, naming file:line; so does an entry whose command
// left every page. Whole pipeline files in yaml blocks are validated here too.
//
// Commands are the lines of sh/bash/console/cron code blocks (and of unlabeled blocks, the lines
// that start with a command), the container command + args of a Kubernetes manifest in a yaml
// block, and inline code that starts with `npx catalog-streams ` or the bench runner.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinStages } from '../../src/pipeline/builtins.js';
import { formatStageReference } from '../../src/pipeline/describe-options.js';
import { EXTRA_SCENARIOS, MAIN_SCENARIOS } from '../bench/run.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { REPO, cleanEnv, jsonLines, listFiles, runCli, startCommand } from '../cli/cli-process.js';
import { packedProject, shellPath, type PackedProject } from '../helpers/packed-project.js';
import { at, docFiles, fencedBlocks, lineOf } from './doc-blocks.js';

interface ReadmeCommand {
  text: string;
  /** README.md or docs/<page>.md */
  file: string;
  line: number;
  /** sh, cron, yaml (a manifest), inline ... */
  from: string;
}

const SHELL_BLOCKS = new Set(['sh', 'bash', 'shell', 'console', 'cron', '']);
const COMMAND_START = /^(npm|npx|node|catalog-streams|export|exec)\s/;
const INLINE_COMMAND = /^(npx catalog-streams |catalog-streams --|node --expose-gc dist\/test\/bench\/run\.js)/;

export function readmeCommands(readme: string, file = 'README.md'): ReadmeCommand[] {
  const out: ReadmeCommand[] = [];
  const lineAt = (index: number) => lineOf(readme, index);
  const fenced: Array<[number, number]> = [];
  for (const m of readme.matchAll(/^( *)```(\w*)\n([\s\S]*?)^\1```/gm)) {
    fenced.push([m.index, m.index + m[0].length]);
    const lang = m[2]!;
    const bodyLine = lineAt(m.index) + 1;
    if (lang === 'yaml') {
      for (const doc of parseAllDocuments(m[3]!)) {
        const manifest = doc.toJS() as { kind?: string; spec?: any } | null;
        if (manifest?.kind !== 'CronJob') continue;
        for (const c of manifest.spec.jobTemplate.spec.template.spec.containers as Array<{
          command: string[];
          args?: string[];
        }>) {
          out.push({ text: [...c.command, ...(c.args ?? [])].join(' '), file, line: bodyLine, from: 'yaml' });
        }
      }
      continue;
    }
    if (!SHELL_BLOCKS.has(lang)) continue;
    const lines = m[3]!.split('\n');
    for (let i = 0; i < lines.length; i++) {
      let text = lines[i]!.trim();
      const at = bodyLine + i;
      while (text.endsWith('\\') && i + 1 < lines.length) text = `${text.slice(0, -1).trim()} ${lines[++i]!.trim()}`;
      // A trailing comment (` # ...`) is prose, not part of the command.
      text = text.replace(/\s+#\s.*$/, '').trim();
      if (text === '' || text.startsWith('#')) continue;
      if (lang === '' && !COMMAND_START.test(text)) continue;
      out.push({ text, file, line: at, from: lang || 'block' });
    }
  }
  for (const m of readme.matchAll(/`([^`\n]+)`/g)) {
    if (fenced.some(([a, b]) => m.index >= a && m.index < b)) continue;
    const text = m[1]!.trim();
    // Placeholders (`<file>`, `...`) mark a pattern, not a command to copy.
    if (!INLINE_COMMAND.test(text) || /<|\.\.\.|…/.test(text)) continue;
    out.push({ text, file, line: lineAt(m.index), from: 'inline' });
  }
  return out;
}

/** Who runs a README command. */
type Coverage =
  /** A test file runs it; the file must contain each of these strings (its argv as the test writes it). */
  | { test: string; contains: string[] }
  /** A script CI runs (.ci/run); the script must contain these lines. */
  | { script: string; contains: string[] }
  /** Run by this file (the `RUN HERE` tests below, keyed by the same text). */
  | { here: true }
  /** `npm run bench` and its runner: the lead measures them (minutes each); here their arguments are checked. */
  | { bench: string[] };

const SCHEDULING = 'test/cli/scheduling.test.ts';
const COVERAGE: Record<string, Coverage> = {
  'npm ci && npm run demo': {
    test: 'test/cli/profiles.test.ts',
    contains: ["join(REPO, 'scripts/demo.mjs')", "runNode(join(dir, 'scripts/demo.mjs')"],
  },
  'npm ci && npm test': { script: '.ci/run', contains: ['npm ci', 'npm test'] },
  'npx catalog-streams stages': { here: true },
  'npx catalog-streams stages parquet': {
    test: 'test/cli/help-topics.test.ts',
    contains: ["runCli(['stages', 'parquet']"],
  },
  'npx catalog-streams filters products.query': { here: true },
  'npx catalog-streams validate pipelines/demo.yml': { here: true },
  'npx catalog-streams schema pipelines/demo.yml': { here: true },
  'npx catalog-streams run pipelines/demo.yml --sandbox --dry-run': { here: true },
  // As written it extracts 12,000 products at 600 requests/min (about 35 s); these tests run the same
  // argv with a smaller sandbox (--sandbox-products) and check the outputs with DuckDB.
  'npx catalog-streams run pipelines/demo.yml --sandbox': {
    test: 'test/cli/pipelines.test.ts',
    contains: ["['run', 'pipelines/demo.yml', '--sandbox'"],
  },
  'npx catalog-streams sandbox --port 8787 --products 20000': { here: true },
  'export CATALOG_BASE_URL=https://api.example.com CATALOG_API_KEY=... CATALOG_API_SECRET=...': { here: true },
  'npx catalog-streams run pipelines/products-nightly.yml': { here: true },
  'npx catalog-streams stages --markdown': { here: true },
  'npx catalog-streams history pipelines/products-nightly.yml': {
    test: 'test/cli/history.test.ts',
    contains: ["runCli(['history', file", "history('pipelines/products-nightly.yml')"],
  },
  'npx catalog-streams run pipelines/reference-data.yml --sandbox': { here: true },
  'catalog-streams --version': { test: 'test/cli/logging.test.ts', contains: ["runCli(['--version']"] },
  '15 2 * * *  cd /srv/catalog && . ./catalog.env && exec node_modules/.bin/catalog-streams run pipelines/products-nightly.yml --metrics-file /var/lib/node_exporter/textfile/catalog_nightly.prom --summary-file logs/nightly-summary.json >> logs/nightly.log 2>&1':
    { test: SCHEDULING, contains: ["doc.indexOf('## Scheduling\\n')", "spawn('/bin/sh', ['-c', command]"] },
  '/app/node_modules/.bin/catalog-streams run /app/node_modules/catalog-streams/pipelines/products-nightly-s3.yml --pushgateway http://pushgateway.monitoring:9091':
    { test: SCHEDULING, contains: ['parseYaml(blocks[1]!.text)', 'spawn(process.execPath, [CLI, ...args]'] },
  // docs/deploy.md: installing, the image.
  'npm install ./catalog-streams-0.1.0.tgz': { here: true },
  'npx catalog-streams --help': { here: true },
  // 12,000 products as written; the package test runs it with a smaller sandbox.
  'npx catalog-streams run node_modules/catalog-streams/pipelines/demo.yml --sandbox': {
    test: 'test/cli/package.test.ts',
    contains: ["'node_modules/catalog-streams/pipelines/demo.yml',\n        '--sandbox',"],
  },
  // A placeholder URL: the opt-in git install test installs this checkout by git+file:// instead.
  'npm install git+https://git.example.com/data/catalog-streams.git#v0.1.0': {
    test: 'test/cli/git-install.test.ts',
    contains: ["'install'", '`git+file://${REPO}#${commit}`'],
  },
  // The docker mode needs a Docker engine, which the suite does not have: it runs --local (docs/deploy.md says so).
  'scripts/docker-build.sh': { test: 'test/docs/dockerfile.test.ts', contains: ["'scripts/docker-build.sh'"] },
  'scripts/docker-build.sh --local': {
    test: 'test/docs/dockerfile.test.ts',
    contains: ["'scripts/docker-build.sh'), '--local'"],
  },
  'node --expose-gc dist/test/bench/run.js memory --repeat 1': { bench: ['memory', '--repeat', '1'] },
  'node --expose-gc dist/test/bench/run.js chain': { bench: ['chain'] },
  'node --expose-gc dist/test/bench/run.js keys': { bench: ['keys'] },
  'node --expose-gc dist/test/bench/run.js jsonl --quick --repeat 1': { bench: ['jsonl', '--quick', '--repeat', '1'] },
  'node --expose-gc dist/test/bench/run.js jsonl': { bench: ['jsonl'] },
  'node --expose-gc dist/test/bench/run.js chain --quick --repeat 2': { bench: ['chain', '--quick', '--repeat', '2'] },
  'node --expose-gc dist/test/bench/run.js writers --quick --repeat 3': {
    bench: ['writers', '--quick', '--repeat', '3'],
  },
  'node --expose-gc dist/test/bench/run.js rate': { bench: ['rate'] },
  'node --expose-gc dist/test/bench/run.js budget': { bench: ['budget'] },
  // docs/performance.md builds before a bench; npm test runs the same tsc through its static checks.
  'npx tsc -p tsconfig.json': { script: 'scripts/static-checks.mjs', contains: ["['tsc', 'tsc -p tsconfig.json']"] },
};

const docs = docFiles();
const readme = docs.find((d) => d.file === 'README.md')!.text;
const commands = docs.flatMap((d) => readmeCommands(d.text, d.file));
const texts = [...new Set(commands.map((c) => c.text))];

describe('commands of the README and docs/', () => {
  it('every command has a reviewed entry saying who runs it, and every entry is still in a page', () => {
    expect(commands.length).toBeGreaterThan(15);
    expect(commands.filter((c) => c.file !== 'README.md').length).toBeGreaterThan(10);
    expect(commands.filter((c) => !(c.text in COVERAGE)).map((c) => `${at(c)}: ${c.text}`)).toEqual([]);
    expect(Object.keys(COVERAGE).filter((t) => !texts.includes(t))).toEqual([]);
  });

  it('the tests and scripts the map names really run those command lines', async () => {
    const stale: string[] = [];
    for (const [text, c] of Object.entries(COVERAGE)) {
      if (!('test' in c) && !('script' in c)) continue;
      const file = 'test' in c ? c.test : c.script;
      const body = await readFile(join(REPO, file), 'utf8');
      for (const needle of c.contains) if (!body.includes(needle)) stale.push(`${text}: ${file} has no ${needle}`);
    }
    expect(stale).toEqual([]);
    // The npm scripts the README names are the ones these cover.
    const pkg = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.demo).toBe('node scripts/demo.mjs');
    expect(pkg.scripts.test).toBe('node scripts/static-checks.mjs && vitest run');
    // Before vitest, every check: the build the CLI tests run, the layers, lint and formatting.
    const checks = await readFile(join(REPO, 'scripts/static-checks.mjs'), 'utf8');
    for (const check of ['tsc -p tsconfig.json', 'npm run -s lint:deps', 'npm run -s lint', 'npm run -s format:check'])
      expect(checks).toContain(`'${check}'`);
    expect(pkg.scripts.bench).toBe('tsc -p tsconfig.json && node --expose-gc dist/test/bench/run.js');
    // The scheduling test reads both examples from the Scheduling section of docs/nightly-runs.md.
    const nightly = docs.find((d) => d.file === 'docs/nightly-runs.md')!.text;
    const first = lineOf(nightly, nightly.indexOf('## Scheduling\n'));
    const last = lineOf(nightly, nightly.indexOf('\n## ', nightly.indexOf('## Scheduling\n') + 3));
    for (const [text, c] of Object.entries(COVERAGE)) {
      if (!('test' in c) || c.test !== SCHEDULING) continue;
      const found = commands.filter((x) => x.text === text);
      expect(found.map((x) => x.file)).toEqual(['docs/nightly-runs.md']);
      expect(found[0]!.line).toSatisfy((l: number) => l > first && l < last);
    }
  });

  it('the bench commands name scenarios and flags the runner knows', () => {
    const known: readonly string[] = [...MAIN_SCENARIOS, ...EXTRA_SCENARIOS];
    for (const [text, c] of Object.entries(COVERAGE)) {
      if (!('bench' in c)) continue;
      const args = text.startsWith('npm run bench')
        ? text
            .replace(/^npm run bench( -- )?/, '')
            .split(' ')
            .filter(Boolean)
        : text.split(' ').slice(3);
      expect(args, text).toEqual(c.bench);
      for (let i = 0; i < args.length; i++) {
        if (args[i] === '--repeat') expect(Number(args[++i])).toBeGreaterThanOrEqual(1);
        else if (args[i]!.startsWith('--')) expect(['--quick', '--strict'], text).toContain(args[i]);
        else expect(known, text).toContain(args[i]);
      }
    }
  });

  describe('run here as typed, in a project with the packed package installed, against the sandbox', () => {
    let packed: PackedProject;
    let project: string;
    let sandbox: TestSandbox;
    // npm's own settings, not the commands: no update notice on stderr (the CLI's JSON lines are read there).
    const env = (extra: Record<string, string> = {}) =>
      cleanEnv({ PATH: shellPath(), npm_config_update_notifier: 'false', ...extra });
    beforeAll(async () => {
      // A copy of the suite's one install of the packed package, which ran the install line of
      // docs/deploy.md as typed (by /bin/sh, the tarball beside it; npm's cache first, no audit or
      // funding requests: npm's settings, not the command). It names the version the package has.
      [packed, sandbox] = await Promise.all([
        packedProject('catalog-streams-readme-'),
        startTestSandbox({ products: 1500 }),
      ]);
      project = packed.project;
      const install = 'npm install ./catalog-streams-0.1.0.tgz';
      expect(packed.installCommand).toBe(install);
      expect(basename(packed.tarball)).toBe(install.slice('npm install ./'.length));
      expect(existsSync(join(project, 'node_modules/.bin/catalog-streams'))).toBe(true);
      ran.add(install);
      // The files the README's commands name, as in a checkout.
      await cp(join(REPO, 'pipelines'), join(project, 'pipelines'), { recursive: true });
      await cp(join(REPO, 'examples'), join(project, 'examples'), { recursive: true });
    }, 240_000);
    afterAll(async () => {
      await Promise.all([sandbox?.close(), packed?.remove()]);
    });

    const here = Object.entries(COVERAGE)
      .filter(([, c]) => 'here' in c)
      .map(([t]) => t);
    const ran = new Set<string>();
    afterAll(() => {
      // Each `here` entry was run by one of the tests below.
      expect(here.filter((t) => !ran.has(t))).toEqual([]);
    });
    /** The command line as a user types it, by the shell, in the project. */
    function run(text: string, withEnv = env()) {
      ran.add(text);
      return startCommand('/bin/sh', ['-c', text], { cwd: project, env: withEnv }).done;
    }

    it('npx catalog-streams --help: the installed bin, found by npx', async () => {
      const { code, stdout, stderr } = await run('npx catalog-streams --help');
      expect(code, stderr).toBe(0);
      expect(stdout).toMatch(/^Usage: catalog-streams /m);
    });

    it('the tour: stages, filters, validate, schema, the dry run', async () => {
      const [stages, filters, validate, schema, dryRun] = await Promise.all([
        run('npx catalog-streams stages'),
        run('npx catalog-streams filters products.query'),
        run('npx catalog-streams validate pipelines/demo.yml'),
        run('npx catalog-streams schema pipelines/demo.yml'),
        run('npx catalog-streams run pipelines/demo.yml --sandbox --dry-run'),
      ]);
      expect(stages.code, stages.stderr).toBe(0);
      for (const def of builtinStages) expect(stages.stdout).toContain(`  ${def.type}  `);
      expect(filters.code, filters.stderr).toBe(0);
      expect(filters.stdout).toMatch(/updatedSince/);
      expect(validate.code, validate.stderr).toBe(0);
      expect(schema.code, schema.stderr).toBe(0);
      expect(schema.stdout).toMatch(/CREATE/);
      expect(dryRun.code, dryRun.stderr).toBe(0);
      expect(jsonLines(dryRun.stderr).map((l) => l.event)).toEqual(['plan', 'plan', 'dry-run']);
      expect((await listFiles(project)).filter((f) => f.startsWith('out/'))).toEqual([]);
    });

    it('stages --markdown prints the stage reference of docs/stages.md', async () => {
      const { code, stdout } = await run('npx catalog-streams stages --markdown');
      expect(code).toBe(0);
      expect(stdout.trimEnd()).toBe(formatStageReference(builtinStages).trimEnd());
    });

    it('the reference tables with --sandbox', async () => {
      const { code, stderr } = await run('npx catalog-streams run pipelines/reference-data.yml --sandbox');
      expect(code, stderr).toBe(0);
      const summaries = jsonLines(stderr).filter((l) => l.event === 'summary');
      expect(summaries.map((s) => s.status)).toEqual(summaries.map(() => 'succeeded'));
      expect(summaries.length).toBe(6);
      expect((await listFiles(join(project, 'out/reference'))).filter((f) => f.endsWith('.parquet'))).toHaveLength(6);
    });

    it('every whole pipeline file in a yaml block validates; the fragments are valid YAML', async () => {
      const files: Array<{ where: string; path: string }> = [];
      const broken: string[] = [];

      for (const block of docs.flatMap(fencedBlocks).filter((b) => b.lang === 'yaml')) {
        const documents = parseAllDocuments(block.body);
        for (const d of documents) if (d.errors.length) broken.push(`${at(block)}: ${d.errors[0]!.message}`);
        const values = documents.map((d) => d.toJS() as Record<string, unknown> | null);
        // A Kubernetes manifest runs in test/cli/scheduling.test.ts; a fragment (`sinks:` alone) is no file.
        if (!values.some((v) => v && 'source' in v)) continue;
        // In pipelines/ of the workspace, so `../out/...` lands in its out/ as in the repository.
        const path = join(project, 'pipelines', `doc-${files.length}.yml`);
        await writeFile(path, block.body);
        files.push({ where: at(block), path });
      }
      expect(broken).toEqual([]);
      expect(files.length).toBeGreaterThanOrEqual(4);
      const results = await Promise.all(
        files.map((f) => runCli(['validate', f.path], { cwd: project, env: cleanEnv() })),
      );
      expect(
        results.flatMap((r, i) => (r.code === 0 ? [] : [`${files[i]!.where}: exit ${r.code}: ${r.stderr.trim()}`])),
      ).toEqual([]);
    });

    it('the sandbox command serves, and Ctrl-C stops it (port 0 for 8787: a test must not need a fixed port)', async () => {
      const text = 'npx catalog-streams sandbox --port 8787 --products 20000';
      ran.add(text);
      // A process group of its own, as a terminal's foreground job: Ctrl-C signals the whole group
      // (npm exec does not pass a signal on to the CLI it started).
      const child = spawn('/bin/sh', ['-c', text.replace('8787', '0')], { cwd: project, env: env(), detached: true });
      let stdout = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
      try {
        await new Promise<void>((resolve, reject) => {
          const timer = setInterval(() => {
            if (/listening on http:\/\/127\.0\.0\.1:\d+/.test(stdout)) resolve();
          }, 20);
          void closed
            .then(() => reject(new Error(`the sandbox exited: ${stdout}`)))
            .finally(() => clearInterval(timer));
          setTimeout(() => reject(new Error(`no listening line: ${stdout}`)), 30_000).unref();
        });
        expect(stdout).toMatch(/20,000 products/);
      } finally {
        process.kill(-child.pid!, 'SIGINT');
      }
      await closed;
      // Nothing of the group is left: the CLI stopped, not only npx.
      await new Promise((r) => setTimeout(r, 500));
      expect(() => process.kill(-child.pid!, 0)).toThrow(/ESRCH/);
    });

    it('against "the real API": the export line and the run, as one shell script with the sandbox as the API', async () => {
      const start = readme.indexOf('Against the real API, set the connection and run without `--sandbox`:');
      const block = readme.slice(
        readme.indexOf('```sh\n', start) + 6,
        readme.indexOf('```', readme.indexOf('```sh\n', start) + 6),
      );
      const lines = block.trim().split('\n');
      expect(lines).toEqual([
        'export CATALOG_BASE_URL=https://api.example.com CATALOG_API_KEY=... CATALOG_API_SECRET=...',
        'npx catalog-streams run pipelines/products-nightly.yml',
      ]);
      lines.forEach((l) => ran.add(l));
      const script = block
        .replace('https://api.example.com', sandbox.url)
        .replace('CATALOG_API_KEY=...', `CATALOG_API_KEY=${sandbox.credentials.apiKey}`)
        .replace('CATALOG_API_SECRET=...', `CATALOG_API_SECRET=${sandbox.credentials.apiSecret}`);
      const result = await startCommand('/bin/sh', ['-c', script], {
        cwd: project,
        env: env({ CATALOG_RATE_LIMIT: '0' }),
      }).done;
      expect(result.code, result.stderr).toBe(0);
      expect(jsonLines(result.stderr).find((l) => l.event === 'summary')).toMatchObject({
        status: 'succeeded',
        pipeline: 'products-nightly',
      });
      expect(await listFiles(join(project, '.state'))).toContain('products-nightly.json');
    });
  });
});
