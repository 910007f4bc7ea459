// The dependencies we claim are the ones we use: every runtime dependency is imported from src/
// and explained in docs/dependencies.md, and a dependency whose internals we read (zod's `_zod`,
// hyparquet-writer's `src/*.js`) is pinned to one version, with the internals checked here so an
// upgrade that changes them fails this test instead of a run.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const root = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const file = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sourceFiles(file)));
    else if (entry.name.endsWith('.ts')) out.push(file);
  }
  return out;
}

/** Package names src/ imports (static and dynamic), internal paths included as `name/path`. */
async function importedSpecifiers(): Promise<string[]> {
  const found = new Set<string>();
  const pattern = /(?:from\s+|import\(\s*)'([^'.][^']*)'/g;
  for (const file of await sourceFiles(join(root, 'src'))) {
    for (const m of (await readFile(file, 'utf8')).matchAll(pattern)) found.add(m[1]!);
  }
  return [...found];
}

const packageOf = (specifier: string) =>
  specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;

describe('the dependencies we claim', () => {
  it('every runtime and peer dependency is imported from src/, and src/ imports nothing undeclared', async () => {
    // `catalog-streams` itself appears in doc comments' examples.
    const imported = new Set(
      (await importedSpecifiers()).map(packageOf).filter((p) => !p.startsWith('node:') && p !== 'catalog-streams'),
    );
    const declared = [...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)];
    expect(
      declared.filter((d) => !imported.has(d)),
      'declared but never imported',
    ).toEqual([]);
    expect(
      [...imported].filter((i) => !declared.includes(i)),
      'imported but not a dependency',
    ).toEqual([]);
  });

  it('docs/dependencies.md explains every runtime and peer dependency', async () => {
    const doc = await readFile(join(root, 'docs', 'dependencies.md'), 'utf8');
    const rows = doc.split('\n').filter((line) => line.startsWith('|'));
    for (const dep of [...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)])
      expect(
        rows.some((row) => row.split('|')[1]!.includes(`\`${dep}\``)),
        `${dep} has a row`,
      ).toBe(true);
  });

  it('a dependency whose internal paths src/ imports is pinned, and the installed version is the pinned one', async () => {
    const internal = (await importedSpecifiers()).filter((s) => packageOf(s) !== s && !s.startsWith('node:'));
    const packages = new Set(internal.map(packageOf));
    expect([...packages].sort()).toEqual(['hyparquet-writer']);
    for (const name of [...packages, 'zod']) {
      const pinned = pkg.dependencies[name]!;
      expect(pinned, `${name} is pinned to one version`).toMatch(/^\d+\.\d+\.\d+$/);
      const manifest = await readFile(join(root, 'node_modules', name, 'package.json'), 'utf8');
      const installed = (JSON.parse(manifest) as { version: string }).version;
      expect(installed, `${name} installed`).toBe(pinned);
    }
  });

  it("hyparquet-writer's internal modules still export what the Parquet encoder calls", async () => {
    const modules: Record<string, string[]> = {
      'hyparquet-writer/src/column.js': ['writeColumn'],
      'hyparquet-writer/src/indexes.js': ['writeIndexes'],
      'hyparquet-writer/src/snappy.js': ['snappyCompress'],
      'hyparquet-writer/src/metadata.js': ['writeMetadata'],
    };
    for (const [specifier, names] of Object.entries(modules)) {
      const mod = (await import(specifier)) as Record<string, unknown>;
      for (const name of names) expect(typeof mod[name], `${specifier} ${name}`).toBe('function');
    }
  });

  it("zod's internals the fast checks read (_zod.def, checks, traits, optin, values) keep their shape", () => {
    type Internals = {
      def: { type: string; checks?: { _zod: { check: unknown; def: { check: string } } }[]; innerType?: unknown };
      traits: Set<string>;
      optin?: string;
      values?: Set<unknown>;
    };
    const zodOf = (s: z.ZodType) => (s as unknown as { _zod: Internals })._zod;
    const length = zodOf(z.string().length(13));
    expect(length.def.type).toBe('string');
    expect(length.def.checks?.[0]?._zod.def.check).toBe('length_equals');
    expect(typeof length.def.checks?.[0]?._zod.check).toBe('function');
    expect(zodOf(z.string().optional()).optin).toBe('optional');
    expect(zodOf(z.string().default('x')).optin).toBe('defaulted');
    expect((zodOf(z.string().default('x')).def.innerType as { _zod: Internals })._zod.def.type).toBe('string');
    expect(zodOf(z.enum(['a', 'b'])).values).toEqual(new Set(['a', 'b']));
    expect(zodOf(z.string().exactOptional()).traits.has('$ZodExactOptional')).toBe(true);
    expect(zodOf(z.object({ a: z.string() })).def.type).toBe('object');
  });
});
