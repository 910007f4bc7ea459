// The package as users get it: `npm pack`, then `npm install` of the tarball
// into an empty project. It ships its LICENSE and every file its pipelines
// name (examples/ for the custom transform); every shipped pipeline validates
// from node_modules; a shipped pipeline run from there writes its outputs and
// state under the working directory, never inside node_modules.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
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
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--omit=dev', tarball], {
      cwd: project,
    });
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
