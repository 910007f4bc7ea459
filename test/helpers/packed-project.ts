// The package as a user gets it: `npm pack` of the repository, then `npm install` of the tarball
// into an empty project as docs/deploy.md types it (npm's cache, or the registry). Both are done
// once for all test files (sharedFolder: the first to ask does it, the others wait), and each file
// gets a copy of the installed project to run in (a copy takes well under a second, an install
// seconds to a minute). Tests then run commands in that project as a user types them
// (`npx catalog-streams ...`), with node's folder on PATH so `npx` and `npm` resolve as in a shell.
import { createHash } from 'node:crypto';
import { copyFile, cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, delimiter, dirname, join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { REPO } from '../cli/cli-process.js';
import { sharedFolder } from './shared-folder.js';

const run = promisify(execFile);
export interface PackedProject {
  /** A temp folder of this test file holding the project. */
  dir: string;
  /** The project: package.json, the tarball, node_modules/catalog-streams. */
  project: string;
  /** The tarball, in the project (where docs/deploy.md's install line finds it). */
  tarball: string;
  /** The tarball's files, as `npm pack --json` lists them. */
  files: string[];
  /** The install command line, run by /bin/sh in the project: docs/deploy.md's. */
  installCommand: string;
  /** What `npm install` printed (it exited 0: a failed install throws). */
  installOutput: string;
  remove(): Promise<void>;
}

interface Installed {
  project: string;
  tarball: string;
  files: string[];
  installCommand: string;
  installOutput: string;
}

/**
 * A copy of the shared installed project in a temp folder of the caller's; `packageJson` fields
 * are merged into its package.json (the dependency npm recorded is kept).
 */
export async function packedProject(prefix: string, packageJson: object = {}): Promise<PackedProject> {
  const installed = await sharedInstall();
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const project = join(dir, 'project');
  // Symlinks as they are (node_modules/.bin holds relative ones): pointing into the shared copy would
  // let a test's project reach outside its own folder.
  await cp(installed.project, project, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
  const pkgFile = join(project, 'package.json');
  const pkg = JSON.parse(await readFile(pkgFile, 'utf8')) as object;
  await writeFile(pkgFile, `${JSON.stringify({ ...pkg, ...packageJson }, null, 2)}\n`);
  return {
    ...installed,
    dir,
    project,
    tarball: join(project, basename(installed.tarball)),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * The installed project, once per tarball content and checkout: an empty project (package.json
 * only) where docs/deploy.md's `npm install ./catalog-streams-<version>.tgz` ran, by the shell, with
 * the tarball beside it. A default install: optional peers (the AWS SDK) are not installed.
 */
async function sharedInstall(): Promise<Installed> {
  const pack = await sharedPack();
  const content = await readFile(pack.tarball);
  const key = createHash('sha256').update(`${REPO}\n`).update(content).digest('hex').slice(0, 16);
  const shared = await sharedFolder('catalog-streams-install-', key, REPO, async (dir) => {
    const project = join(dir, 'project');
    await mkdir(project);
    await writeFile(join(project, 'package.json'), '{ "name": "a-data-project", "private": true }\n');
    const tarball = join(project, basename(pack.tarball));
    await copyFile(pack.tarball, tarball);
    const installCommand = `npm install ./${basename(tarball)}`;
    const env = {
      ...process.env,
      PATH: shellPath(),
      // npm's own settings, not the command: its cache first, no audit, funding or update notice.
      npm_config_prefer_offline: 'true',
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
    };
    const done = await run('/bin/sh', ['-c', installCommand], { cwd: project, env, maxBuffer: 16 * 1024 * 1024 }).catch(
      (err: { stdout?: string; stderr?: string; message: string }) => {
        throw new Error(`${installCommand} failed in ${project}:\n${err.stdout ?? ''}${err.stderr ?? err.message}`);
      },
    );
    return { project, tarball, files: pack.files, installCommand, installOutput: done.stdout + done.stderr };
  });
  return shared.value;
}

/**
 * The tarball of `npm pack` and its files, copied into `dir` (for a test that installs it its own
 * way, or reads it).
 */
export async function packInto(dir: string): Promise<{ tarball: string; files: string[] }> {
  const shared = await sharedPack();
  const tarball = join(dir, basename(shared.tarball));
  await copyFile(shared.tarball, tarball);
  return { tarball, files: shared.files };
}

/** What `npm pack` reads: package.json and the `files` it lists (stat only, no content). */
const PACKED_ROOTS = ['package.json', 'README.md', 'LICENSE', 'dist/src', 'pipelines', 'examples', 'docs'];

/**
 * A key of the shipped files' names, sizes and modification times: a rebuild or an edit gives a
 * new key, so a shared tarball is never older than the tree.
 */
async function packKey(): Promise<string> {
  // The checkout's own path too: another worktree's tree is another package.
  const hash = createHash('sha256').update(`${REPO}\n`);
  const walk = async (rel: string): Promise<void> => {
    const info = await stat(join(REPO, rel)).catch(() => undefined);
    if (!info) return;
    if (!info.isDirectory()) {
      hash.update(`${rel} ${info.size} ${info.mtimeMs}\n`);
      return;
    }
    for (const name of (await readdir(join(REPO, rel))).sort()) await walk(`${rel}/${name}`);
  };
  for (const root of PACKED_ROOTS) await walk(root);
  return hash.digest('hex').slice(0, 16);
}

/**
 * `npm pack` of the repository (dist/ is current: the suite's tsc built it, so prepare is not run
 * again), once per key for all test files.
 */
async function sharedPack(): Promise<{ tarball: string; files: string[] }> {
  const shared = await sharedFolder('catalog-streams-pack-', await packKey(), REPO, async (dir) => {
    const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', dir, '--json'], {
      cwd: REPO,
      maxBuffer: 64 * 1024 * 1024,
    });
    const packed = (JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>)[0]!;
    return { tarball: join(dir, packed.filename), files: packed.files.map((f) => f.path) };
  });
  return shared.value;
}

/** PATH with this node's folder first: `npx` and `npm` as a shell finds them, whatever PATH vitest got. */
export function shellPath(): string {
  return [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter);
}
