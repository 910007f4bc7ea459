// Bench: the default transform chain (validate + flatten-locales +
// select-media-format + normalize-codes + pick) over N sandbox products,
// piped stage by stage and fused into one Transform, beside a hand-written
// plain loop producing the same output records from the same array.
// Target: the chain reaches at least half the loop's records/s.
//
//   npx tsc -p tsconfig.json && node dist/test/bench/transforms.js [count]
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { Product, type FieldInfo } from '../../src/catalog/index.js';
import { Dataset } from '../../src/sandbox/index.js';
import { fieldInfoOf } from '../../src/transforms/resource.js';
import { RecordTransform } from '../../src/transforms/index.js';
import { flattenLocales, normalizeCodes, pick, selectMediaFormat, validate } from '../../src/pipeline/code-api.js';
import { testContext } from '../helpers/stage-context.js';

export interface TransformsBenchResult {
  records: number;
  chainRecordsPerSec: number;
  fusedRecordsPerSec: number;
  loopRecordsPerSec: number;
  /** chain / loop: the target is >= 0.5. */
  ratio: number;
  fusedRatio: number;
}

const LOCALES = ['en', 'nl', 'fr'] as const;
const PICKED = [
  'id',
  'status',
  'name',
  'name_en',
  'name_nl',
  'name_fr',
  'seoName_en',
  'brands',
  'photo_url',
  'photo_format',
  'frontal_url',
  'frontal_format',
  'ean',
  'eanGtin13',
  'eanGtin14',
  'publicPrice',
  'meta',
];

function stages(): RecordTransform[] {
  const ctx = testContext({ source: { type: 'products.query', resource: 'product', endpoint: 'products.query' } });
  return [
    validate({ onInvalid: 'dead-letter' }, ctx),
    flattenLocales({ locales: [...LOCALES], fallback: [...LOCALES] }, ctx),
    selectMediaFormat({ formats: ['largeWebp', 'large'] }, ctx),
    normalizeCodes({}, ctx),
    pick({ fields: PICKED }, ctx),
  ];
}

// ---------------------------------------------------------------------------
// The hand-written loop: the same work (schema check, unknown-field check,
// every localized field flattened, media chosen, every code padded, pick) in
// one pass per product, with no stage boundaries and no intermediate copies.

type Rec = Record<string, any>;

/** Whether `v` has a field the schema does not declare (what validate's unknownFields: report looks for). */
function hasUnknown(info: FieldInfo, v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return false;
  if (info.kind === 'object' && info.fields && Object.keys(info.fields).length > 0 && !Array.isArray(v)) {
    for (const k in v as Rec) {
      const f = info.fields[k];
      if (!f || !Object.hasOwn(info.fields, k)) return true;
      if ((f.kind === 'object' || f.kind === 'array') && hasUnknown(f, (v as Rec)[k])) return true;
    }
  } else if (info.kind === 'array' && info.element && Array.isArray(v)) {
    for (const el of v) if (hasUnknown(info.element, el)) return true;
  }
  return false;
}

function text(localized: Rec | undefined, locale: string): unknown {
  const s = localized?.[locale];
  return s === undefined ? null : s;
}

function firstText(localized: Rec | undefined): unknown {
  if (!localized) return null;
  for (const l of LOCALES) {
    const s = localized[l];
    if (typeof s === 'string' && s !== '') return s;
  }
  return null;
}

function code(v: unknown, digits: number, padTo: number): string | null | undefined {
  if (v === undefined || v === null) return v;
  const s =
    typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
      ? String(v)
      : typeof v === 'string' && /^\d+$/.test(v)
        ? v
        : undefined;
  if (s === undefined || s.length > digits) throw new Error(`bad code ${String(v)}`);
  return s.length >= padTo ? s : s.padStart(padTo, '0');
}

function chooseImage(list: Rec[] | undefined): [string | null, string | null] {
  let best = Infinity;
  let url: string | null = null;
  let format: string | null = null;
  for (const m of list ?? []) {
    const f = m?.formats;
    if (typeof f !== 'object' || f === null) continue;
    const order = typeof m.displayOrder === 'number' ? m.displayOrder : Number.MAX_SAFE_INTEGER;
    if (order >= best) continue;
    const webp = f.largeWebp;
    const jpeg = f.large || f.largeJpg || f.largeJpeg;
    if (webp) [url, format] = [webp, 'largeWebp'];
    else if (jpeg) [url, format] = [jpeg, 'large'];
    else continue;
    best = order;
  }
  return [url, format];
}

/** Where the product's localized fields are (what flatten-locales finds in the schema), written out by hand. */
interface LocalizedPlan {
  localized?: string[];
  lists?: Record<string, LocalizedPlan>;
}
const named: LocalizedPlan = { localized: ['name'] };
const PRODUCT_LOCALIZED: LocalizedPlan = {
  localized: ['name', 'seoName'],
  lists: {
    publicCategories: named,
    catalogCategories: { localized: ['name', 'description'] },
    brands: named,
    productFamily: named,
    dietaryRestrictions: named,
    colors: named,
    organizations: named,
    activeIngredients: named,
    allowedSpecies: named,
    photos: { lists: { organizations: named } },
    links: { lists: { organizations: named } },
    descriptions: { localized: ['content'] },
    leaflets: { localized: ['url'] },
  },
};

/** One pass: localized objects to columns (every localized field, like the stage), the rest copied. */
function flattenObject(o: Rec, plan: LocalizedPlan): Rec {
  const out: Rec = {};
  const localized = plan.localized ?? [];
  const lists = plan.lists ?? {};
  for (const k in o) {
    const v = o[k];
    if (localized.includes(k)) {
      out[`${k}_en`] = text(v, 'en');
      out[`${k}_nl`] = text(v, 'nl');
      out[`${k}_fr`] = text(v, 'fr');
      out[k] = firstText(v);
    } else if (lists[k] && Array.isArray(v)) {
      out[k] = v.map((el: unknown) =>
        typeof el === 'object' && el !== null ? flattenObject(el as Rec, lists[k]!) : el,
      );
    } else out[k] = v;
  }
  for (const k of localized) {
    if (!(k in o)) {
      out[`${k}_en`] = out[`${k}_nl`] = out[`${k}_fr`] = out[k] = null;
    }
  }
  return out;
}

function loopOne(p: Rec, info: FieldInfo): Rec {
  const parsed = Product.safeParse(p);
  if (!parsed.success) throw new Error(`invalid product ${p.id}`);
  if (hasUnknown(info, p)) _unknownSeen++;
  const f = flattenObject(p, PRODUCT_LOCALIZED);
  [f.photo_url, f.photo_format] = chooseImage(p.photos);
  [f.frontal_url, f.frontal_format] = chooseImage(p.frontals);
  if (Array.isArray(p.ean)) f.ean = p.ean.map((e: unknown) => code(e, 14, 13));
  for (const [field, digits] of [
    ['eanGtin8', 8],
    ['eanGtin12', 12],
    ['eanGtin13', 13],
    ['eanGtin14', 14],
  ] as const) {
    if (p[field] !== undefined) f[field] = code(p[field], digits, digits);
  }
  const out: Rec = {};
  for (const k of PICKED) out[k] = f[k] === undefined ? null : f[k];
  return out;
}

// Counted only so that the hand-written loop does the same unknown-field check as the stages.
let _unknownSeen = 0;

// ---------------------------------------------------------------------------

const SAMPLE = 2000;

function sink(sample: Rec[]): Writable {
  let n = 0;
  return new Writable({
    objectMode: true,
    highWaterMark: 64,
    write(record, _enc, cb) {
      if (n++ < SAMPLE) sample.push(record);
      cb();
    },
  });
}

async function timeChain(products: readonly Rec[], fused: boolean, sample: Rec[] = []): Promise<number> {
  const chain = stages();
  const t = process.hrtime.bigint();
  await pipeline([
    Readable.from(products),
    ...(fused ? [RecordTransform.fuse(chain)] : chain),
    sink(sample),
  ] as unknown as readonly NodeJS.ReadWriteStream[]);
  const seconds = Number(process.hrtime.bigint() - t) / 1e9;
  if (chain[4]!.stats.out !== products.length)
    throw new Error(`chain emitted ${chain[4]!.stats.out} of ${products.length}`);
  return products.length / seconds;
}

function timeLoop(products: readonly Rec[], sample: Rec[] = []): number {
  const info = fieldInfoOf(Product);
  const t = process.hrtime.bigint();
  let n = 0;
  for (const p of products) {
    const out = loopOne(p, info);
    if (n++ < SAMPLE) sample.push(out);
  }
  const seconds = Number(process.hrtime.bigint() - t) / 1e9;
  return products.length / seconds;
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** Generates `count` sandbox products, checks the three variants agree, and times each (best of `rounds`). */
export async function benchTransforms(count = 200_000, rounds = 2): Promise<TransformsBenchResult> {
  const dataset = new Dataset({ products: count, seed: 7 });
  const products: Rec[] = new Array(count);
  for (let i = 0; i < count; i++) products[i] = dataset.product(i);

  // same output, and warm-up
  const warm = products.slice(0, Math.min(count, 20_000));
  const fromChain: Rec[] = [];
  const fromFused: Rec[] = [];
  const fromLoop: Rec[] = [];
  await timeChain(warm, false, fromChain);
  await timeChain(warm, true, fromFused);
  timeLoop(warm, fromLoop);
  for (let i = 0; i < fromLoop.length; i++) {
    if (!isDeepStrictEqual(fromChain[i], fromLoop[i]) || !isDeepStrictEqual(fromFused[i], fromLoop[i])) {
      throw new Error(
        `bench variants disagree on product ${i}: ${JSON.stringify(fromChain[i])} vs ${JSON.stringify(fromLoop[i])}`,
      );
    }
  }

  let chain = 0;
  let fused = 0;
  let loop = 0;
  for (let r = 0; r < rounds; r++) {
    gc();
    loop = Math.max(loop, timeLoop(products));
    gc();
    chain = Math.max(chain, await timeChain(products, false));
    gc();
    fused = Math.max(fused, await timeChain(products, true));
  }
  return {
    records: count,
    chainRecordsPerSec: Math.round(chain),
    fusedRecordsPerSec: Math.round(fused),
    loopRecordsPerSec: Math.round(loop),
    ratio: Math.round((chain / loop) * 1000) / 1000,
    fusedRatio: Math.round((fused / loop) * 1000) / 1000,
  };
}

export function formatRow(r: TransformsBenchResult): string {
  const n = (v: number) => v.toLocaleString('en-US');
  return `transforms  ${n(r.records)} products  chain ${n(r.chainRecordsPerSec)}/s  fused ${n(r.fusedRecordsPerSec)}/s  loop ${n(r.loopRecordsPerSec)}/s  ratio ${r.ratio} (fused ${r.fusedRatio}; target >= 0.5)`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const count = process.argv[2] ? Number(process.argv[2]) : 200_000;
  benchTransforms(count).then(
    (r) => console.log(formatRow(r)),
    (e) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
}
