// Where this package lives and its version, from its own package.json (found
// by walking up from this module: src/cli in a checkout, dist/src/cli built).
import { readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let found: { root: string; version: string } | undefined;

function locate(): { root: string; version: string } {
  if (found) return found;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'catalog-streams')
        return (found = { root: realpathSync(dir), version: pkg.version ?? 'unknown' });
    } catch {
      // no package.json here: look further up
    }
    const up = path.dirname(dir);
    if (up === dir) return (found = { root: '', version: 'unknown' });
    dir = up;
  }
}

export function packageVersion(): string {
  return locate().version;
}

/**
 * Where a run writes the relative outputs (sinks, dead letters, state) of a
 * pipeline file in `fileDir`. A file of an installed copy of this package (a
 * shipped pipeline under node_modules) writes under the working directory, in
 * the place the package's layout gives it: `../out` of `pipelines/demo.yml`
 * becomes `<cwd>/out`, never a folder inside node_modules that the next
 * `npm ci` deletes. Any other file writes relative to its own folder (undefined).
 */
export function installedOutputDir(fileDir: string, cwd: string): string | undefined {
  const { root } = locate();
  if (!root || !root.split(path.sep).includes('node_modules')) return undefined;
  let real: string;
  try {
    real = realpathSync(fileDir);
  } catch {
    return undefined;
  }
  const inside = path.relative(root, real);
  if (inside.startsWith('..') || path.isAbsolute(inside)) return undefined;
  return path.join(cwd, inside);
}
