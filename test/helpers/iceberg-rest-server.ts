// An Iceberg REST catalog for tests, following apache/iceberg's open-api/rest-catalog-open-api.yaml
// for the routes the table sink uses: GET /v1/config, POST /v1/oauth/tokens (client credentials),
// GET and POST namespaces, POST tables (created or staged), GET and POST tables/{table}
// (load, commit), POST transactions/commit. Served on 127.0.0.1, a free port, in this process.
//
// It keeps the catalog in memory and writes each committed table's `vN.metadata.json` under the
// table location's `metadata/` folder when the location is a file:// URI, as a real catalog
// would, so a reader can open the table from its files.
//
// Requirements and updates are applied by this file's own code, written from the REST spec and
// the table spec and deliberately not src's `applyUpdates`: a test that committed through src and
// checked the result with src's own logic would prove nothing about either. Where the spec leaves
// a choice, it does what the Java reference does (CatalogHandlers): an added schema, spec or sort
// order equal to an existing one reuses its id, otherwise gets the highest id + 1; a create commit
// (`assert-create`) builds the table from empty metadata and takes no other requirement; a
// transaction loads every table it names (404 for one that does not exist), checks all of them,
// and changes nothing unless every change applies.
//
// Faults: `failNextCommit` makes the next table commit or transaction answer a status (409 as
// CommitFailedException, a 5xx as CommitStateUnknownException, 503 with Retry-After), after
// applying the commit when `applied` is set (the answer was lost on the way back);
// `failNextRequest` does the same for the next request whose path matches.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface IcebergRestServerOptions {
  /** `prefix` the config names (default `warehouse-1`); '' for none. */
  prefix?: string;
  /** When set, `/v1/config` answers 404 NoSuchWarehouseException to any other `warehouse`. */
  warehouse?: string;
  /** OAuth2 clients (id -> secret): when set, every route but the token route needs a token issued to one. */
  clients?: Record<string, string>;
  /** Static bearer tokens also accepted (and required, when set, if `clients` is not). */
  tokens?: string[];
  /** Lifetime of issued tokens, s (default 3600). */
  tokenLifetimeSeconds?: number;
  /** Extra config (`defaults`, `overrides`) returned by `/v1/config`. */
  defaults?: Record<string, string>;
  overrides?: Record<string, string>;
  /** Advertised as `idempotency-key-lifetime`; the server then replays finalized answers per Idempotency-Key. */
  idempotencyKeyLifetime?: string;
  /** A hostile server: every error message repeats the request's Authorization header. */
  echoAuthorization?: boolean;
  /** Where the token route is (default `/v1/oauth/tokens`, the spec's deprecated one); the old one then answers 404. */
  tokenPath?: string;
  /** `/v1/config` answers without a token (so a client can learn `oauth2-server-uri` from it). */
  anonymousConfig?: boolean;
  /** Whether a child namespace needs its parent (default true, as several catalogs do). */
  requireParentNamespace?: boolean;
}

export interface RestFault {
  status: number;
  /** Apply the commit first, then answer `status` (the commit happened; the client cannot know). */
  applied?: boolean;
  /** Sent as Retry-After (503). */
  retryAfterSeconds?: number;
  /** Close the connection without an answer instead (after applying, with `applied`). */
  drop?: boolean;
}

export interface LoggedRequest {
  method: string;
  /** The path as sent (still url-encoded), without the query. */
  path: string;
  query: string;
  body: unknown;
  authorization: string | undefined;
  idempotencyKey: string | undefined;
  headers: IncomingHttpHeaders;
  status: number;
}

export interface StoredTable {
  namespace: string[];
  name: string;
  metadata: Meta;
  metadataLocation: string;
  version: number;
}

export interface IcebergRestServer {
  /** `http://127.0.0.1:<port>`: the catalog's uri. */
  readonly url: string;
  readonly requests: readonly LoggedRequest[];
  /** Tokens the token route issued, in order. */
  readonly issuedTokens: readonly string[];
  table(namespace: readonly string[], name: string): StoredTable | undefined;
  namespaces(): string[][];
  failNextCommit(fault: RestFault): void;
  failNextRequest(path: RegExp, fault: RestFault): void;
  /** Every issued token stops being accepted (the next request with one answers 401). */
  expireTokens(): void;
  close(): Promise<void>;
}

// ---- The metadata model, as the table spec writes it ----

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Obj = Record<string, Json>;

interface Schema extends Obj {
  type: 'struct';
  'schema-id': number;
  fields: Obj[];
}
interface Spec extends Obj {
  'spec-id': number;
  fields: Obj[];
}
interface Order extends Obj {
  'order-id': number;
  fields: Obj[];
}
interface Snap extends Obj {
  'snapshot-id': number;
  'sequence-number': number;
  'timestamp-ms': number;
}
interface Ref extends Obj {
  type: string;
  'snapshot-id': number;
}

export interface Meta {
  'format-version': number;
  'table-uuid': string;
  location: string;
  'last-sequence-number': number;
  'last-updated-ms': number;
  'last-column-id': number;
  schemas: Schema[];
  'current-schema-id': number;
  'partition-specs': Spec[];
  'default-spec-id': number;
  'last-partition-id': number;
  'sort-orders': Order[];
  'default-sort-order-id': number;
  properties: Record<string, string>;
  'current-snapshot-id': number | null;
  snapshots: Snap[];
  'snapshot-log': { 'snapshot-id': number; 'timestamp-ms': number }[];
  'metadata-log': { 'metadata-file': string; 'timestamp-ms': number }[];
  refs: Record<string, Ref>;
}

/** An answer other than 2xx, with the spec's IcebergErrorResponse body. */
class Reply extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const commitFailed = (message: string) => new Reply(409, 'CommitFailedException', `Requirement failed: ${message}`);
const badRequest = (message: string) => new Reply(400, 'BadRequestException', message);

/** The highest field id of a type: struct fields, list elements and map keys/values included. */
function maxFieldId(type: Json): number {
  if (!type || typeof type !== 'object' || Array.isArray(type)) return 0;
  let max = 0;
  for (const key of ['id', 'element-id', 'key-id', 'value-id']) {
    const v = type[key];
    if (typeof v === 'number') max = Math.max(max, v);
  }
  if (Array.isArray(type.fields)) for (const f of type.fields) max = Math.max(max, maxFieldId(f));
  for (const key of ['type', 'element', 'key', 'value']) if (key in type) max = Math.max(max, maxFieldId(type[key]!));
  return max;
}

const sameJson = (a: Json, b: Json) => JSON.stringify(a) === JSON.stringify(b);

function obj(value: unknown, what: string): Obj {
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw badRequest(`${what} must be an object`);
  return value as Obj;
}
function int(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw badRequest(`${what} must be an integer`);
  return value;
}
function str(value: unknown, what: string): string {
  if (typeof value !== 'string') throw badRequest(`${what} must be a string`);
  return value;
}
function arr(value: unknown, what: string): Json[] {
  if (!Array.isArray(value)) throw badRequest(`${what} must be an array`);
  return value as Json[];
}

function emptyMeta(): Meta {
  return {
    'format-version': 2,
    'table-uuid': '',
    location: '',
    'last-sequence-number': 0,
    'last-updated-ms': Date.now(),
    'last-column-id': 0,
    schemas: [],
    'current-schema-id': -1,
    'partition-specs': [],
    'default-spec-id': -1,
    // The table spec: partition field ids start at 1000.
    'last-partition-id': 999,
    'sort-orders': [],
    'default-sort-order-id': -1,
    properties: {},
    'current-snapshot-id': null,
    snapshots: [],
    'snapshot-log': [],
    'metadata-log': [],
    refs: {},
  };
}

export function checkRequirement(base: Meta | undefined, requirement: Obj): void {
  const type = str(requirement.type, 'requirement type');
  if (type === 'assert-create') {
    if (base) throw commitFailed('table already exists');
    return;
  }
  if (!base) throw commitFailed(`${type}: the table does not exist`);
  switch (type) {
    case 'assert-table-uuid':
      if (base['table-uuid'] !== requirement.uuid) throw commitFailed(`table uuid changed: ${base['table-uuid']}`);
      return;
    case 'assert-ref-snapshot-id': {
      const ref = base.refs[str(requirement.ref, 'ref')];
      const expected = requirement['snapshot-id'];
      if (expected === null || expected === undefined) {
        if (ref) throw commitFailed(`ref ${String(requirement.ref)} was created concurrently`);
      } else if (!ref) throw commitFailed(`ref ${String(requirement.ref)} is missing, expected ${String(expected)}`);
      else if (ref['snapshot-id'] !== expected)
        throw commitFailed(`ref ${String(requirement.ref)} is at ${ref['snapshot-id']}, expected ${String(expected)}`);
      return;
    }
    case 'assert-last-assigned-field-id':
      if (base['last-column-id'] !== requirement['last-assigned-field-id'])
        throw commitFailed(`last assigned field id changed: ${base['last-column-id']}`);
      return;
    case 'assert-current-schema-id':
      if (base['current-schema-id'] !== requirement['current-schema-id'])
        throw commitFailed(`current schema changed: ${base['current-schema-id']}`);
      return;
    case 'assert-last-assigned-partition-id':
      if (base['last-partition-id'] !== requirement['last-assigned-partition-id'])
        throw commitFailed(`last assigned partition id changed: ${base['last-partition-id']}`);
      return;
    case 'assert-default-spec-id':
      if (base['default-spec-id'] !== requirement['default-spec-id'])
        throw commitFailed(`default spec changed: ${base['default-spec-id']}`);
      return;
    case 'assert-default-sort-order-id':
      if (base['default-sort-order-id'] !== requirement['default-sort-order-id'])
        throw commitFailed(`default sort order changed: ${base['default-sort-order-id']}`);
      return;
    default:
      throw badRequest(`unknown requirement type ${type}`);
  }
}

/** The metadata after `updates`, on a copy of `base` (the caller's is left as it was). */
export function applyTableUpdates(base: Meta, updates: readonly Obj[], now: number): Meta {
  const m = structuredClone(base);
  let lastSchema: number | undefined;
  let lastSpec: number | undefined;
  let lastOrder: number | undefined;
  const added = new Set<number>();
  for (const u of updates) {
    const action = str(u.action, 'update action');
    switch (action) {
      case 'assign-uuid': {
        const uuid = str(u.uuid, 'uuid');
        if (m['table-uuid'] && m['table-uuid'] !== uuid) throw badRequest('cannot reassign the table uuid');
        m['table-uuid'] = uuid;
        break;
      }
      case 'upgrade-format-version': {
        const v = int(u['format-version'], 'format-version');
        if (v < m['format-version'] || v > 2) throw badRequest(`cannot move format-version to ${v}`);
        m['format-version'] = v;
        break;
      }
      case 'add-schema': {
        const schema = obj(u.schema, 'schema');
        arr(schema.fields, 'schema fields');
        const same = m.schemas.find((s) => sameJson(s.fields, schema.fields!));
        const id = same ? same['schema-id'] : Math.max(-1, ...m.schemas.map((s) => s['schema-id'])) + 1;
        if (!same) m.schemas.push({ ...(schema as Schema), 'schema-id': id });
        const declared = typeof u['last-column-id'] === 'number' ? u['last-column-id'] : 0;
        m['last-column-id'] = Math.max(m['last-column-id'], declared, maxFieldId(schema));
        lastSchema = id;
        break;
      }
      case 'set-current-schema': {
        let id = int(u['schema-id'], 'schema-id');
        if (id === -1) {
          if (lastSchema === undefined) throw badRequest('set-current-schema -1 without add-schema');
          id = lastSchema;
        }
        if (!m.schemas.some((s) => s['schema-id'] === id)) throw badRequest(`no schema ${id}`);
        m['current-schema-id'] = id;
        break;
      }
      case 'add-spec': {
        const spec = obj(u.spec, 'spec');
        const fields = arr(spec.fields, 'spec fields') as Obj[];
        const same = m['partition-specs'].find((s) => sameJson(s.fields, fields));
        const id = same ? same['spec-id'] : Math.max(-1, ...m['partition-specs'].map((s) => s['spec-id'])) + 1;
        if (!same) m['partition-specs'].push({ ...spec, 'spec-id': id, fields });
        for (const f of fields)
          if (typeof f['field-id'] === 'number')
            m['last-partition-id'] = Math.max(m['last-partition-id'], f['field-id']);
        lastSpec = id;
        break;
      }
      case 'set-default-spec': {
        let id = int(u['spec-id'], 'spec-id');
        if (id === -1) {
          if (lastSpec === undefined) throw badRequest('set-default-spec -1 without add-spec');
          id = lastSpec;
        }
        if (!m['partition-specs'].some((s) => s['spec-id'] === id)) throw badRequest(`no partition spec ${id}`);
        m['default-spec-id'] = id;
        break;
      }
      case 'add-sort-order': {
        const order = obj(u['sort-order'], 'sort-order');
        const fields = arr(order.fields, 'sort-order fields') as Obj[];
        const same = m['sort-orders'].find((o) => sameJson(o.fields, fields));
        // The table spec reserves order id 0 for "unsorted".
        const id = same
          ? same['order-id']
          : fields.length === 0
            ? 0
            : Math.max(0, ...m['sort-orders'].map((o) => o['order-id'])) + 1;
        if (!same) m['sort-orders'].push({ ...order, 'order-id': id, fields });
        lastOrder = id;
        break;
      }
      case 'set-default-sort-order': {
        let id = int(u['sort-order-id'], 'sort-order-id');
        if (id === -1) {
          if (lastOrder === undefined) throw badRequest('set-default-sort-order -1 without add-sort-order');
          id = lastOrder;
        }
        if (!m['sort-orders'].some((o) => o['order-id'] === id)) throw badRequest(`no sort order ${id}`);
        m['default-sort-order-id'] = id;
        break;
      }
      case 'add-snapshot': {
        const snap = obj(u.snapshot, 'snapshot') as Snap;
        const id = int(snap['snapshot-id'], 'snapshot-id');
        int(snap['timestamp-ms'], 'timestamp-ms');
        str(snap['manifest-list'], 'manifest-list');
        str(obj(snap.summary, 'summary').operation, 'summary.operation');
        if (m.snapshots.some((s) => s['snapshot-id'] === id)) throw badRequest(`snapshot ${id} exists already`);
        const seq = int(snap['sequence-number'], 'sequence-number');
        // As the reference does: a stale sequence number means the commit was built on an old base.
        if (seq <= m['last-sequence-number'])
          throw new Reply(
            409,
            'CommitFailedException',
            `sequence number ${seq} is not above ${m['last-sequence-number']}`,
          );
        m.snapshots.push(snap);
        m['last-sequence-number'] = seq;
        added.add(id);
        break;
      }
      case 'set-snapshot-ref': {
        const name = str(u['ref-name'], 'ref-name');
        const id = int(u['snapshot-id'], 'snapshot-id');
        const snap = m.snapshots.find((s) => s['snapshot-id'] === id);
        if (!snap) throw badRequest(`no snapshot ${id}`);
        const type = str(u.type, 'type');
        if (type !== 'branch' && type !== 'tag') throw badRequest(`ref type ${type}`);
        const ref: Ref = { type, 'snapshot-id': id };
        for (const key of ['max-ref-age-ms', 'max-snapshot-age-ms', 'min-snapshots-to-keep'])
          if (typeof u[key] === 'number') ref[key] = u[key];
        m.refs[name] = ref;
        if (name === 'main') {
          m['current-snapshot-id'] = id;
          m['snapshot-log'].push({ 'snapshot-id': id, 'timestamp-ms': added.has(id) ? snap['timestamp-ms'] : now });
        }
        break;
      }
      case 'remove-snapshots': {
        const ids = new Set(arr(u['snapshot-ids'], 'snapshot-ids').map((v) => int(v, 'snapshot id')));
        m.snapshots = m.snapshots.filter((s) => !ids.has(s['snapshot-id']));
        for (const [name, ref] of Object.entries(m.refs)) if (ids.has(ref['snapshot-id'])) delete m.refs[name];
        if (m['current-snapshot-id'] !== null && ids.has(m['current-snapshot-id'])) m['current-snapshot-id'] = null;
        m['snapshot-log'] = m['snapshot-log'].filter((e) => !ids.has(e['snapshot-id']));
        break;
      }
      case 'remove-snapshot-ref': {
        const name = str(u['ref-name'], 'ref-name');
        delete m.refs[name];
        if (name === 'main') m['current-snapshot-id'] = null;
        break;
      }
      case 'set-location':
        m.location = str(u.location, 'location');
        break;
      case 'set-properties':
        for (const [k, v] of Object.entries(obj(u.updates, 'updates'))) m.properties[k] = str(v, `property ${k}`);
        break;
      case 'remove-properties':
        for (const k of arr(u.removals, 'removals')) delete m.properties[str(k, 'removal')];
        break;
      default:
        throw badRequest(`unknown update action ${action}`);
    }
  }
  m['last-updated-ms'] = now;
  return m;
}

/** What a table's metadata must hold once a create commit has built it. */
function checkComplete(m: Meta): void {
  const missing: string[] = [];
  if (!m['table-uuid']) missing.push('table-uuid (assign-uuid)');
  if (!m.location) missing.push('location (set-location)');
  if (!m.schemas.some((s) => s['schema-id'] === m['current-schema-id'])) missing.push('current schema');
  if (!m['partition-specs'].some((s) => s['spec-id'] === m['default-spec-id'])) missing.push('default partition spec');
  if (!m['sort-orders'].some((o) => o['order-id'] === m['default-sort-order-id'])) missing.push('default sort order');
  if (missing.length) throw badRequest(`the create commit leaves the table without ${missing.join(', ')}`);
}

// ---- The HTTP server ----

export async function startIcebergRestServer(options: IcebergRestServerOptions = {}): Promise<IcebergRestServer> {
  const prefix = options.prefix ?? 'warehouse-1';
  const requireParent = options.requireParentNamespace ?? true;
  const tables = new Map<string, StoredTable>();
  const namespaces = new Map<string, { namespace: string[]; properties: Record<string, string> }>();
  const issued = new Map<string, number>();
  const issuedTokens: string[] = [];
  const requests: LoggedRequest[] = [];
  const commitFaults: RestFault[] = [];
  const requestFaults: { path: RegExp; fault: RestFault }[] = [];
  const replay = new Map<string, { status: number; body: unknown }>();
  const lifetime = (options.tokenLifetimeSeconds ?? 3600) * 1000;
  const tableKey = (ns: readonly string[], name: string) => `${ns.join('\x1f')}\x00${name}`;

  /** The namespace path parameter: levels split on 0x1F (and the advertised separator). */
  function decodeNamespace(segment: string): string[] {
    const separator = options.overrides?.['namespace-separator'];
    let text = decodeURIComponent(segment);
    if (separator) text = text.split(decodeURIComponent(separator)).join('\x1f');
    return text.split('\x1f');
  }

  function needNamespace(ns: string[]): void {
    if (!namespaces.has(ns.join('\x1f')))
      throw new Reply(404, 'NoSuchNamespaceException', `Namespace does not exist: ${ns.join('.')}`);
  }

  function needTable(ns: string[], name: string): StoredTable {
    needNamespace(ns);
    const t = tables.get(tableKey(ns, name));
    if (!t) throw new Reply(404, 'NoSuchTableException', `Table does not exist: ${[...ns, name].join('.')}`);
    return t;
  }

  /** The next stored state of a table (not yet visible), with its metadata file's location. */
  function nextVersion(ns: string[], name: string, previous: StoredTable | undefined, metadata: Meta): StoredTable {
    const version = (previous?.version ?? 0) + 1;
    const m = structuredClone(metadata);
    if (previous)
      m['metadata-log'].push({
        'metadata-file': previous.metadataLocation,
        'timestamp-ms': previous.metadata['last-updated-ms'],
      });
    const location = `${m.location.replace(/\/+$/, '')}/metadata/v${version}.metadata.json`;
    return { namespace: ns, name, metadata: m, metadataLocation: location, version };
  }

  /** Writes the metadata files first, then makes every table's new version visible at once. */
  async function publish(states: StoredTable[]): Promise<void> {
    for (const s of states) {
      if (!s.metadataLocation.startsWith('file:')) continue;
      const file = fileURLToPath(s.metadataLocation);
      await mkdir(join(file, '..'), { recursive: true });
      await writeFile(file, `${JSON.stringify(s.metadata, null, 2)}\n`, { flag: 'wx' });
    }
    for (const s of states) tables.set(tableKey(s.namespace, s.name), s);
  }

  const loadResult = (t: StoredTable) => ({
    'metadata-location': t.metadataLocation,
    metadata: t.metadata,
    config: {},
  });

  function stagedMeta(ns: string[], body: Obj): Meta {
    const schema = obj(body.schema, 'schema');
    const m = emptyMeta();
    m['table-uuid'] = randomUUID();
    m.location =
      typeof body.location === 'string'
        ? body.location
        : `file:///tmp/iceberg-rest/${[...ns, String(body.name)].join('/')}`;
    return applyTableUpdates(
      m,
      [
        { action: 'add-schema', schema },
        { action: 'set-current-schema', 'schema-id': -1 },
        { action: 'add-spec', spec: (body['partition-spec'] as Obj | undefined) ?? { 'spec-id': 0, fields: [] } },
        { action: 'set-default-spec', 'spec-id': -1 },
        {
          action: 'add-sort-order',
          'sort-order': (body['write-order'] as Obj | undefined) ?? { 'order-id': 0, fields: [] },
        },
        { action: 'set-default-sort-order', 'sort-order-id': -1 },
        { action: 'set-properties', updates: (body.properties as Obj | undefined) ?? {} },
      ],
      Date.now(),
    );
  }

  /** One table's change checked and applied, not yet published. */
  function prepareChange(ns: string[], name: string, change: Obj, allowCreate: boolean): StoredTable {
    const requirements = arr(change.requirements, 'requirements').map((r) => obj(r, 'requirement'));
    const updates = arr(change.updates, 'updates').map((u) => obj(u, 'update'));
    const isCreate = requirements.some((r) => r.type === 'assert-create');
    needNamespace(ns);
    const current = tables.get(tableKey(ns, name));
    if (isCreate) {
      if (!allowCreate)
        throw new Reply(404, 'NoSuchTableException', `Table does not exist: ${[...ns, name].join('.')}`);
      if (requirements.length !== 1) throw badRequest('Invalid create requirements: assert-create takes no other');
      checkRequirement(current?.metadata, requirements[0]!);
      const built = applyTableUpdates(emptyMeta(), updates, Date.now());
      checkComplete(built);
      return nextVersion(ns, name, undefined, built);
    }
    const base = needTable(ns, name);
    for (const r of requirements) checkRequirement(base.metadata, r);
    return nextVersion(ns, name, base, applyTableUpdates(base.metadata, updates, Date.now()));
  }

  function authorized(req: IncomingMessage): boolean {
    if (!options.clients && !options.tokens) return true;
    const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    if (!m) return false;
    if (options.tokens?.includes(m[1]!)) return true;
    const expires = issued.get(m[1]!);
    return expires !== undefined && expires > Date.now();
  }

  function issueToken(body: string, req: IncomingMessage): { status: number; body: unknown } {
    const form = new URLSearchParams(body);
    let id = form.get('client_id');
    let secret = form.get('client_secret');
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
    if (basic) {
      const [bid, ...rest] = Buffer.from(basic[1]!, 'base64').toString().split(':');
      id = bid ?? null;
      secret = rest.join(':');
    }
    if (form.get('grant_type') !== 'client_credentials')
      return { status: 400, body: { error: 'unsupported_grant_type', error_description: 'only client_credentials' } };
    if (!id || !options.clients || options.clients[id] === undefined || options.clients[id] !== secret)
      return { status: 401, body: { error: 'invalid_client', error_description: 'unknown client or wrong secret' } };
    const token = randomBytes(24).toString('base64url');
    issued.set(token, Date.now() + lifetime);
    issuedTokens.push(token);
    return {
      status: 200,
      body: {
        access_token: token,
        token_type: 'bearer',
        expires_in: lifetime / 1000,
        issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      },
    };
  }

  async function route(method: string, path: string, query: URLSearchParams, req: IncomingMessage, text: string) {
    if (method === 'POST' && path === (options.tokenPath ?? '/v1/oauth/tokens')) return issueToken(text, req);
    const anonymous = options.anonymousConfig && method === 'GET' && path === '/v1/config';
    if (!anonymous && !authorized(req))
      throw new Reply(401, 'NotAuthorizedException', 'Not authorized to make this request');
    if (method === 'GET' && path === '/v1/config') {
      const warehouse = query.get('warehouse');
      if (options.warehouse !== undefined && warehouse !== options.warehouse)
        throw new Reply(
          404,
          'NoSuchWarehouseException',
          `The given warehouse does not exist: ${warehouse ?? '(none)'}`,
        );
      return {
        status: 200,
        body: {
          defaults: { ...options.defaults },
          overrides: { ...(prefix ? { prefix } : {}), ...options.overrides },
          ...(options.idempotencyKeyLifetime ? { 'idempotency-key-lifetime': options.idempotencyKeyLifetime } : {}),
        },
      };
    }
    // The prefix goes into paths as the config gives it (Glue: catalogs/<id>), as clients use it.
    const root = prefix ? `/v1/${prefix}` : '/v1';
    if (!path.startsWith(`${root}/`)) throw new Reply(404, 'NotFoundException', `no route ${method} ${path}`);
    const rest = path.slice(root.length).split('/').slice(1);
    let body: Json = null;
    try {
      if (text) body = JSON.parse(text) as Json;
    } catch {
      throw badRequest('Malformed request: the body is not JSON');
    }

    if (rest[0] === 'transactions' && rest[1] === 'commit' && rest.length === 2 && method === 'POST') {
      const changes = arr(obj(body, 'body')['table-changes'], 'table-changes').map((c) => obj(c, 'table change'));
      const states = changes.map((c) => {
        const id = obj(c.identifier, 'identifier (required in a transaction)');
        const ns = arr(id.namespace, 'identifier.namespace').map((v) => str(v, 'namespace level'));
        return prepareChange(ns, str(id.name, 'identifier.name'), c, false);
      });
      const names = new Set(states.map((s) => tableKey(s.namespace, s.name)));
      if (names.size !== states.length) throw badRequest('a transaction names a table twice');
      await publish(states);
      return { status: 204, body: undefined, commit: true };
    }
    if (rest[0] !== 'namespaces') throw new Reply(404, 'NotFoundException', `no route ${method} ${path}`);
    if (rest.length === 1 && method === 'POST') {
      const b = obj(body, 'body');
      const ns = arr(b.namespace, 'namespace').map((v) => str(v, 'namespace level'));
      if (ns.length === 0) throw badRequest('empty namespace');
      if (namespaces.has(ns.join('\x1f')))
        throw new Reply(409, 'AlreadyExistsException', `Namespace already exists: ${ns.join('.')}`);
      if (requireParent && ns.length > 1) needNamespace(ns.slice(0, -1));
      const properties = (b.properties as Record<string, string> | undefined) ?? {};
      namespaces.set(ns.join('\x1f'), { namespace: ns, properties });
      return { status: 200, body: { namespace: ns, properties } };
    }
    const ns = decodeNamespace(rest[1] ?? '');
    if (rest.length === 2 && method === 'GET') {
      needNamespace(ns);
      return { status: 200, body: namespaces.get(ns.join('\x1f')) };
    }
    if (rest[2] !== 'tables') throw new Reply(404, 'NotFoundException', `no route ${method} ${path}`);
    if (rest.length === 3 && method === 'POST') {
      const b = obj(body, 'body');
      const name = str(b.name, 'name');
      needNamespace(ns);
      if (tables.has(tableKey(ns, name)))
        throw new Reply(409, 'AlreadyExistsException', `Table already exists: ${[...ns, name].join('.')}`);
      const metadata = stagedMeta(ns, b);
      if (b['stage-create'] === true) return { status: 200, body: { metadata, config: {} } };
      const state = nextVersion(ns, name, undefined, metadata);
      await publish([state]);
      return { status: 200, body: loadResult(state) };
    }
    const name = decodeURIComponent(rest[3] ?? '');
    if (rest.length === 4 && method === 'GET') return { status: 200, body: loadResult(needTable(ns, name)) };
    if (rest.length === 4 && method === 'POST') {
      const state = prepareChange(ns, name, obj(body, 'body'), true);
      await publish([state]);
      return { status: 200, body: loadResult(state), commit: true };
    }
    throw new Reply(404, 'NotFoundException', `no route ${method} ${path}`);
  }

  const server = createServer((req, res) => {
    void handle(req, res);
  });

  let writes: Promise<unknown> = Promise.resolve();
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://localhost');
    const method = req.method ?? 'GET';
    const key = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : undefined;
    const entry: LoggedRequest = {
      method,
      path: url.pathname,
      query: url.search,
      body: safeParse(text, req.headers['content-type']),
      authorization: req.headers.authorization,
      idempotencyKey: key,
      headers: req.headers,
      status: 0,
    };
    requests.push(entry);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      entry.status = status;
      res.writeHead(status, body === undefined ? headers : { 'content-type': 'application/json', ...headers });
      res.end(body === undefined ? undefined : JSON.stringify(body));
    };
    const fail = (fault: RestFault) => {
      if (fault.drop) {
        entry.status = -1;
        req.socket.destroy();
        return;
      }
      const type =
        fault.status === 409
          ? 'CommitFailedException'
          : fault.status === 503
            ? 'SlowDownException'
            : fault.status >= 500
              ? 'CommitStateUnknownException'
              : 'BadRequestException';
      const headers: Record<string, string> =
        fault.retryAfterSeconds === undefined ? {} : { 'retry-after': String(fault.retryAfterSeconds) };
      send(fault.status, { error: { message: `injected ${fault.status}`, type, code: fault.status } }, headers);
    };
    try {
      const replayed = key && options.idempotencyKeyLifetime ? replay.get(key) : undefined;
      if (replayed) return send(replayed.status, replayed.body);
      const isCommit =
        method === 'POST' && (/\/transactions\/commit$/.test(url.pathname) || /\/tables\/[^/]+$/.test(url.pathname));
      const requestFault = requestFaults.findIndex((f) => f.path.test(url.pathname));
      const fault =
        requestFault >= 0
          ? requestFaults.splice(requestFault, 1)[0]!.fault
          : isCommit && commitFaults.length
            ? commitFaults.shift()!
            : undefined;
      if (fault && !fault.applied) return fail(fault);
      let result: { status: number; body: unknown };
      try {
        const run = () => route(method, url.pathname, url.searchParams, req, text);
        // One write at a time, as a catalog commits: a commit's requirements are checked and its
        // version published with no other commit in between (two writers racing get a 409).
        result = await (method === 'POST' ? (writes = writes.then(run, run)) : run());
      } catch (err) {
        if (!(err instanceof Reply)) throw err;
        const echo = options.echoAuthorization
          ? ` (request authorization: ${req.headers.authorization ?? 'none'})`
          : '';
        result = {
          status: err.status,
          body: { error: { message: `${err.message}${echo}`, type: err.type, code: err.status } },
        };
        if (Object.keys(err.headers).length) return send(result.status, result.body, err.headers);
      }
      // The spec's finalization rule: 2xx and 4xx answers are replayed for the same key, 5xx never.
      if (key && options.idempotencyKeyLifetime && method === 'POST' && result.status < 500) replay.set(key, result);
      if (fault) return fail(fault);
      send(result.status, result.body);
    } catch (err) {
      send(500, {
        error: { message: `test server bug: ${(err as Error).message}`, type: 'InternalServerError', code: 500 },
      });
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    issuedTokens,
    table: (ns, name) => tables.get(tableKey(ns, name)),
    namespaces: () => [...namespaces.values()].map((n) => n.namespace),
    failNextCommit: (fault) => commitFaults.push(fault),
    failNextRequest: (path, fault) => requestFaults.push({ path, fault }),
    expireTokens: () => issued.clear(),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function safeParse(text: string, contentType: string | undefined): unknown {
  if (!text) return undefined;
  if (contentType?.startsWith('application/x-www-form-urlencoded'))
    return Object.fromEntries(new URLSearchParams(text));
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
