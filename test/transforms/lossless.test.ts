// The lossless property over random records in every profile (spec-shaped, and au/be/fr
// live-shaped; seeded): every leaf value of the input is in the output, under its new name where
// a transform renames, unless a stage's documented purpose removes it (test/helpers/lossless.ts).
// Chains cover every transform type of src/transforms but custom (user code): validate,
// flatten-locales, select-media-format, normalize-codes, flatten, rename, extract, drop, pick,
// explode, dedupe. The records also all validate: zero dead letters.
import { describe, expect, it } from 'vitest';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { map } from '../../src/transforms/index.js';
import { lostLeaves, type TransformSpec } from '../helpers/lossless.js';
import { PROFILES, PROFILE_LOCALES, randomProducts } from '../helpers/random-records.js';
import { context, memorySinks, run } from './support.js';

const SEED = 20261123;
const COUNT = 150;

async function runChain(records: readonly object[], specs: readonly TransformSpec[]) {
  const sinks = memorySinks();
  const ctx = context({ stages: [sinks.def] });
  const registry = createRegistry();
  const stages = specs.map((spec, i) =>
    registry.create<NodeJS.ReadWriteStream>('transform', spec, ctx, `transforms[${i}]`),
  );
  const out = await run(records, ...stages);
  return { out, deadLetters: sinks.made.flatMap((s) => s.records) };
}

const core = (locales: readonly string[]): TransformSpec[] => [
  { type: 'validate', onInvalid: 'dead-letter', deadLetter: { type: 'jsonl', path: 'out/rejected.jsonl' } },
  { type: 'flatten-locales', locales: [...locales], fallback: [...locales] },
  { type: 'select-media-format' },
  { type: 'normalize-codes', onInvalid: 'dead-letter', deadLetter: { type: 'jsonl', path: 'out/codes.jsonl' } },
];

const chains: Record<string, (locales: readonly string[]) => TransformSpec[]> = {
  core,
  'core, then flatten, rename, extract, drop, dedupe': (locales) => [
    ...core(locales),
    { type: 'flatten' },
    { type: 'rename', fields: { [`name_${locales[0]}`]: 'title', meta_updatedAt: 'updated' } },
    { type: 'extract', columns: { brand_ids: 'brands[].id', first_ean: { path: 'ean[]', first: true } } },
    { type: 'drop', fields: ['descriptions', 'publicCategories[].parent'] },
    { type: 'dedupe' },
  ],
  'flatten-locales keeping the original, select-media-format without, then pick': (locales) => [
    { type: 'flatten-locales', locales: [locales[0]], keepOriginal: true },
    { type: 'select-media-format', select: 'all', keepOriginal: false, fallback: 'any' },
    {
      type: 'pick',
      fields: ['id', 'status', 'name', 'brands', 'organizations', 'photo_urls', 'frontal_urls', 'meta.updatedAt'],
    },
  ],
  'explode photos': () => [{ type: 'explode', field: 'photos', carry: { productStatus: 'status' } }],
};

describe('lossless: every input value reaches the output', () => {
  for (const profile of PROFILES) {
    for (const [name, chain] of Object.entries(chains)) {
      it(`${profile}: ${name}`, async () => {
        const input = randomProducts(SEED + PROFILES.indexOf(profile), profile, COUNT);
        const specs = chain(PROFILE_LOCALES[profile]);
        const { out, deadLetters } = await runChain(input, specs);
        expect(deadLetters.map((l) => [l.id, l.issues])).toEqual([]);
        const explode = specs.find((s) => s.type === 'explode');
        const idOf = explode
          ? (r: Record<string, unknown>, side: 'input' | 'output') => (side === 'input' ? r.id : r.productId)
          : undefined;
        expect(lostLeaves(input, out, specs, { idOf })).toEqual([]);
        if (!explode) expect(out).toHaveLength(COUNT);
      });
    }
  }
});

describe('lostLeaves', () => {
  it('names what a lossy stage loses, and leaves out dead letters and documented removals', async () => {
    const input = randomProducts(SEED, 'be', 20);
    // a stage that silently nulls brand names, as flatten-locales once did with plain strings
    const lossy = map((r: any) => ({ ...r, brands: r.brands.map((b: any) => ({ ...b, name: null })) }), context());
    const out = await run(input, lossy);
    const lost = lostLeaves(input, out, [{ type: 'custom' }]);
    const brandLeaves = input.flatMap((p: any) =>
      p.brands.flatMap((b: any) => (typeof b.name === 'string' ? [b.name] : Object.values(b.name))),
    );
    expect(lost.map((l) => l.value).sort()).toEqual(brandLeaves.sort());
    expect(new Set(lost.map((l) => l.path.replace(/\.(nl|fr|en|de)$/, '')))).toEqual(new Set(['brands[0].name']));
    // the same loss is not reported for a dead-lettered record, nor when a drop stage removes the field
    expect(lostLeaves(input, out, [{ type: 'custom' }], { deadLettered: input })).toEqual([]);
    expect(lostLeaves(input, out, [{ type: 'drop', fields: ['brands[].name'] }])).toEqual([]);
  });

  it('finds a value moved to another list position lost (positions must match)', () => {
    const input = [
      {
        id: 'A',
        brands: [
          { id: 1, name: 'One' },
          { id: 2, name: 'Two' },
        ],
      },
    ];
    const swapped = [
      {
        id: 'A',
        brands: [
          { id: 1, name: 'Two' },
          { id: 2, name: 'One' },
        ],
      },
    ];
    expect(lostLeaves(input, swapped, []).map((l) => l.path)).toEqual(['brands[0].name', 'brands[1].name']);
  });
});
