// The package as users get it: `npm pack`, then `npm install` of the tarball
// into an empty project, where `npx catalog-streams` works as the README says. It packs no run
// state and no sourcemaps (issue 37). It ships its LICENSE and every file its pipelines
// name (examples/ for the custom transform); every shipped pipeline validates
// from node_modules; a shipped pipeline run from there writes its outputs and
// state under the working directory, never inside node_modules. It is light (issue 25): no install
// script, no AWS SDK unless asked for (an optional peer; S3 features then say what to install), and
// the main entry neither loads the sandbox nor exposes it (catalog-streams/sandbox does).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packedProject, shellPath, type PackedProject } from '../helpers/packed-project.js';
import { REPO, cleanEnv, listFiles } from './cli-process.js';

const run = promisify(execFile);

describe('the installed package', () => {
  let packed: PackedProject;
  let project: string;
  let installed: string;
  const bin = () => join(project, 'node_modules/.bin/catalog-streams');

  beforeAll(async () => {
    packed = await packedProject('catalog-streams-package-test-');
    project = packed.project;
    installed = join(project, 'node_modules/catalog-streams');
  }, 180_000);
  afterAll(() => packed?.remove());

  it('packs no run state and no sourcemaps (they point at src/, which is not shipped)', () => {
    expect(packed.files.filter((f) => f.endsWith('.map'))).toEqual([]);
    expect(packed.files.filter((f) => f.includes('.catalog-streams') || f.includes('.state/'))).toEqual([]);
    // pipelines/ ships its pipeline files only: whatever else lands there (a run's files) stays home.
    const pipelines = packed.files.filter((f) => f.startsWith('pipelines/'));
    expect(pipelines.length).toBeGreaterThan(5);
    expect(pipelines.filter((f) => !/^pipelines\/[\w-]+\.yml$/.test(f))).toEqual([]);
    expect(packed.files).toContain('dist/src/cli/main.js');
  });

  it('from an empty project: npx catalog-streams --help, then a shipped pipeline with --sandbox', async () => {
    // The default run-state folder (the suite's own runs keep theirs in a temp folder).
    const env = cleanEnv({ PATH: shellPath(), CATALOG_STREAMS_STATE_DIR: '' });
    const help = await run('npx', ['catalog-streams', '--help'], { cwd: project, env });
    expect(help.stdout).toMatch(/^Usage: catalog-streams /m);
    const demo = await run(
      'npx',
      [
        'catalog-streams',
        'run',
        'node_modules/catalog-streams/pipelines/demo.yml',
        '--sandbox',
        '--sandbox-products',
        '150',
        '--sandbox-rate-limit',
        '0',
      ],
      { cwd: project, env },
    );
    expect(demo.stderr).toMatch(/"event":"summary".*"status":"succeeded"/);
    expect(existsSync(join(project, 'out/demo/media.jsonl.gz'))).toBe(true);
    // Its run history is the project's, in the working directory, not in node_modules.
    expect((await readdir(join(project, '.catalog-streams/history'))).sort()).toEqual(['demo-media', 'demo-products']);
  });

  it('ships the LICENSE (MIT, as package.json says), the pipelines and the examples they use', async () => {
    const pkg = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8')) as { license: string };
    expect(pkg.license).toBe('MIT');
    expect(await readFile(join(installed, 'LICENSE'), 'utf8')).toMatch(/^MIT License\n/);
    expect(existsSync(join(installed, 'examples/custom-transform.mjs'))).toBe(true);
    expect((await readdir(join(installed, 'pipelines'))).sort()).toEqual(
      (await readdir(join(REPO, 'pipelines'))).sort(),
    );
  });

  it('ships docs/, so the README links into it resolve in node_modules too', async () => {
    const readme = await readFile(join(installed, 'README.md'), 'utf8');
    const linked = [...readme.matchAll(/\]\((docs\/[\w-]+\.md)/g)].map((m) => m[1]!);
    expect(linked.length).toBeGreaterThan(10);
    // docs/errors.md may come from another branch later; whatever the repository has, ships.
    const pages = (await readdir(join(REPO, 'docs'))).filter((f) => f.endsWith('.md')).sort();
    expect((await readdir(join(installed, 'docs'))).sort()).toEqual(pages);
    for (const link of linked)
      if (pages.includes(link.slice('docs/'.length))) expect(existsSync(join(installed, link)), link).toBe(true);
  });

  it('runs no install script: prepare (which builds dist/ for a git install) is not run for a tarball', async () => {
    const pkg = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8')) as { scripts?: object };
    for (const hook of ['preinstall', 'install', 'postinstall'])
      expect(Object.keys(pkg.scripts ?? {})).not.toContain(hook);
    expect(pkg.scripts).toMatchObject({ prepare: 'tsc -p tsconfig.build.json' });
    // npm 11 may list prepare among scripts awaiting approval; it cannot have run: no TypeScript here.
    expect(existsSync(join(project, 'node_modules/typescript'))).toBe(false);
    expect(packed.installOutput).not.toMatch(/npm error|ERR!/);
  });

  it('installs without the AWS SDK, in under 25 MB', async () => {
    expect(existsSync(join(project, 'node_modules/@aws-sdk'))).toBe(false);
    // Bytes of the files (not disk blocks, which vary by file system); it was 29 MB with the SDK.
    let bytes = 0;
    const walk = async (folder: string): Promise<void> => {
      for (const entry of await readdir(folder, { withFileTypes: true })) {
        const file = join(folder, entry.name);
        if (entry.isDirectory()) await walk(file);
        else if (entry.isFile()) bytes += (await stat(file)).size;
      }
    };
    await walk(join(project, 'node_modules'));
    expect(bytes).toBeGreaterThan(1_000_000);
    expect(bytes).toBeLessThan(25_000_000);
  });

  it('import of the package gives the public API without loading the sandbox; catalog-streams/sandbox gives the sandbox', async () => {
    // A load hook reports every module of the package's sandbox folder.
    const hook = `export async function load(url, context, next) { if (url.includes('/dist/src/sandbox/')) process.stderr.write('SANDBOX ' + url + '\\n'); return next(url, context); }`;
    const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});`;
    const main = await run(
      process.execPath,
      [
        `--import=data:text/javascript,${encodeURIComponent(register)}`,
        '--input-type=module',
        '-e',
        "const m = await import('catalog-streams'); console.log(typeof m.runPipeline, typeof m.productsQuery, 'startSandbox' in m);",
      ],
      { cwd: project },
    );
    expect(main.stdout.trim()).toBe('function function false');
    expect(main.stderr).not.toContain('SANDBOX');
    const sandbox = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const m = await import('catalog-streams/sandbox'); console.log(typeof m.startSandbox);",
      ],
      { cwd: project },
    );
    expect(sandbox.stdout.trim()).toBe('function');
  });

  it('an S3 pipeline without the AWS SDK fails before its first request, saying what to install', async () => {
    const failed = await run(
      bin(),
      [
        'run',
        'node_modules/catalog-streams/pipelines/products-nightly-s3.yml',
        '--sandbox',
        '--sandbox-products',
        '100',
        '--log-format',
        'pretty',
      ],
      { cwd: project, env: cleanEnv({ LAKE_BUCKET: 'my-lake' }) },
    ).then(
      () => undefined,
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    expect(failed?.code).toBe(1);
    const output = `${failed?.stdout}${failed?.stderr}`;
    expect(output).toContain('error [dependency.missing.s3-sink]');
    expect(output).toContain('the s3 sink needs the AWS SDK');
    expect(output).toContain('run `npm install @aws-sdk/client-s3 @aws-sdk/lib-storage` in your project');
    expect(output).toContain('0 requests');
  });

  it('every shipped pipeline validates from node_modules', async () => {
    for (const file of await readdir(join(installed, 'pipelines'))) {
      const { stdout } = await run(bin(), ['validate', join(installed, 'pipelines', file)], {
        cwd: project,
        env: cleanEnv({ LAKE_BUCKET: 'my-lake' }),
      });
      expect(stdout).toContain('is valid');
    }
  });

  it('a shipped pipeline run from node_modules writes under the working directory, not inside the package', async () => {
    const before = await listFiles(installed);
    await run(
      bin(),
      [
        'run',
        'node_modules/catalog-streams/pipelines/custom-transform.yml',
        '--sandbox',
        '--sandbox-products',
        '400',
        '--sandbox-rate-limit',
        '0',
        '--quiet',
      ],
      {
        cwd: project,
        env: cleanEnv(),
      },
    );
    expect(existsSync(join(project, 'out/price-bands/price-bands.parquet'))).toBe(true);
    expect(await listFiles(installed)).toEqual(before);
    const nightly = await run(
      bin(),
      [
        'run',
        'node_modules/catalog-streams/pipelines/products-nightly.yml',
        '--sandbox',
        '--sandbox-products',
        '300',
        '--sandbox-rate-limit',
        '0',
        '--dry-run',
        '--log-format',
        'pretty',
      ],
      {
        cwd: project,
        env: cleanEnv(),
      },
    );
    expect(nightly.stdout).toContain(`  state: ${join(project, '.state/products-nightly.json')} `);
    expect(nightly.stdout).toContain(`  would write (parquet): ${join(project, 'out/products-nightly/dt=')}`);
  });
});
