// Product-like records for the sink tests (shaped like spec §2.1 after the
// validate/normalize transforms): codes as zero-padded strings, unix-second
// timestamps, localized names, lists with empty and null cases, Unicode, nulls,
// integers above 2^53 as BigInt. Deterministic in `i`.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { onTestFinished } from 'vitest';
import { z } from 'zod';

export interface ProductRecord {
  [key: string]: unknown;
  id: string;
  status: string;
  name: { en: string; nl: string | null };
  eanGtin13: string;
  ean: string[];
  publicPrice: number;
  vat: number;
  requiresLegalText: boolean;
  isANutritionSupplement: boolean | null;
  atcCategory: string[] | null;
  meta: { createdAt: number; updatedAt: number };
  serial: bigint;
}

const STATUSES = ['active', 'inactive', 'replaced', 'no_selection'];
const TERPENES = ['β-Caryophyllene', 'Δ8-THC', 'Limonene', 'Myrcène', '大麻'];

export function productRecord(i: number): ProductRecord {
  // Every fifth code starts with "00", like real EAN/GTIN codes.
  const ean = String((i * 7_919_993) % 10 ** (i % 5 === 0 ? 11 : 13)).padStart(13, '0');
  return {
    id: `P${String(i).padStart(7, '0')}`,
    status: STATUSES[i % STATUSES.length]!,
    name: { en: `${TERPENES[i % TERPENES.length]} drops ${i}`, nl: i % 4 === 0 ? null : `Druppels ${i}` },
    eanGtin13: ean,
    ean: i % 6 === 0 ? [] : [ean, `0${ean.slice(1)}`],
    publicPrice: 100 + (i % 9_973),
    vat: i % 2 === 0 ? 21 : 5.5,
    requiresLegalText: i % 3 === 0,
    isANutritionSupplement: i % 7 === 0 ? null : i % 2 === 1,
    atcCategory: i % 8 === 0 ? null : i % 8 === 1 ? [] : ['N02BE01', TERPENES[i % TERPENES.length]!],
    meta: { createdAt: 1_600_000_000 + i, updatedAt: 1_700_000_000 + (i % 86_400) },
    serial: 2n ** 60n + BigInt(i) * 1_000_003n,
  };
}

/** The test products' declaration: the contract their columns come from (as a resource schema is for a pipeline). */
export const PRODUCT_HINT = z.object({
  id: z.string(),
  status: z.string(),
  name: z.object({ en: z.string(), nl: z.string().nullable() }),
  eanGtin13: z.string(),
  ean: z.array(z.string()),
  publicPrice: z.int(),
  vat: z.number(),
  requiresLegalText: z.boolean(),
  isANutritionSupplement: z.boolean().nullable(),
  atcCategory: z.array(z.string()).nullable(),
  meta: z.object({ createdAt: z.int(), updatedAt: z.int() }),
  serial: z.bigint(),
});

export function* productRecords(count: number, from = 0): Generator<ProductRecord> {
  for (let i = from; i < from + count; i++) yield productRecord(i);
}

/**
 * A readable that emits records in batches of random sizes (1..maxBatch) with a
 * macrotask between batches, so sinks see irregular write boundaries.
 */
export function randomBatches<T>(records: Iterable<T>, maxBatch: number, seed = 42): Readable {
  let state = seed;
  const random = () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
  const iterator = records[Symbol.iterator]();
  return new Readable({
    objectMode: true,
    highWaterMark: 16,
    read() {
      const size = 1 + Math.floor(random() * maxBatch);
      setImmediate(() => {
        for (let n = 0; n < size; n++) {
          const next = iterator.next();
          if (next.done) {
            this.push(null);
            return;
          }
          this.push(next.value);
        }
      });
    },
  });
}

/** A fresh directory under os.tmpdir(), removed when the current test finishes. */
export async function tempDir(prefix = 'sinks-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}
