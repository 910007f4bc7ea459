// `catalog-streams stages` and the README reference come from the stages' zod
// schemas: every registered stage appears with every option its schema declares,
// with types, defaults and descriptions, never from a hand-kept list.
import { describe, expect, it } from 'vitest';
import { builtinStages } from '../../src/pipeline/builtins.js';
import { describeOptions, formatStageList, formatStageReference } from '../../src/pipeline/describe-options.js';
import { keysAt } from '../../src/core/issues.js';
import { outputFormats } from '../../src/sinks/index.js';
import { runMain } from '../cli/cli-process.js';

describe('describeOptions', () => {
  it.each(builtinStages.map((d) => [d.type, d] as const))(
    '%s: one row per option of its schema, each described',
    (_type, def) => {
      const rows = describeOptions(def);
      expect(rows.map((r) => r.name)).toEqual(keysAt(def.options, []));
      for (const row of rows) {
        expect(row.description, `${def.type}.${row.name}`).toBeTruthy();
        expect(row.type).not.toBe('');
      }
    },
  );

  it('types, defaults and required flags come from the schema', () => {
    const byName = (type: string) =>
      Object.fromEntries(describeOptions(builtinStages.find((d) => d.type === type)!).map((r) => [r.name, r]));
    const query = byName('products.query');
    expect(query.filter).toMatchObject({ type: 'products.query filter', required: true });
    expect(query.sorting).toMatchObject({ type: 'products.query sorting', required: false });
    expect(query.pageSize).toMatchObject({ type: '10 | 50 | 100 | 250', default: 250, required: false });
    expect(byName('brands.query').filter).toMatchObject({ type: 'brands.query filter', required: false });
    expect(byName('pick').fields).toMatchObject({ type: 'string[]', required: true });
    expect(byName('validate').onInvalid).toMatchObject({ type: '"fail" | "skip" | "dead-letter"', default: 'fail' });
    expect(byName('s3').format).toMatchObject({
      type: outputFormats.map((f) => JSON.stringify(f.name)).join(' | '),
      required: true,
    });
  });
});

describe('stage listings', () => {
  it('the text listing and the Markdown reference name every stage and option', () => {
    const text = formatStageList(builtinStages);
    const markdown = formatStageReference(builtinStages);
    for (const def of builtinStages) {
      expect(text).toContain(`  ${def.type}  ${def.description}`);
      expect(markdown).toContain(`#### \`${def.type}\` (${def.kind})`);
      for (const row of describeOptions(def)) {
        expect(text).toMatch(new RegExp(`\\n      ${row.name}\\??: `));
        expect(markdown).toContain(`| \`${row.name}\` |`);
      }
    }
  });

  it('`stages --json` is the same description, for scripts', async () => {
    const { code, stdout } = await runMain(['stages', '--json']);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual(
      builtinStages.map((d) => ({
        kind: d.kind,
        type: d.type,
        description: d.description,
        options: describeOptions(d),
      })),
    );
    const plain = await runMain(['stages']);
    expect(plain.stdout).toBe(formatStageList(builtinStages));
  });
});
