// What a source will do, before it does it (`--dry-run`): its slices (code
// chunks, createdAt windows), the records each holds, the requests the extract
// will make and how long they take at the client's rate limit.
//
// Planning a query source asks the service for totals: one probe of 10
// records per code chunk, and for a products.query or media.query chunk past
// the 10000 cap a walk over createdAt windows (probes of 10 records) to count
// what lies past it. These probes count against the budget like any request
// (`planRequests`). Stream
// sources are planned without a request: one request per chunk, totals unknown
// until the stream starts.
import type { z } from 'zod';
import { type PageSize, endpoints } from '../catalog/index.js';
import {
  type CatalogClient,
  isStreamEndpoint,
  type LazyPage,
  type QueryEndpointName,
  type StreamEndpointName,
} from '../client/index.js';
import { ConfigError } from '../errors.js';
import type { RunEvents } from '../events.js';
import { pageRequest, type SourceBody } from './paged-query.js';
import { chunkFilter } from './code-chunks.js';
import { parseStageOptions } from '../core/issues.js';
import { QUERY_OPTION_SCHEMAS, defaultSorting, readByCreatedAt, requestBody } from './query-sources.js';
import { readWindow, secondBefore } from './read-window.js';
import { PROBE_PAGE_SIZE, type SliceStats, createdAtWindows, isCapped } from './sliced-products-query.js';
import { STREAM_OPTION_SCHEMAS } from './stream-sources.js';

const sourceOptionSchemas: Record<string, z.ZodType | undefined> = {
  ...QUERY_OPTION_SCHEMAS,
  ...STREAM_OPTION_SCHEMAS,
};

export type SourceType = QueryEndpointName | StreamEndpointName;

export interface PlannedSlice {
  /** `id chunk 2/3`, `createdAt 1420070400..1451606399`; undefined for an unsplit query. */
  label?: string;
  /** The filter this slice sends. */
  filter: unknown;
  /** Matching records (unknown for streams). */
  total?: number;
  /** Requests the extract makes for this slice. */
  requests: number;
}

export interface SourcePlan {
  type: SourceType;
  slices: PlannedSlice[];
  /** Records in all (before removing repeats across code chunks); unknown for streams. */
  total?: number;
  /** Requests the extract will make: pages, plus the probes slicing needs. */
  requests: number;
  /** Requests this plan made to learn totals. */
  planRequests: number;
  /** Requests per minute of each key the estimate assumes (Infinity: unlimited). */
  rateLimit: number;
  /** API keys the requests are spread over (each with `rateLimit`). */
  keys: number;
  /** `requests` spaced at every key's rate limit together, in ms (0 when unlimited); transfer time not included. */
  estimatedMs: number;
  /** Whether records matching several code chunks are dropped as repeats. */
  dedupe: boolean;
}

type Probe = (body: SourceBody, no: number, size: number) => Promise<LazyPage>;
type ParsedSource = { filter?: unknown; sorting?: unknown; pageSize?: PageSize };
type Chunk = { filter?: unknown; label?: string };

/**
 * A source's dry-run estimate (`--dry-run`, the progress display's totals): its slices, records and
 * requests, from probes of 10 records that count against the budget like any request.
 */
export async function estimateSource(
  client: CatalogClient,
  type: SourceType,
  options: unknown,
  run: { signal?: AbortSignal; startedAt?: Date; events?: RunEvents } = {},
): Promise<SourcePlan> {
  const schema = sourceOptionSchemas[type];
  if (!schema) throw new ConfigError(`no source type "${type}"`, { path: 'source.type' });
  const parsed = parseStageOptions(type, schema, options) as ParsedSource;
  const byCreatedAt = !isStreamEndpoint(type) && readByCreatedAt(type);
  const chunks = chunkFilter(type, parsed.filter, byCreatedAt ? parsed.pageSize : undefined);
  let planRequests = 0;
  let slices: PlannedSlice[] = [];
  let requests = 0;
  if (isStreamEndpoint(type)) {
    slices = chunks.chunks.map((c) => ({ label: c.label, filter: c.filter, requests: 1 }));
    requests = slices.length;
  } else {
    const probe: Probe = (body, no, size) => {
      planRequests++;
      return client.queryLazy(type, pageRequest(body, no, size), run);
    };
    const query = { type, parsed, byCreatedAt, probe, resultWindow: client.resultWindow, startedAt: run.startedAt };
    for (const c of chunks.chunks) {
      const planned = await chunkPlan(query, c);
      slices.push(...planned.slices);
      requests += planned.requests;
    }
  }
  const totals = slices.map((s) => s.total);
  const budget = client.budgetPerMinute;
  return {
    type,
    slices,
    total: totals.every((t) => t !== undefined) ? totals.reduce((a, b) => a! + b!, 0) : undefined,
    requests,
    planRequests,
    rateLimit: client.rateLimit,
    keys: client.keyCount,
    estimatedMs: Number.isFinite(budget) ? Math.round((requests * 60_000) / budget) : 0,
    dedupe: chunks.dedupe,
  };
}

interface QueryPlanning {
  type: QueryEndpointName;
  parsed: ParsedSource;
  byCreatedAt: boolean;
  probe: Probe;
  resultWindow: number;
  startedAt: Date | undefined;
}

/** One code chunk of a query source: its slices and the requests the extract makes for them. */
async function chunkPlan(q: QueryPlanning, c: Chunk): Promise<{ slices: PlannedSlice[]; requests: number }> {
  const { type, probe, resultWindow } = q;
  const pageSize = q.parsed.pageSize!;
  if (q.byCreatedAt) {
    const slices = await createdAtPlan(type, c, probe, pageSize, resultWindow);
    return { slices, requests: slices.reduce((n, p) => n + p.requests, 0) };
  }
  const pagesOf = (total: number) => Math.max(1, Math.ceil(total / pageSize));
  const sorting = q.parsed.sorting ?? defaultSorting(type);
  const window = readWindow(type, c.filter, sorting, secondBefore(q.startedAt ?? new Date()), pageSize);
  const body = requestBody(window.filter, sorting);
  // Planning needs the totals only: each probe page is released at once.
  const first = await probe(body, 0, PROBE_PAGE_SIZE);
  first.release();
  if (!endpoints[type].capped || !isCapped(first.meta.total, resultWindow)) {
    const pages = window.whole ? 1 : pagesOf(first.meta.total);
    return {
      slices: [{ label: c.label, filter: window.filter, total: first.meta.total, requests: pages }],
      requests: pages,
    };
  }
  const stats: SliceStats = { wastedProbes: 0, windows: 0 };
  const slices: PlannedSlice[] = [];
  const windows = createdAtWindows({
    body,
    probeSize: PROBE_PAGE_SIZE,
    fetchPage: probe,
    endpoint: type,
    labelPrefix: c.label,
    stats,
    resultWindow,
  });
  for await (const w of windows) {
    w.firstPage.release();
    const total = w.firstPage.meta.total;
    slices.push({ label: w.label, filter: w.body.filter, total, requests: pagesOf(total) });
  }
  // The extract repeats the chunk's first probe and the wasted ones; window probes are its pages 0.
  return { slices, requests: slices.reduce((n, s) => n + s.requests, 0) + 1 + stats.wastedProbes };
}

/**
 * A chunk read by createdAt (createdat-query.ts): its total from one probe, or past the cap the
 * totals of the createdAt windows the planner walks (the extract itself needs no windows: it reads
 * page 0 of what is left, about as many requests as the matches fill pages).
 */
async function createdAtPlan(
  type: QueryEndpointName,
  chunk: { filter?: unknown; label?: string },
  probe: (body: SourceBody, no: number, size: number) => Promise<LazyPage>,
  pageSize: number,
  resultWindow: number,
): Promise<PlannedSlice[]> {
  const body = requestBody(chunk.filter, { createdAt: 'ASC' });
  const first = await probe(body, 0, PROBE_PAGE_SIZE);
  first.release();
  const pagesOf = (total: number) => Math.max(1, Math.ceil(total / pageSize));
  if (!isCapped(first.meta.total, resultWindow)) {
    const total = first.meta.total;
    return [{ label: chunk.label, filter: chunk.filter, total, requests: pagesOf(total) }];
  }
  const windows: PlannedSlice[] = [];
  for await (const w of createdAtWindows({
    body,
    probeSize: PROBE_PAGE_SIZE,
    fetchPage: probe,
    endpoint: type,
    labelPrefix: chunk.label,
    resultWindow,
  })) {
    w.firstPage.release();
    windows.push({ label: w.label, filter: w.body.filter, total: w.firstPage.meta.total, requests: 0 });
  }
  // Pages run across windows: the requests are those of the whole chunk.
  const total = windows.reduce((n, w) => n + w.total!, 0);
  if (windows.length > 0) windows[0]!.requests = pagesOf(total);
  return windows;
}
