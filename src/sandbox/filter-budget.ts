// The CPU budget of one request's filter (issue 36, item 9). The sandbox is one thread shared by
// every user of a team's service, and a filter costs about (its leaf filters) x (the records
// scanned), a text search most of all (each test lower-cases a name). One 206 KB `or` of `search`
// filters held the server 21-35 s for every user. So a filter past a bound is refused before a
// single record is scanned, with a 422 that names the bound; a filter of one leaf (one search
// included) is always evaluated, as a scan of the collection like any query.

/** Nodes of a filter tree (`and`, `or`, `not` and leaf filters) one request may send. */
export const MAX_FILTER_NODES = 256;
/** Leaf filters x records scanned one request may cost. */
export const MAX_LEAF_TESTS = 64_000_000;
/** Text searches (`search`, `searchName`) x records scanned one request may cost. */
export const MAX_SEARCH_TESTS = 2_000_000;

/** Leaf filters that compare text per record (the costly ones). */
const TEXT_SEARCHES: ReadonlySet<string> = new Set(['search', 'searchName']);

export interface FilterCost {
  /** `and`, `or`, `not` and leaf filters. */
  nodes: number;
  leaves: number;
  /** Leaves that are text searches. */
  searches: number;
}

/** Counts the nodes of a (schema-valid) filter tree, without recursion: its depth is the client's. */
export function filterCost(filter: unknown): FilterCost {
  const cost: FilterCost = { nodes: 0, leaves: 0, searches: 0 };
  const pending: unknown[] = [filter];
  while (pending.length > 0) {
    const node = pending.pop();
    if (!node || typeof node !== 'object' || Array.isArray(node)) continue;
    cost.nodes++;
    const [key, value] = Object.entries(node)[0] ?? [];
    if ((key === 'and' || key === 'or') && Array.isArray(value)) pending.push(...(value as unknown[]));
    else if (key === 'not') pending.push(value);
    else {
      cost.leaves++;
      if (key !== undefined && TEXT_SEARCHES.has(key)) cost.searches++;
    }
  }
  return cost;
}

const n = (x: number) => x.toLocaleString('en-US');

/**
 * Why a filter is over the budget for a collection of `records` records (a message naming the
 * limit and what to do), or undefined when it may be evaluated.
 */
export function filterBudgetIssue(filter: unknown, records: number): string | undefined {
  const cost = filterCost(filter);
  if (cost.nodes > MAX_FILTER_NODES)
    return `has ${n(cost.nodes)} nodes (and, or, not and filters), more than the ${MAX_FILTER_NODES} the sandbox evaluates in one request; send fewer alternatives per request (a list value such as {"id": [...]} counts as one filter)`;
  if (cost.searches > 1 && cost.searches * records > MAX_SEARCH_TESTS)
    return `has ${n(cost.searches)} text searches over ${n(records)} records (${n(cost.searches * records)} tests), more than the ${n(MAX_SEARCH_TESTS)} one request may cost; send at most ${n(Math.max(1, Math.floor(MAX_SEARCH_TESTS / records)))} searches per request`;
  if (cost.leaves > 1 && cost.leaves * records > MAX_LEAF_TESTS)
    return `has ${n(cost.leaves)} filters over ${n(records)} records (${n(cost.leaves * records)} tests), more than the ${n(MAX_LEAF_TESTS)} one request may cost; send at most ${n(Math.max(1, Math.floor(MAX_LEAF_TESTS / records)))} filters per request`;
  return undefined;
}
