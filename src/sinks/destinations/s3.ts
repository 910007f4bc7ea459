// S3 as a sink destination: the `s3` sink, records in any registered format (`format:`) streamed through
// multipart uploads (s3-object-upload.ts), with the same key templates,
// partitions and rotation as the local sinks, and a manifest written last.
//
// Commit protocol (readers and the next incremental run rely on it):
//  1. data objects are uploaded; each becomes visible when its upload completes;
//  2. when every data object is complete, `_manifest.json` is written (default: in the
//     folder shared by all keys of the run, e.g. `catalog/products/dt=2026-01-02/_manifest.json`)
//     listing each object (key, rows, bytes, ETag), the schema, the run id, the source
//     filter and cursor, and the start/finish times (ctx.describeRun() at commit time);
//  3. readers trust only objects listed in a manifest. A failed run writes no manifest,
//     aborts its open multipart uploads and deletes the objects it had completed.
// Objects are overwritten when a later run renders the same key; put {run} in the key to
// keep every run's objects apart.
import { createHash } from 'node:crypto';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { z } from 'zod';
import { defaultStageContext, type PartialStageContext } from '../../core/default-context.js';
import { parseStageOptions } from '../../core/issues.js';
import type { DocumentedInput } from '../../core/stage-factory.js';
import { RunLock, s3LockBackend, type S3LockIO } from '../../core/lock.js';
import type { SinkStream, StageContext, StageServices } from '../../core/stage.js';
import { defineStage } from '../../core/stage.js';
import { ConfigError } from '../../errors.js';
import { byteSize, rotationOptions } from '../option-schemas.js';
import { PathTemplate } from '../path-template.js';
import { RecordSink, type CommittedOutput } from '../record-sink.js';
import { s3Error, s3Location, S3ObjectUpload } from '../s3-object-upload.js';
import { loadS3Sdk, type S3Sdk } from '../s3-sdk.js';
import { otherFormatOptions, type FormatsShape, type SinkFormat } from '../sink-format.js';
import type { SinkCodeExtras } from './local.js';

const MIN_PART_SIZE = 5 * 1024 * 1024;

/** The options of the s3 sink writing any of `formats` (`format:` names one). */
function s3SinkOptionsFor<const Formats extends readonly [SinkFormat, ...SinkFormat[]]>(formats: Formats) {
  const names = formats.map((f) => f.name) as { [I in keyof Formats]: Formats[I]['name'] };
  const formatOptions = Object.assign({}, ...formats.map((f) => f.options('key'))) as FormatsShape<Formats> &
    z.ZodRawShape;
  return z
    .strictObject({
      format: z.enum(names).describe(`Object format: ${names.join(' or ')}`),
      bucket: z.string().min(1).describe('Bucket name'),
      key: z
        .string()
        .min(1)
        .describe(
          "Object key template, e.g. catalog/products/dt={date}/part-{part}.parquet: {name} {run} {date} {part} and key={field} as in a local path. Without {run}, -<run id> is added before the extension and each run replaces the earlier runs' objects of the dataset once its manifest is written (README: Publication protocol)",
        ),
      ...formatOptions,
      ...rotationOptions,
      partSize: byteSize()
        .default(8 * 1024 * 1024)
        .describe('Multipart part size (at least 5MiB); memory per open object is about (queueSize + 1) x partSize'),
      queueSize: z.number().int().min(1).max(16).default(2).describe('Parts of one object uploaded in parallel'),
      endpoint: z.url().optional().describe('S3-compatible endpoint URL; default: env S3_ENDPOINT, else AWS'),
      region: z
        .string()
        .min(1)
        .optional()
        .describe(
          'Region; default: the AWS SDK chain (AWS_REGION, profile), or us-east-1 with a custom endpoint and no AWS_REGION',
        ),
      forcePathStyle: z
        .boolean()
        .optional()
        .describe('Path-style URLs (http://host/bucket/key); default: true with a custom endpoint'),
      checksums: z
        .enum(['when-supported', 'when-required'])
        .optional()
        .describe(
          "Request checksum calculation and response validation: when-supported (the SDK default) or when-required (for S3-compatible servers that predate the SDK's default integrity checksums); default: when-required with a custom endpoint",
        ),
      maxAttempts: z
        .number()
        .int()
        .min(1)
        .max(10)
        .default(3)
        .describe('Attempts per S3 request (the SDK retries with backoff)'),
      manifest: z
        .boolean()
        .default(true)
        .describe('Write _manifest.json after all data objects; readers trust only objects it lists'),
      manifestKey: z
        .string()
        .min(1)
        .optional()
        .describe(
          'Manifest key ({name} {run} {date} only); default: _manifest.json in the folder shared by all keys of the run',
        ),
    })
    .superRefine((parsed, ctx) => {
      const options = parsed as S3Settings;
      for (const issue of otherFormatOptions(formats, options.format, options))
        ctx.addIssue({ code: 'custom', ...issue });
      if (options.partSize < MIN_PART_SIZE) {
        ctx.addIssue({
          code: 'custom',
          path: ['partSize'],
          message: `S3 multipart parts must be at least 5MiB (${MIN_PART_SIZE} bytes)`,
        });
      }
    });
}

/** The s3 sink's settings after validation (the format options stay with the format). */
interface S3Settings extends S3ClientOptions {
  format: string;
  bucket: string;
  key: string;
  maxRows?: number | undefined;
  maxBytes?: number | undefined;
  maxOpenPartitions: number;
  partSize: number;
  queueSize: number;
  manifest: boolean;
  manifestKey?: string | undefined;
  [option: string]: unknown;
}

/**
 * The S3 client for the sink's options: endpoint and checksum mode for S3-compatible servers.
 * Asynchronous because it loads the AWS SDK on first use (s3-sdk.ts).
 */
export async function createS3Client(options: S3ClientOptions, env: Env = process.env): Promise<S3Client> {
  const { s3 } = await loadS3Sdk();
  return new s3.S3Client(s3ClientConfig(options, env));
}

/** The client settings of the s3 sink's options (endpoint, region, path style, checksums, attempts). */
export interface S3ClientOptions {
  endpoint?: string | undefined;
  region?: string | undefined;
  forcePathStyle?: boolean | undefined;
  checksums?: 'when-supported' | 'when-required' | undefined;
  maxAttempts?: number | undefined;
}

/** The environment the client settings default from: ctx.services.env, or the process's. */
type Env = NonNullable<StageServices['env']>;

function s3ClientConfig(options: S3ClientOptions, env: Env): S3ClientConfig {
  const endpoint = options.endpoint ?? (env.S3_ENDPOINT || undefined);
  const custom = endpoint !== undefined;
  const mode =
    (options.checksums ?? (custom ? 'when-required' : 'when-supported')) === 'when-required'
      ? 'WHEN_REQUIRED'
      : 'WHEN_SUPPORTED';
  const region = options.region ?? (custom && !env.AWS_REGION && !env.AWS_DEFAULT_REGION ? 'us-east-1' : undefined);
  const config: S3ClientConfig = {
    forcePathStyle: options.forcePathStyle ?? custom,
    requestChecksumCalculation: mode,
    responseChecksumValidation: mode,
    maxAttempts: options.maxAttempts,
    requestHandler: { connectionTimeout: 10_000, requestTimeout: 120_000 },
  };
  if (endpoint) config.endpoint = endpoint;
  if (region) config.region = region;
  return config;
}

/**
 * The key a data object is written under: the template, with `-{run}` added before the
 * extension when it has no `{run}`, so that no run ever overwrites an object another run
 * published (`part-{part}.parquet` -> `part-{part}-{run}.parquet`).
 */
export function runKeyTemplate(key: string): string {
  if (/\{\s*run\s*\}/.test(key)) return key;
  const slash = key.lastIndexOf('/') + 1;
  const name = key.slice(slash);
  const ext = /(\.[^./{}]+(?:\.gz)?)?$/.exec(name)!;
  return `${key.slice(0, slash)}${name.slice(0, ext.index)}-{run}${ext[0]}`;
}

function createS3Sink(
  formats: readonly SinkFormat[],
  options: S3Settings,
  ctx: StageContext,
  schemaHint?: z.ZodType,
): SinkStream {
  const { format, bucket, key, maxRows, maxBytes, maxOpenPartitions, partSize, queueSize, manifest, manifestKey } =
    options;
  const objectFormat = formats.find((f) => f.name === format)!;
  const given = PathTemplate.parse(key, ctx.run, 'key');
  const template = PathTemplate.parse(runKeyTemplate(key), ctx.run, 'key');
  // Without {run} in the key each run replaces the dataset (the folder of the manifest): it
  // holds a lock on it for the run and, once published, removes the earlier runs' objects.
  const replaces = !given.hasRun;
  const prefix = given.fixedPrefix();
  const manifestObjectKey = manifest ? manifestKeyFor(manifestKey, given, ctx) : undefined;
  // A key alone cannot say whose an object is (`p200000-<run>.jsonl` is part 200000 of
  // `p{part}.jsonl` and part 0 of `p2{part}.jsonl`): each data object carries the dataset's
  // identity in its metadata, and a replacing run removes only objects the previous manifest
  // of this dataset lists or that carry it (a killed run's objects).
  const dataset = datasetId(bucket, given);
  /** The keys the dataset's manifest listed before this run (read under the lock). */
  let previouslyListed = new Set<string>();
  const recordFormat = objectFormat.create(options, { ctx, stage: 's3', target: key, template, schemaHint });
  const contentType = objectFormat.contentType(options, key);
  const env = ctx.services.env ?? process.env;
  // Set by prepare(), which the sink runs before its first record. The client is closed when the
  // stream closes, and opened again if the tee later asks the finished sink to revoke its objects.
  let sdk!: S3Sdk;
  let client: S3Client | undefined;
  let lock: RunLock | undefined;
  const currentClient = (): S3Client => (client ??= new sdk.s3.S3Client(s3ClientConfig(options, env)));
  const sink: RecordSink<unknown> = new RecordSink<unknown>({
    sinkType: 's3',
    ctx,
    format: recordFormat,
    template,
    templateOption: 'key',
    locate: (rendered) => rendered,
    prepare: async () => {
      sdk = await loadS3Sdk();
      if (!replaces) return;
      lock = await RunLock.acquire(
        s3LockBackend(lockIO(sdk, currentClient), bucket, `${prefix}${LOCK_NAME}`),
        { runId: ctx.run.id, pipeline: ctx.run.name },
        {
          what: `dataset s3://${bucket}/${prefix}`,
          code: 'publish.locked',
          onLost: (err) => sink.destroy(err),
        },
      );
      if (manifestObjectKey !== undefined)
        previouslyListed = await readManifestKeys(sdk, currentClient(), bucket, manifestObjectKey, key, ctx);
    },
    supersede: replaces
      ? async (written) => {
          const keep = new Set([...written, manifestObjectKey, `${prefix}${LOCK_NAME}`]);
          const candidates = (await listKeys(sdk, currentClient(), bucket, prefix)).filter(
            (k) => !keep.has(k) && (template.pattern.test(k) || given.pattern.test(k)),
          );
          const stale: string[] = [];
          const unlisted: string[] = [];
          for (const k of candidates) {
            if (previouslyListed.has(k) || (await objectDataset(sdk, currentClient(), bucket, k)) === dataset)
              stale.push(k);
            else unlisted.push(k);
          }
          for (const k of stale) {
            try {
              await currentClient().send(new sdk.s3.DeleteObjectCommand({ Bucket: bucket, Key: k }));
            } catch (err) {
              throw s3Error(err, 'delete the superseded object', s3Location(bucket, k));
            }
          }
          if (stale.length > 0)
            ctx.events.emit('info', {
              code: 'superseded',
              message: `removed ${stale.length} object(s) of earlier runs under s3://${bucket}/${prefix}`,
            });
          if (unlisted.length > 0)
            ctx.events.emit('warning', {
              code: 'sink.cleanup_unlisted',
              message:
                `${unlisted.length} object(s) match the key ${key} but neither the previous manifest of this dataset lists them nor do they carry its ${DATASET_METADATA} metadata ` +
                `(another pipeline's objects, or written by a version without it); not removed: ${unlisted.map((k) => s3Location(bucket, k)).join(', ')}`,
            });
        }
      : undefined,
    release: async () => {
      await lock?.release();
      lock = undefined;
    },
    openDestination: (objectKey) =>
      new S3ObjectUpload(sdk, currentClient, {
        bucket,
        key: objectKey,
        contentType,
        partSize,
        queueSize,
        metadata: { [DATASET_METADATA]: dataset },
      }),
    rotation: { maxRows, maxBytes, maxOpenPartitions },
    commitOnClose: true,
    writeEmpty: false,
    afterCommit: async (committed) => {
      if (manifestObjectKey === undefined) return [];
      return [
        await writeManifest(sdk, currentClient, ctx, {
          bucket,
          key: manifestObjectKey,
          keyTemplate: key,
          format,
          committed,
          schema: recordFormat.describeSchema(),
        }),
      ];
    },
    dispose: () => {
      client?.destroy();
      client = undefined;
    },
  });
  return sink;
}

/** The user metadata key (`x-amz-meta-catalog-streams-dataset`) naming the dataset a data object belongs to. */
export const DATASET_METADATA = 'catalog-streams-dataset';

/** The dataset's identity: the bucket and the key template with its run values (name, date) rendered. */
function datasetId(bucket: string, template: PathTemplate): string {
  return createHash('sha256').update(`${bucket}\n${template.pattern.source}`).digest('hex').slice(0, 16);
}

/** The dataset an object's metadata names, or undefined (none, or the object is gone). */
async function objectDataset(sdk: S3Sdk, client: S3Client, bucket: string, key: string): Promise<string | undefined> {
  try {
    const head = await client.send(new sdk.s3.HeadObjectCommand({ Bucket: bucket, Key: key }));
    return head.Metadata?.[DATASET_METADATA];
  } catch (err) {
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if ((err as { name?: string }).name === 'NotFound' || status === 404) return undefined;
    throw s3Error(err, 'read the metadata of', s3Location(bucket, key));
  }
}

/**
 * The data keys the manifest at `manifestKey` lists, if it is a manifest of this key template (a
 * manifest of another template, or one that cannot be read, lists nothing of this dataset).
 */
async function readManifestKeys(
  sdk: S3Sdk,
  client: S3Client,
  bucket: string,
  manifestKey: string,
  keyTemplate: string,
  ctx: StageContext,
): Promise<Set<string>> {
  let text: string;
  try {
    const res = await client.send(new sdk.s3.GetObjectCommand({ Bucket: bucket, Key: manifestKey }));
    text = await res.Body!.transformToString('utf8');
  } catch (err) {
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if ((err as { name?: string }).name === 'NoSuchKey' || status === 404) return new Set();
    throw s3Error(err, 'read the previous manifest', s3Location(bucket, manifestKey));
  }
  try {
    const previous = JSON.parse(text) as Partial<S3Manifest>;
    if (previous.keyTemplate === keyTemplate && previous.bucket === bucket && Array.isArray(previous.files))
      return new Set(previous.files.map((f) => f?.key).filter((k): k is string => typeof k === 'string'));
  } catch {
    // Reported below.
  }
  ctx.events.emit('warning', {
    code: 'sink.cleanup_record',
    message: `${s3Location(bucket, manifestKey)} is not a manifest of the key ${keyTemplate}; the objects it lists are not removed as this dataset's`,
  });
  return new Set();
}

/** The lock object of a dataset a run replaces, in the folder of its manifest. */
export const LOCK_NAME = '_publish.lock';

async function listKeys(sdk: S3Sdk, client: S3Client, bucket: string, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    let page;
    try {
      page = await client.send(
        new sdk.s3.ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
      );
    } catch (err) {
      throw s3Error(err, 'list', s3Location(bucket, prefix));
    }
    for (const c of page.Contents ?? []) if (c.Key) keys.push(c.Key);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return keys;
}

/** The lock object's S3 calls, with the sink's client. */
export function lockIO(sdk: S3Sdk, client: () => S3Client): S3LockIO {
  const { s3 } = sdk;
  const status = (err: unknown) => (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return {
    async getObject(bucket, key) {
      try {
        const res = await client().send(new s3.GetObjectCommand({ Bucket: bucket, Key: key }));
        return await res.Body!.transformToString('utf8');
      } catch (err) {
        if ((err as { name?: string }).name === 'NoSuchKey' || status(err) === 404) return undefined;
        throw s3Error(err, 'read the lock', s3Location(bucket, key));
      }
    },
    async putObject(bucket, key, body, opts) {
      try {
        await client().send(
          new s3.PutObjectCommand({
            Bucket: bucket,
            Key: key,
            Body: body,
            ContentType: 'application/json',
            ...(opts?.ifNoneMatch ? { IfNoneMatch: '*' } : {}),
          }),
        );
        return true;
      } catch (err) {
        // 412: the lock exists; 409: another conditional put of it is in progress.
        if (opts?.ifNoneMatch && (status(err) === 412 || status(err) === 409)) return false;
        throw s3Error(err, 'write the lock', s3Location(bucket, key));
      }
    },
    async deleteObject(bucket, key) {
      try {
        await client().send(new s3.DeleteObjectCommand({ Bucket: bucket, Key: key }));
      } catch (err) {
        throw s3Error(err, 'delete the lock', s3Location(bucket, key));
      }
    },
  };
}

/** The manifest's key: `manifestKey` (run placeholders only), or `_manifest.json` in the folder shared by all keys. */
function manifestKeyFor(manifestKey: string | undefined, template: PathTemplate, ctx: StageContext): string {
  if (manifestKey === undefined) return `${template.fixedPrefix()}_manifest.json`;
  const parsed = PathTemplate.parse(manifestKey, ctx.run, 'manifestKey');
  if (parsed.isDynamic) {
    throw new ConfigError(
      `manifestKey "${manifestKey}": only {name}, {run} and {date} are allowed (one manifest per run)`,
      { path: 'manifestKey' },
    );
  }
  return parsed.render([], 0);
}

/** The manifest document, written as the run's last object. */
export interface S3Manifest {
  version: 1;
  runId: string;
  name: string;
  startedAt: string;
  finishedAt: string;
  source: { type?: string | undefined; filter?: unknown; cursor?: { previous?: number; next?: number } | undefined };
  format: string;
  bucket: string;
  keyTemplate: string;
  files: Array<{ key: string; rows: number; bytes: number; etag?: string | undefined }>;
  rows: number;
  bytes: number;
  schema: unknown;
}

async function writeManifest(
  { s3 }: S3Sdk,
  client: () => S3Client,
  ctx: StageContext,
  m: {
    bucket: string;
    key: string;
    keyTemplate: string;
    format: string;
    committed: readonly CommittedOutput[];
    schema: unknown;
  },
): Promise<CommittedOutput> {
  const run = ctx.describeRun();
  const files = m.committed.map(({ output, destination }) => {
    const upload = destination as S3ObjectUpload;
    return { key: upload.key, rows: output.rows, bytes: output.bytes, etag: upload.etag };
  });
  const document: S3Manifest = {
    version: 1,
    runId: run.runId,
    name: run.name,
    startedAt: run.startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    source: { type: run.sourceType, filter: run.sourceFilter, cursor: run.cursor },
    format: m.format,
    bucket: m.bucket,
    keyTemplate: m.keyTemplate,
    files,
    rows: files.reduce((n, f) => n + f.rows, 0),
    bytes: files.reduce((n, f) => n + f.bytes, 0),
    schema: m.schema,
  };
  const body = Buffer.from(`${JSON.stringify(document, null, 2)}\n`);
  const location = s3Location(m.bucket, m.key);
  try {
    await client().send(
      new s3.PutObjectCommand({ Bucket: m.bucket, Key: m.key, Body: body, ContentType: 'application/json' }),
    );
  } catch (err) {
    throw s3Error(err, 'write the manifest', location);
  }
  return {
    output: { kind: 'object', location, rows: 0, bytes: body.byteLength, sink: 's3' },
    revoke: async () => {
      try {
        await client().send(new s3.DeleteObjectCommand({ Bucket: m.bucket, Key: m.key }));
      } catch (err) {
        throw s3Error(err, 'delete the manifest', location);
      }
    },
  };
}

/**
 * The `s3` sink writing any of `formats`: its stage definition, options schema and code-API factory
 * (`await pipeline(source, s3Sink({format: 'parquet', bucket, key}))`; credentials and region come
 * from the AWS SDK's standard chain).
 */
export function s3Sink<const Formats extends readonly [SinkFormat, ...SinkFormat[]]>(formats: Formats) {
  const options = s3SinkOptionsFor(formats);
  const stage = defineStage({
    kind: 'sink',
    type: 's3',
    description: `Streams records to S3 (or an S3-compatible server) as ${formats.map((f) => f.title).join(' or ')} objects via multipart upload, with key templates, rotation and a _manifest.json written last`,
    options,
    create: (config, ctx): SinkStream => createS3Sink(formats, config as S3Settings, ctx),
    replacesAt: 'key',
  });
  const sink = (
    input: DocumentedInput<'s3', z.input<typeof options>> & SinkCodeExtras,
    ctx?: PartialStageContext,
  ): SinkStream => {
    const { schemaHint, ...rest } = input;
    return createS3Sink(
      formats,
      parseStageOptions('s3', options, rest) as S3Settings,
      defaultStageContext(ctx),
      schemaHint,
    );
  };
  return { stage, options, sink };
}
