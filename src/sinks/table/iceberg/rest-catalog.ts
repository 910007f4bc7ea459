// RestCatalog: the table sink's two Iceberg tables kept in an Iceberg REST catalog
// (open-api/rest-catalog-open-api.yaml of apache/iceberg). The sink writes data files, manifests and
// manifest lists itself and hands this catalog one `TableCommit` per table; the catalog server owns
// the metadata files and the pointer to the current one, so a commit here is a request, not a write.
//
// Paths, bodies and error shapes follow the spec:
// - `GET /v1/config?warehouse=` first: defaults, then our options, then overrides; `prefix` from
//   the result goes into every later path, `namespace-separator` (url-encoded) joins namespace
//   levels (default 0x1F, sent as %1F), `header.<name>` properties become request headers.
// - A table the commit creates (no base): `POST .../tables` with `stage-create: true` (nothing is
//   created yet), then `POST .../tables/{table}` with `assert-create` and every update that
//   initialises the table. The spec commits create transactions on the table route only, and
//   apache/iceberg's reference adapter (RESTCatalogAdapter.commitTransaction) loads every table of
//   a multi-table transaction, so creates are never put into `transactions/commit`: several new
//   tables are created one after another, each atomically, before the existing ones commit. Only
//   the first commit of a pair of tables is therefore not all or nothing.
// - Existing tables: one -> `POST .../tables/{table}`; several -> `POST /v1/{prefix}/transactions/commit`
//   (all or nothing). The transaction answers 204 without metadata, so the tables are loaded again.
//
// Retries, only where the spec makes them safe: reads; 401/419 once after a new token when we hold
// client credentials (the request was refused, not processed); 503 with Retry-After for any request
// (ServiceUnavailableResponse); any 5xx or connection failure of a mutation only when the server
// advertises `idempotency-key-lifetime` and the request carries an Idempotency-Key (the server then
// replays a finalized answer instead of committing twice). A 409 of a commit is never retried
// here: the requirements were computed from the base the sink loaded, so only the sink can build a
// commit against the newer metadata.
//
// OAuth2: `credential` is exchanged (client_credentials grant) at `oauth2ServerUri`, else at the
// config's `oauth2-server-uri` (the config is asked without a token first for that reason), else at
// the deprecated `/v1/oauth/tokens`; the token is renewed before `expires_in` runs out. The secret
// is sent only over https (or to a loopback address) and only to an endpoint the options name or
// on the catalog's own host: the config is read without a token, so whoever answers it (a spoofed
// or hijacked catalog, a proxy) must not be able to send the secret elsewhere
// (iceberg.rest_token_endpoint, docs/security.md "Secrets").
//
// Credentials: the client secret, the static token and every token obtained are redacted from
// every message, including the server's own text, in every form they travel in (a token endpoint
// that echoes the url-encoded form, a proxy that echoes headers cannot leak them through our errors).
//
// AWS catalogs (Glue's Iceberg REST endpoint, S3 Tables): with `sigv4` every request is signed
// with AWS Signature Version 4 (sigv4-signer.ts) instead of carrying a bearer token; the two are
// exclusive. A 401/403 then names the AWS credentials, the signing region and name and IAM.
//
// Every answer is read up to MAX_ANSWER_BYTES (iceberg.rest_too_large): a server that streams
// without end cannot exhaust the run's memory.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, type Dispatcher, request } from 'undici';
import { z } from 'zod';
import { type RetryOptions, RetryPolicy, errorCodeOf } from '../../../client/retry-policy.js';
import { MissingDependencyError, SinkError } from '../../../errors.js';
import { Redactor } from '../../../redactor.js';
import {
  type IcebergCatalog,
  IcebergCommitConflictError,
  type IcebergTableRef,
  type LoadedTable,
  type TableCommit,
} from './iceberg-catalog.js';
import type { IcebergSchema, TableMetadata, TableUpdate } from './iceberg-types.js';
import { type SigV4Options, SigV4Signer } from './sigv4-signer.js';

export interface RestCatalogOptions {
  /** The catalog's base URI, without `/v1` (`https://catalog.example.com/api/catalog`). */
  uri: string;
  /** Sent as `?warehouse=` to `/v1/config`; a client property, so the server's overrides win. */
  warehouse?: string;
  /** Namespace levels of both tables (`['lake', 'products']`); created when absent. */
  namespace: readonly string[];
  /** Table names in the catalog; default the table ref's name (`current`, `changes`). */
  tables?: { current?: string; changes?: string };
  /** OAuth2 client credentials `client_id:client_secret`, exchanged for a bearer token. */
  credential?: string;
  /** OAuth2 scope of the token request (default `catalog`, the spec's). */
  scope?: string;
  /**
   * Token endpoint, named by the user: it may be on another host than the catalog (https, or
   * loopback). Without it the config's `oauth2-server-uri` or `{uri}/v1/oauth/tokens`, which must
   * be on the catalog's host.
   */
  oauth2ServerUri?: string;
  /** A bearer token to send as is (instead of `credential`). */
  token?: string;
  /** Sign every request with AWS SigV4 (Glue, S3 Tables) instead of OAuth2 or a bearer token. */
  sigv4?: SigV4Options;
  /** Extra request headers (a proxy's, a tenant header). */
  headers?: Record<string, string>;
  /** Longest wait for a connection, the response headers, or between body chunks, ms (default 60 s). */
  timeoutMs?: number;
  /** Retries of the requests that may be retried (default 4 attempts within 60 s). */
  retry?: RetryOptions;
  /** Longest answer read, bytes (default MAX_ANSWER_BYTES). */
  maxAnswerBytes?: number;
}

/** A REST catalog request failed; `status` and `errorType` are the server's when it answered. */
export class IcebergRestError extends SinkError {
  readonly status: number | undefined;
  readonly errorType: string | undefined;

  constructor(code: string, message: string, details: { status?: number; errorType?: string; cause?: unknown } = {}) {
    super(message, { code, ...(details.cause === undefined ? {} : { cause: details.cause }) });
    this.status = details.status;
    this.errorType = details.errorType;
  }
}

// ---- Response schemas (the spec's, loose: servers add fields) ----

const StringMap = z.record(z.string(), z.string());

const CatalogConfigSchema = z.looseObject({
  // Required by the spec; a server that leaves one out still means "nothing to set".
  defaults: StringMap.nullish(),
  overrides: StringMap.nullish(),
  endpoints: z.array(z.string()).nullish(),
  'idempotency-key-lifetime': z.string().nullish(),
});

const TokenResponseSchema = z.looseObject({
  access_token: z.string().min(1),
  token_type: z.string(),
  expires_in: z.number().nullish(),
});

const SchemaSchema = z.looseObject({
  type: z.literal('struct'),
  'schema-id': z.number().int(),
  fields: z.array(z.looseObject({ id: z.number().int(), name: z.string() })),
});

const TableMetadataSchema = z.looseObject({
  'format-version': z.number().int(),
  'table-uuid': z.string(),
  location: z.string(),
  'last-updated-ms': z.number(),
  'last-column-id': z.number().int(),
  schemas: z.array(SchemaSchema),
  'current-schema-id': z.number().int(),
  'partition-specs': z.array(z.looseObject({ 'spec-id': z.number().int(), fields: z.array(z.unknown()) })),
  'default-spec-id': z.number().int(),
  'last-partition-id': z.number().int(),
  'sort-orders': z.array(z.looseObject({ 'order-id': z.number().int(), fields: z.array(z.unknown()) })),
  'default-sort-order-id': z.number().int(),
  'last-sequence-number': z.number().int().optional(),
  'current-snapshot-id': z.number().int().nullish(),
  snapshots: z
    .array(
      z.looseObject({
        'snapshot-id': z.number().int(),
        'timestamp-ms': z.number(),
        'manifest-list': z.string(),
        summary: z.looseObject({ operation: z.string() }),
      }),
    )
    .optional(),
  refs: z.record(z.string(), z.looseObject({ type: z.string(), 'snapshot-id': z.number().int() })).optional(),
});

const LoadTableResultSchema = z.looseObject({
  'metadata-location': z.string().nullish(),
  metadata: TableMetadataSchema,
  config: StringMap.nullish(),
});

const CommitTableResponseSchema = z.looseObject({
  'metadata-location': z.string(),
  metadata: TableMetadataSchema,
});

const IcebergErrorResponseSchema = z.looseObject({
  error: z.looseObject({ message: z.string().optional(), type: z.string().optional(), code: z.number().optional() }),
});

const OAuthErrorSchema = z.looseObject({ error: z.string(), error_description: z.string().optional() });

// ---- Requests ----

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

interface Call {
  method: 'GET' | 'POST' | 'HEAD';
  url: string;
  /** What the request does, for messages: `load table lake.current`. */
  what: string;
  json?: unknown;
  /** Safe to send again after any failure (a read). */
  idempotent: boolean;
  /**
   * A commit: sent with an Idempotency-Key when the server supports them, and a connection that
   * fails after the request may have reached the server leaves its outcome unknown.
   */
  commit?: boolean;
  /** Sent first without a token; a 401 or 419 then fetches one and sends it again. */
  anonymousFirst?: boolean;
}

interface Session {
  /** `/v1/{prefix}` or `/v1` when the server names no prefix. */
  root: string;
  separator: string;
  headers: Record<string, string>;
  /** How long the server keeps idempotency keys, ms; undefined: it does not support them. */
  idempotencyMs: number | undefined;
}

const DEFAULT_RETRY: RetryOptions = { maxAttempts: 4, maxWaitMs: 60_000, minTimeout: 500, maxTimeout: 10_000 };
/**
 * A token is renewed this long before the server says it expires (at most half its lifetime), so
 * no request carries a stale one.
 */
const TOKEN_MARGIN_MS = 60_000;
const MAX_SERVER_TEXT = 300;
/**
 * Longest answer read (64 MiB), like the JSON documents the toolkit reads back whole: a table's
 * metadata with years of snapshots stays far below it, a config or a token is a few hundred bytes.
 */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
/** Connection failures that happen before a byte of the request is sent: a commit that meets one did not happen. */
const NOT_SENT = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

export class RestCatalog implements IcebergCatalog {
  readonly kind = 'rest' as const;
  readonly #options: RestCatalogOptions;
  readonly #base: string;
  readonly #agent: Agent;
  readonly #retry: RetryPolicy;
  readonly #redactor = new Redactor();
  #tokenUrl: string;
  readonly #maxAnswerBytes: number;
  readonly #signer: SigV4Signer | undefined;
  #token: { value: string; expiresAt: number } | undefined;
  #session: Promise<Session> | undefined;
  #namespaceReady: Promise<void> | undefined;

  constructor(options: RestCatalogOptions) {
    if (options.namespace.length === 0 || options.namespace.some((level) => level === ''))
      throw new SinkError('the Iceberg REST catalog needs a namespace of one or more non-empty levels', {
        code: 'iceberg.rest_request',
      });
    if (options.credential !== undefined && !/^[^:]+:.+$/s.test(options.credential))
      throw new SinkError('the Iceberg REST credential must be client_id:client_secret', {
        code: 'iceberg.rest_auth',
      });
    if (options.sigv4 && (options.credential !== undefined || options.token !== undefined))
      throw new SinkError(
        'the Iceberg REST catalog signs with AWS SigV4 (auth: sigv4), which takes the place of an OAuth2 credential or a bearer token: unset ICEBERG_REST_CREDENTIAL and ICEBERG_REST_TOKEN, or leave auth out',
        { code: 'iceberg.rest_auth' },
      );
    this.#options = options;
    this.#signer = options.sigv4 && new SigV4Signer(options.sigv4);
    this.#base = options.uri.replace(/\/+$/, '');
    this.#tokenUrl = options.oauth2ServerUri ?? `${this.#base}/v1/oauth/tokens`;
    this.#maxAnswerBytes = options.maxAnswerBytes ?? MAX_ANSWER_BYTES;
    const timeout = options.timeoutMs ?? 60_000;
    this.#agent = new Agent({ connect: { timeout }, headersTimeout: timeout, bodyTimeout: timeout });
    this.#retry = new RetryPolicy({ ...DEFAULT_RETRY, ...options.retry });
    this.#redactor.add(options.credential);
    this.#redactor.add(options.credential?.slice(options.credential.indexOf(':') + 1));
    this.#redactor.add(options.token);
    for (const [name, value] of Object.entries(options.headers ?? {}))
      if (/auth|token|key|secret|cookie/i.test(name)) {
        this.#redactor.add(value);
        this.#redactor.add(/^\S+\s+(.+)$/.exec(value)?.[1]);
      }
  }

  async load(table: IcebergTableRef): Promise<LoadedTable | undefined> {
    const session = await this.#ready();
    const answer = await this.#call({
      method: 'GET',
      url: this.#tableUrl(session, table),
      what: `load table ${this.#describe(table)}`,
      idempotent: true,
    });
    // Only the spec's error body means "no such table (or namespace)": a bare 404 is a wrong uri or
    // prefix, and taking it for a missing table would make the sink try to create the table.
    if (answer.status === 404 && IcebergErrorResponseSchema.safeParse(safeJson(answer.text)).success) return undefined;
    if (answer.status !== 200) throw this.#failure(answer, `load table ${this.#describe(table)}`);
    const result = this.#parse(LoadTableResultSchema, answer, `load table ${this.#describe(table)}`);
    if (!result['metadata-location'])
      throw this.#invalid(`load table ${this.#describe(table)}`, 'the answer has no metadata-location');
    return loaded(result.metadata, result['metadata-location'], `load table ${this.#describe(table)}`);
  }

  async commit(changes: readonly TableCommit[]): Promise<LoadedTable[]> {
    if (changes.length === 0) return [];
    const session = await this.#ready();
    await this.#ensureNamespace(session);
    const results = new Array<LoadedTable>(changes.length);
    const existing: number[] = [];
    for (const [i, change] of changes.entries()) {
      if (change.base === undefined) results[i] = await this.#create(session, change);
      else existing.push(i);
    }
    if (existing.length === 1) {
      const i = existing[0]!;
      results[i] = await this.#commitTable(session, changes[i]!);
    } else if (existing.length > 1) {
      const commits = existing.map((i) => changes[i]!);
      await this.#commitTransaction(session, commits);
      for (const i of existing) {
        const table = changes[i]!.table;
        const after = await this.load(table).catch((err: unknown) => {
          throw new IcebergRestError(
            'iceberg.rest_unavailable',
            `the transaction was committed, but loading ${this.#describe(table)} back failed: ${(err as Error).message}; the next run loads it again`,
            { cause: err },
          );
        });
        if (!after)
          throw new IcebergCommitConflictError(
            `the transaction was committed, but ${this.#describe(table)} was gone right after (dropped by another client?)`,
          );
        results[i] = after;
      }
    }
    return results;
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }

  // ---- Session: token and config ----

  #ready(): Promise<Session> {
    this.#session ??= this.#start().catch((err: unknown) => {
      // A failed start (server down, bad credential) must not stick: the next call tries again.
      this.#session = undefined;
      throw err;
    });
    return this.#session;
  }

  async #start(): Promise<Session> {
    const query =
      this.#options.warehouse === undefined ? '' : `?warehouse=${encodeURIComponent(this.#options.warehouse)}`;
    const answer = await this.#call({
      method: 'GET',
      url: `${this.#base}/v1/config${query}`,
      what: 'read the catalog config',
      idempotent: true,
      // The config may name the token endpoint (`oauth2-server-uri`, which the spec asks servers to
      // set now that /v1/oauth/tokens is deprecated): ask it first without a token, unless the
      // options name the endpoint already. A server that wants a token for it answers 401, and the
      // token then comes from the default endpoint, as the Java client's does.
      anonymousFirst: this.#options.credential !== undefined && this.#options.oauth2ServerUri === undefined,
    });
    if (answer.status !== 200) throw this.#failure(answer, 'read the catalog config');
    const config = this.#parse(CatalogConfigSchema, answer, 'read the catalog config');
    const client: Record<string, string> = {};
    if (this.#options.warehouse !== undefined) client.warehouse = this.#options.warehouse;
    const merged: Record<string, string> = { ...config.defaults, ...client, ...config.overrides };
    // An endpoint the user named wins over the config's: the config is read without a token.
    if (merged['oauth2-server-uri'] && this.#options.oauth2ServerUri === undefined)
      this.#tokenUrl = new URL(merged['oauth2-server-uri'], `${this.#base}/`).href;
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(merged)) {
      const name = /^header\.(.+)$/.exec(key)?.[1];
      if (name) headers[name] = value;
    }
    const prefix = merged.prefix;
    let separator = '\x1f';
    if (merged['namespace-separator']) separator = decodeURIComponent(merged['namespace-separator']);
    return {
      // As the Java and Python clients do: the server gives the prefix as it wants it in the path,
      // already encoded (S3 Tables: the url-encoded bucket ARN) or with slashes (Glue: catalogs/<id>).
      root: prefix ? `${this.#base}/v1/${prefix.replace(/^\/+|\/+$/g, '')}` : `${this.#base}/v1`,
      separator,
      headers,
      idempotencyMs: parseDuration(config['idempotency-key-lifetime'] ?? undefined),
    };
  }

  async #authorization(renew: boolean): Promise<string | undefined> {
    if (this.#options.credential === undefined) return this.#options.token && `Bearer ${this.#options.token}`;
    if (renew || !this.#token || Date.now() >= this.#token.expiresAt) this.#token = await this.#fetchToken();
    return `Bearer ${this.#token.value}`;
  }

  async #fetchToken(): Promise<{ value: string; expiresAt: number }> {
    const credential = this.#options.credential!;
    const colon = credential.indexOf(':');
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: credential.slice(0, colon),
      client_secret: credential.slice(colon + 1),
      scope: this.#options.scope ?? 'catalog',
    });
    this.#checkTokenEndpoint();
    let answer: Answer;
    try {
      answer = await this.#send('POST', this.#tokenUrl, form.toString(), {
        'content-type': 'application/x-www-form-urlencoded',
      });
    } catch (err) {
      if (err instanceof IcebergRestError) throw err;
      throw this.#networkFailure(err, 'obtain an OAuth2 token', 'iceberg.rest_unavailable');
    }
    if (answer.status !== 200) {
      const body = safeJson(answer.text);
      const oauth = OAuthErrorSchema.safeParse(body);
      const said = oauth.success
        ? `${oauth.data.error}${oauth.data.error_description ? `: ${oauth.data.error_description}` : ''}`
        : serverText(answer.text);
      throw new IcebergRestError(
        answer.status >= 500 ? 'iceberg.rest_unavailable' : 'iceberg.rest_auth',
        this.#redactor.redact(
          `cannot obtain an OAuth2 token from ${this.#tokenUrl}: HTTP ${answer.status}${said ? ` (${said})` : ''}; check the credential (client_id:client_secret) and its scope`,
        ),
        { status: answer.status },
      );
    }
    const token = this.#parse(TokenResponseSchema, answer, 'obtain an OAuth2 token');
    this.#redactor.add(token.access_token);
    const lifetime = token.expires_in ? token.expires_in * 1000 : Infinity;
    return { value: token.access_token, expiresAt: Date.now() + lifetime - Math.min(TOKEN_MARGIN_MS, lifetime / 2) };
  }

  /** Refuses to send the client secret where it may not go (see the top of this file). */
  #checkTokenEndpoint(): void {
    const url = new URL(this.#tokenUrl);
    const named = this.#options.oauth2ServerUri !== undefined;
    const problem =
      url.protocol !== 'https:' && !isLoopback(url.hostname)
        ? `it is plain ${url.protocol.replace(/:$/, '')} to ${url.hostname}, which is not a loopback address, so the secret would travel unencrypted`
        : !named && url.hostname !== new URL(this.#base).hostname
          ? `the catalog's config names it, on another host than the catalog (${new URL(this.#base).hostname}), and a config is read without a token`
          : undefined;
    if (problem)
      throw new IcebergRestError(
        'iceberg.rest_token_endpoint',
        this.#redactor.redact(
          `will not send the OAuth2 client secret to the token endpoint ${url.origin}${url.pathname}: ${problem}; use https, and if that endpoint is on another host and you trust it, name it in the catalog option oauth2ServerUri`,
        ),
      );
  }

  // ---- Namespace and tables ----

  #ensureNamespace(session: Session): Promise<void> {
    this.#namespaceReady ??= this.#createNamespace(session).catch((err: unknown) => {
      this.#namespaceReady = undefined;
      throw err;
    });
    return this.#namespaceReady;
  }

  /** Each level from the top, since servers may require a parent to exist before its child. */
  async #createNamespace(session: Session): Promise<void> {
    const levels = this.#options.namespace;
    for (let depth = 1; depth <= levels.length; depth++) {
      const namespace = levels.slice(0, depth);
      const what = `create namespace ${namespace.join('.')}`;
      const found = await this.#call({
        method: 'GET',
        url: `${session.root}/namespaces/${encodeNamespace(namespace, session.separator)}`,
        what: `load namespace ${namespace.join('.')}`,
        idempotent: true,
      });
      if (found.status === 200) continue;
      if (found.status !== 404) throw this.#failure(found, `load namespace ${namespace.join('.')}`);
      const created = await this.#call({
        method: 'POST',
        url: `${session.root}/namespaces`,
        what,
        json: { namespace, properties: {} },
        // Sending it again is harmless: a second create answers 409, which means it exists.
        idempotent: true,
      });
      // 409: another writer created it between our look and our create.
      if (created.status !== 200 && created.status !== 409) throw this.#failure(created, what);
    }
  }

  async #create(session: Session, change: TableCommit): Promise<LoadedTable> {
    const { table } = change;
    const schema = lastSchema(change.updates);
    if (!schema)
      throw new IcebergRestError(
        'iceberg.rest_request',
        `cannot create ${this.#describe(table)}: the commit has no add-schema update`,
      );
    const what = `stage the creation of table ${this.#describe(table)}`;
    const staged = await this.#call({
      method: 'POST',
      url: `${session.root}/namespaces/${encodeNamespace(this.#options.namespace, session.separator)}/tables`,
      what,
      json: { name: this.#tableName(table), location: table.location, schema, 'stage-create': true },
      // A staged create changes nothing on the server.
      idempotent: true,
    });
    if (staged.status === 409)
      throw new IcebergCommitConflictError(
        `cannot create ${this.#describe(table)}: the catalog already has it (another writer created it since this run loaded the tables${this.#said(staged)}); run again to commit on top of it`,
      );
    if (staged.status !== 200) throw this.#failure(staged, what);
    const initial = this.#parse(LoadTableResultSchema, staged, what).metadata as unknown as TableMetadata;
    const updates = [...initialUpdates(initial, change), ...change.updates];
    return this.#commitTable(session, { ...change, updates });
  }

  async #commitTable(session: Session, change: TableCommit): Promise<LoadedTable> {
    const what = `commit to table ${this.#describe(change.table)}`;
    const answer = await this.#call({
      method: 'POST',
      url: this.#tableUrl(session, change.table),
      what,
      json: { requirements: change.requirements, updates: change.updates },
      idempotent: false,
      commit: true,
    });
    if (answer.status !== 200) throw this.#commitFailure(answer, what);
    const result = this.#parse(CommitTableResponseSchema, answer, what);
    return loaded(result.metadata, result['metadata-location'], what);
  }

  async #commitTransaction(session: Session, changes: readonly TableCommit[]): Promise<void> {
    const what = `commit a transaction to tables ${changes.map((c) => this.#describe(c.table)).join(', ')}`;
    const answer = await this.#call({
      method: 'POST',
      url: `${session.root}/transactions/commit`,
      what,
      json: {
        'table-changes': changes.map((c) => ({
          identifier: { namespace: this.#options.namespace, name: this.#tableName(c.table) },
          requirements: c.requirements,
          updates: c.updates,
        })),
      },
      idempotent: false,
      commit: true,
    });
    if (answer.status !== 204 && answer.status !== 200) throw this.#commitFailure(answer, what);
  }

  #commitFailure(answer: Answer, what: string): SinkError {
    const info = errorInfo(answer);
    const said = this.#said(answer);
    if (answer.status === 409)
      return new IcebergCommitConflictError(
        `${what}: the catalog refused it (HTTP 409${said}): another writer changed the table since this run loaded it; nothing of this commit is visible; run again to commit on top of the newer version`,
      );
    if (answer.status === 404)
      return new IcebergCommitConflictError(
        `${what}: the catalog does not know the table (HTTP 404${said}): it was dropped since this run loaded it; nothing of this commit is visible; run again to create it`,
      );
    if (answer.status >= 500)
      return new IcebergRestError(
        'iceberg.commit_unknown',
        `${what}: HTTP ${answer.status}${said}; ${UNKNOWN_ACTION}`,
        { status: answer.status, ...info },
      );
    return this.#failure(answer, what);
  }

  // ---- HTTP ----

  /** One request with the retries the spec allows for it (see the top of this file). */
  async #call(call: Call): Promise<Answer> {
    const session = call.url.startsWith(`${this.#base}/v1/config`) ? undefined : await this.#session;
    const key = call.commit && session?.idempotencyMs !== undefined ? uuidv7() : undefined;
    const retryAnything = call.idempotent || key !== undefined;
    const started = Date.now();
    let waited = 0;
    let renewed = false;
    for (let attempt = 1; ; attempt++) {
      const headers: Record<string, string> = {
        accept: 'application/json',
        ...session?.headers,
        ...this.#options.headers,
      };
      const authorization = call.anonymousFirst && !renewed ? undefined : await this.#authorization(false);
      if (authorization) headers.authorization = authorization;
      if (key) headers['idempotency-key'] = key;
      let body: string | undefined;
      if (call.json !== undefined) {
        body = JSON.stringify(call.json);
        headers['content-type'] = 'application/json';
      }
      let answer: Answer | undefined;
      let failure: unknown;
      try {
        answer = await this.#send(call.method, call.url, body, headers);
      } catch (err) {
        // An answer over its limit is the server's doing, a missing signer package or credential
        // ours: asking again gets the same.
        if (err instanceof IcebergRestError || err instanceof MissingDependencyError) throw err;
        failure = err;
      }
      if (answer && (answer.status === 401 || answer.status === 419) && this.#options.credential && !renewed) {
        renewed = true;
        await this.#authorization(true);
        continue;
      }
      const retryAfter = answer?.status === 503 ? this.#retry.retryAfterMs(answer.headers['retry-after']) : undefined;
      const retryable =
        (answer === undefined && retryAnything && this.#retry.isRetryableError(failure)) ||
        (answer !== undefined && retryAfter !== undefined) ||
        (answer !== undefined && retryAnything && this.#retry.isRetryableStatus(answer.status));
      const delay = retryAfter ?? this.#retry.backoff(attempt);
      const withinKeyLifetime =
        key === undefined || Date.now() + delay - started < (session?.idempotencyMs ?? Infinity);
      if (retryable && withinKeyLifetime && this.#retry.allows(attempt, waited, delay)) {
        waited += delay;
        await sleep(delay);
        continue;
      }
      if (answer) return answer;
      if (call.commit && !NOT_SENT.has(errorCodeOf(failure) ?? ''))
        throw new IcebergRestError(
          'iceberg.commit_unknown',
          this.#redactor.redact(`${call.what}: the connection failed (${describeError(failure)}); ${UNKNOWN_ACTION}`),
          { cause: failure },
        );
      throw this.#networkFailure(failure, call.what, 'iceberg.rest_unavailable');
    }
  }

  async #send(method: string, url: string, body: string | undefined, headers: Record<string, string>): Promise<Answer> {
    const sent = this.#signer ? await this.#sign(method, url, body, headers) : headers;
    const response = await request(url, {
      method: method as Dispatcher.HttpMethod,
      headers: sent,
      ...(body === undefined ? {} : { body }),
      dispatcher: this.#agent,
    });
    const text = await this.#readBounded(response, method, url);
    return { status: response.statusCode, headers: response.headers, text };
  }

  /** The headers signed for this attempt (x-amz-date changes between attempts). */
  async #sign(method: string, url: string, body: string | undefined, headers: Record<string, string>) {
    try {
      return await this.#signer!.sign({ method, url, headers, body }, (secret) => this.#redactor.add(secret));
    } catch (err) {
      if (!(err instanceof SinkError)) throw err;
      // Not a network failure: asking again finds the same credentials.
      throw new IcebergRestError(err.code, this.#redactor.redact(`cannot sign ${method} ${url}: ${err.message}`), {
        cause: err,
      });
    }
  }

  /** The answer's text, refused before reading when it says it is too long, and while reading past the limit. */
  async #readBounded(response: Dispatcher.ResponseData, method: string, url: string): Promise<string> {
    const limit = this.#maxAnswerBytes;
    const declared = Number(response.headers['content-length']);
    const tooLarge = (size: string) => {
      response.body.destroy();
      const shown = new URL(url);
      return new IcebergRestError(
        'iceberg.rest_too_large',
        this.#redactor.redact(
          `the answer to ${method} ${shown.origin}${shown.pathname} is ${size}, over the limit of ${limit} bytes for an Iceberg REST answer; the rest was not read: check that uri names an Iceberg REST catalog`,
        ),
        { status: response.statusCode },
      );
    };
    if (Number.isFinite(declared) && declared > limit) throw tooLarge(`${declared} bytes (Content-Length)`);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) throw tooLarge(`more than ${limit} bytes`);
      chunks.push(chunk);
    }
    return Buffer.concat(chunks, size).toString('utf8');
  }

  // ---- Errors ----

  #networkFailure(err: unknown, what: string, code: string): IcebergRestError {
    return new IcebergRestError(
      code,
      this.#redactor.redact(
        `cannot ${what}: the catalog at ${this.#base} did not answer (${describeError(err)}); check the uri and the network, then run again`,
      ),
      { cause: err },
    );
  }

  #failure(answer: Answer, what: string): IcebergRestError {
    const info = errorInfo(answer);
    const said = this.#said(answer);
    const { status } = answer;
    if (status === 401 || status === 403 || status === 419)
      return new IcebergRestError(
        'iceberg.rest_auth',
        `cannot ${what}: HTTP ${status}${said}; ${this.#signer ? `the request was signed with ${this.#signer.description}: check the AWS credentials the SDK's chain found (AWS_PROFILE, AWS_ACCESS_KEY_ID, a role), that the region and signing name are the endpoint's, and the IAM permissions (docs/iceberg.md, "Athena on Glue / S3 Tables")` : 'check the catalog credential or token and its permissions'}`,
        { status, ...info },
      );
    if (status >= 500 || status === 429)
      return new IcebergRestError(
        'iceberg.rest_unavailable',
        `cannot ${what}: HTTP ${status}${said}; the catalog is failing or overloaded: run again later`,
        { status, ...info },
      );
    return new IcebergRestError(
      'iceberg.rest_request',
      `cannot ${what}: HTTP ${status}${said}; check the catalog options (uri, warehouse, namespace, table names)`,
      { status, ...info },
    );
  }

  /** ` (Type: message)` from the server's error body, redacted, or its text when it is not the spec's shape. */
  #said(answer: Answer): string {
    const parsed = IcebergErrorResponseSchema.safeParse(safeJson(answer.text));
    const text = parsed.success
      ? [parsed.data.error.type, parsed.data.error.message].filter(Boolean).join(': ')
      : serverText(answer.text);
    return text ? ` (${this.#redactor.redact(truncate(text))})` : '';
  }

  #parse<T extends z.ZodType>(schema: T, answer: Answer, what: string): z.infer<T> {
    const result = schema.safeParse(safeJson(answer.text));
    if (result.success) return result.data;
    const issue = result.error.issues[0];
    throw this.#invalid(what, `${issue ? `${issue.path.join('.') || '(body)'}: ${issue.message}` : 'unreadable'}`);
  }

  #invalid(what: string, detail: string): IcebergRestError {
    return new IcebergRestError(
      'iceberg.rest_response',
      this.#redactor.redact(
        `${what}: the catalog's answer does not follow the Iceberg REST spec (${detail}); check that uri names an Iceberg REST catalog`,
      ),
    );
  }

  // ---- Names ----

  #tableName(table: IcebergTableRef): string {
    return this.#options.tables?.[table.name] ?? table.name;
  }

  #tableUrl(session: Session, table: IcebergTableRef): string {
    return `${session.root}/namespaces/${encodeNamespace(this.#options.namespace, session.separator)}/tables/${encodeURIComponent(this.#tableName(table))}`;
  }

  #describe(table: IcebergTableRef): string {
    return [...this.#options.namespace, this.#tableName(table)].join('.');
  }
}

const UNKNOWN_ACTION =
  'the commit may or may not have happened; load the table (or run again, which loads it) and check whether its current snapshot carries this run id before committing again';

/** localhost, 127.0.0.0/8 or ::1: a token sent there does not leave the machine. */
function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/** The namespace as one path segment: levels joined by the separator, each part url-encoded. */
export function encodeNamespace(levels: readonly string[], separator = '\x1f'): string {
  return levels.map(encodeURIComponent).join(encodeURIComponent(separator));
}

function loaded(metadata: z.infer<typeof TableMetadataSchema>, metadataLocation: string, what: string): LoadedTable {
  if (metadata['format-version'] !== 2)
    throw new IcebergRestError(
      'iceberg.rest_response',
      `${what}: the table is format-version ${metadata['format-version']}; the sink writes format-version 2 tables only`,
    );
  const version = metadataVersion(metadataLocation);
  return {
    metadata: metadata as unknown as TableMetadata,
    metadataLocation,
    ...(version === undefined ? {} : { version }),
  };
}

/** N of `.../vN.metadata.json` (files-only naming) or `.../NNNNN-<uuid>.metadata.json` (Java catalogs' naming). */
export function metadataVersion(location: string): number | undefined {
  const m = /\/(?:v(\d+)|(\d+)-[0-9a-fA-F-]+)(?:\.gz)?\.metadata\.json$/.exec(location);
  const digits = m?.[1] ?? m?.[2];
  return digits === undefined ? undefined : Number(digits);
}

function lastSchema(updates: readonly TableUpdate[]): IcebergSchema | undefined {
  let schema: IcebergSchema | undefined;
  for (const u of updates) if (u.action === 'add-schema') schema = u.schema;
  return schema;
}

/**
 * The updates that initialise a new table which the commit does not carry itself, from the staged
 * metadata: a create commit must hold the whole table (the server builds it from empty metadata).
 */
function initialUpdates(staged: TableMetadata, change: TableCommit): TableUpdate[] {
  const has = (action: TableUpdate['action']) => change.updates.some((u) => u.action === action);
  const out: TableUpdate[] = [];
  if (!has('assign-uuid')) out.push({ action: 'assign-uuid', uuid: staged['table-uuid'] });
  if (!has('upgrade-format-version')) out.push({ action: 'upgrade-format-version', 'format-version': 2 });
  if (!has('add-spec')) {
    const spec = staged['partition-specs'].find((s) => s['spec-id'] === staged['default-spec-id']) ?? {
      'spec-id': 0,
      fields: [],
    };
    out.push({ action: 'add-spec', spec }, { action: 'set-default-spec', 'spec-id': -1 });
  }
  if (!has('add-sort-order')) {
    const order = staged['sort-orders'].find((o) => o['order-id'] === staged['default-sort-order-id']) ?? {
      'order-id': 0,
      fields: [],
    };
    out.push(
      { action: 'add-sort-order', 'sort-order': order },
      { action: 'set-default-sort-order', 'sort-order-id': -1 },
    );
  }
  if (!has('set-location')) out.push({ action: 'set-location', location: change.table.location });
  return out;
}

function errorInfo(answer: Answer): { errorType?: string } {
  const parsed = IcebergErrorResponseSchema.safeParse(safeJson(answer.text));
  return parsed.success && parsed.data.error.type ? { errorType: parsed.data.error.type } : {};
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A non-JSON body (a proxy's page) as one short line. */
function serverText(text: string): string {
  return truncate(
    text
      .replace(/<[^>]*>/g, ' ')
      .replace(/\s+/g, ' ')
      .trim(),
  );
}

function truncate(text: string): string {
  return text.length > MAX_SERVER_TEXT ? `${text.slice(0, MAX_SERVER_TEXT)}...` : text;
}

function describeError(err: unknown): string {
  const code = errorCodeOf(err);
  const message = err instanceof Error ? err.message : String(err);
  return code && !message.includes(code) ? `${message}, ${code}` : message;
}

/** ISO-8601 durations as the spec's `idempotency-key-lifetime` writes them (`PT30M`, `P1DT2H`); undefined otherwise. */
export function parseDuration(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const m = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(text);
  if (!m || text === 'P' || text.endsWith('T')) return undefined;
  const [d, h, min, s] = [m[1], m[2], m[3], m[4]].map((v) => Number(v ?? 0)) as [number, number, number, number];
  return (((d * 24 + h) * 60 + min) * 60 + s) * 1000;
}

/** A UUIDv7 (RFC 9562), the form the spec asks of an Idempotency-Key: 48 bits of ms time, then random. */
export function uuidv7(now = Date.now()): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
