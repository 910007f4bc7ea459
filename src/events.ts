// The run's event bus. The client, sources, stages and sinks report what they do
// here; the runner's counters, the progress display and the JSON log listen. No
// event ever carries a credential.
import { EventEmitter } from 'node:events';

export interface OutputRecord {
  /** `file` (local, committed by rename), `object` (S3), `stdout`. */
  kind: 'file' | 'object' | 'stdout';
  /** Final path, `s3://bucket/key`, or `-`. */
  location: string;
  rows: number;
  bytes: number;
  /** Type name of the sink that wrote it (`parquet`, `jsonl`, `s3`, ...). */
  sink: string;
  /**
   * A file beside the data, with no rows of its own: a table's metadata (`_table.json`, an Iceberg
   * metadata file) or its merge state. Summaries say so instead of "0 rows"; `bytes` is 0 when a
   * catalog wrote the file and its size is not known to the run.
   */
  role?: 'metadata' | 'state';
}

export interface RunEventMap {
  /** One HTTP exchange finished (any status). */
  request: [{ endpoint: string; status: number; durationMs: number; attempt: number }];
  /** A request will be tried again after `delayMs`. */
  retry: [{ endpoint: string; attempt: number; reason: string; delayMs: number }];
  /** A 429 was received; the limiter slows down. */
  throttle: [{ endpoint: string; delayMs: number; retryAfter: boolean }];
  /** A source learned (or refined) how many records it will deliver. */
  total: [{ endpoint: string; total: number; capped: boolean }];
  /** A page (or a stream chunk) of records was delivered by a source. */
  page: [{ endpoint: string; records: number; page?: number; slice?: string }];
  /** A record was rejected by a stage (validate, normalize-codes, parquet schema...). */
  invalid: [{ stage: string; id?: string | number; action: 'skip' | 'dead-letter' | 'fail'; message: string }];
  /** A sink committed an output under its final name. */
  output: [OutputRecord];
  /** Something a user should know that does not stop the run. */
  warning: [{ code: string; message: string }];
  /** Free-form notable step (slice planned, stream resumed, state saved...). */
  info: [{ code: string; message: string; [key: string]: unknown }];
}

export type RunEventName = keyof RunEventMap;

// A record over every event name, so the compiler fails when RunEventMap gains an event this list lacks.
const EVENT_NAMES: { readonly [K in RunEventName]: K } = {
  request: 'request',
  retry: 'retry',
  throttle: 'throttle',
  total: 'total',
  page: 'page',
  invalid: 'invalid',
  output: 'output',
  warning: 'warning',
  info: 'info',
};

/** Every event name of RunEventMap. */
export const RUN_EVENT_NAMES: readonly RunEventName[] = Object.values(EVENT_NAMES);

export class RunEvents extends EventEmitter<RunEventMap> {}
