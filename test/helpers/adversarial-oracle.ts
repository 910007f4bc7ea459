// What a run against the adversarial API must have delivered, computed from the server's event
// log alone (never from the reader's bookkeeping), for the user's filter (never the toolkit's
// window). The guarantee (issue 35):
// - a product that matched the filter at every moment of the run is delivered exactly once;
// - a product that matched at some moment of the run is delivered at most once;
// - nothing else is delivered;
// - a delivered record is a version (updatedAt) the product had while it matched, during the run.
// The run is the span from its first request to its last, by the server's request order: the
// changes made before the first request was answered already fall inside it (the request was
// on its way), those made after the last answer do not.
import type { ProductState } from './adversarial-catalog.js';
import type { EventLog } from './adversarial-state.js';
import { compileFilter, type Violation } from './adversarial-query.js';

export interface OracleOptions {
  /** The user's filter, in the API's form (`{status: [...]}`, `{and: [...]}`, `createdAt`, `updatedSince`, `id`). */
  filter: unknown;
  /** The run's first and last request numbers; default the first and last in the log. */
  firstRequest?: number;
  lastRequest?: number;
}

export interface Oracle {
  /** Matched for the whole run: exactly once. */
  required: Set<string>;
  /** Matched at some moment of the run: at most once (a superset of `required`). */
  allowed: Set<string>;
  /** Each allowed id's updatedAt values while it matched during the run. */
  versions: Map<string, Set<number>>;
  firstRequest: number;
  lastRequest: number;
}

export function oracle(log: EventLog, o: OracleOptions): Oracle {
  const violations: Violation[] = [];
  const match = compileFilter(o.filter, 'filter', violations);
  if (violations.length) throw new Error(`oracle: a filter the API refuses: ${JSON.stringify(violations)}`);
  const ns = log.requests.map((r) => r.n);
  const firstRequest = o.firstRequest ?? (ns.length ? Math.min(...ns) : 0);
  const lastRequest = o.lastRequest ?? (ns.length ? Math.max(...ns) : 0);
  const state = new Map<string, ProductState>(log.initial.map((p) => [p.id, p]));
  const changes = log.changes;
  let i = 0;
  for (; i < changes.length && changes[i]!.beforeRequest < firstRequest; i++)
    state.set(changes[i]!.id, changes[i]!.after);

  const required = new Set<string>();
  const allowed = new Set<string>();
  const versions = new Map<string, Set<number>>();
  const seen = (p: ProductState) => {
    allowed.add(p.id);
    let v = versions.get(p.id);
    if (!v) versions.set(p.id, (v = new Set()));
    v.add(p.updatedAt);
  };
  for (const p of state.values()) {
    if (!match(p)) continue;
    required.add(p.id);
    seen(p);
  }
  for (; i < changes.length && changes[i]!.beforeRequest <= lastRequest; i++) {
    const c = changes[i]!;
    if (match(c.after)) seen(c.after);
    else required.delete(c.id);
  }
  return { required, allowed, versions, firstRequest, lastRequest };
}

export interface DeliveryCheck {
  /** Delivered more than once. */
  duplicates: string[];
  /** Matched for the whole run, never delivered. */
  missing: string[];
  /** Delivered though it never matched during the run. */
  unexpected: string[];
  /** Delivered in a version it did not have (while matching) during the run. */
  wrongVersion: string[];
  delivered: number;
}

export interface DeliveredRecord {
  id: string;
  meta?: { updatedAt?: number };
}

export function checkDelivery(o: Oracle, records: readonly DeliveredRecord[]): DeliveryCheck {
  const counts = new Map<string, number>();
  const wrongVersion: string[] = [];
  for (const r of records) {
    counts.set(r.id, (counts.get(r.id) ?? 0) + 1);
    const v = o.versions.get(r.id);
    if (v && !v.has(r.meta?.updatedAt as number)) wrongVersion.push(r.id);
  }
  return {
    duplicates: [...counts].filter(([, n]) => n > 1).map(([id]) => id),
    missing: [...o.required].filter((id) => !counts.has(id)),
    unexpected: [...counts.keys()].filter((id) => !o.allowed.has(id)),
    wrongVersion,
    delivered: records.length,
  };
}

/** True when the delivery is exactly what the oracle allows. */
export function exact(c: DeliveryCheck): boolean {
  return c.duplicates.length + c.missing.length + c.unexpected.length + c.wrongVersion.length === 0;
}

/** A short account of what went wrong, for an assertion message. */
export function describeCheck(c: DeliveryCheck): string {
  const few = (xs: string[]) =>
    `${xs.length}${xs.length ? ` (${xs.slice(0, 5).join(', ')}${xs.length > 5 ? ', ...' : ''})` : ''}`;
  return `delivered ${c.delivered}; missing ${few(c.missing)}; duplicated ${few(c.duplicates)}; unexpected ${few(c.unexpected)}; wrong version ${few(c.wrongVersion)}`;
}
