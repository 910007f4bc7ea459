// The floor of a paged extract: the pages of a list of windows fetched with
// plain undici requests (`concurrency` in flight, in page order) and
// `JSON.parse`d, nothing more. The sources bench, the sandbox-serving bench and
// the chain's floor scenario all page this way.
//
// As a scenario (`node dist/test/bench/page-floor.js '{...}'`): plans the
// windows the products.query source extracts (estimateSource(): the same createdAt walk,
// untimed), then times fetching and parsing every page of them.
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import { Pool } from 'undici';
import { EXTRACT_PAGE_SIZE } from '../../src/catalog/index.js';
import { CatalogClient } from '../../src/client/index.js';
import { estimateSource } from '../../src/sources/index.js';
import { type Measurement, measure, scenarioMain } from './measure.js';
import type { SandboxConnection } from './sandbox-process.js';

export interface PageWindow {
  filter: unknown;
  total: number;
}

export interface FetchPagesOptions {
  pageSize?: number;
  concurrency?: number;
  sorting?: unknown;
  /** Parse each page (default true); false counts records from the totals. */
  parse?: boolean;
  /** Sees every parsed page's results; a returned promise holds that worker's next request. */
  onResults?(results: unknown[]): void | Promise<unknown>;
}

export interface FetchPagesResult {
  records: number;
  pages: number;
  bytes: number;
}

export function basicAuthorization(c: { apiKey: string; apiSecret: string }): string {
  return `Basic ${Buffer.from(`${c.apiKey}:${c.apiSecret}`).toString('base64')}`;
}

/** Every page of every window, `concurrency` requests in flight; throws on any non-200. */
export async function fetchPages(
  connection: SandboxConnection,
  windows: readonly PageWindow[],
  options: FetchPagesOptions = {},
): Promise<FetchPagesResult> {
  const pageSize = options.pageSize ?? EXTRACT_PAGE_SIZE;
  const concurrency = options.concurrency ?? 3;
  const sorting = options.sorting ?? { id: 'ASC' };
  const parse = options.parse ?? true;
  const pool = new Pool(connection.baseUrl, { connections: concurrency, pipelining: 1 });
  const headers = { authorization: basicAuthorization(connection), 'content-type': 'application/json' };
  const jobs = windows.flatMap((w) =>
    Array.from({ length: Math.max(1, Math.ceil(w.total / pageSize)) }, (_, no) => ({ w, no })),
  );
  const result: FetchPagesResult = { records: 0, pages: jobs.length, bytes: 0 };
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < jobs.length) {
          const { w, no } = jobs[next++]!;
          const body = JSON.stringify({ filter: w.filter, sorting, page: { no, size: pageSize } });
          const res = await pool.request({ path: '/v4/products/query', method: 'POST', headers, body });
          const text = await res.body.text();
          if (res.statusCode !== 200)
            throw new Error(`products/query answered ${res.statusCode}: ${text.slice(0, 300)}`);
          result.bytes += Buffer.byteLength(text);
          if (parse) {
            const { results } = JSON.parse(text) as { results: unknown[] };
            result.records += results.length;
            await options.onResults?.(results);
          } else result.records += Math.max(0, Math.min(pageSize, w.total - no * pageSize));
        }
      }),
    );
  } finally {
    await pool.close();
  }
  return result;
}

/** The createdAt windows products.query would extract for `filter` (estimateSource(): probes of 10, not timed by callers). */
export async function plannedWindows(
  connection: SandboxConnection,
  filter: unknown,
): Promise<{ windows: PageWindow[]; extractRequests: number }> {
  const client = new CatalogClient({ ...connection, rateLimit: 0 });
  try {
    const p = await estimateSource(client, 'products.query', { filter });
    return { windows: p.slices.map((s) => ({ filter: s.filter, total: s.total! })), extractRequests: p.requests };
  } finally {
    await client.close();
  }
}

export interface FloorArgs {
  connection: SandboxConnection;
  filter: unknown;
  concurrency?: number;
  /**
   * Also write every record as a JSON line to this file: the hand-written client a user would
   * write instead of a JSONL extract (fetch, JSON.parse, JSON.stringify per record, write).
   */
  jsonl?: string;
}

export type FloorResult = Measurement & FetchPagesResult & { extractRequests: number };

/** The floor scenario: plan (untimed), then fetch + JSON.parse every page (timed). */
export async function measureFloor(args: FloorArgs): Promise<FloorResult> {
  const { windows, extractRequests } = await plannedWindows(args.connection, args.filter);
  const result = await measure(async () => {
    if (!args.jsonl) return fetchPages(args.connection, windows, { concurrency: args.concurrency });
    const out = createWriteStream(args.jsonl);
    const fetched = await fetchPages(args.connection, windows, {
      concurrency: args.concurrency,
      onResults(results) {
        let chunk = '';
        for (const r of results) chunk += `${JSON.stringify(r)}\n`;
        // Backpressure the way a careful hand-written client does it: wait for drain.
        return out.write(chunk) ? undefined : once(out, 'drain');
      },
    });
    out.end();
    await finished(out);
    return fetched;
  });
  return { ...result, extractRequests };
}

scenarioMain(import.meta.url, measureFloor);
