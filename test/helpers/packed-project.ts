// The package as a user gets it, once per test file: `npm pack` of the repository (one tarball
// shared by the files, see sharedPack), then a default
// `npm install <tarball>` into an empty project (npm's cache, or the registry). Tests then run
// commands in that project as a user types them (`npx catalog-streams ...`), with node's folder on
// PATH so `npx` and `npm` resolve as in a shell.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, delimiter, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
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

/**
 * `npm pack` of the repository into `dir` (dist/ as built: prepare is not run again): the tarball
 * and its files. Several test files need the same tarball: it is packed once per content of what
 * the package ships (sharedPack) and copied into `dir`.
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
 * new key, so a cached tarball is never older than the tree.
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
 * One `npm pack` per key for all test files (of this run or a later one with the same tree): the
 * first file to make the key's folder packs into it and writes `pack.json` last (renamed into
 * place); the others wait for that file. A pack that never finishes (its process was killed) is
 * taken over after two minutes.
 */
async function sharedPack(): Promise<{ tarball: string; files: string[] }> {
  const folder = join(tmpdir(), `catalog-streams-pack-${await packKey()}`);
  const done = join(folder, 'pack.json');
  const mine = await mkdir(folder).then(
    () => true,
    (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
      return false;
    },
  );
  if (!mine) {
    for (let waited = 0; waited < 120_000; waited += 250) {
      const text = await readFile(done, 'utf8').catch(() => undefined);
      if (text !== undefined) return JSON.parse(text) as { tarball: string; files: string[] };
      await sleep(250);
    }
  }
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', folder, '--json'], {
    cwd: REPO,
    maxBuffer: 64 * 1024 * 1024,
  });
  const packed = (JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>)[0]!;
  const result = { tarball: join(folder, packed.filename), files: packed.files.map((f) => f.path) };
  const temp = `${done}.${process.pid}`;
  await writeFile(temp, JSON.stringify(result));
  await rename(temp, done);
  return result;
}

/** PATH with this node's folder first: `npx` and `npm` as a shell finds them, whatever PATH vitest got. */
export function shellPath(): string {
  return [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter);
}
