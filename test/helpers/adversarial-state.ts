// The adversarial API's catalog as it changes, and the event log every change and answer goes
// to. The oracle (adversarial-oracle.ts) reads only that log: what the server did, never what
// a reader did with it.
import {
  type CatalogShape,
  type ProductState,
  type Prng,
  type Status,
  initialCatalog,
  prng,
  productId,
} from './adversarial-catalog.js';

export type ChangeKind = 'create' | 'touch' | 'status' | 'remove' | 'restore';

export interface ChangeEntry {
  kind: ChangeKind;
  id: string;
  /** Server clock, ms. */
  at: number;
  /** The request this change was made before answering (0-based, over every endpoint). */
  beforeRequest: number;
  /** The product after the change. */
  after: ProductState;
}

export interface RequestEntry {
  n: number;
  /** Server clock when answered, ms. */
  at: number;
  endpoint: 'products.query' | 'products.stream' | 'other';
  body: unknown;
  status: number;
  /** The true number of matches. */
  total?: number;
  /** `meta.total` as sent (lower than `total` when it lied, capped at the result window). */
  reportedTotal?: number;
  page?: { no: number; offset: number; size: number };
  /** Ids in the order sent (a stream's repeated id appears twice). */
  ids: string[];
  /** What was adversarial about this answer beyond tie order and churn. */
  lie?: string;
}

export interface EventLog {
  /** Every product at the server's start, removed ones included. */
  initial: ProductState[];
  changes: ChangeEntry[];
  requests: RequestEntry[];
}

/** Changes made before one request is answered; a number draws that many products (seeded). */
export interface ChangeBatch {
  create?: number;
  touch?: number | string[];
  status?: number | string[];
  remove?: number | string[];
  restore?: number | string[];
}

const NEXT_STATUS: Record<Status, Status> = { active: 'inactive', inactive: 'replaced', replaced: 'active' };

export class AdversarialState {
  readonly products = new Map<string, ProductState>();
  readonly log: EventLog;
  /** The request the next changes precede. */
  request = 0;
  readonly #r: Prng;
  readonly #clock: () => number;
  readonly #restoreTouches: boolean;
  readonly #taken = new Set<string>();

  constructor(shape: CatalogShape, seed: number, clock: () => number, restoreTouches = false) {
    this.#clock = clock;
    this.#r = prng(seed * 7 + 3);
    this.#restoreTouches = restoreTouches;
    const initial = initialCatalog(shape, seed, this.nowSec());
    for (const p of initial) {
      this.products.set(p.id, p);
      this.#taken.add(p.id);
    }
    this.log = { initial: initial.map((p) => ({ ...p })), changes: [], requests: [] };
  }

  nowSec(): number {
    return Math.floor(this.#clock() / 1000);
  }

  /** Products in the catalog now (not removed), in creation order. */
  visible(): ProductState[] {
    return [...this.products.values()].filter((p) => !p.removed);
  }

  removedProducts(): ProductState[] {
    return [...this.products.values()].filter((p) => p.removed);
  }

  apply(batch: ChangeBatch): void {
    if (batch.remove !== undefined) this.remove(batch.remove);
    if (batch.restore !== undefined) this.restore(batch.restore);
    if (batch.touch !== undefined) this.touch(batch.touch);
    if (batch.status !== undefined) this.setStatus(batch.status);
    if (batch.create) this.create(batch.create);
  }

  create(count: number): string[] {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const now = this.nowSec();
      const p: ProductState = {
        id: productId(this.#r, this.#taken),
        status: this.#r.next() < 0.8 ? 'active' : 'inactive',
        createdAt: now,
        updatedAt: now,
        removed: false,
      };
      this.products.set(p.id, p);
      this.#record('create', p);
      ids.push(p.id);
    }
    return ids;
  }

  /** A new updatedAt (now): the product moves to the end of a `touchedAt` sorting. */
  touch(which: number | string[]): string[] {
    return this.#each(which, false, (p) => {
      p.updatedAt = this.nowSec();
      return 'touch';
    });
  }

  /** Another status (active -> inactive -> replaced -> active), a change that touches updatedAt too. */
  setStatus(which: number | string[], status?: Status): string[] {
    return this.#each(which, false, (p) => {
      p.status = status ?? NEXT_STATUS[p.status];
      if (p.status === 'replaced') p.replacement = this.visible()[0]?.id ?? p.id;
      else delete p.replacement;
      p.updatedAt = this.nowSec();
      return 'status';
    });
  }

  remove(which: number | string[]): string[] {
    return this.#each(which, false, (p) => {
      p.removed = true;
      return 'remove';
    });
  }

  /** Back with its old createdAt (and old updatedAt unless the server was told restores touch). */
  restore(which: number | string[]): string[] {
    return this.#each(which, true, (p) => {
      p.removed = false;
      if (this.#restoreTouches) p.updatedAt = this.nowSec();
      return 'restore';
    });
  }

  /** Applies `change` to the listed ids, or to `which` products drawn among the visible (or removed) ones. */
  #each(which: number | string[], removed: boolean, change: (p: ProductState) => ChangeKind): string[] {
    const chosen = typeof which === 'number' ? this.#draw(which, removed) : which.map((id) => this.#get(id));
    for (const p of chosen) this.#record(change(p), p);
    return chosen.map((p) => p.id);
  }

  #draw(count: number, removed: boolean): ProductState[] {
    const pool = removed ? this.removedProducts() : this.visible();
    const out: ProductState[] = [];
    for (let i = 0; i < count && pool.length > 0; i++) {
      const at = this.#r.int(pool.length);
      out.push(pool[at]!);
      pool[at] = pool[pool.length - 1]!;
      pool.pop();
    }
    return out;
  }

  #get(id: string): ProductState {
    const p = this.products.get(id);
    if (!p) throw new Error(`adversarial API: no product ${id}`);
    return p;
  }

  #record(kind: ChangeKind, p: ProductState): void {
    this.log.changes.push({ kind, id: p.id, at: this.#clock(), beforeRequest: this.request, after: { ...p } });
  }
}
