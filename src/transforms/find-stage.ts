// `products.find` / `media.find`: a lookup transform. Ids come in (bare ids, or
// records whose `idField` holds the id, e.g. the `products[]` of media records
// exploded), and the records the find endpoint returns go out, in input order.
//
// Every lookup is one GET through the run's CatalogClient, so it takes a slot
// from the same rate limiter as the run's source and is retried by the same
// policy: a lookup stage never pushes a run over the API's request budget.
// Lookups run one at a time: at 100 requests per minute the budget, not the
// latency, bounds the pace. To fetch many known ids, `products.query` with an
// `id` filter (1000 ids per request, split for you) costs far fewer requests.
//
// Not found (404): skipped and counted (default), written to a dead-letter
// sink as `{id}` with the reason, or the run fails; the count is in the stage
// stats (`invalid`) and in a `transform.not_found` info event at the end.
import { z } from 'zod';
import { type FindEndpointName, findEndpoints, resourceSchemas } from '../catalog/index.js';
import { recordSchemaFromZod } from '../core/zod-column-hints.js';
import type { CatalogClient } from '../client/index.js';
import { ConfigError, DataError } from '../errors.js';
import { markStage, plannedStage } from '../core/planned-stage.js';
import { defineStage, type StageContext } from '../core/stage.js';
import { parseStageOptions } from '../core/issues.js';
import { InvalidRecordPolicy, SinkSpecOption } from './dead-letter.js';
import { RecordTransform, type RecordOutput } from './record-transform.js';
import { type Getter, compileGetter } from '../core/field-path.js';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';

const NOT_FOUND_ACTIONS = ['skip', 'dead-letter', 'fail'] as const;

function findOptionsSchema(endpoint: FindEndpointName) {
  return z.strictObject({
    idField: z
      .string()
      .min(1)
      .default('id')
      .describe(
        'Field of each incoming record that holds the id to look up (a dotted path; default id). Bare ids (strings, numbers) are taken as they are.',
      ),
    onNotFound: z
      .enum(NOT_FOUND_ACTIONS)
      .default('skip')
      .describe(
        `An id ${findEndpoints[endpoint].path} answers 404 for is counted and skipped (skip), written to the dead-letter sink as {id} (dead-letter), or fails the run (fail)`,
      ),
    deadLetter: SinkSpecOption.default({ type: 'jsonl', path: `out/{name}-${endpoint}-not-found.jsonl` }).describe(
      'Sink for ids not found, created on the first one; {name} in its path is the run name (default: jsonl)',
    ),
  });
}

export const productsFindOptions = findOptionsSchema('products.find');
export const mediaFindOptions = findOptionsSchema('media.find');
type ParsedFindOptions = z.output<typeof productsFindOptions>;

interface FindOptionTypes {
  idField?: string;
  onNotFound?: (typeof NOT_FOUND_ACTIONS)[number];
  deadLetter?: { type: string; [option: string]: unknown };
}
/** Options of a find transform in code; each key shows its description on hover (src/generated/stage-option-docs.ts). */
export type FindOptions<E extends FindEndpointName = FindEndpointName> = WithOptionDocs<E, FindOptionTypes>;

export class FindTransform extends RecordTransform {
  readonly endpoint: FindEndpointName;
  /** Ids the service answered 404 for. */
  notFound = 0;
  readonly #client: CatalogClient;
  readonly #getId: Getter;
  readonly #idField: string;
  readonly #policy: InvalidRecordPolicy;

  constructor(endpoint: FindEndpointName, client: CatalogClient, options: ParsedFindOptions, ctx: StageContext) {
    super(endpoint, ctx);
    this.endpoint = endpoint;
    this.#client = client;
    this.#idField = options.idField;
    this.#getId = compileGetter(options.idField, 'idField');
    // Ids not found are the input's business (ids from another table), not bad data: no share of them fails the run.
    this.#policy = new InvalidRecordPolicy(
      this,
      { onInvalid: options.onNotFound, deadLetter: options.deadLetter, maxInvalid: 'none' },
      ctx,
      findEndpoints[endpoint].resource,
    );
  }

  // Bare ids are wrapped as records so the stream machinery (which takes records) carries them.
  override _write(chunk: unknown, encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    super._write(isBareId(chunk) ? { [this.#idField]: chunk } : chunk, encoding, callback);
  }

  override _writev(
    chunks: Array<{ chunk: unknown; encoding: BufferEncoding }>,
    callback: (error?: Error | null) => void,
  ): void {
    super._writev!(
      chunks.map((c) => (isBareId(c.chunk) ? { ...c, chunk: { [this.#idField]: c.chunk } } : c)),
      callback,
    );
  }

  processRecord(record: object): Promise<RecordOutput> {
    const id = this.#getId(record);
    if (!isBareId(id)) {
      throw new DataError(
        `${this.endpoint}: a record has ${id === undefined ? 'no' : `a non-id value in its`} field "${this.#idField}" (expected a string or integer id); set idField to the field that holds the id`,
        { code: 'data.no_id' },
      );
    }
    return this.#client.find(this.endpoint, id, { signal: this.ctx.signal, events: this.ctx.events }).then((found) => {
      if (found) return found as object;
      this.notFound++;
      return this.#policy.reject({ id }, [
        {
          path: this.#idField,
          message: `${findEndpoints[this.endpoint].path}?id=${id} answered 404: no such ${findEndpoints[this.endpoint].resource}`,
        },
      ]);
    });
  }

  protected override pending(): Promise<void> | undefined {
    return this.#policy.pending();
  }

  protected override async finish(): Promise<void> {
    if (this.notFound) {
      const message = `${this.endpoint}: ${this.notFound} of ${this.stats.in} ids not found (${this.#policy.action})`;
      // A base URL or proxy without this path answers 404 too: every id "not found" is worth a warning.
      if (this.notFound === this.stats.in) {
        this.ctx.events.emit('warning', {
          code: 'transform.none_found',
          message: `${message}; is ${findEndpoints[this.endpoint].path} served at CATALOG_BASE_URL?`,
        });
      } else {
        this.ctx.events.emit('info', { code: 'transform.not_found', message, stage: this.stage });
      }
    }
    await this.#policy.finish();
  }

  protected override abort(): void {
    this.#policy.abort();
  }
}

function isBareId(v: unknown): v is string | number {
  return (typeof v === 'string' && v !== '') || (typeof v === 'number' && Number.isSafeInteger(v));
}

function clientFor(ctx: StageContext, type: string): CatalogClient {
  if (!ctx.client) {
    throw new ConfigError(
      `${type} needs a CatalogClient in its stage context (ctx.client); the runner creates one per run from the connection settings`,
      { path: type },
    );
  }
  return ctx.client;
}

/** A find transform for code: ids or records in, found records out. */
export function findTransform<E extends FindEndpointName>(
  endpoint: E,
  client: CatalogClient,
  ctx: StageContext,
  options: FindOptions<E> = {},
): FindTransform {
  const schema = endpoint === 'products.find' ? productsFindOptions : mediaFindOptions;
  const parsed = parseStageOptions(endpoint, schema, options) as ParsedFindOptions;
  const definition = findStages.find((d) => d.type === endpoint)!;
  return markStage(
    new FindTransform(endpoint, client, parsed, { ...ctx, client }),
    plannedStage(definition, parsed, options, 'transform'),
  );
}

function findStage(endpoint: FindEndpointName, description: string) {
  return defineStage({
    kind: 'transform',
    type: endpoint,
    description,
    options: endpoint === 'products.find' ? productsFindOptions : mediaFindOptions,
    // What comes out is the found resource's records, whatever came in.
    schema: () => recordSchemaFromZod(resourceSchemas[findEndpoints[endpoint].resource]),
    create: (options, ctx) => {
      const find = new FindTransform(endpoint, clientFor(ctx, endpoint), options, ctx);
      // Stages after a lookup receive its resource (products, media), not the source's: the
      // runner creates stages in order on one context, so the ones created next pick this up
      // (validate, flatten-locales, the Parquet column schema).
      ctx.source = { ...ctx.source, type: ctx.source?.type ?? endpoint, resource: findEndpoints[endpoint].resource };
      return find;
    },
  });
}

export const findStages = [
  findStage(
    'products.find',
    'Looks up each incoming id (or record field idField) with GET /v4/products/find?id=, emitting the products found; 404s skipped, dead-lettered or fatal.',
  ),
  findStage(
    'media.find',
    'Looks up each incoming id (or record field idField) with GET /v4/media/find?id=, emitting the media records found; 404s skipped, dead-lettered or fatal.',
  ),
];
