// The API's limits (spec §8) as named constants, so no number is written twice.

/** Page sizes the paged query endpoints accept. */
export const PAGE_SIZES = [10, 50, 100, 250] as const;
export type PageSize = (typeof PAGE_SIZES)[number];

/** The service's default page size when `page.size` is left out. */
export const DEFAULT_PAGE_SIZE: PageSize = 100;

/** What our sources ask for: the largest page, fewest requests. */
export const EXTRACT_PAGE_SIZE: PageSize = 250;

/** products/query reaches at most this many results; the service also caps `meta.total` here. */
export const MAX_REACHABLE_RESULTS = 10_000;

/** Identifier codes allowed in one filter; longer lists must be split into several queries. */
export const MAX_CODES_PER_FILTER = 1_000;

/** Requests per minute per credential before the service answers 429. */
export const DEFAULT_RATE_LIMIT_PER_MINUTE = 100;
