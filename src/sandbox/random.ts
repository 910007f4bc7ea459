// Seeded pseudo-random numbers for the sandbox. Every generated value comes from
// an Rng seeded by (dataset seed, a salt naming what is drawn, a record index),
// so any single record can be rebuilt on its own, in any order, without
// generating the ones before it: that is what lets the sandbox serve 1M products
// without holding them in memory. Not for cryptography.

/** Mixes 32-bit integers into one well-spread 32-bit value (murmur3 finalizer per step). */
export function hash32(...parts: number[]): number {
  let h = 0x9e3779b9;
  for (const part of parts) {
    // Fold values beyond 32 bits (seeds, timestamps) in two halves.
    const lo = part >>> 0;
    const hi = Math.floor(part / 0x1_0000_0000) >>> 0;
    h = Math.imul(h ^ lo, 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13) ^ hi, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/** A deterministic float in [0, 1) from integers, without building an Rng. */
export function unitFloat(...parts: number[]): number {
  return hash32(...parts) / 0x1_0000_0000;
}

/** mulberry32: small, fast, good enough spread for test data. */
export class Rng {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 0x1_0000_0000;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** An integer in [min, max], both inclusive. */
  between(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  /** Picks by weight: `[[value, weight], ...]`. */
  weighted<T>(entries: readonly (readonly [T, number])[]): T {
    let total = 0;
    for (const [, w] of entries) total += w;
    let r = this.next() * total;
    for (const [value, w] of entries) {
      r -= w;
      if (r < 0) return value;
    }
    return entries[entries.length - 1]![0];
  }

  /** Between `min` and `max` distinct items, in their original order. */
  subset<T>(items: readonly T[], min: number, max: number): T[] {
    const n = Math.min(items.length, this.between(min, max));
    const chosen = new Set<number>();
    while (chosen.size < n) chosen.add(this.int(items.length));
    return [...chosen].sort((a, b) => a - b).map((i) => items[i] as T);
  }

  /** A float with `decimals` digits after the point, in [min, max]. */
  decimal(min: number, max: number, decimals: number): number {
    const f = 10 ** decimals;
    return Math.round((min + this.next() * (max - min)) * f) / f;
  }
}

/** The Rng of one record: the same (seed, salt, index) always gives the same sequence. */
export function rngFor(seed: number, salt: number, index: number): Rng {
  return new Rng(hash32(seed, salt, index));
}
