// The package as users get it: `npm pack`, then `npm install` of the tarball
// into an empty project. It ships its LICENSE and every file its pipelines
// name (examples/ for the custom transform); every shipped pipeline validates
// from node_modules; a shipped pipeline run from there writes its outputs and
// state under the working directory, never inside node_modules. It is light (issue 25): no install
// script, no AWS SDK unless asked for (an optional peer; S3 features then say what to install), and
// the main entry neither loads the sandbox nor exposes it (catalog-streams/sandbox does).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, cleanEnv, listFiles } from './cli-process.js';

const run = promisify(execFile);

describe('the installed package', () => {
  let dir: string;
  let project: string;
  let installed: string;
  let installOutput: string;
  const bin = () => join(project, 'node_modules/.bin/catalog-streams');

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'catalog-streams-pack-'));
    project = join(dir, 'project');
    // dist/ is current (the suite's tsc built it): pack without running prepare again.
    const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', dir, '--json'], {
      cwd: REPO,
    });
    const tarball = join(dir, (JSON.parse(stdout) as Array<{ filename: string }>)[0]!.filename);
    await run('mkdir', [project]);
    await writeFile(join(project, 'package.json'), '{ "name": "a-data-project", "private": true }\n');
    // A default install, as a user types it: optional peers (the AWS SDK) are not installed.
    const install = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], {
      cwd: project,
    });
    installOutput = install.stdout + install.stderr;
    installed = join(project, 'node_modules/catalog-streams');
  }, 180_000);
  afterAll(() => (dir ? rm(dir, { recursive: true, force: true }) : undefined));

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

  it('has no install script, and npm says nothing about one', async () => {
    const pkg = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8')) as { scripts?: object };
    for (const hook of ['preinstall', 'install', 'postinstall', 'prepare'])
      expect(Object.keys(pkg.scripts ?? {})).not.toContain(hook);
    expect(installOutput).not.toMatch(/install[- ]script|prepare/i);
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
