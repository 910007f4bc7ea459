// A catalog that changes while it is read, on demand: products created, removed,
// updated or given another status, either just before a chosen request is
// answered (page N of products.query, the resumed request of a cut stream) or
// as steady churn at a rate. Pipelines are tested against it the way the live
// service behaves all day (docs: reading a changing catalog). Which products
// change is drawn from the dataset's seed and a counter, so a schedule replays
// the same way; how many churn changes fall before a request follows the clock.
import { z } from 'zod';
import { unitFloat } from './random.js';

const count = z.number().int().nonnegative().max(100_000);
const weight = z.number().nonnegative();

/** One kind of each change: how many, or (churn) its share. */
const ChangeKinds = {
  /** Products created now: they enter the catalog with createdAt = updatedAt = now. */
  add: count.optional(),
  /** Products removed (deleted): they leave every result. */
  remove: count.optional(),
  /** Products updated: updatedAt moves to now. */
  touch: count.optional(),
  /** Products whose status changes (active <-> inactive); updatedAt and statusTouchedAt move to now. */
  status: count.optional(),
};

export const SandboxChangesSchema = z.strictObject({
  /** Changes made just before a matching request is answered, each once. */
  at: z
    .array(
      z.strictObject({
        /** The endpoint (`products.query`, `products.stream`, ...); default: any API request. */
        endpoint: z.string().optional(),
        /** The request's number among that endpoint's (0-based; a cut stream's resume is request 1). */
        request: z.number().int().nonnegative().optional(),
        /** The request's `page.no`. */
        page: z.number().int().nonnegative().optional(),
        ...ChangeKinds,
      }),
    )
    .optional(),
  /** Steady churn: this many changes per second, made as requests arrive, split by the weights (default: touch only). */
  churn: z
    .strictObject({
      perSecond: z.number().positive().max(10_000),
      add: weight.optional(),
      remove: weight.optional(),
      touch: weight.optional(),
      status: weight.optional(),
    })
    .optional(),
});
export type SandboxChanges = z.input<typeof SandboxChangesSchema>;
type Changes = z.output<typeof SandboxChangesSchema>;

/** How many products of each kind to change now. */
export interface ChangeCounts {
  add: number;
  remove: number;
  touch: number;
  status: number;
}

const KINDS = ['add', 'remove', 'touch', 'status'] as const;
/**
 * Churn changes made before one request at most. After a long idle the clock owes many (an hour
 * at 10,000 per second is 36 million draws, and it was all paid by the next request, blocking
 * every user of a shared sandbox): the rest is made before the requests that follow.
 */
export const MAX_CHURN_PER_REQUEST = 10_000;
const CHURN_SALT = 0x63687572;

export class ChangeSchedule {
  #changes: Changes = {};
  #fired = new Set<number>();
  #requests = new Map<string, number>();
  #churnStarted = 0;
  #churnMade = 0;
  #draws = 0;

  constructor(
    private readonly seed: number,
    changes: SandboxChanges = {},
    private readonly now: () => number = () => performance.now(),
  ) {
    this.set(changes);
  }

  get config(): Changes {
    return this.#changes;
  }

  /** Replaces the schedule; request numbers and the churn clock start again. */
  set(changes: SandboxChanges): void {
    this.#changes = SandboxChangesSchema.parse(changes);
    this.#fired.clear();
    this.#requests.clear();
    this.#churnStarted = this.now();
    this.#churnMade = 0;
  }

  /** What to change before this API request is answered. */
  due(endpoint: string, body: unknown): ChangeCounts {
    const n = this.#requests.get(endpoint) ?? 0;
    this.#requests.set(endpoint, n + 1);
    const out: ChangeCounts = { add: 0, remove: 0, touch: 0, status: 0 };
    const pageNo = (body as { page?: { no?: unknown } } | undefined)?.page?.no;
    (this.#changes.at ?? []).forEach((c, k) => {
      if (this.#fired.has(k)) return;
      if (c.endpoint !== undefined && c.endpoint !== endpoint) return;
      if (c.request !== undefined && c.request !== n) return;
      if (c.page !== undefined && c.page !== pageNo) return;
      this.#fired.add(k);
      for (const kind of KINDS) out[kind] += c[kind] ?? 0;
    });
    this.#churn(out);
    return out;
  }

  /** Churn draws made so far (each picks the kind of one change); tests bound the catch-up with it. */
  get churnDraws(): number {
    return this.#draws;
  }

  /**
   * Adds the churn owed by the clock to `out`, at most MAX_CHURN_PER_REQUEST changes: what is owed
   * past it stays owed to the next requests, drawn in the same order (change k always has draw k),
   * so the changes and their order are those of the unbounded model, only spread over requests.
   */
  #churn(out: ChangeCounts): void {
    const churn = this.#changes.churn;
    if (!churn) return;
    const owed = Math.floor(((this.now() - this.#churnStarted) / 1000) * churn.perSecond) - this.#churnMade;
    const weights = KINDS.map((kind) => churn[kind] ?? 0);
    const sum = weights.reduce((a, b) => a + b, 0);
    for (let k = 0; k < Math.min(owed, MAX_CHURN_PER_REQUEST); k++) {
      this.#draws++;
      let draw = unitFloat(this.seed, CHURN_SALT, this.#churnMade++, 0) * (sum || 1);
      const kind = sum === 0 ? 'touch' : (KINDS.find((_, i) => (draw -= weights[i]!) < 0) ?? 'touch');
      out[kind]++;
    }
  }
}
