// The descriptive User-Agent the spec asks for (§5.5): `catalog-streams/<version>
// (node <version>)`. The version is read once from the package's own
// package.json, found by walking up from this module, so it works from src/
// (vitest) and from dist/src/ (the built package) alike.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = 'catalog-streams';

let cached: string | undefined;

export function packageVersion(): string {
  if (cached !== undefined) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === PACKAGE_NAME && pkg.version) return (cached = pkg.version);
    } catch {
      // No package.json here: keep walking up.
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return (cached = '0.0.0');
}

export function defaultUserAgent(): string {
  return `${PACKAGE_NAME}/${packageVersion()} (node ${process.version})`;
}
