// How many page requests a source keeps on their way (issue 40): a budget of R requests per second
// is used only while about R x latency requests are on the network and each key has one more
// waiting for its next slot. A `concurrency` fixed in advance (the connection's, 2 per key in
// docs/performance.md) is right for one latency only: on a slow or busy service the keys idled
// with every request on the wire (4 keys at 0.6 s per answer kept 8 on their way, 14 of 33 a
// second). Asking for more does not load the service more: the keys' limiters decide the rate,
// so the requests the service holds at once stay R x latency however many wait at our side.
import type { CatalogClient } from '../client/index.js';

/** What the estimate reads from the client (CatalogClient implements it). */
export type BudgetView = Pick<CatalogClient, 'budgetPerMinute' | 'keyCount' | 'latencyMs' | 'connections'>;

/** Headroom over rate x latency: answers vary in time, and a slot passes when none is waiting. */
const HEADROOM = 1.25;

/**
 * Requests to keep on their way: `configured` at least; more when the budget at the latency seen
 * so far needs more, up to the client's sockets plus one waiting per key and to `most` (what the
 * source's memory bound leaves). Unlimited budgets, and runs before their first answer, keep
 * `configured`.
 */
export function budgetInFlight(client: BudgetView, configured: number, most = Infinity): number {
  const { budgetPerMinute, keyCount, latencyMs, connections } = client;
  if (!Number.isFinite(budgetPerMinute) || latencyMs === undefined) return configured;
  const onTheWire = Math.ceil((budgetPerMinute / 60_000) * latencyMs * HEADROOM);
  return Math.max(configured, Math.floor(Math.min(onTheWire + keyCount, connections + keyCount, most)));
}

/** Fewest pages a lane is cut to: each lane costs about half a request more (its last page is not full). */
const MIN_LANE_PAGES = 2;

/**
 * Pages a lane after the head is cut to (createdat-split.ts), `most` unless the budget needs
 * shorter ones. Lanes are emitted in order and each reads one page after the other: while the
 * head reads its P pages (P x latency) the lanes after it fetch rate x P x latency pages, which
 * must fit in the `held` pages they may keep, or the keys wait for the head. So P is at most
 * held / (rate x latency): 8 at the live budget, fewer on a slow service with several keys, where
 * the half request a shorter lane costs buys the budget's rate (never under MIN_LANE_PAGES).
 */
export function lanePages(client: BudgetView, held: number, most: number): number {
  const { budgetPerMinute, latencyMs } = client;
  if (!Number.isFinite(budgetPerMinute) || latencyMs === undefined) return most;
  const perLatency = (budgetPerMinute / 60_000) * latencyMs;
  return Math.min(most, Math.max(MIN_LANE_PAGES, Math.floor(held / Math.max(1, perLatency))));
}
