// The stage contract: every source, transform and sink is a factory registered
// under a type name with a zod schema for its options. The pipeline-file loader
// and the code API both go through these definitions, so a stage that exists in
// code exists in YAML with the same option names.
import type { Readable, Transform, Writable } from 'node:stream';
import type { z } from 'zod';
import type { CatalogClient } from '../client/catalog-client.js';
import type { RunEvents, OutputRecord } from '../events.js';
import type { LocatedIssue } from './issues.js';
import type { Fence } from './lock.js';
import type { RecordSchema, SchemaEnv } from './record-schema.js';

export type StageKind = 'source' | 'transform' | 'sink';

/** A sink: a Writable that commits its outputs in `_final` and lists them. */
export interface SinkStream extends Writable {
  /** Every file/object committed under its final name, with rows and bytes. */
  readonly outputs: readonly OutputRecord[];
  /**
   * Removes what a sink that already finished committed (files, objects,
   * manifest): a sibling sink of the same run failed after this one committed.
   * Optional; the tee removes committed local files itself when it is absent.
   */
  revoke?(): Promise<void>;
  /**
   * Optional: true once the sink's outputs (a tee's: every sink's) are published and no longer
   * taken back. The runner reads it after a stop or a failure destroyed the chain: a sink past its
   * commit point makes the run one that published, whatever arrived after. Absent: a sink that
   * finished counts as published.
   */
  readonly published?: boolean;
  /**
   * Optional: makes the sink wait, its data complete but unpublished, until `publish()`; the tee
   * publishes every sink of a run only once all of them got there, and settles them once all
   * published (sinks/shared/publication.ts).
   */
  holdPublication?(): HeldPublication;
  /**
   * Optional: resolves once the sink is ready for its first record (its dataset lock taken, stale
   * temp files removed), rejects with what stopped it. The runner waits for it before the first
   * request, so a dataset another run holds costs no request budget.
   */
  prepared?(): Promise<void>;
}

/** A sink held by the tee (the publication protocol, ARCHITECTURE.md). */
export interface HeldPublication {
  /** Resolves when the sink's data is complete and it waits to publish; rejects if it fails first. */
  readonly ready: Promise<void>;
  /** Lets the sink publish (its manifest last); its `finish` follows. */
  publish(): void;
  /**
   * Every sink of the run published: removes what this sink's new version superseded and releases
   * its lock. Until then a sibling's failure can still revoke it to the earlier version, so the
   * earlier version's files must still be there. Failures are warnings (the data is published).
   */
  settle(): Promise<void>;
}

/** What a sink writes into a manifest, asked for at commit time. */
export interface RunDescription {
  runId: string;
  name: string;
  startedAt: Date;
  /** The filter the source actually sent (including an incremental `updatedSince`). */
  sourceFilter?: unknown;
  sourceType?: string;
  /** Incremental cursor: the one this run started from and the one it will store. */
  cursor?: { previous?: number; next?: number };
}

/** How this run reads and what it may publish: what a stage decides by, set once before it is made. */
export interface RunMode {
  /**
   * The run reads only what changed since the cursor a previous run stored (`updatedSince`): a table
   * sink merges it into its snapshot instead of replacing the snapshot.
   */
  readonly incremental: boolean;
  /** The cursor (unix seconds) this incremental run reads from. */
  readonly previousCursor?: number | undefined;
  /** `run --allow-deletes`: a table sink publishes a full run's deletes above its `deletes.maxRatio`. */
  readonly allowDeletes: boolean;
  /**
   * `run --full-refresh`: the user asked for everything again, not only a full read (a first run,
   * `fullReadEvery`): an Iceberg table sink writes every row again and drops its delete files.
   */
  readonly fullRefresh?: boolean;
}

/** A full run that may not publish more deletes than its sinks allow: a code-API stage's default. */
export const FULL_RUN: RunMode = { incremental: false, allowDeletes: false };

/**
 * What a stage is made with. Everything is typed and named; nothing is looked up by string. The
 * runner fills it from the pipeline's plan; a code-API factory completes what its caller leaves out
 * (default-context.ts).
 */
export interface StageContext {
  run: { id: string; name: string; startedAt: Date };
  /** Relative output paths in options resolve against this (the pipeline file's folder, or cwd). */
  baseDir: string;
  /** Where modules named in options (`custom`) resolve, when not `baseDir`: the pipeline file's folder. */
  moduleDir?: string;
  signal: AbortSignal;
  events: RunEvents;
  /**
   * What the pipeline's source produces, so downstream stages can pick the
   * resource schema (validate, flatten-locales, parquet inference).
   */
  source?: { type: string; resource?: string | undefined; endpoint?: string | undefined };
  /** Builds a registered sink from a spec such as `{type: 'jsonl', path: 'out/rejected.jsonl'}` (dead letters). */
  createSink(spec: { type: string; [option: string]: unknown }): SinkStream;
  /**
   * The run's own lock (its state's): every commit point asserts it, with its sink's dataset
   * lock, right before it writes (core/lock.ts, Fencing). Absent without a state or a runner.
   */
  fence?: Fence | undefined;
  /** Run facts for manifests; call it when committing, not when created. */
  describeRun(): RunDescription;
  /** How the run reads and what it may publish. */
  mode: RunMode;
  /** The schema of the records that reach the sinks, derived from the plan without a record (planned-stage.ts). */
  recordSchema?: RecordSchema | undefined;
  /**
   * The field paths the pipeline's sinks declare with `columns:` (record paths, `brands[].logo`): a
   * field the user promoted to a column is known, so `validate` counts it without a warning.
   */
  declaredColumns?: ReadonlySet<string> | undefined;
  /** The resource schemas by name (validate, parquet column hints); default: the API's own (src/catalog/resources). */
  resourceSchemas?: ResourceSchemas | undefined;
  /** Reads records of the run's source again by id (the table sink checks its delete candidates with it). */
  recordLookup?: RecordLookup | undefined;
  /** Replaces process.stdout for a sink whose path is `-`. */
  stdout?: Writable | undefined;
  /** The environment a stage reads settings from (S3 credentials and endpoint); default: process.env. */
  env?: Readonly<Record<string, string | undefined>> | undefined;
  /**
   * The run's one CatalogClient (pool, auth, rate limiter, retries), shared by
   * every source so the run stays within the API's request budget. Sources
   * throw a ConfigError when it is absent; the runner sets it.
   */
  client?: CatalogClient | undefined;
  /**
   * The regions of a fan-out (`connection.regions`) whose source failed so far: a sink that
   * replaces earlier files keeps those of a failed region's partition (shared/failed-regions.ts).
   * Call it when committing. Absent outside a fan-out.
   */
  failedRegions?(): ReadonlySet<string>;
}

/** What a resource-schema lookup may be: a function or a map by resource name. */
export type ResourceSchemas = ((resource: string) => z.ZodType | undefined) | Record<string, z.ZodType | undefined>;

/**
 * The run's source asked again for given ids: what a sink uses to learn whether records it did not
 * receive still exist. Set by the runner, which knows the source, its filter and the transforms.
 */
export type RecordLookup =
  | {
      readonly available: true;
      /** The endpoint asked (`products.query`), for messages. */
      readonly endpoint: string;
      /** Ids one `read` takes at most (the API's 1000 codes per filter). */
      readonly maxIds: number;
      /**
       * The records with these ids that exist now and match the source's own filter (without the
       * updatedSince window of a state run), as the sinks receive them: through the run's transforms.
       * An id with no record does not exist or left the filter. `onRecord` is awaited for each.
       * Rejects when a request or a transform fails. Resolves with the requests it made and the
       * ids of the records that exist but a transform rejected as invalid (`onInvalid: skip` or
       * `dead-letter`; no dead letter is written for them: the extract wrote it).
       */
      read(
        ids: ReadonlyArray<string | number>,
        onRecord: (record: Record<string, unknown>) => Promise<void> | void,
      ): Promise<{ requests: number; rejected?: ReadonlyArray<string | number> }>;
    }
  | {
      readonly available: false;
      /** Why records cannot be looked up by id (`updates.query has no filter by a list of ids`). */
      readonly reason: string;
    };

export interface StageDefinition<Options = any, Out = Readable | Transform | Writable> {
  kind: StageKind;
  /** Type name used in pipeline files: `products.query`, `validate`, `parquet`. */
  type: string;
  /** One line for `catalog-streams stages` and the README reference. */
  description: string;
  /** The options schema (without `type`); strict, so unknown keys are errors. */
  options: z.ZodType<Options>;
  create(options: Options, ctx: StageContext): Out;
  /**
   * Checks that need the local file system but no network (a custom module
   * exists), run by `validate` and before a run; issues carry paths relative
   * to the stage's options.
   */
  preflight?(options: Options, env: PreflightEnv): LocatedIssue[];
  /**
   * Transforms: the schema of the records this stage emits, given the schema of those it
   * receives (record-schema.ts), without any record. A transform without it emits records
   * the schema knows nothing about (sinks keep their fields in `_extra`).
   */
  schema?(input: RecordSchema, options: Options, env: SchemaEnv): RecordSchema;
  /**
   * Sinks: the option holding the output's template, a local file `path` or an S3 object `key`,
   * when a run writes under it in place of earlier runs' outputs unless it has `{run}`. An
   * incremental pipeline refuses such a sink without `{run}` (pipeline/incremental-outputs.ts),
   * and a local `path` is checked for writability before the first request (pipeline/preflight.ts).
   */
  replacesAt?: 'path' | 'key';
  /**
   * Sinks: how often (milliseconds) a pipeline with `state:` must read its source whole instead of
   * the changes since the cursor, given the sink's options; undefined: never. Some things leave a
   * source without any timestamp moving (a media item leaving `available`), and only a whole read
   * shows they are gone; the runner makes a run full once this long has passed since the last full
   * one (pipeline/incremental-window.ts).
   */
  fullReadEvery?(options: Options): number | undefined;
}

/** What a preflight check may look at. */
export interface PreflightEnv {
  /** The pipeline file's folder: relative paths in options resolve against it. */
  baseDir: string;
}

export type SourceDefinition<O = any> = StageDefinition<O, Readable> & { kind: 'source' };
export type TransformDefinition<O = any> = StageDefinition<O, Transform> & { kind: 'transform' };
export type SinkDefinition<O = any> = StageDefinition<O, SinkStream> & { kind: 'sink' };

/** Identity helper that keeps the option type inferred from the schema. */
export function defineStage<
  const T extends string,
  S extends z.ZodType,
  Out extends Readable | Transform | Writable,
>(def: {
  kind: StageKind;
  type: T;
  description: string;
  options: S;
  create(options: z.output<S>, ctx: StageContext): Out;
  preflight?(options: z.output<S>, env: PreflightEnv): LocatedIssue[];
  schema?(input: RecordSchema, options: z.output<S>, env: SchemaEnv): RecordSchema;
  replacesAt?: 'path' | 'key';
  fullReadEvery?(options: z.output<S>): number | undefined;
}): StageDefinition<z.output<S>, Out> & { type: T; options: S } {
  return def as StageDefinition<z.output<S>, Out> & { type: T; options: S };
}
