// Where a record came from (endpoint, page, stream index), carried on the record
// under a symbol key: invisible to JSON.stringify, Object.keys and sinks, cheap
// to set per record (a plain assignment), copied by object spread, and readable
// by stages that report on records (dead letters).

export interface RecordOrigin {
  endpoint: string;
  /** Zero-based page number of a paged query. */
  page?: number;
  /** `meta.index` of a stream line, or the position in the whole result of a paged query. */
  index?: number;
  /** The createdAt window or code chunk a sliced query was in, e.g. `createdAt 1420070400..1451606399`. */
  slice?: string;
}

export const ORIGIN: unique symbol = Symbol.for('catalog-streams.origin');

export function setOrigin<T extends object>(record: T, origin: RecordOrigin): T {
  (record as Record<symbol, RecordOrigin>)[ORIGIN] = origin;
  return record;
}

export function originOf(record: unknown): RecordOrigin | undefined {
  return typeof record === 'object' && record !== null
    ? (record as Record<symbol, RecordOrigin | undefined>)[ORIGIN]
    : undefined;
}

/** Copies the origin to a record derived from another (pick, rename, explode...). */
export function keepOrigin<T extends object>(from: unknown, to: T): T {
  const o = originOf(from);
  if (o) setOrigin(to, o);
  return to;
}
