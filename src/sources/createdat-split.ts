// Splitting a createdAt read into lanes (createdat-query.ts), so that `concurrency` requests can
// be on their way at once: lanes read at the same time can only be pages of different createdAt
// ranges. Where to cut is an estimate; a wrong one costs time, never exactness: the lanes cover
// what is left without gap or overlap whatever the cuts, and a lane that finishes early takes
// half of the largest one left (`rebalance`).
import type { CatalogRecord, LazyPage } from '../client/index.js';
import { type CreatedAtLane, createdAtOf } from './createdat-lane.js';

/** Pages a lane must be expected to hold still before it is split. */
const SPLIT_PAGES = 8;

/**
 * After the first page of a lane over the whole range: where its open far end is likely to be,
 * at the density that page showed (records per second of createdAt), which it returns.
 */
export function estimateFarEnd(lane: CreatedAtLane, page: LazyPage, total: number, where: string): number {
  const asc = lane.direction === 'ASC';
  const first = createdAtOf(page.record(0) as CatalogRecord, where);
  const frontier = (asc ? lane.from : lane.until)!;
  const seconds = Math.abs(frontier - first) + 1;
  const span = Math.max(1, Math.ceil((Math.max(0, total - page.length) * seconds) / page.length));
  lane.hint = asc ? frontier + span : Math.max(0, frontier - span);
  return page.length / seconds;
}

/**
 * Splits the lanes with the most records left until `lanes` are being read, or none is expected
 * to hold SPLIT_PAGES pages more (each lane ends on a page that is not full: a split costs about
 * one request, worth it only where it shares several); the new lanes go right
 * after the lane they came from, so the order of the records stays createdAt's.
 */
export function rebalance(order: CreatedAtLane[], lanes: number, pageSize: number, density: number): CreatedAtLane[] {
  const added: CreatedAtLane[] = [];
  while (order.filter((l) => !l.done).length < lanes) {
    let widest: CreatedAtLane | undefined;
    for (const l of order) if (!widest || l.expected(density) > widest.expected(density)) widest = l;
    if (!widest || widest.expected(density) < SPLIT_PAGES * pageSize) break;
    const lane = widest.split();
    if (!lane) break;
    order.splice(order.indexOf(widest) + 1, 0, lane);
    added.push(lane);
  }
  return added;
}
