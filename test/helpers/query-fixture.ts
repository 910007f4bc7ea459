// A products/query answer over a fixed list of records, for fixture servers that serve records of
// a given shape: it applies what a read by createdAt sends (createdat-query.ts), the `createdAt`
// range, `not: {id: [...]}` and the sorting (createdAt, ties by id; or id), and pages the rest.
// Other filters are taken as matching every record: the fixture's records are the answer.

interface Keyed {
  json: string;
  id: string;
  createdAt: number;
}

/** The records, parsed once for the keys an answer needs. */
export function keyed(records: string[]): Keyed[] {
  return records.map((json) => {
    const r = JSON.parse(json) as { id: string; meta?: { createdAt?: number } };
    return { json, id: r.id, createdAt: r.meta?.createdAt ?? 0 };
  });
}

/** The response body for `body` (a products/query request) over `records`. */
export function queryAnswer(records: Keyed[], body: Record<string, unknown>): string {
  const conjuncts = flatten(body.filter);
  const range = conjuncts.find((f) => 'createdAt' in f)?.createdAt as { from?: number; until?: number } | undefined;
  const excluded = new Set((conjuncts.find((f) => 'not' in f)?.not as { id?: string[] } | undefined)?.id ?? []);
  const sorting = (body.sorting ?? {}) as Record<string, string>;
  const desc = Object.values(sorting)[0] === 'DESC' ? -1 : 1;
  const matches = records
    .filter((r) => r.createdAt >= (range?.from ?? -Infinity) && r.createdAt <= (range?.until ?? Infinity))
    .filter((r) => !excluded.has(r.id))
    .sort((a, b) =>
      'createdAt' in sorting
        ? desc * (a.createdAt - b.createdAt) || (a.id < b.id ? -1 : 1)
        : a.id < b.id
          ? -desc
          : desc,
    );
  const page = (body.page as { no: number; size: number } | undefined) ?? { no: 0, size: 100 };
  const offset = page.no * page.size;
  const slice = matches.slice(offset, offset + page.size).map((r) => r.json);
  return `{"meta":{"total":${matches.length},"page":{"no":${page.no},"offset":${offset},"size":${page.size}}},"results":[${slice.join(',')}]}`;
}

function flatten(filter: unknown): Record<string, unknown>[] {
  if (!filter || typeof filter !== 'object') return [];
  const f = filter as Record<string, unknown>;
  return Array.isArray(f.and) ? f.and.flatMap(flatten) : [f];
}
