// The stage option descriptions reach the package's .d.ts as JSDoc: an editor hovering over an
// option key in a code-API call (`parquetSink({ path })`) shows the key's description. Checked
// with the TypeScript language service (what editors run) on a file that imports the built
// package by its name, for every option of every registered stage; and the generated docs
// module (src/generated/stage-option-docs.ts) is checked current against the zod schemas.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { builtinStages } from '../../src/pipeline/builtins.js';
import { describeOptions, formatOptionDocsModule } from '../../src/pipeline/describe-options.js';
import { REPO } from '../cli/cli-process.js';

/** The code-API call of each stage type, with `OPTIONS` where its options object goes. */
const CALLS: Record<string, string> = {
  'products.query': 'productsQuery(client, OPTIONS)',
  'organizations.query': 'organizationsQuery(client, OPTIONS)',
  'corrections.query': 'correctionsQuery(client, OPTIONS)',
  'updates.query': 'updatesQuery(client, OPTIONS)',
  'brands.query': 'brandsQuery(client, OPTIONS)',
  'catalog-categories.query': 'catalogCategoriesQuery(client, OPTIONS)',
  'media.query': 'mediaQuery(client, OPTIONS)',
  'public-categories.query': 'publicCategoriesQuery(client, OPTIONS)',
  'dietary-restrictions.query': 'dietaryRestrictionsQuery(client, OPTIONS)',
  'colors.query': 'colorsQuery(client, OPTIONS)',
  'active-ingredients.query': 'activeIngredientsQuery(client, OPTIONS)',
  'product-families.query': 'productFamiliesQuery(client, OPTIONS)',
  'atc-categories.query': 'atcCategoriesQuery(client, OPTIONS)',
  'osp-categories.query': 'ospCategoriesQuery(client, OPTIONS)',
  'products.stream': 'productsStream(client, OPTIONS)',
  'media.stream': 'mediaStream(client, OPTIONS)',
  validate: 'validate(OPTIONS)',
  'flatten-locales': 'flattenLocales(OPTIONS)',
  'select-media-format': 'selectMediaFormat(OPTIONS)',
  'normalize-codes': 'normalizeCodes(OPTIONS)',
  pick: 'pick(OPTIONS)',
  rename: 'rename(OPTIONS)',
  drop: 'drop(OPTIONS)',
  extract: 'extract(OPTIONS)',
  flatten: 'flatten(OPTIONS)',
  explode: 'explode(OPTIONS)',
  dedupe: 'dedupe(OPTIONS)',
  custom: 'custom(OPTIONS)',
  'products.find': "findTransform('products.find', client, ctx, OPTIONS)",
  'media.find': "findTransform('media.find', client, ctx, OPTIONS)",
  jsonl: 'jsonlSink(OPTIONS)',
  parquet: 'parquetSink(OPTIONS)',
  csv: 'csvSink(OPTIONS)',
  s3: 's3Sink(OPTIONS)',
  table: 'tableSink(OPTIONS)',
  'media-mirror': 'mediaMirror(OPTIONS)',
};

const normalize = (s: string) => s.replace(/\s+/g, ' ').trim();

describe('option descriptions as JSDoc', () => {
  it('src/generated/stage-option-docs.ts is current (run `npm run docs` after changing options)', () => {
    const file = readFileSync(join(REPO, 'src/generated/stage-option-docs.ts'), 'utf8');
    expect(file).toBe(formatOptionDocsModule(builtinStages));
  });

  it("an editor shows each option key's description on hover in a code-API call, for every stage", () => {
    expect(Object.keys(CALLS).sort()).toEqual(builtinStages.map((d) => d.type).sort());
    // One call per stage, every option key in its object literal; `never` fits any option type.
    const keyAt: Array<{ type: string; key: string; description: string; position: number }> = [];
    let text =
      'import { type StageContext, CatalogClient, productsQuery, organizationsQuery, correctionsQuery, updatesQuery, brandsQuery,\n' +
      '  catalogCategoriesQuery, mediaQuery, publicCategoriesQuery, dietaryRestrictionsQuery, colorsQuery, productsStream, mediaStream,\n' +
      '  activeIngredientsQuery, productFamiliesQuery, atcCategoriesQuery, ospCategoriesQuery,\n' +
      '  validate, flattenLocales, selectMediaFormat, normalizeCodes, pick, rename, drop, extract, flatten, explode, dedupe, custom,\n' +
      "  findTransform, jsonlSink, parquetSink, csvSink, s3Sink, tableSink, mediaMirror } from 'catalog-streams';\n" +
      'declare const client: CatalogClient;\ndeclare const ctx: StageContext;\ndeclare const v: never;\n';
    for (const def of builtinStages) {
      const rows = describeOptions(def);
      const [before, after] = CALLS[def.type]!.split('OPTIONS') as [string, string];
      text += `${before}{\n`;
      for (const row of rows) {
        text += '  ';
        keyAt.push({ type: def.type, key: row.name, description: row.description!, position: text.length });
        text += `${row.name}: v,\n`;
      }
      text += `}${after};\n`;
    }
    const fileName = join(REPO, '__option-hover__.ts');
    const host: ts.LanguageServiceHost = {
      getScriptFileNames: () => [fileName],
      getScriptVersion: () => '1',
      getScriptSnapshot: (f) => {
        const content = f === fileName ? text : ts.sys.readFile(f);
        return content === undefined ? undefined : ts.ScriptSnapshot.fromString(content);
      },
      getCurrentDirectory: () => REPO,
      getCompilationSettings: () => ({
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        target: ts.ScriptTarget.ES2022,
        strict: true,
        skipLibCheck: true,
        noEmit: true,
        types: ['node'],
      }),
      getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
      fileExists: (f) => f === fileName || ts.sys.fileExists(f),
      readFile: (f) => (f === fileName ? text : ts.sys.readFile(f)),
      readDirectory: ts.sys.readDirectory,
      directoryExists: ts.sys.directoryExists,
      getDirectories: ts.sys.getDirectories,
    };
    const service = ts.createLanguageService(host);
    const program = service.getProgram()!;
    // The package resolves to its built declarations, as in a project that installed it.
    expect(program.getSourceFiles().map((f) => f.fileName)).toContain(join(REPO, 'dist/src/index.d.ts'));
    expect(
      service.getSemanticDiagnostics(fileName).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')),
    ).toEqual([]);

    const missing: string[] = [];
    for (const { type, key, description, position } of keyAt) {
      const info = service.getQuickInfoAtPosition(fileName, position);
      const shown = normalize(ts.displayPartsToString(info?.displayParts));
      const docs = normalize(ts.displayPartsToString(info?.documentation));
      // A typed property (not `any` from an index signature), with the schema's description.
      if (!shown.startsWith(`(property) ${key}`) || !docs.includes(normalize(description)))
        missing.push(`${type}.${key}: ${shown} | ${docs}`);
    }
    expect(missing).toEqual([]);
    expect(keyAt.length).toBeGreaterThan(100);
  });
});
