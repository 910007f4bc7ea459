// The stream sources: `products.stream` (every product, no 10000 cap) and
// `media.stream`. One request per code chunk, read by the NDJSON reader; the
// sorting is always sent (default `{id: ASC}`) so that a resumed stream comes
// back in the same order and delivered indexes can be skipped.
import { z } from 'zod';
import type { RecordStream } from '../core/record-stream.js';
import type { MediaRecord, Product } from '../catalog/resources/index.js';
import type { EndpointFilter, EndpointSorting } from '../catalog/index.js';
import type { CatalogClient, StreamEndpointName } from '../client/index.js';
import { markStage, plannedStage } from '../core/planned-stage.js';
import { defineStage } from '../core/stage.js';
import { chunkFilter, exactMatchTest, renamedWarning } from './code-chunks.js';
import { NdjsonStreamSource } from './ndjson-stream.js';
import { filterOption, maxLineLengthOption, maxResumesOption, sortingOption } from './options.js';
import { parseStageOptions } from '../core/issues.js';
import { clientOf, defaultSorting, requestBody } from './query-sources.js';
import type { SourceRunOptions } from './source-stream.js';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';

function streamOptionsSchema(endpoint: StreamEndpointName) {
  return z.strictObject({
    filter: filterOption(endpoint),
    sorting: sortingOption(endpoint, defaultSorting(endpoint)),
    maxLineLength: maxLineLengthOption,
    maxResumes: maxResumesOption,
  });
}

export const productsStreamOptions = streamOptionsSchema('products.stream');
export const mediaStreamOptions = streamOptionsSchema('media.stream');
/** The options schema of each stream source. */
export const STREAM_OPTION_SCHEMAS: Record<StreamEndpointName, z.ZodType> = {
  'products.stream': productsStreamOptions,
  'media.stream': mediaStreamOptions,
};

interface StreamOptionTypes<E extends StreamEndpointName> {
  filter?: EndpointFilter<E>;
  sorting?: EndpointSorting<E>;
  maxLineLength?: number;
  maxResumes?: number;
}
/** Options of a stream source in code; each key shows its description on hover (src/generated/stage-option-docs.ts). */
export type StreamOptions<E extends StreamEndpointName> = WithOptionDocs<E, StreamOptionTypes<E>>;
export type ProductsStreamOptions = StreamOptions<'products.stream'> & { filter: EndpointFilter<'products.stream'> };

interface ParsedStreamOptions {
  filter?: unknown;
  sorting?: unknown;
  maxLineLength: number;
  maxResumes: number;
}

function createStreamSource(
  endpoint: StreamEndpointName,
  client: CatalogClient,
  options: ParsedStreamOptions,
  run: SourceRunOptions,
): NdjsonStreamSource {
  const chunks = chunkFilter(endpoint, options.filter);
  const sorting = options.sorting ?? defaultSorting(endpoint);
  const segments = chunks.chunks.map((c) => ({ body: requestBody(c.filter, sorting), label: c.label }));
  const events = run.events ?? client.events;
  const warning = renamedWarning(endpoint, chunks.renamed);
  if (warning) events.emit('warning', warning);
  const keep = exactMatchTest(endpoint, options.filter);
  return new NdjsonStreamSource(client, endpoint, segments, {
    maxLineLength: options.maxLineLength,
    maxResumes: options.maxResumes,
    dedupe: chunks.dedupe,
    ...(keep ? { keep } : {}),
    events,
    signal: run.signal,
  });
}

export function streamSource<E extends StreamEndpointName>(
  endpoint: E,
  client: CatalogClient,
  options: StreamOptions<E> = {},
  run: SourceRunOptions = {},
): NdjsonStreamSource {
  const parsed = parseStageOptions(endpoint, STREAM_OPTION_SCHEMAS[endpoint], options) as ParsedStreamOptions;
  // Marked with its stage, so a sink piped from it knows the records' schema (core/planned-stage.ts).
  const definition = streamStages.find((d) => d.type === endpoint)!;
  return markStage(
    createStreamSource(endpoint, client, parsed, run),
    plannedStage(definition, parsed, options, 'source'),
  );
}

export const productsStream = (
  client: CatalogClient,
  options: ProductsStreamOptions,
  run?: SourceRunOptions,
): NdjsonStreamSource & RecordStream<Product> => streamSource('products.stream', client, options, run);
export const mediaStream = (
  client: CatalogClient,
  options?: StreamOptions<'media.stream'>,
  run?: SourceRunOptions,
): NdjsonStreamSource & RecordStream<MediaRecord> => streamSource('media.stream', client, options, run);

function streamStage(endpoint: StreamEndpointName, description: string) {
  return defineStage({
    kind: 'source',
    type: endpoint,
    description,
    options: STREAM_OPTION_SCHEMAS[endpoint] as ReturnType<typeof streamOptionsSchema>,
    create: (options, ctx) =>
      createStreamSource(endpoint, clientOf(ctx, endpoint), options as ParsedStreamOptions, {
        events: ctx.events,
        signal: ctx.signal,
      }),
  });
}

export const streamStages = [
  streamStage(
    'products.stream',
    'Every product matching the filter as one NDJSON stream (no 10000 cap); resumed if cut.',
  ),
  streamStage('media.stream', 'Media records (photos, frontals, links) as one NDJSON stream; resumed if cut.'),
];
