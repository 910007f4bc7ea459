// The adversarial API's catalog: products as the spec describes them (catalog-api-v4.md §2.1,
// §4.2) and nothing the toolkit's own sandbox promises. Written from the spec and the live facts
// alone; it shares no code with src/sandbox (that one answers as our code expects; this one must
// not). Everything here is pure and seeded: the HTTP server (adversarial-api.ts) owns the clock.
//
// What the spec leaves open is decided against the reader:
// - ties in any sorting but `id` come in an order drawn anew for every request (no tie order is
//   promised; a search engine's replicas differ);
// - a removed product leaves every result; a restored one comes back with its old createdAt and,
//   unless told otherwise, its old updatedAt (nothing says a restore touches it), so it can enter
//   even a result bounded by `updatedSince: {until}`;
// - a change lands at any moment, so between any two answers.

/** Statuses the products filter accepts (spec §3: `no_selection` exists but cannot be filtered). */
export const FILTER_STATUSES = ['active', 'inactive', 'replaced'] as const;
export type Status = (typeof FILTER_STATUSES)[number];

export interface ProductState {
  id: string;
  status: Status;
  /** Unix seconds, never changes (a restore keeps it). */
  createdAt: number;
  /** Unix seconds: the `touchedAt` sorting and the `updatedSince` filter read it. */
  updatedAt: number;
  removed: boolean;
  /** Successor of a replaced product (spec §3 rule 1). */
  replacement?: string;
}

/** mulberry32: small, seeded, good enough for schedules and tie orders. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!,
  };
}
export type Prng = ReturnType<typeof prng>;

export interface CatalogShape {
  /** Products in the catalog at the start. */
  products: number;
  /** Products already removed at the start (restorable, their createdAt among the others'). */
  removed?: number;
  /** Products sharing each createdAt second (default 1). */
  sameSecond?: number;
  /** Distinct updatedAt seconds the products spread over (default products / 4: ties in touchedAt). */
  updatedSeconds?: number;
  /** Share of products with status active (default 0.7; the rest inactive or replaced). */
  activeShare?: number;
}

/** A product id as the live service writes them: `M` and upper-case hex (live facts B.22). */
export function productId(r: Prng, taken: Set<string>): string {
  for (;;) {
    const id = `M${r.int(0x10000000).toString(16).toUpperCase().padStart(7, '0')}${r.int(16).toString(16).toUpperCase()}`;
    if (!taken.has(id)) {
      taken.add(id);
      return id;
    }
  }
}

/** The catalog at the start: createdAt in creation order ending a day before `nowSec`. */
export function initialCatalog(shape: CatalogShape, seed: number, nowSec: number): ProductState[] {
  const r = prng(seed * 31 + 7);
  const total = shape.products + (shape.removed ?? 0);
  const same = Math.max(1, shape.sameSecond ?? 1);
  const seconds = Math.ceil(total / same);
  const base = nowSec - 86_400 - seconds * 2;
  const updatedSeconds = Math.max(1, shape.updatedSeconds ?? Math.ceil(total / 4));
  const taken = new Set<string>();
  const out: ProductState[] = [];
  for (let i = 0; i < total; i++) {
    const createdAt = base + Math.floor(i / same) * 2;
    const updatedAt = Math.max(createdAt, nowSec - 3600 - updatedSeconds + r.int(updatedSeconds));
    out.push({
      id: productId(r, taken),
      status: drawStatus(r, shape.activeShare),
      createdAt,
      updatedAt,
      removed: false,
    });
  }
  // The removed ones are spread among the others (a restore comes back in the middle of a sorting).
  const order = out.map((_, i) => i);
  shuffle(order, r);
  for (const i of order.slice(0, shape.removed ?? 0)) out[i]!.removed = true;
  for (const p of out) if (p.status === 'replaced') p.replacement = out[r.int(out.length)]!.id;
  return out;
}

function drawStatus(r: Prng, activeShare = 0.7): Status {
  const x = r.next();
  if (x < activeShare) return 'active';
  return x < activeShare + (1 - activeShare) / 2 ? 'inactive' : 'replaced';
}

export function shuffle<T>(xs: T[], r: Prng): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = r.int(i + 1);
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

/** The record a query or stream sends for a product: minimal, valid for the project's schema. */
export function productRecord(p: ProductState): Record<string, unknown> {
  return {
    id: p.id,
    status: p.status,
    ...(p.status === 'replaced' ? { replacement: p.replacement ?? p.id } : {}),
    name: { en: `Product ${p.id}` },
    requiresLegalText: false,
    deleted: false,
    meta: { createdAt: p.createdAt, updatedAt: p.updatedAt },
  };
}
