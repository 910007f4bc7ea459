// RestCatalog against the spec-following test server (test/helpers/iceberg-rest-server.ts), which
// applies requirements and updates with its own code: create, commit and load round trips, the
// atomic multi-table transaction, the error codes of a conflict and of an unknown commit state,
// the retries the spec allows (and none it does not), the OAuth2 token flow, and that no token or
// secret reaches an error message.
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { IcebergTableRef, LoadedTable, TableCommit } from '../../../src/sinks/table/iceberg/iceberg-catalog.js';
import {
  encodeNamespace,
  metadataVersion,
  parseDuration,
  RestCatalog,
  type RestCatalogOptions,
} from '../../../src/sinks/table/iceberg/rest-catalog.js';
import { LocalObjectStore } from '../../../src/storage/object-store.js';
import {
  type IcebergRestServer,
  type IcebergRestServerOptions,
  startIcebergRestServer,
} from '../../helpers/iceberg-rest-server.js';

const NAMESPACE = ['lake', 'products'];
const FAST_RETRY = { minTimeout: 1, maxTimeout: 5 };

let dir: string;
let server: IcebergRestServer | undefined;
let catalogs: RestCatalog[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'iceberg-rest-'));
});

afterEach(async () => {
  for (const c of catalogs) await c.close();
  catalogs = [];
  await server?.close();
  server = undefined;
  await rm(dir, { recursive: true, force: true });
});

async function start(options: IcebergRestServerOptions = {}): Promise<IcebergRestServer> {
  server = await startIcebergRestServer(options);
  return server;
}

function catalog(options: Partial<RestCatalogOptions> = {}): RestCatalog {
  const c = new RestCatalog({ namespace: NAMESPACE, retry: FAST_RETRY, ...options, uri: options.uri ?? server!.url });
  catalogs.push(c);
  return c;
}

function ref(name: 'current' | 'changes'): IcebergTableRef {
  const root = join(dir, name);
  return { name, location: pathToFileURL(root).href, store: new LocalObjectStore(root) };
}

let nextSnapshotId = 1000;

function snapshot(table: IcebergTableRef, sequence: number, parent: number | undefined, runId: string) {
  const id = nextSnapshotId++;
  return {
    id,
    snapshot: {
      'snapshot-id': id,
      ...(parent === undefined ? {} : { 'parent-snapshot-id': parent }),
      'sequence-number': sequence,
      'timestamp-ms': Date.now(),
      'manifest-list': `${table.location}/metadata/snap-${id}-${runId}.avro`,
      summary: { operation: 'append' as const, 'catalog-streams.run-id': runId },
      'schema-id': 0,
    },
  };
}

/** A commit that creates the table, as the sink sends one: the whole table from empty metadata. */
function createCommit(table: IcebergTableRef, runId = 'run-1'): TableCommit {
  const { id, snapshot: snap } = snapshot(table, 1, undefined, runId);
  return {
    table,
    base: undefined,
    requirements: [{ type: 'assert-create' }],
    updates: [
      {
        action: 'add-schema',
        schema: {
          type: 'struct',
          'schema-id': 0,
          fields: [
            { id: 1, name: 'key', required: false, type: 'string' },
            { id: 2, name: 'price', required: false, type: 'decimal(18,2)' },
          ],
        },
      },
      { action: 'set-current-schema', 'schema-id': -1 },
      { action: 'add-snapshot', snapshot: snap },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': id },
    ],
  };
}

/** A commit that appends one snapshot on `base`. */
function appendCommit(table: IcebergTableRef, base: LoadedTable, runId: string): TableCommit {
  const parent = base.metadata['current-snapshot-id'] ?? undefined;
  const { id, snapshot: snap } = snapshot(table, base.metadata['last-sequence-number'] + 1, parent, runId);
  return {
    table,
    base,
    requirements: [
      { type: 'assert-table-uuid', uuid: base.metadata['table-uuid'] },
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': parent ?? null },
    ],
    updates: [
      { action: 'add-snapshot', snapshot: snap },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': id },
    ],
  };
}

function readMetadataFile(location: string): unknown {
  return JSON.parse(readFileSync(fileURLToPath(location), 'utf8'));
}

async function failure(promise: Promise<unknown>): Promise<Error & { code: string }> {
  try {
    await promise;
  } catch (err) {
    return err as Error & { code: string };
  }
  throw new Error('expected a failure');
}

const commitsSent = (s: IcebergRestServer) =>
  s.requests.filter((r) => r.method === 'POST' && /\/(tables\/[^/]+|transactions\/commit)$/.test(r.path));

describe('RestCatalog', () => {
  it('creates the namespace and a table, commits, and loads it back (the metadata files on disk)', async () => {
    const s = await start({ warehouse: 'lake-warehouse' });
    const c = catalog({ warehouse: 'lake-warehouse' });
    const current = ref('current');

    expect(await c.load(current)).toBeUndefined();
    const [created] = await c.commit([createCommit(current)]);
    expect(created!.version).toBe(1);
    expect(created!.metadataLocation).toBe(`${current.location}/metadata/v1.metadata.json`);
    expect(readMetadataFile(created!.metadataLocation)).toEqual(created!.metadata);
    expect(created!.metadata.location).toBe(current.location);
    expect(created!.metadata.schemas[0]!.fields.map((f) => f.id)).toEqual([1, 2]);
    expect(s.namespaces()).toEqual([['lake'], ['lake', 'products']]);

    // The spec's create transaction: a staged create (nothing created), then assert-create on the table route.
    const staged = s.requests.find((r) => r.method === 'POST' && r.path.endsWith('/tables'))!;
    expect(staged.path).toBe(`/v1/warehouse-1/namespaces/lake%1Fproducts/tables`);
    expect(staged.body).toMatchObject({ name: 'current', location: current.location, 'stage-create': true });
    const createRequest = commitsSent(s)[0]!;
    expect(createRequest.path).toBe('/v1/warehouse-1/namespaces/lake%1Fproducts/tables/current');
    expect(createRequest.body).toMatchObject({ requirements: [{ type: 'assert-create' }] });
    expect(s.requests[0]).toMatchObject({ path: '/v1/config', query: '?warehouse=lake-warehouse' });

    const loaded = await c.load(current);
    expect(loaded).toEqual(created);

    const [appended] = await c.commit([appendCommit(current, loaded!, 'run-2')]);
    expect(appended!.version).toBe(2);
    expect(appended!.metadata.snapshots!.map((x) => x.summary['catalog-streams.run-id'])).toEqual(['run-1', 'run-2']);
    expect(appended!.metadata['metadata-log']!.map((e) => e['metadata-file'])).toEqual([created!.metadataLocation]);
    expect(readMetadataFile(appended!.metadataLocation)).toEqual(appended!.metadata);
    expect(await c.load(current)).toEqual(appended);
    // A second catalog (another run) sees the same table.
    expect(await catalog({ warehouse: 'lake-warehouse' }).load(current)).toEqual(appended);
  });

  it('uses the table names and the namespace separator the options and the config give', async () => {
    const s = await start({ prefix: '', overrides: { 'namespace-separator': '%2E' } });
    const c = catalog({ tables: { changes: 'products_changes' } });
    await c.commit([createCommit(ref('changes'))]);
    expect(s.table(NAMESPACE, 'products_changes')?.version).toBe(1);
    // `.` needs no escape in a path segment, so it travels as is; the server splits on it.
    expect(commitsSent(s)[0]!.path).toBe('/v1/namespaces/lake.products/tables/products_changes');
  });

  it('commits several existing tables in one atomic transaction', async () => {
    const s = await start();
    const c = catalog();
    const current = ref('current');
    const changes = ref('changes');
    // New tables go one by one through the table route: the spec's create transactions live there.
    const [cur1, chg1] = await c.commit([createCommit(current), createCommit(changes)]);
    expect(commitsSent(s).every((r) => r.path.includes('/tables/'))).toBe(true);

    const [cur2, chg2] = await c.commit([appendCommit(current, cur1!, 'run-2'), appendCommit(changes, chg1!, 'run-2')]);
    const tx = commitsSent(s).at(-1)!;
    expect(tx.path).toBe('/v1/warehouse-1/transactions/commit');
    expect(tx.body).toMatchObject({
      'table-changes': [
        { identifier: { namespace: NAMESPACE, name: 'current' } },
        { identifier: { namespace: NAMESPACE, name: 'changes' } },
      ],
    });
    expect(cur2!.version).toBe(2);
    expect(chg2!.version).toBe(2);
    expect(s.table(NAMESPACE, 'current')!.metadata['current-snapshot-id']).toBe(cur2!.metadata['current-snapshot-id']);

    // The second table's requirement fails (its base is stale): the first table must not move either.
    const err = await failure(c.commit([appendCommit(current, cur2!, 'run-3'), appendCommit(changes, chg1!, 'run-3')]));
    expect(err.code).toBe('iceberg.commit_conflict');
    expect(err.message).toContain('HTTP 409');
    expect(s.table(NAMESPACE, 'current')!.version).toBe(2);
    expect(s.table(NAMESPACE, 'changes')!.version).toBe(2);
    expect(existsSync(join(dir, 'current/metadata/v3.metadata.json'))).toBe(false);
    expect(await c.load(current)).toEqual(cur2);
  });

  it('maps a requirement that fails on one table to iceberg.commit_conflict, without retrying', async () => {
    const s = await start();
    const c = catalog();
    const current = ref('current');
    const [v1] = await c.commit([createCommit(current)]);
    await c.commit([appendCommit(current, v1!, 'run-2')]);
    const before = commitsSent(s).length;
    const err = await failure(c.commit([appendCommit(current, v1!, 'run-3')]));
    expect(err.code).toBe('iceberg.commit_conflict');
    expect(err.message).toMatch(/CommitFailedException.*another writer/);
    expect(commitsSent(s).length).toBe(before + 1);

    // A second create of an existing table is a conflict too (the staged create already says so).
    expect((await failure(c.commit([createCommit(current)]))).code).toBe('iceberg.commit_conflict');
    s.failNextCommit({ status: 409 });
    const latest = (await c.load(current))!;
    expect((await failure(c.commit([appendCommit(current, latest, 'run-4')]))).code).toBe('iceberg.commit_conflict');
    expect((await c.load(current))!.version).toBe(latest.version);
  });

  it('maps a 5xx of a commit to iceberg.commit_unknown and does not retry it', async () => {
    const s = await start();
    const c = catalog();
    const current = ref('current');
    const [v1] = await c.commit([createCommit(current)]);

    s.failNextCommit({ status: 500 });
    const before = commitsSent(s).length;
    const err = await failure(c.commit([appendCommit(current, v1!, 'run-2')]));
    expect(err.code).toBe('iceberg.commit_unknown');
    expect(err.message).toContain('HTTP 500 (CommitStateUnknownException');
    expect(err.message).toContain('may or may not have happened');
    expect(err.message).toContain('run id');
    expect(commitsSent(s).length).toBe(before + 1);
    expect(s.table(NAMESPACE, 'current')!.version).toBe(1);

    // The reason for the wording: a gateway can lose the answer of a commit that happened.
    s.failNextCommit({ status: 504, applied: true });
    const lost = await failure(c.commit([appendCommit(current, v1!, 'run-3')]));
    expect(lost.code).toBe('iceberg.commit_unknown');
    expect(s.table(NAMESPACE, 'current')!.version).toBe(2);

    // 503 without Retry-After: the request may have been partly processed, so not sent again.
    const v2 = (await c.load(current))!;
    s.failNextCommit({ status: 503 });
    expect((await failure(c.commit([appendCommit(current, v2, 'run-4')]))).code).toBe('iceberg.commit_unknown');

    // A connection closed once the request was sent: unknown too, and not sent again.
    s.failNextCommit({ status: 0, drop: true });
    const dropped = await failure(c.commit([appendCommit(current, v2, 'run-5')]));
    expect(dropped.code).toBe('iceberg.commit_unknown');
    expect(dropped.message).toContain('the connection failed');
    expect(commitsSent(s).at(-1)!.status).toBe(-1);
    expect(s.table(NAMESPACE, 'current')!.version).toBe(2);
  });

  it('retries a commit after 503 with Retry-After, and reads after a 5xx', async () => {
    const s = await start();
    const c = catalog();
    const current = ref('current');
    const [v1] = await c.commit([createCommit(current)]);

    s.failNextCommit({ status: 503, retryAfterSeconds: 0 });
    const before = commitsSent(s).length;
    const [v2] = await c.commit([appendCommit(current, v1!, 'run-2')]);
    expect(v2!.version).toBe(2);
    expect(commitsSent(s).length).toBe(before + 2);

    s.failNextRequest(/\/tables\/current$/, { status: 502 });
    expect(await c.load(current)).toEqual(v2);
  });

  it('retries a commit whose answer was lost when the server takes Idempotency-Keys, committing once', async () => {
    const s = await start({ idempotencyKeyLifetime: 'PT30M' });
    const c = catalog();
    const current = ref('current');
    const [v1] = await c.commit([createCommit(current)]);

    s.failNextCommit({ status: 502, applied: true });
    const before = commitsSent(s).length;
    const [v2] = await c.commit([appendCommit(current, v1!, 'run-2')]);
    const sent = commitsSent(s).slice(before);
    expect(sent.map((r) => r.status)).toEqual([502, 200]);
    expect(sent[0]!.idempotencyKey).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(sent[1]!.idempotencyKey).toBe(sent[0]!.idempotencyKey);
    expect(v2!.version).toBe(2);
    expect(s.table(NAMESPACE, 'current')!.version).toBe(2);
  });

  it('obtains an OAuth2 token with the client credentials, and a new one when it is refused', async () => {
    const s = await start({ clients: { 'sink-client': 'client-secret-value-42' } });
    const c = catalog({ credential: 'sink-client:client-secret-value-42' });
    const current = ref('current');
    await c.commit([createCommit(current)]);
    // The config is asked without a token first (it may name the token endpoint); this server wants one.
    expect(s.requests[0]).toMatchObject({ path: '/v1/config', authorization: undefined, status: 401 });
    expect(s.requests[1]).toMatchObject({
      method: 'POST',
      path: '/v1/oauth/tokens',
      body: { grant_type: 'client_credentials', client_id: 'sink-client', scope: 'catalog' },
    });
    expect(s.issuedTokens).toHaveLength(1);
    expect(s.requests.slice(2).every((r) => r.authorization === `Bearer ${s.issuedTokens[0]}`)).toBe(true);

    s.expireTokens();
    expect((await c.load(current))!.version).toBe(1);
    expect(s.issuedTokens).toHaveLength(2);
    expect(s.requests.at(-1)!.authorization).toBe(`Bearer ${s.issuedTokens[1]}`);

    const wrong = await failure(catalog({ credential: 'sink-client:not-the-secret-77' }).load(current));
    expect(wrong.code).toBe('iceberg.rest_auth');
    expect(wrong.message).toContain('invalid_client');
    expect(wrong.message).not.toContain('not-the-secret-77');
  });

  it('renews a token before it expires, without waiting for a 401', async () => {
    const s = await start({ clients: { 'sink-client': 'client-secret-value-42' }, tokenLifetimeSeconds: 1 });
    const c = catalog({ credential: 'sink-client:client-secret-value-42' });
    const current = ref('current');
    expect(await c.load(current)).toBeUndefined();
    expect(s.issuedTokens).toHaveLength(1);
    // Renewed at half its lifetime (the 60 s margin is more than a 1 s token has).
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(await c.load(current)).toBeUndefined();
    expect(s.issuedTokens).toHaveLength(2);
    expect(s.requests.filter((r) => r.status === 401)).toHaveLength(1);
    expect(s.requests.at(-1)!.authorization).toBe(`Bearer ${s.issuedTokens[1]}`);
  });

  it('takes the token endpoint and extra headers from the config when it answers without a token', async () => {
    const s = await start({
      clients: { 'sink-client': 'client-secret-value-42' },
      tokenPath: '/idp/token',
      anonymousConfig: true,
      overrides: { 'oauth2-server-uri': 'idp/token', 'header.X-Tenant': 'acme' },
    });
    const c = catalog({ credential: 'sink-client:client-secret-value-42' });
    await c.commit([createCommit(ref('current'))]);
    expect(s.requests[0]).toMatchObject({ path: '/v1/config', authorization: undefined });
    expect(s.requests[1]).toMatchObject({ method: 'POST', path: '/idp/token', status: 200 });
    expect(s.requests.slice(2).every((r) => r.headers['x-tenant'] === 'acme')).toBe(true);
    expect(s.table(NAMESPACE, 'current')?.version).toBe(1);
  });

  it('keeps tokens and secrets out of every error message, even when the server echoes them', async () => {
    const s = await start({
      clients: { 'sink-client': 'client-secret-value-42' },
      echoAuthorization: true,
      warehouse: 'lake-warehouse',
    });
    const c = catalog({ credential: 'sink-client:client-secret-value-42', warehouse: 'lake-warehouse' });
    const current = ref('current');
    const [v1] = await c.commit([createCommit(current)]);
    await c.commit([appendCommit(current, v1!, 'run-2')]);
    const errors = [
      await failure(c.commit([appendCommit(current, v1!, 'run-3')])),
      await failure(
        catalog({ credential: 'sink-client:client-secret-value-42', warehouse: 'none' }).load(ref('changes')),
      ),
    ];
    s.failNextCommit({ status: 500 });
    errors.push(await failure(c.commit([appendCommit(current, (await c.load(current))!, 'run-4')])));
    await s.close();
    errors.push(await failure(c.load(current)));
    server = undefined;

    expect(errors.map((e) => e.code)).toEqual([
      'iceberg.commit_conflict',
      'iceberg.rest_request',
      'iceberg.commit_unknown',
      'iceberg.rest_unavailable',
    ]);
    // The echo reached the messages (so the check below is not vacuous), with the token masked.
    expect(errors[0]!.message).toContain('request authorization: Bearer ***');
    for (const err of errors) {
      const text = `${err.message}\n${err.stack ?? ''}\n${String((err as { cause?: unknown }).cause ?? '')}`;
      for (const token of s.issuedTokens) expect(text).not.toContain(token);
      expect(text).not.toContain('client-secret-value-42');
    }
  });

  it('sends a static token, and maps its refusal to iceberg.rest_auth without showing it', async () => {
    await start({ tokens: ['static-token-abcdef-123'], echoAuthorization: true });
    const current = ref('current');
    expect(await catalog({ token: 'static-token-abcdef-123' }).load(current)).toBeUndefined();
    const err = await failure(catalog({ token: 'wrong-token-zyxwvu-987' }).load(current));
    expect(err.code).toBe('iceberg.rest_auth');
    expect(err.message).toContain('HTTP 401');
    expect(err.message).not.toContain('wrong-token-zyxwvu-987');
  });
});

describe('RestCatalog against something that is not an Iceberg REST catalog', () => {
  it('takes neither a bare 404 for a missing table nor an HTML page for a config', async () => {
    const http = createServer((req, res) => {
      if (req.url === '/plain/v1/config') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"defaults":{},"overrides":{}}');
      } else if (req.url === '/html/v1/config') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html><body>Welcome</body></html>');
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('Not Found');
      }
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    try {
      const missing = await failure(catalog({ uri: `${base}/plain` }).load(ref('current')));
      expect(missing.code).toBe('iceberg.rest_request');
      expect(missing.message).toContain('HTTP 404 (Not Found)');
      const html = await failure(catalog({ uri: `${base}/html` }).load(ref('current')));
      expect(html.code).toBe('iceberg.rest_response');
      expect(html.message).toContain('does not follow the Iceberg REST spec');
    } finally {
      await new Promise((resolve) => http.close(resolve));
    }
  });
});

describe('RestCatalog helpers', () => {
  it('encodes namespaces, reads metadata versions and idempotency lifetimes', () => {
    expect(encodeNamespace(['accounting', 'tax'])).toBe('accounting%1Ftax');
    expect(encodeNamespace(['a b', 'c/d'])).toBe('a%20b%1Fc%2Fd');
    expect(metadataVersion('file:///t/metadata/v12.metadata.json')).toBe(12);
    expect(metadataVersion('s3://b/t/metadata/00003-0a1b2c3d-aaaa-bbbb-cccc-0123456789ab.metadata.json')).toBe(3);
    expect(metadataVersion('s3://b/t/metadata/current.json')).toBeUndefined();
    expect(parseDuration('PT30M')).toBe(1_800_000);
    expect(parseDuration('P1DT2H')).toBe(93_600_000);
    expect(parseDuration('soon')).toBeUndefined();
  });
});
