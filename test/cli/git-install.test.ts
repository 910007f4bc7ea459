// Installing from a git URL (`npm install git+https://...`), as docs/development.md says: npm
// clones the repository, installs its dependencies (dev ones too), runs `prepare` (which builds
// dist/) and packs it, so `npx catalog-streams` works afterwards. That takes minutes (every
// devDependency, then tsc), so it runs when CATALOG_STREAMS_GIT_INSTALL=1, e.g. before a release:
//   CATALOG_STREAMS_GIT_INSTALL=1 npx vitest run test/cli/git-install.test.ts
// It installs the last commit of this checkout (git+file://), not the working tree.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shellPath } from '../helpers/packed-project.js';
import { REPO, cleanEnv } from './cli-process.js';

const run = promisify(execFile);

describe.runIf(process.env.CATALOG_STREAMS_GIT_INSTALL === '1')('npm install git+file://<checkout>', () => {
  let dir: string;
  let project: string;
  const env = () => cleanEnv({ PATH: shellPath() });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'catalog-streams-git-'));
    project = join(dir, 'project');
    await mkdir(project);
    await writeFile(join(project, 'package.json'), '{ "name": "a-data-project", "private": true }\n');
    const commit = (await run('git', ['rev-parse', 'HEAD'], { cwd: REPO })).stdout.trim();
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', `git+file://${REPO}#${commit}`], {
      cwd: project,
      env: env(),
    });
  }, 900_000);
  afterAll(() => (dir ? rm(dir, { recursive: true, force: true }) : undefined));

  it('builds dist/ on install (prepare), ships no sourcemaps, and npx catalog-streams works', async () => {
    const installed = join(project, 'node_modules/catalog-streams');
    expect(existsSync(join(installed, 'dist/src/cli/main.js'))).toBe(true);
    expect((await readdir(join(installed, 'dist/src/cli'))).filter((f) => f.endsWith('.map'))).toEqual([]);
    const help = await run('npx', ['catalog-streams', '--help'], { cwd: project, env: env() });
    expect(help.stdout).toMatch(/^Usage: catalog-streams /m);
    const validate = await run(
      'npx',
      ['catalog-streams', 'validate', 'node_modules/catalog-streams/pipelines/demo.yml'],
      { cwd: project, env: env() },
    );
    expect(validate.stdout).toContain('is valid');
  });
});
