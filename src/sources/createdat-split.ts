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
 * Keeps `lanes` + 1 lanes readable (not done, not `stalled`: holding as many pages as it may). A
 * stalled lane with at least twice `lanePages` (AHEAD_LANE_PAGES, or fewer when the budget needs
 * shorter lanes: budget-in-flight.ts) pages left keeps `lanePages` of them
 * and gives the rest to a new lane right after it, which can be read at once (density is uneven:
 * a lane cut by an estimate may hold far more than it); else the last lane, while it is expected
 * to hold that much, keeps its near AHEAD_LANE_PAGES pages and gives the rest to a new last lane.
 * Near the end, the lanes with the most records left are split in halves until `lanes` are open,
 * or none is expected to hold SPLIT_PAGES pages more (each lane ends on a page that is not full:
 * a split costs about one request, worth it only where it shares several). New lanes go right
 * after the lane they came from, so the order of the records stays createdAt's.
 */
export function rebalance(
  order: CreatedAtLane[],
  lanes: number,
  pageSize: number,
  density: number,
  stalled: (lane: CreatedAtLane) => boolean = () => false,
  lanePages = AHEAD_LANE_PAGES,
): CreatedAtLane[] {
  const added: CreatedAtLane[] = [];
  const cut = lanePages * pageSize;
  for (;;) {
    const open = order.filter((l) => !l.done && !stalled(l));
    if (open.length >= lanes + 1) break;
    const split =
      cutShort(order, open, density, cut, stalled) ??
      (open.length < lanes ? halve(order, density, SPLIT_PAGES * pageSize) : undefined);
    if (!split) break;
    order.splice(order.indexOf(split.from) + 1, 0, split.lane);
    added.push(split.lane);
  }
  return added;
}

interface Split {
  from: CreatedAtLane;
  lane: CreatedAtLane;
}

/** A stalled lane, else the last open one, with twice `cut` records left keeps `cut` of them. */
function cutShort(
  order: CreatedAtLane[],
  open: CreatedAtLane[],
  density: number,
  cut: number,
  stalled: (lane: CreatedAtLane) => boolean,
): Split | undefined {
  const last = open.at(-1);
  const from =
    order.find((l) => !l.done && stalled(l) && l.expected(density) >= 2 * cut) ??
    (last && last.expected(density) >= 2 * cut ? last : undefined);
  const lane = from?.split(cut / from.expected(density));
  return from && lane ? { from, lane } : undefined;
}

/** The lane with the most records left, in halves, when it holds at least `least`. */
function halve(order: CreatedAtLane[], density: number, least: number): Split | undefined {
  const from = widest(order, density);
  const lane = from && from.expected(density) >= least ? from.split() : undefined;
  return from && lane ? { from, lane } : undefined;
}

function widest(order: CreatedAtLane[], density: number): CreatedAtLane | undefined {
  let found: CreatedAtLane | undefined;
  for (const l of order) if (!found || l.expected(density) > found.expected(density)) found = l;
  return found;
}
