// AWS SigV4 for the Iceberg REST catalog (Glue's Iceberg REST endpoint, S3 Tables): commits go
// through a front that checks every signature with the AWS SDK's own signer and the secret it
// knows (test/helpers/sigv4-verifier.ts) before the spec-following test catalog sees them. A
// commit signed with the right credentials is accepted; wrong ones are refused with an error that
// says what to check and never shows a secret; the credentials come from the SDK's default chain
// when the pipeline file names none; a missing signer package names the install command.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { icebergCatalog, icebergCatalogOption } from '../../../src/sinks/table/iceberg-catalog-option.js';
import type { IcebergTableRef, TableCommit } from '../../../src/sinks/table/iceberg/iceberg-catalog.js';
import { RestCatalog, type RestCatalogOptions } from '../../../src/sinks/table/iceberg/rest-catalog.js';
import { SigV4Signer } from '../../../src/sinks/table/iceberg/sigv4-signer.js';
import { LocalObjectStore } from '../../../src/storage/object-store.js';
import { type IcebergRestServer, startIcebergRestServer } from '../../helpers/iceberg-rest-server.js';
import { type SigV4Verifier, startSigV4Verifier } from '../../helpers/sigv4-verifier.js';

const NAMESPACE = ['lake', 'products'];
const ACCOUNT = '123456789012';
const KEY = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const SESSION_TOKEN = 'FwoGZXIvYXdzEXAMPLESESSIONTOKEN';
const WRONG_SECRET = 'thisIsNotTheSecretKeyAtAll/0123456789abcd';

let dir: string;
let server: IcebergRestServer;
let verifier: SigV4Verifier;
let catalogs: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'iceberg-sigv4-'));
  // Glue's shape: the warehouse is the account id, the config's prefix is catalogs/<id>.
  server = await startIcebergRestServer({ prefix: `catalogs/${ACCOUNT}`, warehouse: ACCOUNT });
  verifier = await startSigV4Verifier({
    target: server.url,
    region: 'eu-west-1',
    service: 'glue',
    ...KEY,
    sessionToken: SESSION_TOKEN,
  });
});

afterEach(async () => {
  for (const c of catalogs) await c.close();
  catalogs = [];
  await verifier.close();
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

function catalog(sigv4: RestCatalogOptions['sigv4']): RestCatalog {
  const c = new RestCatalog({
    uri: verifier.url,
    warehouse: ACCOUNT,
    namespace: NAMESPACE,
    retry: { minTimeout: 1, maxTimeout: 5 },
    ...(sigv4 ? { sigv4 } : {}),
  });
  catalogs.push(c);
  return c;
}

function ref(name: 'current' | 'changes'): IcebergTableRef {
  const root = join(dir, name);
  return { name, location: pathToFileURL(root).href, store: new LocalObjectStore(root) };
}

/** A commit that creates the table with one snapshot, as the sink sends one. */
function createCommit(table: IcebergTableRef): TableCommit {
  const id = 4242;
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
          fields: [{ id: 1, name: 'key', required: false, type: 'string' }],
        },
      },
      { action: 'set-current-schema', 'schema-id': -1 },
      {
        action: 'add-snapshot',
        snapshot: {
          'snapshot-id': id,
          'sequence-number': 1,
          'timestamp-ms': Date.now(),
          'manifest-list': `${table.location}/metadata/snap-${id}.avro`,
          summary: { operation: 'append', 'catalog-streams.run-id': 'run-1' },
          'schema-id': 0,
        },
      },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': id },
    ],
  };
}

async function failure(promise: Promise<unknown>): Promise<Error & { code: string; status?: number }> {
  try {
    await promise;
  } catch (err) {
    return err as Error & { code: string; status?: number };
  }
  throw new Error('expected a failure');
}

describe('the Iceberg REST catalog with AWS SigV4', () => {
  it('a signed commit is accepted: every request (config, namespaces, create, commit, load) passes the check', async () => {
    const c = catalog({
      region: 'eu-west-1',
      service: 'glue',
      credentials: { ...KEY, sessionToken: SESSION_TOKEN },
    });
    const [created] = await c.commit([createCommit(ref('current'))]);
    expect(created!.metadata['current-snapshot-id']).toBe(4242);
    expect((await c.load(ref('current')))?.metadata['current-snapshot-id']).toBe(4242);
    expect(server.table(NAMESPACE, 'current')?.metadata['current-snapshot-id']).toBe(4242);

    expect(verifier.requests.map((r) => r.refused)).toEqual(verifier.requests.map(() => undefined));
    const routes = verifier.requests.map((r) => `${r.method} ${r.path}`);
    expect(routes[0]).toBe(`GET /v1/config?warehouse=${ACCOUNT}`);
    // The prefix as Glue gives it, and a two-level namespace (%1F) signed as sent.
    expect(routes).toContain(`POST /v1/catalogs/${ACCOUNT}/namespaces/lake%1Fproducts/tables/current`);
    for (const r of verifier.requests)
      expect(r.signedHeaders).toEqual(
        expect.arrayContaining(['host', 'x-amz-date', 'x-amz-content-sha256', 'x-amz-security-token']),
      );
    const posts = verifier.requests.filter((r) => r.method === 'POST');
    expect(posts.length).toBeGreaterThanOrEqual(3);
    for (const r of posts) expect(r.signedHeaders).toContain('content-type');
  });

  it('a wrong secret is refused (403) with what to check, and no secret in the message', async () => {
    const c = catalog({
      region: 'eu-west-1',
      service: 'glue',
      credentials: { accessKeyId: KEY.accessKeyId, secretAccessKey: WRONG_SECRET, sessionToken: SESSION_TOKEN },
    });
    const err = await failure(c.commit([createCommit(ref('current'))]));
    expect(err.code).toBe('iceberg.rest_auth');
    expect(err.status).toBe(403);
    expect(err.message).toContain('signature does not match');
    expect(err.message).toContain('AWS SigV4 (signing name glue, region eu-west-1)');
    expect(err.message).toContain('AWS_PROFILE, AWS_ACCESS_KEY_ID');
    for (const secret of [WRONG_SECRET, KEY.secretAccessKey, SESSION_TOKEN])
      expect(`${err.message} ${err.stack ?? ''}`).not.toContain(secret);
    // Refused once, not retried, and nothing was committed.
    expect(verifier.requests.map((r) => r.refused)).toEqual(['the signature does not match']);
    expect(server.requests).toHaveLength(0);
    expect(server.table(NAMESPACE, 'current')).toBeUndefined();
  });

  it('a signature for another region or service is refused', async () => {
    const c = catalog({ region: 'us-east-1', service: 's3tables', credentials: KEY });
    const err = await failure(c.commit([createCommit(ref('current'))]));
    expect(err.code).toBe('iceberg.rest_auth');
    expect(err.message).toContain('signing name s3tables, region us-east-1');
    expect(verifier.requests[0]?.refused).toBe('credential scope us-east-1/s3tables');
  });

  it('credentials that cannot be had fail before any request, as an auth error', async () => {
    const c = catalog({
      region: 'eu-west-1',
      service: 'glue',
      credentials: () => Promise.reject(new Error('Could not load credentials from any providers')),
    });
    const err = await failure(c.commit([createCommit(ref('current'))]));
    expect(err.code).toBe('iceberg.rest_auth');
    expect(err.message).toContain(
      'no usable AWS credentials for SigV4 (Could not load credentials from any providers)',
    );
    expect(err.message).toContain('set AWS_PROFILE');
    expect(verifier.requests).toHaveLength(0);
  });

  it("catalog.auth: sigv4 in a pipeline signs with the SDK's default chain (here the environment)", async () => {
    const saved = { ...process.env };
    try {
      for (const name of [
        'AWS_PROFILE',
        'AWS_CONFIG_FILE',
        'AWS_SHARED_CREDENTIALS_FILE',
        'AWS_WEB_IDENTITY_TOKEN_FILE',
      ])
        delete process.env[name];
      process.env.AWS_ACCESS_KEY_ID = KEY.accessKeyId;
      process.env.AWS_SECRET_ACCESS_KEY = KEY.secretAccessKey;
      process.env.AWS_SESSION_TOKEN = SESSION_TOKEN;
      const option = icebergCatalogOption.parse({
        type: 'rest',
        uri: verifier.url,
        warehouse: ACCOUNT,
        namespace: NAMESPACE,
        auth: 'sigv4',
        signingRegion: 'eu-west-1',
      });
      const c = icebergCatalog({ path: join(dir, 'products'), catalog: option }, { env: {} });
      catalogs.push(c as RestCatalog);
      await c.commit([createCommit(ref('current'))]);
      // The table takes the path's last folder as its name.
      expect(server.table(NAMESPACE, 'products')).toBeDefined();
      expect(verifier.requests.every((r) => r.refused === undefined)).toBe(true);
    } finally {
      process.env = saved;
    }
  });

  it('the signing region comes from the options, AWS_REGION or a Glue uri; none is a config error', () => {
    const parse = (extra: Record<string, unknown>) =>
      icebergCatalogOption.parse({ type: 'rest', namespace: 'lake', auth: 'sigv4', ...extra });
    const make = (extra: Record<string, unknown>, env: Record<string, string> = {}) =>
      icebergCatalog({ path: '/tmp/products', catalog: parse(extra) }, { env });
    expect(() => make({ uri: 'https://glue.eu-central-1.amazonaws.com/iceberg' })).not.toThrow();
    expect(() => make({ uri: 'https://catalog.example.com/iceberg' }, { AWS_REGION: 'eu-west-1' })).not.toThrow();
    expect(() => make({ uri: 'https://catalog.example.com/iceberg' })).toThrow(/set catalog.signingRegion/);
    // SigV4 replaces a bearer token: both at once is refused, naming the variables to unset.
    expect(() =>
      make({ uri: 'https://glue.eu-west-1.amazonaws.com/iceberg' }, { ICEBERG_REST_TOKEN: 'a-token' }),
    ).toThrow(/unset ICEBERG_REST_CREDENTIAL and ICEBERG_REST_TOKEN/);
    expect(parse({ uri: 'https://glue.eu-west-1.amazonaws.com/iceberg' }).auth).toBe('sigv4');
    expect(icebergCatalogOption.parse({ type: 'rest', uri: 'https://x.example.com', namespace: 'n' }).auth).toBe(
      'oauth2',
    );
  });

  it('without the signer packages, signing fails with dependency.missing.iceberg-sigv4 and the install command', async () => {
    const missing = (specifier: string) => {
      const error = new Error(`Cannot find package '${specifier}' imported from src`) as NodeJS.ErrnoException;
      error.code = 'ERR_MODULE_NOT_FOUND';
      return Promise.reject(error);
    };
    const signer = new SigV4Signer({ region: 'eu-west-1', service: 'glue', credentials: KEY }, missing);
    const err = await failure(
      signer.sign({ method: 'GET', url: `${verifier.url}/v1/config`, headers: {}, body: undefined }, () => {}),
    );
    expect(err.code).toBe('dependency.missing.iceberg-sigv4');
    expect(err.message).toContain('run `npm install @smithy/signature-v4 @aws-sdk/credential-provider-node`');
  });
});
