// Every query and stream endpoint of the spec (§4) as data: path, mode, resource,
// filters, sortings and what the body requires. Sources, the sandbox and the
// pipeline loader all read this table, and `validateRequest` rejects a request
// that breaks the spec before it is sent.
import { z } from 'zod';
import { RequestValidationError } from '../../errors.js';
import {
  type Filter,
  type FilterIssue,
  type FilterParams,
  type Sorting,
  type SortingParams,
  type RenamedFilter,
  checkFilter,
  checkSorting,
  codeFilterNames,
  formatPath,
  toWireFilter,
} from '../filters.js';
import { DEFAULT_PAGE_SIZE, MAX_REACHABLE_RESULTS, PAGE_SIZES, type PageSize } from '../limits.js';
import type { ResourceName } from '../resources/index.js';
import { type Region, regionFilterIssues } from '../regions.js';
import { productFilters, productSortings } from './products.js';
import {
  type DeprecatedMediaFilters,
  brandFilters,
  brandSortings,
  catalogCategoryFilters,
  catalogCategorySortings,
  correctionFilters,
  correctionSortings,
  mediaFilterAliases,
  mediaFilters,
  mediaSortings,
  organizationFilters,
  organizationSortings,
  updateFilters,
  updateSortings,
} from './reference.js';
import {
  activeIngredientFilters,
  activeIngredientSortings,
  atcCategoryFilters,
  atcCategorySortings,
  colorFilters,
  colorSortings,
  dietaryRestrictionFilters,
  dietaryRestrictionSortings,
  ospCategoryFilters,
  ospCategorySortings,
  productFamilyFilters,
  productFamilySortings,
  publicCategoryFilters,
  publicCategorySortings,
} from './taxonomy.js';

export interface EndpointSpec<F extends FilterParams = FilterParams, S extends SortingParams = SortingParams> {
  name: string;
  method: 'POST';
  path: string;
  /** `paged`: JSON `{meta, results}` pages; `stream`: NDJSON lines, no page. */
  mode: 'paged' | 'stream';
  resource: ResourceName;
  filters: F;
  sortings: S;
  filterRequired: boolean;
  sortingRequired: boolean;
  /** The spec lists `page` as required (products/query); elsewhere leaving it out returns all results. */
  pageRequired: boolean;
  /** The service's default sorting when none is sent. */
  defaultSorting?: Sorting<S>;
  /** products/query: only the first 10000 results are reachable and `meta.total` is capped there. */
  capped: boolean;
  /** Filters that take lists of identifier codes (at most 1000 per query). */
  codeFilters: string[];
  /** Whether the endpoint has an `updatedSince` filter (incremental extracts). */
  incremental: boolean;
  /**
   * The spec names the endpoint but shows none of its filters and sortings: only `id` and the
   * empty filter (`{}` or none) are accepted, and a refusal says why.
   */
  filtersNotShown?: boolean;
  /** Deprecated filter names accepted and sent under the service's name (`kind` -> `type`). */
  filterAliases?: Readonly<Record<string, string>>;
}

function endpoint<F extends FilterParams, S extends SortingParams>(
  spec: Omit<EndpointSpec<F, S>, 'method' | 'codeFilters' | 'incremental'>,
): EndpointSpec<F, S> {
  return {
    ...spec,
    method: 'POST',
    codeFilters: codeFilterNames(spec.filters),
    incremental: 'updatedSince' in spec.filters,
  };
}

/**
 * A reference table read whole (docs/reference-data.md): nothing required, never capped, sorted
 * by id by default, and filters the spec does not show (ours, mirrored by the sandbox).
 */
function referenceTable<F extends FilterParams, S extends SortingParams>(
  name: `${string}.query`,
  resource: EndpointSpec<F, S>['resource'],
  filters: F,
  sortings: S,
): EndpointSpec<F, S> {
  return endpoint({
    name,
    path: `/v4/${name.slice(0, -'.query'.length)}/query`,
    mode: 'paged',
    resource,
    filters,
    sortings,
    filterRequired: false,
    sortingRequired: false,
    pageRequired: false,
    // Every reference table sorts by id (its sortings all declare it).
    defaultSorting: { id: 'ASC' } as EndpointSpec<F, S>['defaultSorting'],
    capped: false,
    filtersNotShown: true,
  });
}

export const endpoints = {
  'products.query': endpoint({
    name: 'products.query',
    path: '/v4/products/query',
    mode: 'paged',
    resource: 'product',
    filters: productFilters,
    sortings: productSortings,
    filterRequired: true,
    sortingRequired: true,
    pageRequired: true,
    capped: true,
  }),
  'products.stream': endpoint({
    name: 'products.stream',
    path: '/v4/products/stream',
    mode: 'stream',
    resource: 'product',
    filters: productFilters,
    sortings: productSortings,
    filterRequired: true,
    sortingRequired: true,
    pageRequired: false,
    capped: false,
  }),
  'media.stream': endpoint({
    name: 'media.stream',
    path: '/v4/media/stream',
    mode: 'stream',
    resource: 'media',
    filters: mediaFilters,
    sortings: mediaSortings,
    filterRequired: false,
    sortingRequired: false,
    pageRequired: false,
    defaultSorting: { id: 'ASC' },
    capped: false,
    filterAliases: mediaFilterAliases,
  }),
  'organizations.query': endpoint({
    name: 'organizations.query',
    path: '/v4/organizations/query',
    mode: 'paged',
    resource: 'organization',
    filters: organizationFilters,
    sortings: organizationSortings,
    filterRequired: false,
    sortingRequired: false,
    pageRequired: false,
    defaultSorting: { id: 'ASC' },
    capped: false,
  }),
  'corrections.query': endpoint({
    name: 'corrections.query',
    path: '/v4/corrections/query',
    mode: 'paged',
    resource: 'correction',
    filters: correctionFilters,
    sortings: correctionSortings,
    filterRequired: false,
    sortingRequired: false,
    pageRequired: false,
    defaultSorting: { id: 'ASC' },
    capped: false,
  }),
  'updates.query': endpoint({
    name: 'updates.query',
    path: '/v4/updates/query',
    mode: 'paged',
    resource: 'news-item',
    filters: updateFilters,
    sortings: updateSortings,
    filterRequired: false,
    sortingRequired: false,
    pageRequired: false,
    defaultSorting: { id: 'ASC' },
    capped: false,
  }),
  'catalog-categories.query': endpoint({
    name: 'catalog-categories.query',
    path: '/v4/catalog-categories/query',
    mode: 'paged',
    resource: 'catalog-category',
    filters: catalogCategoryFilters,
    sortings: catalogCategorySortings,
    filterRequired: false,
    sortingRequired: false,
    pageRequired: false,
    capped: false,
  }),
  'brands.query': endpoint({
    name: 'brands.query',
    path: '/v4/brands/query',
    mode: 'paged',
    resource: 'brand',
    filters: brandFilters,
    sortings: brandSortings,
    filterRequired: false,
    sortingRequired: false,
    pageRequired: false,
    defaultSorting: { id: 'ASC' },
    capped: false,
  }),
  'media.query': endpoint({
    name: 'media.query',
    path: '/v4/media/query',
    mode: 'paged',
    resource: 'media',
    // The spec shows no media filters; media/stream takes "filter and sorting as for the media
    // query", so both share our decision (reference.ts mediaFilters), mirrored by the sandbox.
    filters: mediaFilters,
    sortings: mediaSortings,
    filterRequired: false,
    sortingRequired: false,
    pageRequired: false,
    defaultSorting: { id: 'ASC' },
    // The vendor's documentation: media query reaches 10000 results too; media/stream the rest.
    capped: true,
    filterAliases: mediaFilterAliases,
  }),
  'public-categories.query': referenceTable(
    'public-categories.query',
    'public-category',
    publicCategoryFilters,
    publicCategorySortings,
  ),
  'dietary-restrictions.query': referenceTable(
    'dietary-restrictions.query',
    'dietary-restriction',
    dietaryRestrictionFilters,
    dietaryRestrictionSortings,
  ),
  'colors.query': referenceTable('colors.query', 'color', colorFilters, colorSortings),
  // The reference tables of the vendor's regional docs (docs/reference-data.md): read whole like
  // the taxonomy endpoints; osp-categories only exists on the French service.
  'active-ingredients.query': referenceTable(
    'active-ingredients.query',
    'active-ingredient',
    activeIngredientFilters,
    activeIngredientSortings,
  ),
  'product-families.query': referenceTable(
    'product-families.query',
    'product-family',
    productFamilyFilters,
    productFamilySortings,
  ),
  'atc-categories.query': referenceTable(
    'atc-categories.query',
    'atc-category',
    atcCategoryFilters,
    atcCategorySortings,
  ),
  'osp-categories.query': referenceTable(
    'osp-categories.query',
    'osp-category',
    ospCategoryFilters,
    ospCategorySortings,
  ),
} as const;

export type Endpoints = typeof endpoints;
export type EndpointName = keyof Endpoints;
export const ENDPOINT_NAMES = Object.keys(endpoints) as EndpointName[];

type FiltersOf<E extends EndpointName> = E extends 'media.stream' | 'media.query'
  ? Endpoints[E]['filters'] & DeprecatedMediaFilters
  : Endpoints[E]['filters'];
type SortingsOf<E extends EndpointName> = Endpoints[E]['sortings'];

/** The filter type of an endpoint: `EndpointFilter<'products.query'>` completes every product filter. */
export type EndpointFilter<E extends EndpointName> = Filter<FiltersOf<E>>;
export type EndpointSorting<E extends EndpointName> = Sorting<SortingsOf<E>>;
export type ProductFilter = EndpointFilter<'products.query'>;
export type ProductSorting = EndpointSorting<'products.query'>;
export type MediaFilter = EndpointFilter<'media.stream'>;
export type PublicCategoryFilter = EndpointFilter<'public-categories.query'>;

export interface PageRequest {
  /** Zero-based page number. */
  no: number;
  /** Default 100 (the service's default). */
  size?: PageSize;
}

/** The JSON body of a request to endpoint E. */
export interface QueryRequest<E extends EndpointName = EndpointName> {
  filter?: EndpointFilter<E>;
  sorting?: EndpointSorting<E>;
  page?: PageRequest;
}

export function getEndpoint(name: string): EndpointSpec | undefined {
  return (endpoints as Record<string, EndpointSpec>)[name];
}

const PageSchema = z.strictObject({
  no: z.int().nonnegative(),
  // The spec: size defaults to 100 when left out.
  size: z
    .union(
      PAGE_SIZES.map((s) => z.literal(s)) as [z.ZodLiteral<10>, z.ZodLiteral<50>, z.ZodLiteral<100>, z.ZodLiteral<250>],
      {
        message: `page size must be one of ${PAGE_SIZES.join(', ')}`,
      },
    )
    .optional(),
});

/** All the ways a request body breaks the spec; empty when it is valid. */
export function checkRequest(name: EndpointName | string, body: unknown): FilterIssue[] {
  const spec = getEndpoint(name);
  if (!spec) return [{ path: [], message: `unknown endpoint "${name}"` }];
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return [{ path: [], message: 'the request body must be a JSON object' }];
  const b = body as Record<string, unknown>;
  const issues: FilterIssue[] = [];
  const allowed = ['filter', 'sorting', ...(spec.mode === 'paged' ? ['page'] : [])];
  for (const key of Object.keys(b)) {
    if (!allowed.includes(key))
      issues.push({ path: [key], message: `unknown key "${key}"; allowed: ${allowed.join(', ')}` });
  }
  if (b.filter === undefined || (spec.filtersNotShown && isEmptyObject(b.filter))) {
    if (spec.filterRequired) issues.push({ path: ['filter'], message: 'is required by this endpoint' });
  } else {
    issues.push(...notShown(spec, checkFilter(spec.filters, b.filter, ['filter'], spec.filterAliases)));
  }
  const sortingNames = Object.keys(spec.sortings);
  if (b.sorting === undefined) {
    if (spec.sortingRequired)
      issues.push({ path: ['sorting'], message: `is required by this endpoint; allowed: ${sortingNames.join(', ')}` });
  } else if (sortingNames.length === 0) {
    issues.push({ path: ['sorting'], message: 'this endpoint takes no sorting' });
  } else {
    issues.push(...notShown(spec, checkSorting(spec.sortings, b.sorting, ['sorting'])));
  }
  if (b.page !== undefined && spec.mode === 'paged') {
    const parsed = PageSchema.safeParse(b.page);
    if (!parsed.success) {
      for (const issue of parsed.error.issues)
        issues.push({ path: ['page', ...(issue.path as (string | number)[])], message: issue.message });
    } else if (spec.capped && parsed.data.no * (parsed.data.size ?? DEFAULT_PAGE_SIZE) >= MAX_REACHABLE_RESULTS) {
      issues.push({
        path: ['page', 'no'],
        message: `offset ${parsed.data.no * (parsed.data.size ?? DEFAULT_PAGE_SIZE)} is past the ${MAX_REACHABLE_RESULTS} results this endpoint can reach; narrow the filter (the ${spec.name} source slices by createdAt for you) or use ${spec.name.replace(/\.query$/, '.stream')}`,
      });
    }
  } else if (b.page === undefined && spec.pageRequired) {
    issues.push({ path: ['page'], message: 'is required by this endpoint: {no, size}' });
  }
  return issues;
}

/** `{}`: the empty filter, which the endpoints whose filters are not shown accept as "everything". */
export function isEmptyObject(v: unknown): boolean {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;
}

/** On an endpoint whose filters the spec does not show, an unknown name is refused for that reason. */
export function notShown(spec: EndpointSpec, issues: FilterIssue[]): FilterIssue[] {
  if (!spec.filtersNotShown) return issues;
  return issues.map((i) =>
    /^unknown (filter|sorting) /.test(i.message)
      ? {
          ...i,
          message: `${i.message}. The API's documentation names ${spec.path} but does not show its filters or sortings, so catalog-streams accepts only \`id\` and the empty filter there (see the docs/reference-data.md)`,
        }
      : i,
  );
}

/**
 * A request body as it is sent: the filter under the service's names, national codes as
 * zero-padded strings (`toWireFilter`); `renamed` lists the deprecated names it replaced.
 */
export function toWireRequest<B>(name: EndpointName | string, body: B): { body: B; renamed: RenamedFilter[] } {
  const spec = getEndpoint(name);
  const b = body as { filter?: unknown } | undefined;
  if (!spec || !b || typeof b !== 'object' || b.filter === undefined) return { body, renamed: [] };
  const wire = toWireFilter(spec.filters, b.filter, spec.filterAliases);
  return { body: { ...b, filter: wire.filter } as B, renamed: wire.renamed };
}

/** Throws a RequestValidationError naming the first problem's path (and how many more there are). */
export function validateRequest<E extends EndpointName>(
  name: E,
  body: QueryRequest<E> | unknown,
): asserts body is QueryRequest<E> {
  const issues = checkRequest(name, body);
  if (issues.length === 0) return;
  const [first] = issues;
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  throw new RequestValidationError(name, formatPath(first!.path), `${first!.message}${more}`);
}

/**
 * Throws a RequestValidationError when `region` does not take the request's filter: a filter the
 * region does not document, or a code value of the wrong format (regions.ts). The client calls it
 * before every request of a client made with a region, so nothing the region refuses is sent.
 */
export function validateRegionRequest(region: Region, name: EndpointName | string, body: unknown): void {
  const spec = getEndpoint(name);
  const filter = (body as { filter?: unknown } | undefined)?.filter;
  if (!spec || filter === undefined) return;
  const issues = regionFilterIssues(region, spec.resource, filter, ['filter'], spec.filterAliases);
  if (issues.length === 0) return;
  const [first] = issues;
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  throw new RequestValidationError(name, formatPath(first!.path), `${first!.message}${more}`);
}

export { EXACT_CODE_FIELDS, LIVE_PRODUCT_FILTERS, productFilters, productSortings } from './products.js';
export * from './reference.js';
export * from './taxonomy.js';
export * from './find.js';
