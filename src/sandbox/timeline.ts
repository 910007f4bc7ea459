// When things happened in the generated catalog. All times are unix seconds and
// fixed relative to a "generation epoch" (never Date.now()), so the same seed
// gives the same bytes on every machine and every day. Only `touch` brings in
// the real clock. This module also lays out products' createdAt, including the
// "bulk import" instants where hundreds of products share one timestamp: the
// case that makes createdAt slicing past the 10000 cap hard.
import { MAX_REACHABLE_RESULTS } from '../catalog/index.js';
import { Rng, rngFor } from './random.js';

/** 2026-01-01T00:00:00Z: every generated updatedAt lies before it. */
export const GENERATION_EPOCH = 1_767_225_600;
/** 2015-01-01T00:00:00Z: the oldest product. */
export const CATALOG_START = 1_420_070_400;
/** 2025-07-01T00:00:00Z: the newest product. */
export const CATALOG_END = 1_751_328_000;
const DAY = 86_400;

export const SALT = {
  createdAt: 11,
  bulk: 12,
  product: 13,
  productRecord: 14,
  media: 15,
  reference: 16,
  corrections: 17,
  news: 18,
  invalid: 19,
  touch: 20,
  mediaRecord: 21,
  updatedAt: 22,
  faults: 23,
  live: 24,
  liveMedia: 25,
  liveReference: 26,
  liveSecondLook: 27,
} as const;

/** A time in [from, to] (integer seconds). */
export function timeBetween(rng: Rng, from: number, to: number): number {
  return to <= from ? from : from + rng.int(to - from + 1);
}

/** A later time for `updatedAt`: a third of records were never updated. */
export function updatedAfter(rng: Rng, createdAt: number): number {
  return rng.chance(0.3) ? createdAt : timeBetween(rng, createdAt, GENERATION_EPOCH - 1);
}

/** A contiguous range of product indexes that share one createdAt instant. */
export interface BulkImport {
  start: number;
  size: number;
  at: number;
  /** The group placed so that, in createdAt order, the result-window boundary falls inside it. */
  straddlesWindow?: boolean;
}

export interface CreatedAtLayout {
  createdAt: Uint32Array;
  bulkImports: BulkImport[];
}

/**
 * createdAt of every product. Most follow index order with a few days of
 * jitter (ids are handed out roughly in creation order), 15% are backdated
 * legacy imports anywhere in the range, and some contiguous runs were bulk
 * imported at one instant. `bulkInstant` adds one run of exactly that many
 * products at one instant (to test more than 10000 at the same createdAt).
 */
export function layOutCreatedAt(
  seed: number,
  count: number,
  options: { bulkInstant?: number; resultWindow?: number } = {},
): CreatedAtLayout {
  const createdAt = new Uint32Array(count);
  const span = CATALOG_END - CATALOG_START;
  for (let i = 0; i < count; i++) {
    const rng = rngFor(seed, SALT.createdAt, i);
    let t: number;
    if (rng.chance(0.15)) t = CATALOG_START + rng.int(span);
    else t = Math.round(CATALOG_START + (span * (i + rng.next())) / count + (rng.next() - 0.5) * 6 * DAY);
    createdAt[i] = Math.min(CATALOG_END, Math.max(CATALOG_START, t));
  }
  const bulkImports: BulkImport[] = [];
  const rng = rngFor(seed, SALT.bulk, 0);
  const maxSize = Math.floor(count / 12);
  if (maxSize >= 2) {
    // Regular bulk imports: one per segment of the id range, so they never overlap.
    const groups = 3 + Math.floor(count / 250_000);
    const segment = Math.floor(count / (groups + 1));
    for (let g = 0; g < groups; g++) {
      const size = Math.min(maxSize, segment - 1, rng.between(200, 2000));
      if (size < 2) continue;
      const start = g * segment + rng.int(Math.max(1, segment - size));
      bulkImports.push(assign(createdAt, start, size, hourOf(createdAt[start]!)));
    }
    // The straddling import sits in the last segment and takes the instant found
    // at the window boundary rank, so a createdAt-sorted query crosses it there.
    const size = Math.min(maxSize, segment - 1, rng.between(400, 1200));
    if (size >= 2) {
      const start = groups * segment + rng.int(Math.max(1, count - groups * segment - size));
      // With fewer products than the window, aim at the middle instead.
      const cap = options.resultWindow ?? MAX_REACHABLE_RESULTS;
      const window = count > cap ? cap : Math.floor(count / 2);
      const sorted = new Uint32Array(count - size);
      sorted.set(createdAt.subarray(0, start));
      sorted.set(createdAt.subarray(start + size), start);
      sorted.sort();
      const rank = Math.max(0, Math.min(sorted.length - 1, window - Math.floor(size / 2)));
      bulkImports.push({ ...assign(createdAt, start, size, sorted[rank]!), straddlesWindow: true });
    }
  }
  const n = Math.min(count, Math.max(0, Math.floor(options.bulkInstant ?? 0)));
  if (n > 0) {
    const start = Math.floor((count - n) / 3);
    bulkImports.push(assign(createdAt, start, n, hourOf(createdAt[start]!)));
  }
  return { createdAt, bulkImports };
}

function hourOf(t: number): number {
  return t - (t % 3600);
}

function assign(createdAt: Uint32Array, start: number, size: number, at: number): BulkImport {
  createdAt.fill(at, start, start + size);
  return { start, size, at };
}
