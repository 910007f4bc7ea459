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
 * Pages a lane read beside the head lane is cut to, and may hold fetched. Lanes are emitted one
 * after the other, so whatever a lane reads while an earlier one is still being read waits in
 * memory: lanes this short are emitted soon after they are read, which is what lets `concurrency`
 * requests stay on their way (a run with several keys needs them) with at most this many pages
 * held per lane. Each lane costs about half a request more than reading its records in one lane
 * (its last page is not full): 1/16 of the requests at 8.
 */
export const AHEAD_LANE_PAGES = 8;

/**
 * Makes `lanes` lanes readable at the front of `order`: the last lane, while it is expected to
 * hold at least twice AHEAD_LANE_PAGES pages, gives all but its near AHEAD_LANE_PAGES pages to a
 * new last lane (read once it is among the first `lanes`), until `lanes` + 1 are open. Near the
 * end, the lanes with the most records left are split in halves until `lanes` are being read, or
 * none is expected to hold SPLIT_PAGES pages more (each lane ends on a page that is not full: a
 * split costs about one request, worth it only where it shares several). New lanes go right after
 * the lane they came from, so the order of the records stays createdAt's.
 */
export function rebalance(order: CreatedAtLane[], lanes: number, pageSize: number, density: number): CreatedAtLane[] {
  const added: CreatedAtLane[] = [];
  const cut = AHEAD_LANE_PAGES * pageSize;
  for (;;) {
    const open = order.filter((l) => !l.done);
    if (open.length >= lanes + 1) break;
    const last = open.at(-1);
    const expected = last?.expected(density) ?? 0;
    let from: CreatedAtLane | undefined;
    let lane: CreatedAtLane | undefined;
    if (last && expected >= 2 * cut) {
      from = last;
      lane = last.split(cut / expected);
    } else if (open.length < lanes) {
      from = widest(order, density);
      if (!from || from.expected(density) < SPLIT_PAGES * pageSize) break;
      lane = from.split();
    }
    if (!from || !lane) break;
    order.splice(order.indexOf(from) + 1, 0, lane);
    added.push(lane);
  }
  return added;
}

function widest(order: CreatedAtLane[], density: number): CreatedAtLane | undefined {
  let found: CreatedAtLane | undefined;
  for (const l of order) if (!found || l.expected(density) > found.expected(density)) found = l;
  return found;
}
