// The `*.query` sources: products, media, organizations, corrections, updates,
// brands, catalog-categories, public-categories, dietary-restrictions, colors,
// and the regional reference tables active-ingredients, product-families,
// atc-categories and osp-categories. products.query and media.query are read by
// createdAt, page 0 of what is left each time (createdat-query.ts); the others
// page by number over the segments of their filter (paged-query.ts), or are read
// whole in one request. Code lists over what one request takes are split into chunks.
import { z } from 'zod';
import { type EndpointFilter, type EndpointSorting, endpoints } from '../catalog/index.js';
import type { CatalogClient, QueryEndpointName } from '../client/index.js';
import { ConfigError } from '../errors.js';
import { markStage, plannedStage } from '../core/planned-stage.js';
import type { RecordStream } from '../core/record-stream.js';
import type { MediaRecord, Product } from '../catalog/resources/index.js';
import { defineStage, type StageContext } from '../core/stage.js';
import { type ChunkPlan, chunkFilter, exactMatchTest, renamedWarning } from './code-chunks.js';
import { concurrencyOption, filterOption, pageSizeOption, sortingOption } from './options.js';
import { parseStageOptions } from '../core/issues.js';
import { PagedQuerySource, type SegmentProducer, type SourceBody } from './paged-query.js';
import type { SourceRunOptions } from './source-stream.js';
import { CreatedAtQuerySource } from './createdat-query.js';
import type { Direction } from './createdat-lane.js';
import { readWindow, secondBefore } from './read-window.js';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';

/** The sorting a source sends when the options give none. */
export function defaultSorting(endpoint: QueryEndpointName | 'products.stream' | 'media.stream'): unknown {
  if (endpoint === 'products.query' || endpoint === 'products.stream') return { id: 'ASC' };
  return endpoints[endpoint].defaultSorting;
}

function queryOptionsSchema<E extends QueryEndpointName>(endpoint: E) {
  const hasSorting = Object.keys(endpoints[endpoint].sortings).length > 0;
  const shape = {
    filter: filterOption(endpoint),
    ...(hasSorting ? { sorting: sortingOption(endpoint, defaultSorting(endpoint)) } : {}),
    pageSize: pageSizeOption,
    concurrency: concurrencyOption,
  };
  return z.strictObject(shape);
}

export const productsQueryOptions = queryOptionsSchema('products.query');
export const organizationsQueryOptions = queryOptionsSchema('organizations.query');
export const correctionsQueryOptions = queryOptionsSchema('corrections.query');
export const updatesQueryOptions = queryOptionsSchema('updates.query');
export const brandsQueryOptions = queryOptionsSchema('brands.query');
export const catalogCategoriesQueryOptions = queryOptionsSchema('catalog-categories.query');
export const mediaQueryOptions = queryOptionsSchema('media.query');
export const publicCategoriesQueryOptions = queryOptionsSchema('public-categories.query');
export const dietaryRestrictionsQueryOptions = queryOptionsSchema('dietary-restrictions.query');
export const colorsQueryOptions = queryOptionsSchema('colors.query');
export const activeIngredientsQueryOptions = queryOptionsSchema('active-ingredients.query');
export const productFamiliesQueryOptions = queryOptionsSchema('product-families.query');
export const atcCategoriesQueryOptions = queryOptionsSchema('atc-categories.query');
export const ospCategoriesQueryOptions = queryOptionsSchema('osp-categories.query');

interface QueryOptionTypes<E extends QueryEndpointName> {
  filter?: EndpointFilter<E>;
  sorting?: EndpointSorting<E>;
  pageSize?: 10 | 50 | 100 | 250;
  concurrency?: number;
}
/**
 * Options of a query source in code: `filter` completes the endpoint's filter names; each key
 * shows its description on hover (src/generated/stage-option-docs.ts).
 */
export type QueryOptions<E extends QueryEndpointName> = WithOptionDocs<E, QueryOptionTypes<E>>;
export type ProductsQueryOptions = QueryOptions<'products.query'> & { filter: EndpointFilter<'products.query'> };

/** The options schema of each query source. */
export const QUERY_OPTION_SCHEMAS: Record<QueryEndpointName, z.ZodType> = {
  'products.query': productsQueryOptions,
  'organizations.query': organizationsQueryOptions,
  'corrections.query': correctionsQueryOptions,
  'updates.query': updatesQueryOptions,
  'brands.query': brandsQueryOptions,
  'catalog-categories.query': catalogCategoriesQueryOptions,
  'media.query': mediaQueryOptions,
  'public-categories.query': publicCategoriesQueryOptions,
  'dietary-restrictions.query': dietaryRestrictionsQueryOptions,
  'colors.query': colorsQueryOptions,
  'active-ingredients.query': activeIngredientsQueryOptions,
  'product-families.query': productFamiliesQueryOptions,
  'atc-categories.query': atcCategoriesQueryOptions,
  'osp-categories.query': ospCategoriesQueryOptions,
};

interface ParsedQueryOptions {
  filter?: unknown;
  sorting?: unknown;
  pageSize: number;
  concurrency: number;
}

/**
 * The segments of a query paged by number (paged-query.ts): one per code chunk, each read inside
 * its window (read-window.ts), or whole in one request where the endpoint answers every result.
 */
export function querySegments(
  endpoint: QueryEndpointName,
  chunks: ChunkPlan,
  sorting: unknown,
  pageSize: number,
  run: SourceRunOptions = {},
): SegmentProducer {
  const until = secondBefore(run.startedAt ?? new Date());
  return async function* () {
    for (let i = 0; i < chunks.chunks.length; i++) {
      const chunk = chunks.chunks[i]!;
      const window = readWindow(endpoint, chunk.filter, sorting, until, pageSize);
      const body = requestBody(window.filter, sorting);
      yield { body, label: chunk.label, last: i === chunks.chunks.length - 1, whole: window.whole };
    }
  };
}

export function requestBody(filter: unknown, sorting: unknown): SourceBody {
  const body: SourceBody = {};
  if (filter !== undefined) body.filter = filter;
  if (sorting !== undefined) body.sorting = sorting;
  return body;
}

/** A query source from already-parsed options. */
function createQuerySource(
  endpoint: QueryEndpointName,
  client: CatalogClient,
  options: ParsedQueryOptions,
  run: SourceRunOptions,
): PagedQuerySource | CreatedAtQuerySource {
  // Read by createdAt, a code list is cut to a page's worth: each chunk's matches then fit about
  // one page, and its codes leave room in the request for the ids excluded at the frontier.
  const byCreatedAt = readByCreatedAt(endpoint);
  const chunks = chunkFilter(endpoint, options.filter, byCreatedAt ? options.pageSize : undefined);
  const sorting = options.sorting ?? defaultSorting(endpoint);
  const events = run.events ?? client.events;
  const warning = renamedWarning(endpoint, chunks.renamed);
  if (warning) events.emit('warning', warning);
  const keep = exactMatchTest(endpoint, options.filter);
  const reading = {
    pageSize: options.pageSize,
    concurrency: options.concurrency,
    dedupe: chunks.dedupe,
    ...(keep ? { keep } : {}),
    events,
    signal: run.signal,
  };
  if (byCreatedAt) {
    const parts = chunks.chunks.map((c) => ({ body: requestBody(c.filter, undefined), label: c.label }));
    return new CreatedAtQuerySource(client, endpoint, parts, directionOf(sorting), reading);
  }
  const segments = querySegments(endpoint, chunks, sorting, options.pageSize, { ...run, events });
  return new PagedQuerySource(client, endpoint, segments, reading);
}

/**
 * Whether a query is read by createdAt, page 0 of what is left at each request (createdat-query.ts):
 * the capped endpoints, which filter and sort by createdAt. The others are reference tables read
 * whole, or small queries paged with checks (paged-query.ts).
 */
export function readByCreatedAt(endpoint: string): boolean {
  const spec = (endpoints as Partial<Record<string, (typeof endpoints)[QueryEndpointName]>>)[endpoint];
  return !!spec && spec.capped && 'createdAt' in spec.filters && 'createdAt' in spec.sortings;
}

/** createdAt DESC is read from the newest; every other sorting is delivered in createdAt ASC order. */
function directionOf(sorting: unknown): Direction {
  const by = (sorting as { createdAt?: unknown } | undefined)?.createdAt;
  return by === 'DESC' ? 'DESC' : 'ASC';
}

/** A query source for code: options are validated and defaulted like a pipeline file's. */
export function querySource<E extends QueryEndpointName>(
  endpoint: E,
  client: CatalogClient,
  options: QueryOptions<E> = {},
  run: SourceRunOptions = {},
): QuerySourceStream {
  const parsed = parseStageOptions(endpoint, QUERY_OPTION_SCHEMAS[endpoint], options) as ParsedQueryOptions;
  // Marked with its stage, so a sink piped from it knows the records' schema (core/planned-stage.ts).
  const definition = queryStages.find((d) => d.type === endpoint)!;
  return markStage(
    createQuerySource(endpoint, client, parsed, run),
    plannedStage(definition, parsed, options, 'source'),
  );
}

/** What a query factory returns: a paged or a createdAt-ordered source (the endpoint decides). */
export type QuerySourceStream = PagedQuerySource | CreatedAtQuerySource;

export const productsQuery = (
  client: CatalogClient,
  options: ProductsQueryOptions,
  run?: SourceRunOptions,
): QuerySourceStream & RecordStream<Product> => querySource('products.query', client, options, run);
export const organizationsQuery = (
  client: CatalogClient,
  options?: QueryOptions<'organizations.query'>,
  run?: SourceRunOptions,
) => querySource('organizations.query', client, options, run);
export const correctionsQuery = (
  client: CatalogClient,
  options?: QueryOptions<'corrections.query'>,
  run?: SourceRunOptions,
) => querySource('corrections.query', client, options, run);
export const updatesQuery = (client: CatalogClient, options?: QueryOptions<'updates.query'>, run?: SourceRunOptions) =>
  querySource('updates.query', client, options, run);
export const brandsQuery = (client: CatalogClient, options?: QueryOptions<'brands.query'>, run?: SourceRunOptions) =>
  querySource('brands.query', client, options, run);
export const catalogCategoriesQuery = (
  client: CatalogClient,
  options?: Omit<QueryOptions<'catalog-categories.query'>, 'sorting'>,
  run?: SourceRunOptions,
) => querySource('catalog-categories.query', client, options, run);
export const mediaQuery = (
  client: CatalogClient,
  options?: QueryOptions<'media.query'>,
  run?: SourceRunOptions,
): QuerySourceStream & RecordStream<MediaRecord> => querySource('media.query', client, options, run);
export const publicCategoriesQuery = (
  client: CatalogClient,
  options?: QueryOptions<'public-categories.query'>,
  run?: SourceRunOptions,
) => querySource('public-categories.query', client, options, run);
export const dietaryRestrictionsQuery = (
  client: CatalogClient,
  options?: QueryOptions<'dietary-restrictions.query'>,
  run?: SourceRunOptions,
) => querySource('dietary-restrictions.query', client, options, run);
export const colorsQuery = (client: CatalogClient, options?: QueryOptions<'colors.query'>, run?: SourceRunOptions) =>
  querySource('colors.query', client, options, run);
export const activeIngredientsQuery = (
  client: CatalogClient,
  options?: QueryOptions<'active-ingredients.query'>,
  run?: SourceRunOptions,
) => querySource('active-ingredients.query', client, options, run);
export const productFamiliesQuery = (
  client: CatalogClient,
  options?: QueryOptions<'product-families.query'>,
  run?: SourceRunOptions,
) => querySource('product-families.query', client, options, run);
export const atcCategoriesQuery = (
  client: CatalogClient,
  options?: QueryOptions<'atc-categories.query'>,
  run?: SourceRunOptions,
) => querySource('atc-categories.query', client, options, run);
export const ospCategoriesQuery = (
  client: CatalogClient,
  options?: QueryOptions<'osp-categories.query'>,
  run?: SourceRunOptions,
) => querySource('osp-categories.query', client, options, run);

/** The run's client, or a ConfigError saying who must provide it. */
export function clientOf(ctx: StageContext, type: string): CatalogClient {
  if (!ctx.client) {
    throw new ConfigError(
      `source "${type}" needs a CatalogClient in its stage context (ctx.client); the runner creates one per run from the connection settings`,
      {
        path: 'source',
      },
    );
  }
  return ctx.client;
}

const DESCRIPTIONS: Record<QueryEndpointName, string> = {
  'products.query':
    'Products by filter, read by createdAt (page 0 of what is left each time, in createdAt order), exact under churn; code lists are split.',
  'organizations.query': 'Organizations by filter, paged.',
  'corrections.query': 'Corrections (feedback on products) by filter, paged.',
  'updates.query': 'News items by filter, paged (incremental with updatedSince).',
  'brands.query': 'Brands by filter, paged.',
  'catalog-categories.query': 'Catalog categories by filter, paged.',
  'media.query':
    'Media records by filter, read by createdAt (page 0 of what is left each time, in createdAt order), exact under churn.',
  'public-categories.query':
    'Public categories (the tree products point into with publicCategories[].id), paged; filter: id only.',
  'dietary-restrictions.query':
    'Dietary restrictions (codes products carry in dietaryRestrictions[].id), paged; filter: id only.',
  'colors.query': 'Colors (codes products carry in colors[].id), paged; filter: id only.',
  'active-ingredients.query':
    'Active ingredients (the ids products carry in activeIngredients[].id), read whole; filter: id only.',
  'product-families.query':
    'Product families (the ids products carry in productFamily[].id), read whole; filter: id only.',
  'atc-categories.query':
    'ATC categories (codes such as A01AB03, as products carry them in atcCategory[]), ids and parents kept as sent; filter: id only.',
  'osp-categories.query':
    'French OSP categories (string ids with leading zeros, kept as sent; parent written as a string), read whole; filter: id only. Only the French service has them.',
};

function queryStage<E extends QueryEndpointName>(endpoint: E) {
  return defineStage({
    kind: 'source',
    type: endpoint,
    description: DESCRIPTIONS[endpoint],
    options: QUERY_OPTION_SCHEMAS[endpoint] as ReturnType<typeof queryOptionsSchema<E>>,
    create: (options, ctx) =>
      createQuerySource(endpoint, clientOf(ctx, endpoint), options as ParsedQueryOptions, {
        events: ctx.events,
        signal: ctx.signal,
        startedAt: ctx.run.startedAt,
      }),
  });
}

export const queryStages = [
  queryStage('products.query'),
  queryStage('organizations.query'),
  queryStage('corrections.query'),
  queryStage('updates.query'),
  queryStage('brands.query'),
  queryStage('catalog-categories.query'),
  queryStage('media.query'),
  queryStage('public-categories.query'),
  queryStage('dietary-restrictions.query'),
  queryStage('colors.query'),
  queryStage('active-ingredients.query'),
  queryStage('product-families.query'),
  queryStage('atc-categories.query'),
  queryStage('osp-categories.query'),
];
