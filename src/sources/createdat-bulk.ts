// One createdAt second holding more matching records than a request can exclude by id (a bulk
// import gives thousands of products one createdAt): read on its own, by id, page after page
// (createdat-lane.ts hands it over). Offsets inside one second shift only when a record of that
// second leaves or comes back; a total that moves between two pages reads the second again from
// page 0, skipping what was delivered. What this cannot see is a record of that very second
// leaving while another of it is restored between two of its pages (the total does not move):
// the one limit of an exact read, stated in docs/changing-catalog.md.
import { MAX_REACHABLE_RESULTS, isoSeconds } from '../catalog/index.js';
import { DataError } from '../errors.js';
import type { SourceBody } from './paged-query.js';
import { andFilter } from './sliced-products-query.js';

/** Reads of one second started again because its total moved, before the source gives up. */
const MAX_RESTARTS = 5;

export class BulkSecond {
  #no = 0;
  #total: number | undefined;
  #restarts = 0;

  constructor(
    readonly second: number,
    /** Ids of the second delivered before, left out of every page (the same list each time, so offsets hold). */
    readonly excluded: unknown[],
  ) {}

  /** The second alone, sorted by id, at the page to read next. */
  request(base: SourceBody): { body: SourceBody; page: number } {
    let filter = andFilter(base.filter, { createdAt: { from: this.second, until: this.second } });
    if (this.excluded.length > 0) filter = andFilter(filter, { not: { id: this.excluded } });
    return { body: { ...base, filter, sorting: { id: 'ASC' } }, page: this.#no };
  }

  /** A page of the second arrived (its ids now `known`); true once every page of the second was read. */
  advance(length: number, size: number, total: number, ids: unknown[], known: Set<unknown>, where: string): boolean {
    for (const id of ids) known.add(id);
    if (total >= MAX_REACHABLE_RESULTS) throw overfull(where, this.second, total);
    if (this.#total !== undefined && total !== this.#total) {
      if (++this.#restarts > MAX_RESTARTS) {
        throw new DataError(
          `${where}: the ${this.#total} records created in second ${this.second} kept changing while they were read by id ` +
            `(${MAX_RESTARTS} times); run it again`,
          { code: 'source.window_mismatch' },
        );
      }
      this.#no = 0;
      this.#total = total;
      return false;
    }
    this.#total = total;
    if ((this.#no + 1) * size >= total || length < size) return true;
    this.#no++;
    return false;
  }
}

function overfull(where: string, second: number, total: number): DataError {
  const endpoint = where.split(' ')[0]!;
  return new DataError(
    `${where}: ${total >= MAX_REACHABLE_RESULTS ? `${MAX_REACHABLE_RESULTS} or more` : total} matching records were created in the same second ` +
      `(createdAt ${second}, ${isoSeconds(second)}), more than one query can reach; ` +
      `use ${endpoint.replace(/\.query$/, '.stream')} (no limit) or narrow the filter (e.g. by status, brand or organization)`,
    { code: 'source.instant_over_cap' },
  );
}
