// The package as a user gets it, once per test file: `npm pack` of the repository, then a default
// `npm install <tarball>` into an empty project (npm's cache, or the registry). Tests then run
// commands in that project as a user types them (`npx catalog-streams ...`), with node's folder on
// PATH so `npx` and `npm` resolve as in a shell.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { REPO } from '../cli/cli-process.js';

const run = promisify(execFile);

export interface PackedProject {
  /** A temp folder holding the tarball and the project. */
  dir: string;
  /** The project (a package.json and node_modules/catalog-streams). */
  project: string;
  tarball: string;
  /** The tarball's files, as `npm pack --json` lists them. */
  files: string[];
  /** What `npm install` printed. */
  installOutput: string;
  remove(): Promise<void>;
}

/**
 * Packs the repository (dist/ is current: the suite's tsc built it, so without running prepare
 * again) and installs the tarball into `<dir>/project`.
 */
export async function packedProject(prefix: string, packageJson: object = {}): Promise<PackedProject> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const project = join(dir, 'project');
  const { tarball, files } = await packInto(dir);
  await mkdir(project);
  const pkg = { name: 'a-data-project', private: true, ...packageJson };
  await writeFile(join(project, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  // A default install, as a user types it: optional peers (the AWS SDK) are not installed.
  const install = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], {
    cwd: project,
  });
  return {
    dir,
    project,
    tarball,
    files,
    installOutput: install.stdout + install.stderr,
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** `npm pack` of the repository into `dir` (dist/ as built: prepare is not run again): the tarball and its files. */
export async function packInto(dir: string): Promise<{ tarball: string; files: string[] }> {
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', dir, '--json'], {
    cwd: REPO,
    maxBuffer: 64 * 1024 * 1024,
  });
  const packed = (JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>)[0]!;
  return { tarball: join(dir, packed.filename), files: packed.files.map((f) => f.path) };
}

/** PATH with this node's folder first: `npx` and `npm` as a shell finds them, whatever PATH vitest got. */
export function shellPath(): string {
  return [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter);
}
