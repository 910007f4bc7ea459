// S3 as a sink destination: the `s3` sink, records in any registered format (`format:`) streamed through
// multipart uploads (storage/s3-object-upload.ts), with the same key templates,
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
import type { S3Client } from '@aws-sdk/client-s3';
import { z } from 'zod';
import { defaultStageContext, type PartialStageContext } from '../../core/default-context.js';
import { parseStageOptions } from '../../core/issues.js';
import type { DocumentedInput } from '../../core/stage-factory.js';
import { RunLock, storeLockBackend } from '../../core/lock.js';
import type { SinkStream, StageContext } from '../../core/stage.js';
import { defineStage } from '../../core/stage.js';
import { ConfigError } from '../../errors.js';
import { byteSize, rotationOptions } from '../shared/option-schemas.js';
import { PathTemplate, RUN_ID_PATTERN, escapePathValue, escapeRegExp } from '../shared/path-template.js';
import { failedRegionFiles, reportKept } from '../shared/failed-regions.js';
import { RecordSink, type CommittedOutput } from '../shared/record-sink.js';
import { datasetTag, RunKeyedDataset, runKeyedRoot } from '../shared/run-keyed-dataset.js';
import { reportSchemaChange, schemaChange, type SchemaChange } from '../shared/schema-change.js';
import { S3ObjectUpload } from '../../storage/s3-object-upload.js';
import { s3ClientConfig, s3Location, type S3ClientOptions } from '../../storage/s3-client.js';
import { S3ObjectStore } from '../../storage/s3-object-store.js';
import { loadS3Sdk, type S3Sdk } from '../../storage/s3-sdk.js';
import { otherFormatOptions, sinkEncoding, type FormatsShape, type OutputFormat } from '../shared/output-format.js';
import { markStage, plannedStage } from '../../core/planned-stage.js';
import type { SinkCodeExtras } from '../local/local-sink.js';

const MIN_PART_SIZE = 5 * 1024 * 1024;

/** The options of the s3 sink writing any of `formats` (`format:` names one). */
function s3SinkOptionsFor<const Formats extends readonly [OutputFormat, ...OutputFormat[]]>(formats: Formats) {
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
          "Object key template, e.g. catalog/products/dt={date}/part-{part}.parquet: {name} {run} {date} {part} and key={field} as in a local path. Without {run}, -<run id> is added before the extension and each run replaces the earlier runs' objects of the dataset once its manifest is written (docs/publication.md)",
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
  formats: readonly OutputFormat[],
  options: S3Settings,
  ctx: StageContext,
  code?: { schemaHint: z.ZodType | undefined },
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
  const formatEnv = { ctx, stage: 's3', target: key, template, schemaHint: code?.schemaHint };
  const recordFormat = sinkEncoding(objectFormat, options, formatEnv, code && { sinkOf: () => sink });
  const contentType = objectFormat.contentType(options, key);
  const connection = new S3Connection(bucket, options, ctx.env ?? process.env);
  const store = connection.store;
  let lock: RunLock | undefined;
  // With {run} in the key each run adds its objects: a journal under the dataset's root lets the
  // next run remove what a killed one uploaded (sinks/shared/run-keyed-dataset.ts).
  const runKeyed = replaces
    ? undefined
    : s3RunKeyedDataset({
        store,
        bucket,
        key,
        ctx,
        manifest: manifestObjectKey !== undefined,
        manifestKey,
        sinkOf: () => sink,
      });
  const sink: RecordSink<unknown> = new RecordSink<unknown>({
    sinkType: 's3',
    ctx,
    format: recordFormat,
    template,
    templateOption: 'key',
    locate: (rendered) => rendered,
    prepare: async () => {
      await connection.load();
      if (runKeyed) return prepareRunKeyed(runKeyed, manifestObjectKey);
      lock = await lockDataset(store, bucket, prefix, ctx, (err) => sink.destroy(err));
      if (manifestObjectKey !== undefined)
        previouslyListed = await readManifestKeys(store, manifestObjectKey, key, ctx);
    },
    lock: () => runKeyed ?? lock,
    supersede: replaces
      ? (written) =>
          supersedeObjects({
            ...{ store, ctx, bucket, key, prefix, dataset },
            previouslyListed,
            patterns: [template.pattern, given.pattern],
            keep: new Set([...written, manifestObjectKey, `${prefix}${LOCK_NAME}`]),
            // A fan-out region that failed this run keeps its partition's objects (shared/failed-regions.ts).
            failedRegion: failedRegionFiles(ctx, [template, given]),
          })
      : runKeyed && (() => runKeyed.settle()),
    release: async () => {
      await runKeyed?.release();
      await lock?.release();
      lock = undefined;
    },
    openDestination: (objectKey) =>
      openUpload(connection, runKeyed, { bucket, key: objectKey, contentType, partSize, queueSize }, dataset),
    rotation: { maxRows, maxBytes, maxOpenPartitions },
    commitOnClose: true,
    writeEmpty: false,
    afterCommit: async (committed) => {
      if (manifestObjectKey === undefined) return [];
      const schema = recordFormat.describeSchema();
      // Read now, right before this run's manifest exists: the newest earlier one is the previous version.
      const changed = schemaChange(await latestManifestSchema(store, options, ctx), schema);
      if (changed) reportSchemaChange(ctx.events, 's3', s3Location(bucket, manifestObjectKey), changed);
      const written = { bucket, key: manifestObjectKey, keyTemplate: key, format, committed };
      return [await writeManifest(store, ctx, { ...written, schema, schemaChanged: changed })];
    },
    dispose: () => connection.dispose(),
  });
  return sink;
}

/** A replacing run's lock on its dataset (the folder of its manifest): one run publishes into it at a time. */
function lockDataset(
  store: S3ObjectStore,
  bucket: string,
  prefix: string,
  ctx: StageContext,
  onLost: (err: Error) => void,
): Promise<RunLock> {
  return RunLock.acquire(
    storeLockBackend(store, `${prefix}${LOCK_NAME}`),
    { runId: ctx.run.id, pipeline: ctx.run.name },
    { what: `dataset s3://${bucket}/${prefix}`, code: 'publish.locked', onLost },
  );
}

/** A data object's upload, journaled first in a {run} dataset, carrying the dataset's id (and run) in its metadata. */
async function openUpload(
  connection: S3Connection,
  runKeyed: RunKeyedDataset | undefined,
  upload: { bucket: string; key: string; contentType: string; partSize: number; queueSize: number },
  dataset: string,
): Promise<S3ObjectUpload> {
  await runKeyed?.record(upload.key);
  const dataMetadata = { [DATASET_METADATA]: dataset };
  const metadata = runKeyed ? runKeyed.writeOptions({ metadata: dataMetadata }).metadata! : dataMetadata;
  return new S3ObjectUpload(connection.sdk!, connection.client, { ...upload, metadata });
}

/**
 * The SDK, client and store of one s3 sink. Loaded by the sink's prepare(), before its first
 * record; the client is closed when the stream closes, and opened again if the tee later asks the
 * finished sink to revoke its objects.
 */
class S3Connection {
  sdk: S3Sdk | undefined;
  #client: S3Client | undefined;
  /** Keys are whole keys (no prefix): the dataset's folder is `prefix`, its manifest may be elsewhere. */
  readonly store: S3ObjectStore;
  readonly #config: () => ReturnType<typeof s3ClientConfig>;

  constructor(bucket: string, options: S3ClientOptions, env: Readonly<Record<string, string | undefined>>) {
    this.#config = () => s3ClientConfig(options, env);
    this.store = new S3ObjectStore({
      bucket,
      prefix: '',
      client: async () => {
        this.sdk ??= await loadS3Sdk('s3-sink');
        return this.client();
      },
      feature: 's3-sink',
    });
  }

  readonly client = (): S3Client => (this.#client ??= new this.sdk!.s3.S3Client(this.#config()));

  async load(): Promise<void> {
    this.sdk = (await this.store.s3()).sdk;
  }

  dispose(): void {
    this.#client?.destroy();
    this.#client = undefined;
    void this.store.close();
  }
}

/**
 * A {run} dataset's journal is prepared (a killed run's objects go) and names the manifest first: a
 * journal naming a manifest that exists is a run that published. A manifest outside the dataset's
 * root cannot be journaled; such a run counts as published only once it settled.
 */
async function prepareRunKeyed(runKeyed: RunKeyedDataset, manifestObjectKey: string | undefined): Promise<void> {
  await runKeyed.prepare();
  if (manifestObjectKey?.startsWith(runKeyed.root)) await runKeyed.record(manifestObjectKey);
}

/**
 * Once a replacing run published: the objects under the dataset's folder that match its key and
 * that the previous manifest listed or that carry the dataset's id are removed; other matching
 * objects are reported, never removed (a key alone does not say whose an object is).
 */
async function supersedeObjects(o: {
  store: S3ObjectStore;
  ctx: StageContext;
  bucket: string;
  key: string;
  prefix: string;
  dataset: string;
  previouslyListed: ReadonlySet<string>;
  patterns: readonly RegExp[];
  keep: ReadonlySet<string | undefined>;
  failedRegion?: ((key: string) => boolean) | undefined;
}): Promise<void> {
  const { store, ctx, bucket, prefix } = o;
  const candidates: string[] = [];
  const spared: string[] = [];
  for await (const { rel: k } of store.list(prefix)) {
    if (o.keep.has(k) || !o.patterns.some((p) => p.test(k))) continue;
    if (o.failedRegion?.(k)) spared.push(s3Location(bucket, k));
    else candidates.push(k);
  }
  reportKept(ctx, 's3', spared);
  const stale: string[] = [];
  const unlisted: string[] = [];
  for (const k of candidates) {
    if (o.previouslyListed.has(k) || (await store.metadata(k))?.[DATASET_METADATA] === o.dataset) stale.push(k);
    else unlisted.push(k);
  }
  for (const k of stale) await store.remove(k);
  if (stale.length > 0)
    ctx.events.emit('info', {
      code: 'superseded',
      message: `removed ${stale.length} object(s) of earlier runs under s3://${bucket}/${prefix}`,
    });
  if (unlisted.length > 0)
    ctx.events.emit('warning', {
      code: 'sink.cleanup_unlisted',
      message:
        `${unlisted.length} object(s) match the key ${o.key} but neither the previous manifest of this dataset lists them nor do they carry its ${DATASET_METADATA} metadata ` +
        `(another pipeline's objects, or written by a version without it); not removed: ${unlisted.map((k) => s3Location(bucket, k)).join(', ')}`,
    });
}

/**
 * The journal and lock of an s3 sink with {run} in its key, under the key's root (the folder above
 * its first {run} or {date}). An earlier run published when its manifest, which it recorded first,
 * exists; without a manifest a run's objects are the dataset's once the run settled.
 */
function s3RunKeyedDataset(o: {
  store: S3ObjectStore;
  bucket: string;
  key: string;
  ctx: StageContext;
  manifest: boolean;
  manifestKey: string | undefined;
  sinkOf: () => RecordSink<unknown>;
}): RunKeyedDataset {
  const root = runKeyedRoot(o.key, o.ctx.run, 'key');
  const manifests = manifestKeyPattern(o, o.ctx.run.name)?.pattern;
  const tag = datasetTag(`s3://${o.bucket}/${o.key}`);
  return new RunKeyedDataset({
    store: o.store,
    root,
    tag,
    run: o.ctx.run,
    events: o.ctx.events,
    lock: storeLockBackend(o.store, `${root}_publish.${tag}.lock`),
    what: `dataset s3://${o.bucket}/${root}`,
    onLost: (err) => o.sinkOf().destroy(err),
    published: async (journal) => {
      for (const rel of journal.files)
        if (manifests?.test(rel) && (await o.store.metadata(rel)) !== undefined) return true;
      return false;
    },
  });
}

/** The user metadata key (`x-amz-meta-catalog-streams-dataset`) naming the dataset a data object belongs to. */
export const DATASET_METADATA = 'catalog-streams-dataset';

/** The dataset's identity: the bucket and the key template with its run values (name, date) rendered. */
function datasetId(bucket: string, template: PathTemplate): string {
  return createHash('sha256').update(`${bucket}\n${template.pattern.source}`).digest('hex').slice(0, 16);
}

/**
 * The data keys the manifest at `manifestKey` lists, if it is a manifest of this key template (a
 * manifest of another template, or one that cannot be read, lists nothing of this dataset).
 */
async function readManifestKeys(
  store: S3ObjectStore,
  manifestKey: string,
  keyTemplate: string,
  ctx: StageContext,
): Promise<Set<string>> {
  const bucket = store.bucket;
  const text = await store.readText(manifestKey);
  if (text === undefined) return new Set();
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

/**
 * The schema of the newest manifest of this sink written before this run (the greatest key the
 * manifest pattern matches: keys hold the date and run id, which sort by time), or undefined.
 */
async function latestManifestSchema(store: S3ObjectStore, options: S3Settings, ctx: StageContext): Promise<unknown> {
  const where = manifestKeyPattern(options, ctx.run.name);
  if (!where) return undefined;
  let latest: string | undefined;
  for await (const { rel } of store.list(where.prefix))
    if (where.pattern.test(rel) && (latest === undefined || rel > latest)) latest = rel;
  if (latest === undefined) return undefined;
  try {
    const manifest = JSON.parse((await store.readText(latest)) ?? 'null') as Partial<S3Manifest> | null;
    return manifest?.keyTemplate === options.key ? manifest.schema : undefined;
  } catch {
    // A report, not a step of the publication: an unreadable manifest only means no comparison.
    return undefined;
  }
}

/** The lock object of a dataset a run replaces, in the folder of its manifest. */
export const LOCK_NAME = '_publish.lock';

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

/**
 * Where the manifests of every run of an s3 sink are, for readers of its history
 * (`catalog-streams history`): the literal key prefix to list and a pattern every such manifest key
 * matches, whatever its run's date and id. The same rule as `manifestKeyFor`, with `{date}` and
 * `{run}` left open: a key template with `{date}` keeps a manifest a day, one with `{run}` a
 * manifest a run, one with neither only the latest run's. Undefined when the sink writes none.
 */
export function manifestKeyPattern(
  settings: { key: string; manifest?: boolean | undefined; manifestKey?: string | undefined },
  pipelineName: string,
): { prefix: string; pattern: RegExp } | undefined {
  if (settings.manifest === false) return undefined;
  let source = settings.manifestKey;
  if (source === undefined) {
    // The folder shared by all keys of a run: up to the first placeholder that is not a run value.
    const dynamic = /\{\s*(?!(?:name|run|date)\s*\})[^}]*\}/.exec(settings.key);
    const fixed = dynamic ? settings.key.slice(0, dynamic.index) : settings.key;
    source = `${fixed.slice(0, fixed.lastIndexOf('/') + 1)}_manifest.json`;
  }
  const open = source.indexOf('{');
  const literal = open < 0 ? source : source.slice(0, open);
  const pattern = source
    .split(/(\{\s*(?:name|run|date)\s*\})/)
    .map((part) => {
      const placeholder = /^\{\s*(name|run|date)\s*\}$/.exec(part)?.[1];
      if (placeholder === 'name') return escapeRegExp(escapePathValue(pipelineName));
      if (placeholder === 'run') return RUN_ID_PATTERN;
      if (placeholder === 'date') return '\\d{4}-\\d{2}-\\d{2}';
      return escapeRegExp(part);
    })
    .join('');
  return { prefix: literal.slice(0, literal.lastIndexOf('/') + 1), pattern: new RegExp(`^${pattern}$`) };
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
  /** How the columns differ from the previous manifest's schema; absent when they do not (or on a first run). */
  schemaChanged?: SchemaChange;
}

async function writeManifest(
  store: S3ObjectStore,
  ctx: StageContext,
  m: {
    bucket: string;
    key: string;
    keyTemplate: string;
    format: string;
    committed: readonly CommittedOutput[];
    schema: unknown;
    schemaChanged: SchemaChange | undefined;
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
    ...(m.schemaChanged ? { schemaChanged: m.schemaChanged } : {}),
  };
  const body = Buffer.from(`${JSON.stringify(document, null, 2)}\n`);
  const location = s3Location(m.bucket, m.key);
  await store.write(m.key, body, { contentType: 'application/json' });
  return {
    output: { kind: 'object', location, rows: 0, bytes: body.byteLength, sink: 's3' },
    revoke: () => store.remove(m.key),
  };
}

/**
 * The `s3` sink writing any of `formats`: its stage definition, options schema and code-API factory
 * (`await pipeline(source, s3Sink({format: 'parquet', bucket, key}))`; credentials and region come
 * from the AWS SDK's standard chain).
 */
export function s3Sink<const Formats extends readonly [OutputFormat, ...OutputFormat[]]>(formats: Formats) {
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
    const parsed = parseStageOptions('s3', options, rest) as S3Settings;
    const made = createS3Sink(formats, parsed, defaultStageContext(ctx), { schemaHint });
    return markStage(made, plannedStage(stage, parsed, rest, 'sink'));
  };
  return { stage, options, sink };
}
