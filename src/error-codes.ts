// The catalogue of every code the toolkit can raise (errors), warn with (warnings) or report
// (info events, JSON log lines), with what it means and what to do. One table read by the code
// and by the docs: the error classes take their exit code from it (errors.ts), the CLI prints an
// entry (`catalog-streams explain <code>`, `catalog-streams help errors`), and docs/errors.md is
// generated from it (scripts/update-error-codes.mjs). test/docs/error-codes.test.ts checks both
// directions against the source: every code the source can raise is here, and nothing here is dead.
//
// Codes are stable: scripts, alerts and orchestrators match them. Rename one only with a note.

/** What a code is attached to: a failure (the run or command fails), a warning, or a notable step. */
export type CodeKind = 'error' | 'warning' | 'info';

/**
 * Whether running again unchanged can succeed, for schedulers (examples/airflow, examples/dagster):
 * `retry` a transient cause (network, rate limit, a lock another run holds, data that changed
 * while read); `fix` something a person must change first (a file, credentials, a folder, data).
 */
export type Remedy = 'retry' | 'fix';

export interface CodeEntry {
  /** The code, or a family's pattern (`api.<API error code or status>`). */
  readonly code: string;
  readonly kind: CodeKind;
  /** Errors: the exit code of `catalog-streams` when this error ends a command. */
  readonly exitCode?: 1 | 2;
  /** Errors: whether a scheduler should retry. */
  readonly remedy?: Remedy;
  /** One line: what happened. */
  readonly meaning: string;
  /** One line: what the user should do. */
  readonly action: string;
}

/** A family of codes built from a value the toolkit does not choose (`api.too_many_requests`, `api.500`). */
export interface CodeFamily extends CodeEntry {
  /** Every code starting with this belongs to the family, unless it has an entry of its own. */
  readonly prefix: string;
}

export interface ExitCodeEntry {
  readonly exitCode: number;
  readonly meaning: string;
  /** What a scheduler should do with it. */
  readonly scheduler: string;
  /** `retry`: running again may succeed; `fix`: it will not until something changes; `none`: not a failure. */
  readonly remedy: Remedy | 'none';
}

/** The exit codes of `catalog-streams` (DESIGN.md, CLI contract: 0, 1, 2; plus the signal exits of `run`). */
export const EXIT_CODES: readonly ExitCodeEntry[] = [
  {
    exitCode: 0,
    meaning: 'success (for run: every pipeline committed its outputs and stored its cursor)',
    scheduler: 'mark the task done',
    remedy: 'none',
  },
  {
    exitCode: 1,
    meaning:
      'the run failed: API, network, sink, storage or data error; nothing new is visible and the cursor is unchanged',
    scheduler:
      'read the error code (the summary file, or the JSON error line) and look it up: retry when its remedy is retry, else fail',
    remedy: 'retry',
  },
  {
    exitCode: 2,
    meaning: 'bad usage or a bad pipeline file; nothing was requested or written',
    scheduler: 'fail without retrying: the same command fails again until the file or the command changes',
    remedy: 'fix',
  },
  {
    exitCode: 129,
    meaning: 'stopped by SIGHUP before its outputs were committed; outputs discarded, cursor unchanged',
    scheduler: 'retry: the next run redoes the work',
    remedy: 'retry',
  },
  {
    exitCode: 130,
    meaning: 'stopped by SIGINT before its outputs were committed; outputs discarded, cursor unchanged',
    scheduler: 'retry: the next run redoes the work',
    remedy: 'retry',
  },
  {
    exitCode: 143,
    meaning: 'stopped by SIGTERM (a pod evicted, a task timed out) before its outputs were committed; cursor unchanged',
    scheduler: 'retry: the next run redoes the work',
    remedy: 'retry',
  },
];

const usageError = (code: string, meaning: string, action: string): CodeEntry => ({
  code,
  kind: 'error',
  exitCode: 2,
  remedy: 'fix',
  meaning,
  action,
});
const runError = (code: string, remedy: Remedy, meaning: string, action: string): CodeEntry => ({
  code,
  kind: 'error',
  exitCode: 1,
  remedy,
  meaning,
  action,
});
const warning = (code: string, meaning: string, action: string): CodeEntry => ({
  code,
  kind: 'warning',
  meaning,
  action,
});
const info = (code: string, meaning: string, action = 'nothing: it reports what the run did'): CodeEntry => ({
  code,
  kind: 'info',
  meaning,
  action,
});

const STREAM_ACTION =
  'run again (a cut or broken stream is usually transient); if it repeats, report it with the index named';

/** Every code, sorted by code point (`state.write` before `state_saved`). */
export const ERROR_CODES: readonly CodeEntry[] = [
  runError(
    'aborted',
    'retry',
    'the run was stopped (a signal, an AbortSignal, a destroyed client)',
    'run again; nothing of the stopped run is visible',
  ),
  runError(
    'api.rate_limited',
    'retry',
    'the API still answered 429 after every retry the policy allows',
    'another client may share the credentials: lower connection.rateLimit, or run later',
  ),
  runError(
    'api.response_too_large',
    'fix',
    'a response body was larger than connection.maxPageBytes, so it was not read',
    'check CATALOG_BASE_URL and the filter; raise connection.maxPageBytes if such pages are expected',
  ),
  runError(
    'auth.forbidden',
    'fix',
    'the API answered 403: the credentials may not use this endpoint',
    'ask for access to the endpoint, or use credentials that have it',
  ),
  runError(
    'auth.unauthorized',
    'fix',
    'the API answered 401: the credentials were rejected (never retried)',
    'check CATALOG_API_KEY and CATALOG_API_SECRET, and that they belong to the environment of CATALOG_BASE_URL',
  ),
  usageError(
    'config.aliases',
    'a YAML alias (*name) has no anchor, or aliases expand to too much data',
    'define the anchor (&name) before its alias, or write the repeated parts out',
  ),
  usageError(
    'config.column_name_clash',
    "two fields become the same column under the sink's columnNames (snake_case)",
    'rename or drop one of the two fields, or set columnNames: as-is',
  ),
  usageError(
    'config.connection',
    'no API connection: base URL, key or secret missing, or a connection option out of range',
    'set CATALOG_BASE_URL, CATALOG_API_KEY and CATALOG_API_SECRET (or a connection: block), or pass --sandbox',
  ),
  usageError(
    'config.credentials',
    'the API keys and secrets do not pair up: lists of different lengths, an empty entry, a key listed twice, or credentials beside apiKey/apiSecret',
    'give CATALOG_API_KEY and CATALOG_API_SECRET (or connection.credentials) the same number of entries, in the same order, each key once',
  ),
  usageError(
    'config.custom_export',
    "a custom stage's module has no function export of the given name",
    'set export: to one of the function exports the message lists',
  ),
  usageError(
    'config.custom_module',
    "a custom stage's module was not found or failed to load",
    'check module: (relative to the pipeline file) and that the module loads with node',
  ),
  usageError(
    'config.field_path',
    'an option names a field path that is not valid (a.b, a[0].b)',
    'fix the field path at the option the message names',
  ),
  usageError(
    'config.iceberg_timestamps',
    'a column of an Iceberg table is a millisecond timestamp; Iceberg timestamps are microseconds',
    "set the sink's timestamps option to micros (the table sink does so for format: iceberg)",
  ),
  usageError(
    'config.invalid',
    'an option of a stage or of the pipeline file does not fit its schema',
    'fix the value at the path the message names (catalog-streams stages <type> lists the options)',
  ),
  usageError(
    'config.lineage_column_clash',
    'the records have a field named _run_id or _extracted_at, and the sink has lineage: true, which adds columns of those names',
    'rename the field (the rename transform) or set lineage: false on that sink',
  ),
  usageError(
    'config.missing_env',
    'a ${VAR} of the pipeline file, or a CATALOG_* variable the client needs, is not set',
    'export the variable, or give it a default in the file: ${VAR:-default}',
  ),
  usageError(
    'config.not_found',
    'the pipeline file cannot be read',
    'check the path (relative to the current folder) and its permissions',
  ),
  usageError(
    'config.region',
    "connection.region refuses the pipeline: a filter the region does not document (ecommerce outside be and fr, another region's national code), a code value of the wrong length (cnk 7 digits, pzn 8, cip13/acl13 13, EAN/GTIN 8, 12, 13 or 14), or an environment the region lacks; in a fan-out (connection.regions), a table keyed without region or a file dataset each run replaces that is not partitioned by region={region}; caught before any request",
    'remove the filter or correct the code the message names, or set connection.region to the region the filter belongs to; in a fan-out, key tables by region,id and put region={region} (or {run}) in file paths',
  ),
  usageError(
    'config.rename_conflict',
    'two fields of a rename stage are renamed to the same name',
    'give each renamed field a name of its own',
  ),
  usageError(
    'config.resource_unknown',
    'a stage cannot tell which resource its records are',
    'set the stage option resource: (products, media, ...)',
  ),
  usageError(
    'config.schema_unknown',
    "a columnar sink (parquet, csv, table) cannot know its columns: the records' schema is unknown",
    'use a built-in source, declare columns in a custom stage, pass schemaHint in code, or write jsonl',
  ),
  usageError(
    'config.state',
    'state: is set on a pipeline whose source takes no updatedSince (reference data)',
    'remove state: (reference data is small: extract it whole)',
  ),
  usageError(
    'config.state_fixed_output',
    "an incremental pipeline (state:) writes to a path without {run}, so each run would replace the earlier runs' changes",
    'put {run} in the output path or key, or use a table sink',
  ),
  usageError(
    'config.syntax',
    'the pipeline file is not valid YAML or JSON',
    'fix the syntax at the line and column the message names',
  ),
  usageError(
    'config.template',
    'an output path or key template has an unknown placeholder or unmatched braces',
    'use {name} {run} {date} {part} and key={field} only',
  ),
  usageError('config.too_deep', 'the pipeline file is nested far deeper than any pipeline needs', 'flatten the file'),
  usageError(
    'config.too_large',
    'the pipeline file is larger than a pipeline file may be',
    'split long lists of codes over several pipelines, or build them in code',
  ),
  usageError(
    'config.unknown_field',
    'an option names a field the resource does not have (flatten-locales fields, normalize-codes fields)',
    'use one of the fields the message lists (or its suggestion)',
  ),
  usageError(
    'config.unknown_key',
    'the pipeline file or a stage has a key that does not exist (a typo is never ignored)',
    'rename it to the closest valid name the message suggests, or remove it',
  ),
  usageError(
    'config.unknown_type',
    'a stage type does not exist',
    'use a type catalog-streams stages lists (the message suggests the closest)',
  ),
  usageError(
    'config.unplanned_stream',
    'planFromStreams was given a stream no catalog-streams factory made, or streams out of order (a source, transforms, then sinks)',
    'make every stage with a factory of the package (productsQuery, validate, parquetSink...) and list them source first, sinks last',
  ),
  usageError(
    'config.zstd_unavailable',
    'compression: zstd on a Node whose zlib has no zstd (before 22.15): the message names the Node running',
    'run on Node 22.15+ or 24, or choose compression: snappy (the default) or gzip',
  ),
  runError(
    'data.custom_contract',
    'fix',
    'a custom function broke its contract (returned undefined, or something that is not a record)',
    'return the record, null to drop it, or a list; see the message for the record',
  ),
  runError(
    'data.custom_timeout',
    'fix',
    "a custom function's Promise did not settle within the stage's timeout",
    'make every code path resolve or reject, or raise the timeout option',
  ),
  runError(
    'data.invalid',
    'fix',
    'a record does not fit its schema and the stage was told to fail (onInvalid: fail)',
    'dead-letter or skip invalid records (onInvalid), or fix the data upstream',
  ),
  runError(
    'data.lineage_field',
    'fix',
    'a record reached a sink with lineage: true carrying its own _run_id or _extracted_at field (one the schema does not declare)',
    'rename or drop the field before the sink (the rename or drop transform), or set lineage: false on that sink',
  ),
  runError(
    'data.max_invalid',
    'fix',
    'more records were rejected than maxInvalid allows',
    'read the dead letters; if that many are expected, raise maxInvalid or set it to none',
  ),
  runError(
    'data.no_id',
    'fix',
    'a find transform got a record without a usable id',
    'set idField to the field that holds the id',
  ),
  runError(
    'data.not_a_record',
    'fix',
    'a transform received something that is not a plain object',
    'pipe records (objects) into transforms; check the stage before it',
  ),
  runError(
    'data.stage_failed',
    'fix',
    "a transform's code threw an error of its own on a record (a custom stage, a map or filter in code): the message names the stage's place, its module and the record",
    "fix the function at the place the message names (the original error is the message's end), or drop the record it fails on; the run's outputs were discarded",
  ),
  warning(
    'dedupe.shared_key',
    'two different records share the dedupe key; the later one was dropped',
    'key by id (the default) unless dropping records that share a code is intended',
  ),
  runError(
    'dependency.missing.iceberg-sigv4',
    'fix',
    "an Iceberg REST catalog with auth: sigv4 needs the AWS SDK's signer and credential chain, which are not installed (optional peer dependencies)",
    'npm install @smithy/signature-v4 @aws-sdk/credential-provider-node in your project',
  ),
  runError(
    'dependency.missing.s3-media',
    'fix',
    'a media-mirror sink with an s3:// path needs the AWS SDK, which is not installed',
    'npm install @aws-sdk/client-s3 @aws-sdk/lib-storage in your project',
  ),
  runError(
    'dependency.missing.s3-sink',
    'fix',
    'the s3 sink needs the AWS SDK, which is not installed (an optional peer dependency)',
    'npm install @aws-sdk/client-s3 @aws-sdk/lib-storage in your project',
  ),
  runError(
    'dependency.missing.s3-state',
    'fix',
    'an s3:// state.path needs the AWS SDK, which is not installed',
    'npm install @aws-sdk/client-s3 @aws-sdk/lib-storage in your project',
  ),
  runError(
    'dependency.missing.s3-table',
    'fix',
    'a table sink with an s3:// path needs the AWS SDK, which is not installed',
    'npm install @aws-sdk/client-s3 @aws-sdk/lib-storage in your project',
  ),
  runError(
    'error',
    'fix',
    'an error without a code of its own (a bug, or an error thrown by a custom stage)',
    'read the message; if it comes from the toolkit, report it',
  ),
  warning(
    'extract.replaces_field',
    "an extract column has the name of one of the record's own fields and replaces it",
    'name the column differently to keep both',
  ),
  warning(
    'filter.deprecated_name',
    'a filter name is deprecated; it was sent under its current name',
    'rename the filter in the pipeline file or code as the message says',
  ),
  warning(
    'flatten-locales.no_fields',
    'flatten-locales has no localized fields to flatten for this resource; records pass unchanged',
    'remove the stage, or set resource: to the one the records are',
  ),
  info(
    'full_read_due',
    "the run reads its source whole although the state holds a cursor: a sink's periodic full read (a media-mirror's fullRelistDays) was due",
  ),
  warning(
    'history.failed',
    "the run's line could not be added to the run history; the run's outcome is unchanged",
    'check that the state folder (or output folder) is writable; catalog-streams history will miss this run',
  ),
  info(
    'history.foreign_files',
    "the run history folder holds files that are not this pipeline's run files (another tool's, a person's, or unreadable); they were left alone",
    'nothing, or move them out of the history folder to silence this',
  ),
  runError(
    'history.locked',
    'retry',
    "another run is folding the pipeline's per-run history files into its history file",
    'nothing: the run that meets it leaves its own file for a later compaction (it never ends a run)',
  ),
  runError(
    'history.read_failed',
    'retry',
    'catalog-streams history could not read a run history, manifest or _table.json',
    'check the path or bucket and the credentials the message names',
  ),
  runError(
    'history.s3_manifest',
    'fix',
    "an s3 sink's _manifest.json is not valid JSON",
    "restore it, or rerun the pipeline to write a new one (the lake's readers trust only what a manifest lists)",
  ),
  runError(
    'history.table_manifest',
    'fix',
    "a table's _table.json is not valid JSON",
    'restore it from a backup: the table readers need it too',
  ),
  runError(
    'iceberg.avro_limit',
    'fix',
    "an Iceberg manifest or manifest list is over a limit: the file's bytes, its inflated deflate blocks, or a block's record count for its bytes (docs/security.md)",
    "remove the file if it is not the table's (someone planted it), else restore the table's metadata from a backup",
  ),
  runError(
    'iceberg.commit_conflict',
    'retry',
    'another writer committed to an Iceberg table since this run loaded it, or a killed run left its next metadata file',
    'run again: the run reloads the table, removes what a killed run left, and commits on the new version',
  ),
  info(
    'iceberg.commit_retried',
    "a sharded table commit lost the race to another shard: the run reloaded the table, rebased its files on the winner's snapshot and committed again",
  ),
  runError(
    'iceberg.commit_unknown',
    'fix',
    'an Iceberg REST catalog failed (5xx) or the connection broke while it had a commit: the commit may or may not have happened',
    "load the table and check whether its current snapshot carries the run's id (summary catalog-streams.run-id) before running again",
  ),
  runError(
    'iceberg.metadata_invalid',
    'fix',
    "an Iceberg table's version hint, metadata JSON or manifest cannot be read",
    'restore the file from a backup, or remove the table folder to start the table again',
  ),
  runError(
    'iceberg.rest_auth',
    'fix',
    'the Iceberg REST catalog refused the credential or token (401, 403, 419), or the OAuth2 token request failed',
    'check the credential (client_id:client_secret) or token, its scope and its permissions on the namespace',
  ),
  runError(
    'iceberg.rest_request',
    'fix',
    'the Iceberg REST catalog refused a request (400, 404, 406): an unknown warehouse, a bad name or an update it does not support',
    "read the server's message in the error; check uri, warehouse, namespace and table names",
  ),
  runError(
    'iceberg.rest_response',
    'fix',
    'an answer of the Iceberg REST catalog does not follow the REST spec (or the table is not format-version 2)',
    'check that uri names an Iceberg REST catalog (without /v1); report it if it does',
  ),
  runError(
    'iceberg.rest_token_endpoint',
    'fix',
    "the OAuth2 token endpoint is not one the client secret may be sent to: plain http to a host other than loopback, or a host other than the catalog's that the options do not name (a config answer cannot redirect the secret)",
    'use https; if the token endpoint is on another host and you trust it, name it in the catalog option oauth2ServerUri',
  ),
  runError(
    'iceberg.rest_too_large',
    'fix',
    'an answer of the Iceberg REST catalog (or its token endpoint) is over its byte limit (docs/security.md); the rest of it was not read',
    'check that uri names an Iceberg REST catalog and that nothing between (a proxy) answers in its place',
  ),
  runError(
    'iceberg.rest_unavailable',
    'retry',
    'the Iceberg REST catalog could not be reached or kept failing (5xx, 429) on a request other than a commit',
    'run again later; check the uri and the network if it repeats',
  ),
  runError(
    'iceberg.shard_conflict',
    'fix',
    "a sharded table run (table option shard) found another writer's change to this shard's files of current/, a table written without shard: (or with it, by a run without it), or a record of another region than its shard; nothing of this commit is visible",
    'run each shard in one process at a time (its lock does), every run of the table with shard: set (or none), and shard: the region the process reads; point path at a new folder to change',
  ),
  runError(
    'iceberg.update_invalid',
    'fix',
    'an Iceberg commit held an update the table cannot take (a schema, ref or snapshot it does not have)',
    'report it: the commit was built wrong; nothing of it is visible',
  ),
  info('incremental', 'the run is incremental: the updatedSince window it reads, from the stored cursor'),
  runError(
    'lock.lost',
    'retry',
    "a run reached a commit point (_table.json, an Iceberg commit, a manifest or dataset record, the state cursor) no longer holding its lock: another run took it over, or the run was paused past the lock's stale time; it published nothing there",
    "nothing to repair: the newer run's version stands. Run again once no other run of the pipeline is active; if runs are paused (frozen pods), keep them from overlapping",
  ),
  runError(
    'media.download_failed',
    'retry',
    'the media mirror could not fetch more files than maxFailedShare allows (5xx, timeout, wrong type, too large, gone); the previous copies stay',
    'run again later (maintenance windows end); read the first failures in the message, and the last_error column of media.parquet',
  ),
  warning(
    'media.foreign_file',
    'a file the media mirror did not write is where it would store a media file; it is left as it is and that media file is not stored',
    'move the file away, or give the mirror a folder of its own',
  ),
  warning(
    'media.journal_ignored',
    'a write journal of the media mirror could not be used (unreadable or not a journal); the files it names are never removed',
    "remove the journal the message names if it is not the mirror's",
  ),
  warning(
    'media.retry_later',
    'files that failed in earlier runs were not asked for: each waits for its backoff (failedBackoff, doubled per failed run, at most 7 days); a previous copy stays',
    'nothing to do if the host had an outage; set retryFailed: true for one run to ask now, and read last_error in media.parquet',
  ),
  info(
    'media.summary',
    'what the media mirror did: files named, to fetch, fetched, unchanged, adopted, failed, waiting for their backoff, removed',
  ),
  warning(
    'media.url_invalid',
    'a media URL is not an http or https URL; it was skipped',
    'nothing to do in the pipeline; report it to the catalog if a file is missing',
  ),
  warning(
    'metrics.failed',
    'the metrics file or the Pushgateway push failed; the run outcome is unchanged',
    'check --metrics-file / --pushgateway; an alert on a stale last-success time catches a missed push',
  ),
  warning(
    'metrics.file_name',
    "--metrics-file does not end in .prom: node_exporter's textfile collector skips the file",
    'name the file <something>.prom',
  ),
  warning(
    'metrics.file_shared',
    '--metrics-file held the metrics of pipelines another pipeline file runs; this run replaced them',
    'give each pipeline file a --metrics-file of its own in the textfile folder',
  ),
  runError(
    'network.failed',
    'retry',
    'a request to the API failed for a network reason not covered by the codes below',
    'run again; check the network or proxy if it repeats',
  ),
  runError(
    'network.reset',
    'retry',
    'the connection to the API was reset, after every retry',
    'check your network or proxy, then run again',
  ),
  runError(
    'network.timeout',
    'retry',
    'the API did not answer (or stopped sending) within the timeouts, after every retry',
    'run later; raise connection.timeouts if the service is slow',
  ),
  runError(
    'network.truncated',
    'retry',
    'a response body ended before its JSON was complete (a proxy or the service cut it), after every retry',
    'run again later',
  ),
  runError(
    'network.unreachable',
    'retry',
    'the API host cannot be reached (DNS, refused connection), after every retry',
    'check CATALOG_BASE_URL (host, port, https), the network, proxy and firewall',
  ),
  warning('node.warning', 'Node.js printed a process warning during the run', 'read it; it does not change the run'),
  info('outputs_committed', 'every output of the pipeline is committed; the cursor is stored next'),
  info(
    'plan.skipped',
    'the progress display has no plan (no ETA) for a pipeline',
    'nothing: the run goes on without an ETA',
  ),
  runError(
    'preflight.output',
    'fix',
    'an output folder is not writable or not a folder (checked before the first request)',
    'fix the folder or choose another path',
  ),
  runError(
    'preflight.state',
    'fix',
    'the state file cannot be written (checked before the first request)',
    'fix the folder or choose another state.path',
  ),
  runError(
    'publish.locked',
    'retry',
    'another run holds the lock of the dataset this sink publishes into',
    'wait for it (a lock whose holder died is taken over after two minutes), or give the runs different paths',
  ),
  warning(
    'region.failed',
    "one region of a fan-out (connection.regions) failed, e.g. its credentials were refused: the other regions' records went on to the outputs, this region's cursor stays where it was",
    "fix what the message names for that region (its CATALOG_<REGION>_API_KEY, its host); the next run reads the region's window again",
  ),
  usageError(
    'registry.duplicate',
    'a stage type is registered twice (code API: a custom registry)',
    'give the custom stage a type name of its own',
  ),
  usageError(
    'request.invalid',
    'a request would break the API spec (page size, too many codes, a filter the endpoint lacks); caught before sending',
    'fix the filter or option at the path the message names',
  ),
  warning(
    'run.after_commit',
    'a stop or a failure came after every output of the pipeline was published: the outputs stay, the cursor is stored and the run counts as done',
    'nothing: the exit code and the summary say the run published',
  ),
  runError(
    'run.failed',
    'retry',
    'a run failed for a reason that is not a toolkit error (the cause is in the message)',
    'read the message; run again if the cause was transient',
  ),
  runError(
    'run.stalled',
    'fix',
    'the run made no progress (no request, record or output) for stallTimeout',
    'find the stuck stage (often a custom function whose Promise never settles), or raise stallTimeout',
  ),
  warning(
    'schema.placeholders',
    'catalog-streams schema printed ${VAR} in place of environment variables that are not set',
    'nothing to print the schema; set the variables before running the pipeline',
  ),
  info(
    'schema.skipped',
    'catalog-streams schema skipped a sink that has no column schema (jsonl)',
    'nothing: jsonl keeps records as they are',
  ),
  runError(
    'sink.aborted',
    'retry',
    'a sink was stopped before it finished (the run failed elsewhere or was stopped); its output was discarded',
    'look for the error that stopped the run; run again',
  ),
  warning(
    'sink.cleanup',
    'a sink could not remove a partial or superseded output',
    'remove the file or object the message names; no manifest lists it',
  ),
  warning(
    'sink.cleanup_record',
    "a dataset record or manifest is not one of this dataset's, so nothing it lists is removed",
    'remove the earlier files by hand, or give the dataset a path of its own',
  ),
  warning(
    'sink.cleanup_refused',
    "a dataset record lists a file that is not one of the dataset's; it was not removed",
    'check the record file: someone edited it, or two datasets share a folder',
  ),
  warning(
    'sink.cleanup_unlisted',
    'files or objects match the output template but no earlier run of this dataset recorded them; not removed',
    'remove them if they are yours, or give the pipeline a path of its own',
  ),
  warning(
    'sink.csv.extra',
    'a field is not a CSV column or does not fit its column; kept in the _extra JSON column',
    'add a column for it (custom stage columns:) if you need it as a column',
  ),
  info('sink.csv.extra_fields', 'the fields a CSV sink kept in _extra, with counts'),
  warning(
    'sink.empty',
    'a sink received no records and has no declared columns, so it wrote no file',
    'check the filter if records were expected',
  ),
  runError(
    'sink.failed',
    'retry',
    'a sink could not write or commit its output',
    'read the message for the file or object and the cause',
  ),
  runError(
    'sink.file',
    'fix',
    'an output file could not be created, written or committed',
    'check the folder exists, is writable and has space',
  ),
  warning(
    'sink.parquet.extra',
    'a field is not in the Parquet schema or does not fit its column; kept in the _extra JSON column',
    "declare it in the sink's columns: to give it a column; a field that has one but sent another shape: declare it json, or bring the value to the column's type with a transform",
  ),
  info('sink.parquet.extra_fields', 'the fields a Parquet sink kept in _extra, with counts'),
  info('sink.parquet.schema', "the Parquet sink's columns and schema hash"),
  runError(
    'sink.partition',
    'fix',
    'a partition field of a record is an object or an array',
    'partition by a string, number or boolean field',
  ),
  runError(
    'sink.partitions',
    'fix',
    'more partitions were open at once than maxOpenPartitions, and the template has no {part} to continue one',
    'add {part}, raise maxOpenPartitions, or sort the input by the partition field',
  ),
  runError(
    'sink.record',
    'fix',
    'a sink received something that is not a plain object',
    'pipe records (objects) into sinks',
  ),
  warning(
    'sink.region_kept',
    "a region of a fan-out failed, so a dataset that each run replaces kept that region's earlier files (the ones this run would have removed); the other regions' files were published",
    'fix what the region.failed warning names; the next run that reads the region replaces its files',
  ),
  warning(
    'sink.revoke',
    'a sink failed (or the run was stopped) after another had published; what it published could not be taken back and stays, listed in the summary',
    'delete the objects the message names, or keep the table version it names (the cursor did not move: the next run writes them again)',
  ),
  runError(
    'sink.s3.auth',
    'fix',
    'S3 rejected the credentials',
    'check the AWS credentials (AWS_ACCESS_KEY_ID, AWS_PROFILE, role) and their permissions on the bucket',
  ),
  runError(
    'sink.s3.bucket',
    'fix',
    'the S3 bucket does not exist',
    'create it, or fix the bucket name (and S3_ENDPOINT)',
  ),
  runError(
    'sink.s3.upload',
    'retry',
    'an S3 request failed',
    'read the cause; check S3_ENDPOINT, the region and the network',
  ),
  info(
    'sink.schema_changed',
    "an output's columns differ from the previous run's (added, removed, retyped), read from an s3 manifest, a Parquet footer, a CSV header or a table's columns; an s3 manifest's schemaChanged says the same",
  ),
  warning(
    'sink.unlock',
    'a table sink could not remove its lock',
    'remove the lock file the message names once no run is using the table',
  ),
  info('source.duplicates_dropped', 'records that matched more than one code chunk were delivered once'),
  runError(
    'source.inconsistent_page',
    'retry',
    'an answer contradicted itself twice (fewer records than its own total says are left), so the query cannot be read exactly',
    'run again later; if it persists, report the request to the service',
  ),
  runError(
    'source.instant_over_cap',
    'fix',
    'more records than one query reaches were created in the same second, so reading by createdAt cannot get past them',
    'use the stream source (products.stream) or narrow the filter',
  ),
  warning(
    'source.invalid_utf8',
    'a record had bytes that are not valid UTF-8; they were replaced by U+FFFD and the record kept',
    'report the record id to the data owner',
  ),
  info(
    'source.reread',
    'records left the result while it was read, or an answer contradicted itself: what it covered is asked for again',
  ),
  info('source.slicing', 'the query has more matches than one query reaches; it is sliced by createdAt windows'),
  info('source.stream_resumed', 'a cut stream was resumed after the last record it delivered'),
  runError(
    'source.total_mismatch',
    'retry',
    'the data changed during the extract in a way the source cannot read around (a total rose between ordered pages)',
    'run again',
  ),
  info(
    'source.unrelated_dropped',
    'records the service returned for a prefix match of a code carried none of the searched codes; left out',
  ),
  runError(
    'source.unsliceable',
    'fix',
    'a query over the cap cannot be sliced: a record has no integer meta.createdAt',
    'use the stream source (products.stream)',
  ),
  runError(
    'source.unstable_sorting',
    'fix',
    'a query of more than one page sorts by a value that changes during the extract',
    'sort by id or createdAt, give the pipeline a state:, or use a stream source',
  ),
  runError(
    'source.window_mismatch',
    'retry',
    'the data of one createdAt window or code chunk changed during the extract in a way the source cannot read around',
    'run again',
  ),
  info('stale_temp_removed', 'temp files that killed runs left were removed'),
  runError(
    'state.corrupt',
    'fix',
    'the state file is not valid JSON or not a state',
    'fix it, or delete it and run with --full-refresh',
  ),
  runError(
    'state.locked',
    'retry',
    "another run holds the pipeline's state lock",
    'wait for it (a lock whose holder died is taken over after two minutes); never run one pipeline twice at once',
  ),
  runError(
    'state.mismatch',
    'fix',
    'the state file belongs to another pipeline, source or API host',
    'give this pipeline a state.path of its own, or run with --full-refresh to replace the cursor',
  ),
  runError('state.read', 'retry', 'the state file could not be read', 'check the path and its permissions'),
  runError(
    'state.s3',
    'retry',
    'an s3:// state could not be read or written',
    'check the AWS credentials, region and S3_ENDPOINT',
  ),
  warning(
    'state.unlock',
    'the state lock could not be removed after the run',
    'remove the .lock file beside the state once no run is using it',
  ),
  runError(
    'state.write',
    'retry',
    'the state file could not be written after the outputs were committed',
    'fix the folder; the next run reads the old cursor and extracts the same window again',
  ),
  info('state_saved', 'the cursor was stored'),
  runError(
    'stdout.closed',
    'fix',
    'the reader of stdout closed it (run ... | head); exit 0 when stdout was the only output, 1 when files or objects were discarded',
    'nothing when intended; else let the reader read everything',
  ),
  runError(
    'storage.not_regular_file',
    'fix',
    'a file the toolkit reads back (_table.json, a state, a lock, a history or Iceberg file) is a FIFO, a device, a socket or a folder; it was not read',
    'remove what is at that path (the toolkit writes only regular files there) and run again',
  ),
  runError(
    'storage.outside_root',
    'fix',
    'a name in a manifest or record would leave its dataset folder; nothing was read, written or removed',
    "check the manifest or record the message names: it was edited or is not this dataset's",
  ),
  runError('storage.read_failed', 'retry', 'a file could not be read', 'check the path and its permissions'),
  runError('storage.remove_failed', 'retry', 'a file could not be removed', 'check the folder permissions'),
  runError(
    'storage.symlink',
    'fix',
    'a symbolic link is where the toolkit keeps a folder or file of its own; it is never followed',
    'replace the link with the folder or file itself, or point the configuration at the real location',
  ),
  runError(
    'storage.too_large',
    'fix',
    'a file the toolkit reads back whole is over its byte limit (docs/security.md); it was not read',
    'check who wrote it; remove it or restore the one the toolkit wrote',
  ),
  runError(
    'storage.write_failed',
    'fix',
    'a file could not be written (the message names the step, the system error and what became of the file)',
    'check the folder is writable and has space',
  ),
  runError('stream.empty', 'retry', 'a stream answered with no body where its total promised records', STREAM_ACTION),
  runError(
    'stream.error_line',
    'retry',
    'a stream sent an {"error": ...} line',
    'read the error the line carried; run again if it was transient',
  ),
  runError('stream.index_gap', 'retry', 'a stream skipped an index', STREAM_ACTION),
  runError(
    'stream.line_too_long',
    'fix',
    'a stream line was longer than any record can be',
    'check CATALOG_BASE_URL: the service sent something else',
  ),
  runError('stream.malformed_line', 'retry', 'a stream line is not JSON', STREAM_ACTION),
  runError(
    'stream.out_of_order',
    'fix',
    'a stream sorted by id or createdAt sent a record out of that order, so a repeat or a missing record cannot be ruled out',
    'sort by createdAt if the service orders ids differently from the toolkit (integers by value, strings by UTF-16 code unit); else run again, and if it repeats, report it with the index named',
  ),
  runError(
    'stream.repeated_id',
    'retry',
    'a stream sorted by id or createdAt sent a record twice, in the place of another one that would be missing',
    STREAM_ACTION,
  ),
  runError(
    'stream.resume_exhausted',
    'retry',
    'a cut stream could not be resumed within the retries',
    'run again later',
  ),
  runError(
    'stream.resume_not_exact',
    'fix',
    'a cut stream cannot be resumed without risking a gap (its sorting is not by createdAt or id)',
    'sort the stream by createdAt or id',
  ),
  runError('stream.short', 'retry', 'a stream ended with fewer lines than its total', STREAM_ACTION),
  runError('stream.total_changed', 'retry', "a stream's total changed between its requests", 'run again'),
  info('superseded', "earlier runs' outputs that this run replaced were removed"),
  warning(
    'table.cleanup_refused',
    "_table.json lists a name that is not one of the table's files; it was not removed",
    'check _table.json: it was edited, or another tool writes into the table folder',
  ),
  runError(
    'table.column_names_changed',
    'fix',
    "the table was written under the other columnNames than the sink's now",
    'set columnNames back to what the table was written with, or point path at a new table',
  ),
  runError(
    'table.deletes_check_failed',
    'retry',
    "checking a full run's delete candidates against the API failed; nothing was published",
    'run again',
  ),
  info('table.deletes_checked', 'delete candidates were checked against the API'),
  info('table.deletes_checking', "keys of the previous version are missing from a full run's extract; asking the API"),
  runError(
    'table.deletes_refused',
    'fix',
    'a full run would delete more of the table than deletes.maxRatio allows; nothing was published',
    'if the deletions are real, run with --allow-deletes (or raise deletes.maxRatio); if the extract was partial, fix that',
  ),
  warning(
    'table.deletes_unchecked',
    'deletes were not checked against the API; a record updated while the run read may show as deleted',
    'nothing usually: a later run inserts it again; give the table a source with a find endpoint to check them',
  ),
  info(
    'table.files',
    "an Iceberg table's commit of current/: files written (new rows and a position-delete file) and replaced (rewrites), files and bytes in the table; the summary's tables says the same",
  ),
  info(
    'table.foreign_files',
    "the table's folders hold files no run of the table wrote (no journal of the table names them: another engine's, a person's, or written before journals); they were left alone",
    'nothing, or move them out of the table folder to silence this',
  ),
  runError(
    'table.key',
    'fix',
    'a record has no usable key for the table',
    'set key: to a field every record has (a string or number)',
  ),
  runError(
    'table.key_changed',
    'fix',
    'the table is keyed by another field than the sink',
    'keep the key of _table.json, or write to a new path',
  ),
  runError(
    'table.layout_mismatch',
    'fix',
    "the table's folder holds the other layout's table (_table.json for hive, current/metadata for iceberg)",
    'set the format the folder was written with, or point path at a new folder',
  ),
  runError(
    'table.manifest',
    'fix',
    "the table's _table.json is not valid",
    'restore it from a backup, or move the table away',
  ),
  info('table.merge', "progress of a table's merge"),
  runError(
    'table.needs_full',
    'fix',
    'an incremental run found no table to merge into',
    'run once with --full-refresh to build the table',
  ),
  info(
    'table.repaired',
    'an Iceberg changes/ table a stopped run left one run ahead of current/ was rolled back; this run writes those changes again',
  ),
  warning(
    'table.shared_key',
    'two different records share the table key; the snapshot keeps one',
    'key by id (the default) unless that is intended',
  ),
  runError(
    'table.state',
    'fix',
    "the previous version's state file cannot be read",
    'restore it, or move the table away and start a new one',
  ),
  runError(
    'table.state_limit',
    'fix',
    "a frame of the previous version's state file announces a record over the limit (64 MiB): the file is damaged or not the table's",
    'restore the state file from a backup, or move the table away and start a new one',
  ),
  info('table.version', 'a table version was published: rows, inserted, updated, deleted, unchanged'),
  warning(
    'transform.none_found',
    'a find transform found none of the ids: the endpoint may not be served at CATALOG_BASE_URL',
    'check CATALOG_BASE_URL and the ids',
  ),
  info('transform.not_found', 'ids a find transform asked for that the API does not have'),
  warning(
    'transform.path_unseen',
    'a drop, pick or rename field path was in no record of the run, so the stage did nothing with it (a stage before it may have renamed the field)',
    'write the path as the records reach the stage: the warning names the nearest field seen (flatten-locales turns seoName into seoName_en...)',
  ),
  info('transform.stats', "a transform's counts: in, out, invalid, dropped (debug level in the CLI)"),
  usageError(
    'usage',
    'the command line is not valid (unknown command or option, missing argument)',
    'see catalog-streams help <command>',
  ),
  warning(
    'validate.unknown_field',
    'a record has a field the catalog v4 schema does not declare; passed through',
    'nothing usually (the live service sends more than the spec); declare it if you need it typed',
  ),
];

/** Families: codes carrying a value the toolkit passes on (the API's own error code, or its HTTP status). */
export const ERROR_CODE_FAMILIES: readonly CodeFamily[] = [
  {
    prefix: 'api.',
    code: 'api.<API error code or HTTP status>',
    kind: 'error',
    exitCode: 1,
    remedy: 'retry',
    meaning:
      "the API answered with an error status: the code is the body's error.code (api.bad_request) or the status (api.500); 4xx other than 429 are not retried",
    action: 'read the message (endpoint, request, what the API said); a 5xx may pass when run again, a 4xx will not',
  },
];

const byCode = new Map(ERROR_CODES.map((e) => [e.code, e]));

/** The entry of a code: its own, else its family's; undefined for a code the toolkit does not know. */
export function describeCode(code: string): CodeEntry | undefined {
  return byCode.get(code) ?? ERROR_CODE_FAMILIES.find((f) => code.startsWith(f.prefix));
}

/** The exit code an error of this code ends the CLI with, when the catalogue knows the code. */
export function exitCodeOf(code: string): 1 | 2 | undefined {
  return describeCode(code)?.exitCode;
}

/** The entry of an exit code. */
export function describeExitCode(exitCode: number): ExitCodeEntry | undefined {
  return EXIT_CODES.find((e) => e.exitCode === exitCode);
}

/** One entry as text, as `catalog-streams explain` prints it. */
export function formatCodeEntry(e: CodeEntry): string {
  const head =
    e.kind === 'error'
      ? `${e.code}: error, exit ${e.exitCode ?? 1}${e.remedy === 'retry' ? ', may pass when run again' : ', fix before running again'}`
      : `${e.code}: ${e.kind}`;
  return `${head}\n  what: ${e.meaning}\n  do:   ${e.action}\n`;
}

/** The whole catalogue as Markdown (docs/errors.md). */
export function formatErrorCodesMarkdown(): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  const table = (entries: readonly CodeEntry[], withExit: boolean) => [
    withExit ? '| code | exit | remedy | meaning | what to do |' : '| code | meaning | what to do |',
    withExit ? '| ---- | ---- | ------ | ------- | ---------- |' : '| ---- | ------- | ---------- |',
    ...entries.map((e) =>
      withExit
        ? `| \`${e.code}\` | ${e.exitCode} | ${e.remedy} | ${cell(e.meaning)} | ${cell(e.action)} |`
        : `| \`${e.code}\` | ${cell(e.meaning)} | ${cell(e.action)} |`,
    ),
  ];
  const errors = [...ERROR_CODES.filter((e) => e.kind === 'error'), ...ERROR_CODE_FAMILIES];
  errors.sort((a, b) => a.code.localeCompare(b.code));
  return [
    '# Error codes',
    '',
    '<!-- Generated from src/error-codes.ts by `npm run docs`; edit that file, not this one. -->',
    '',
    'Every error, warning and notable event of catalog-streams carries a stable code: in the JSON log',
    '(`"code"`), in the run summary (`--summary-file`: `pipelines[].error.code`), and on the error classes',
    'of the code API (`err.code`). `catalog-streams explain <code>` prints an entry; `catalog-streams help errors` prints them all.',
    '',
    '## Exit codes',
    '',
    '| exit | meaning | scheduler |',
    '| ---- | ------- | --------- |',
    ...EXIT_CODES.map((e) => `| ${e.exitCode} | ${cell(e.meaning)} | ${cell(e.scheduler)} |`),
    '',
    'An exit 1 is retried or not by its error code: `retry` below means running again unchanged may pass',
    '(network, rate limit, a lock another run holds, data that changed while it was read); `fix` means it',
    'will fail the same way until something changes.',
    '',
    '## Errors',
    '',
    ...table(errors, true),
    '',
    '## Warnings',
    '',
    'The run goes on; the JSON log has a `warn` line with the code, and the summary counts warnings.',
    '',
    ...table(
      ERROR_CODES.filter((e) => e.kind === 'warning'),
      false,
    ),
    '',
    '## Events',
    '',
    'Notable steps of a run (`info` and `debug` log lines).',
    '',
    ...table(
      ERROR_CODES.filter((e) => e.kind === 'info'),
      false,
    ),
    '',
  ].join('\n');
}
