// The pipeline file's shape (ARCHITECTURE.md, Pipeline file contract). The core keys are a public contract:
// users' files depend on them. Stage specs are `{type, ...options}`; their
// options are checked against the registered stage's own schema.
import { z } from 'zod';
import { ENVIRONMENTS, REGIONS } from '../catalog/regions.js';
import { duration } from '../core/duration.js';

export const StageSpec = z.looseObject({ type: z.string().min(1) }).describe('a stage: {type, ...its options}');
export type StageSpec = z.infer<typeof StageSpec>;

/**
 * One region of a fan-out (`connection.regions`): the region alone (`be`: its credentials from
 * CATALOG_BE_API_KEY and CATALOG_BE_API_SECRET), or with its own environment, base URL and keys.
 */
export const RegionConnection = z.union([
  z.enum(REGIONS),
  z.strictObject({
    region: z.enum(REGIONS).describe('the region (be, fr, de, au, us)'),
    environment: z.enum(ENVIRONMENTS).optional().describe('production (default) or sandbox (be and fr only)'),
    baseUrl: z
      .url({ message: 'must be an absolute URL such as https://api.example.com' })
      .optional()
      .describe("the region's API base URL (default: the region's)"),
    apiKey: z
      .string()
      .min(1)
      .optional()
      .describe("the region's API key, or several comma-separated (default: $CATALOG_<REGION>_API_KEY)"),
    apiSecret: z
      .string()
      .min(1)
      .optional()
      .describe("the region's API secret, one per key (default: $CATALOG_<REGION>_API_SECRET)"),
  }),
]);
export type RegionConnection = z.infer<typeof RegionConnection>;

export const ConnectionBlock = z
  .strictObject({
    regions: z
      .array(RegionConnection)
      // One entry is allowed: a process (or pod) of one region writing its shard of a table
      // keyed (region, id) needs the region field a fan-out adds (docs/iceberg.md, Several processes).
      .min(1, { message: 'a fan-out reads one region or more; list them, or use region:' })
      .optional()
      .describe(
        'a fan-out: read each region with its own credentials, limiter and state cursor into one output, with a region field on every record (docs/live-service.md, Several regions in one run); one entry: one region with the region field, as a shard of a table keyed (region, id) needs (docs/iceberg.md)',
      ),
    baseUrl: z
      .url({ message: 'must be an absolute URL such as https://api.example.com' })
      .optional()
      .describe("API base URL, with or without a trailing /v4 (default: the region's, else $CATALOG_BASE_URL)"),
    region: z
      .enum(REGIONS)
      .optional()
      .describe(
        "the live service's region (be, fr, de, au, us): its base URL, flatten-locales' default locales, the filters and code formats it takes (checked before any request), and the --sandbox profile",
      ),
    environment: z
      .enum(ENVIRONMENTS)
      .optional()
      .describe("with region: production (default) or sandbox, the vendor's sandbox (be and fr only)"),
    apiKey: z
      .string()
      .min(1)
      .optional()
      .describe('API key, or several comma-separated (default: $CATALOG_API_KEY); use ${VAR}, never a literal'),
    apiSecret: z
      .string()
      .min(1)
      .optional()
      .describe(
        'API secret, or one per key comma-separated in the same order (default: $CATALOG_API_SECRET); use ${VAR}, never a literal',
      ),
    credentials: z
      .array(
        z.strictObject({
          apiKey: z.string().min(1).describe('API key; use ${VAR}, never a literal'),
          apiSecret: z.string().min(1).describe('its API secret; use ${VAR}, never a literal'),
        }),
      )
      .min(1, { message: 'needs at least one {apiKey, apiSecret}' })
      .optional()
      .describe(
        'several API keys, each with its own rateLimit budget; requests are spread evenly over them (instead of apiKey and apiSecret)',
      ),
    rateLimit: z
      .number({ message: 'expected a number of requests per minute' })
      .positive({
        message:
          'must be above 0 (requests per minute of the credential; CATALOG_RATE_LIMIT=0 lifts the limit for a sandbox)',
      })
      .optional()
      .describe('requests per minute for each API key (default 100)'),
    concurrency: z.int().min(1).max(16).optional().describe("page requests kept in flight (default: the source's, 3)"),
    maxAttempts: z
      .int()
      .min(1)
      .max(20)
      .optional()
      .describe('attempts per request before the run fails (default 8; retries back off with jitter)'),
    maxRetryWait: duration()
      .optional()
      .describe(
        'longest total wait between the attempts of one request, Retry-After included, before the run fails (default "3m")',
      ),
    timeouts: z
      .strictObject({
        connect: duration().optional().describe('to open a connection, TCP and TLS (default "10s")'),
        headers: duration().optional().describe('from sending a request to its response headers (default "60s")'),
        body: duration()
          .optional()
          .describe('longest gap without a byte of a response body, a paused consumer not counted (default "2m")'),
        minBodyRate: z
          .number()
          .nonnegative()
          .optional()
          .describe(
            'least average speed of a response body in bytes per second, over rateWindow of waiting for it (default 1024; 0: none)',
          ),
        rateWindow: duration().optional().describe('the span minBodyRate is averaged over (default "5m")'),
      })
      .optional()
      .describe(
        'a request that runs out of one is retried (a stream resumed) like a connection failure; nothing limits how long a healthy request takes (a whole-catalog stream runs for tens of minutes)',
      ),
    maxPageBytes: z
      .int()
      .positive()
      .optional()
      .describe(
        'largest page body (a query page, a reference table read whole, a find) in bytes before the request fails (default 268435456, 256 MiB)',
      ),
  })
  .describe('where the API is and how fast to call it; what is left out comes from the environment');
export type ConnectionBlock = z.infer<typeof ConnectionBlock>;

export const StateBlock = z
  .strictObject({
    path: z.string().min(1).describe('local file or s3://bucket/key holding the incremental cursor'),
    overlapSeconds: z
      .int()
      .nonnegative()
      .default(300)
      .describe('safety overlap subtracted from the run start for the next cursor (clock skew, in-flight updates)'),
  })
  .describe('enables incremental runs (updatedSince) for products and media');
export type StateBlock = z.infer<typeof StateBlock>;

export const PipelineFile = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, {
      message: 'must be a simple name (letters, digits, . _ -): it names state and output files',
    })
    .describe('names the run, its state and its output files'),
  description: z.string().optional(),
  connection: ConnectionBlock.optional(),
  source: StageSpec,
  transforms: z.array(StageSpec).default([]),
  sinks: z.array(StageSpec).min(1, { message: 'needs at least one sink' }),
  state: StateBlock.optional(),
  stallTimeout: duration()
    .optional()
    .describe('fail the run when nothing moves (no request, record, page or output) for this long (default "10m")'),
});
export type PipelineFile = z.infer<typeof PipelineFile>;
