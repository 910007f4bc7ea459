// Option schemas shared by the source stages (zod, strict, described), and the
// parse step the code-API factories share with the pipeline loader, so
// `productsQuery(client, {...})` and a pipeline file accept exactly the same
// options with the same defaults and the same messages.
import { z } from 'zod';
import {
  EXTRACT_PAGE_SIZE,
  type EndpointName,
  MAX_CODES_PER_FILTER,
  PAGE_SIZES,
  endpoints,
  notShown,
  sortingSchema,
} from '../catalog/index.js';
import { compact } from '../client/request-summary.js';
import { chunkableFilterSchema } from './code-chunks.js';

export const DEFAULT_CONCURRENCY = 3;
export const MAX_CONCURRENCY = 16;
/** Longest NDJSON line accepted by default (characters): far above a product with every locale. */
export const DEFAULT_MAX_LINE_LENGTH = 8 * 1024 * 1024;
export const DEFAULT_MAX_RESUMES = 5;

export function filterOption<E extends EndpointName>(endpoint: E) {
  const required = endpoints[endpoint].filterRequired;
  const description = `Filter of ${endpoint} (spec §4): one filter name, or and/or/not of filters. Code lists longer than ${MAX_CODES_PER_FILTER} at the top level or in a top-level \`and\` are split into several queries.${required ? ' Required.' : ' Default: everything.'}`;
  // describe() last: a wrapper such as optional() does not inherit its inner schema's description.
  // typeLabel: how `stages` and docs/stages.md name this option's type (its JSON Schema is open).
  const meta = { description, typeLabel: `${endpoint} filter` };
  return required ? chunkableFilterSchema(endpoint).meta(meta) : chunkableFilterSchema(endpoint).optional().meta(meta);
}

export function sortingOption<E extends EndpointName>(endpoint: E, fallback: unknown) {
  const byCreatedAt = endpoints[endpoint].capped;
  const sliced = byCreatedAt
    ? ' Read by createdAt, page 0 of what is left each time (exact under churn): records come in createdAt order, newest first for createdAt DESC, whatever sorting is given.'
    : '';
  const mutable = Object.keys(endpoints[endpoint].sortings).filter((k) => k !== 'id' && k !== 'createdAt');
  const stable =
    endpoints[endpoint].mode === 'paged' && mutable.length > 0 && !byCreatedAt
      ? endpoints[endpoint].incremental
        ? ` Over several pages, ${mutable.join(', ')} (values that change) need a bounded updatedSince window (a pipeline with state:).`
        : ` ${mutable.join(', ')} (values that change) are refused for a query of several pages: sort by id.`
      : endpoints[endpoint].mode === 'stream' && mutable.length > 0
        ? ` A cut stream sorted by id or createdAt is resumed after the records already delivered; sorted by ${mutable.join(', ')} (values that change), a cut after the first record fails the run (stream.resume_not_exact).`
        : '';
  return sortingSchema(endpoints[endpoint].sortings, (issues) => notShown(endpoints[endpoint], issues))
    .optional()
    .meta({
      description: `Sorting: one of ${Object.keys(endpoints[endpoint].sortings).join(', ')}, with ASC or DESC (default ${compact(fallback)}).${sliced}${stable}`,
      typeLabel: `${endpoint} sorting`,
    });
}

export const pageSizeOption = z
  .literal([...PAGE_SIZES])
  .default(EXTRACT_PAGE_SIZE)
  .describe(
    `Records per page request: ${PAGE_SIZES.join(', ')} (default ${EXTRACT_PAGE_SIZE}: fewest requests). ` +
      'Reference tables without a createdAt filter are read in one request without pages (one consistent answer), whatever the size.',
  );

export const concurrencyOption = z
  .int()
  .min(1)
  .max(MAX_CONCURRENCY)
  .default(DEFAULT_CONCURRENCY)
  .describe(
    `Page requests kept in flight (default ${DEFAULT_CONCURRENCY}; with several keys about 2 per key); pages buffered ahead of the consumer: as many, and for products.query and media.query read by createdAt up to 8 per request plus 2; the rate limit still applies. Reads by createdAt keep more on their way when the keys' budget at the latency seen needs more (up to the client's sockets, 4 per key, and half the pages held).`,
  );

export const maxLineLengthOption = z
  .int()
  .positive()
  .default(DEFAULT_MAX_LINE_LENGTH)
  .describe(
    `Longest NDJSON line accepted, in characters (default ${DEFAULT_MAX_LINE_LENGTH}); a longer line fails the stream.`,
  );

export const maxResumesOption = z
  .int()
  .nonnegative()
  .default(DEFAULT_MAX_RESUMES)
  .describe(
    `Times a broken-off stream is asked for again in a row without progress before the source fails (default ${DEFAULT_MAX_RESUMES}).`,
  );
