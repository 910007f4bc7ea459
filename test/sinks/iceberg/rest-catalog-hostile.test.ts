// RestCatalog against a hostile or broken server (issue 36, item 6): an answer without end is read
// only up to its limit, a token endpoint that echoes the form it got does not print the client
// secret in any form, and a config read without a token cannot send the secret to another host or
// over plain http. The servers are node:http in the test; nothing large is allocated by them.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry } from '../../../src/pipeline/builtins.js';
import { parsePipelines } from '../../../src/pipeline/loader.js';
import { LocalObjectStore } from '../../../src/storage/object-store.js';
import type { IcebergTableRef } from '../../../src/sinks/table/iceberg/iceberg-catalog.js';
import { RestCatalog, type RestCatalogOptions } from '../../../src/sinks/table/iceberg/rest-catalog.js';

/** The documented limit of a REST answer (docs/security.md), 64 MiB. */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

interface FakeServer {
  url: string;
  requests: { method: string; path: string; body: string; authorization?: string }[];
  close(): Promise<void>;
}

const servers: FakeServer[] = [];
const catalogs: RestCatalog[] = [];

afterEach(async () => {
  for (const c of catalogs.splice(0)) await c.close();
  for (const s of servers.splice(0)) await s.close();
});

async function fakeServer(handle: Handler, host = '127.0.0.1'): Promise<FakeServer> {
  const requests: FakeServer['requests'] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      requests.push({ method: req.method ?? '', path, body, authorization: req.headers.authorization });
      handle(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const fake = {
    url: `http://${host}:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  servers.push(fake);
  return fake;
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

/** Answers /v1/config (without a token) with `overrides`, and anything else as a missing table. */
function catalogRoutes(overrides: Record<string, string> = {}): Handler {
  return (req, res) => {
    if (req.url?.startsWith('/v1/config')) return json(res, 200, { defaults: {}, overrides });
    if (!req.headers.authorization) return json(res, 401, { error: { message: 'no token', type: 'NotAuthorized' } });
    return json(res, 404, { error: { message: 'no such table', type: 'NoSuchTableException', code: 404 } });
  };
}

function catalog(options: Partial<RestCatalogOptions> & { uri: string }): RestCatalog {
  const c = new RestCatalog({ namespace: ['lake'], retry: { maxAttempts: 1 }, timeoutMs: 10_000, ...options });
  catalogs.push(c);
  return c;
}

const current: IcebergTableRef = {
  name: 'current',
  location: pathToFileURL('/nowhere/current').href,
  store: new LocalObjectStore('/nowhere/current'),
};

async function failure(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await promise;
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error('expected a failure');
}

describe('REST answers are bounded', () => {
  it('a /v1/config that streams without end is read up to the limit, then refused naming the URL and the limit', async () => {
    let sent = 0;
    let stoppedBy = '';
    // Streams 1 MiB chunks of spaces (valid JSON padding) with backpressure until the client hangs up,
    // or 3x the limit (an old client that reads it all then fails on the JSON, not by running out of memory).
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    const fake = await fakeServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const pump = () => {
        while (sent < 3 * MAX_ANSWER_BYTES) {
          if (res.destroyed) return void (stoppedBy ||= 'client');
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        stoppedBy ||= 'server';
        res.end('{}');
      };
      res.on('close', () => (stoppedBy ||= 'client'));
      pump();
    });
    const err = await failure(catalog({ uri: fake.url }).load(current));
    expect(err.code).toBe('iceberg.rest_too_large');
    expect(err.message).toContain(`GET ${fake.url}/v1/config`);
    expect(err.message).toContain(`limit of ${MAX_ANSWER_BYTES} bytes`);
    // The client hung up near the limit: the server was not made to send it all.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(stoppedBy).toBe('client');
    expect(sent).toBeLessThan(3 * MAX_ANSWER_BYTES);
  });

  it('an answer that declares 4 GB is refused before its body is read', async () => {
    const fake = await fakeServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(4 * 1024 ** 3) });
      // A few bytes, then nothing: a client that waits for the rest would wait for its timeout.
      res.write('{"defaults":{');
    });
    const err = await failure(catalog({ uri: fake.url, timeoutMs: 5_000 }).load(current));
    expect(err.code).toBe('iceberg.rest_too_large');
    expect(err.message).toContain(`the answer to GET ${fake.url}/v1/config is 4294967296 bytes (Content-Length)`);
    expect(err.message).toContain(`limit of ${MAX_ANSWER_BYTES} bytes`);
  });
});

describe('the OAuth2 client secret', () => {
  // Characters that url-encode (as a form and as a URL component) and JSON-escape differently from the raw text.
  const SECRET = 'pa ss/w+rd&=é"x~!*(42)';
  const CREDENTIAL = `sink-client:${SECRET}`;

  function secretForms(): string[] {
    return [
      SECRET,
      new URLSearchParams({ s: SECRET }).toString().slice(2),
      encodeURIComponent(SECRET),
      Buffer.from(SECRET).toString('base64'),
      JSON.stringify(SECRET).slice(1, -1),
    ];
  }

  it('is in no form in the error when the token endpoint echoes the form it got', async () => {
    const fake = await fakeServer((req, res, body) => {
      if (req.url === '/v1/oauth/tokens')
        return json(res, 400, { error: 'invalid_client', error_description: `unknown client in ${body}` });
      return catalogRoutes()(req, res, body);
    });
    const err = await failure(catalog({ uri: fake.url, credential: CREDENTIAL }).load(current));
    expect(err.code).toBe('iceberg.rest_auth');
    // The echo reached the message (the check below is not vacuous): the grant type is in it, the secret masked.
    expect(err.message).toContain('invalid_client: unknown client in grant_type=client_credentials');
    expect(err.message).toContain('client_secret=***');
    for (const form of secretForms()) expect(err.message).not.toContain(form);
  });

  it('is not sent to a token endpoint on another host that the config names', async () => {
    const tokens = await fakeServer(
      (_req, res) => json(res, 200, { access_token: 'tok', token_type: 'bearer' }),
      'localhost',
    );
    const fake = await fakeServer(catalogRoutes({ 'oauth2-server-uri': `${tokens.url}/token` }));
    const err = await failure(catalog({ uri: fake.url, credential: CREDENTIAL }).load(current));
    expect(err.code).toBe('iceberg.rest_token_endpoint');
    expect(err.message).toContain(`to the token endpoint ${tokens.url}/token`);
    expect(err.message).toContain("the catalog's config names it, on another host than the catalog (127.0.0.1)");
    expect(err.message).toContain('name it in the catalog option oauth2ServerUri');
    expect(tokens.requests).toEqual([]);
  });

  it('is not sent over plain http to a host that is not loopback', async () => {
    const fake = await fakeServer(catalogRoutes({ 'oauth2-server-uri': 'http://tokens.example.invalid/token' }));
    const named = await failure(
      catalog({ uri: fake.url, credential: CREDENTIAL, oauth2ServerUri: 'http://tokens.example.invalid/token' }).load(
        current,
      ),
    );
    expect(named.code).toBe('iceberg.rest_token_endpoint');
    expect(named.message).toContain(
      'to the token endpoint http://tokens.example.invalid/token: it is plain http to tokens.example.invalid, which is not a loopback address',
    );
    const configured = await failure(catalog({ uri: fake.url, credential: CREDENTIAL }).load(current));
    expect(configured.code).toBe('iceberg.rest_token_endpoint');
    // Only the anonymous config was asked (a named endpoint is used from the first request): no
    // token request left (there is no such host to answer one).
    expect(fake.requests.map((r) => r.path)).toEqual(['/v1/config']);
  });

  it('is sent to a token endpoint on another host when the user names it, and to one on the catalog host', async () => {
    const tokens = await fakeServer(
      (_req, res) => json(res, 200, { access_token: 'token-from-idp-123', token_type: 'bearer' }),
      'localhost',
    );
    // The config names a foreign endpoint too: the one the user named wins.
    const fake = await fakeServer(catalogRoutes({ 'oauth2-server-uri': 'http://localhost:1/elsewhere' }));
    const c = catalog({ uri: fake.url, credential: CREDENTIAL, oauth2ServerUri: `${tokens.url}/token` });
    expect(await c.load(current)).toBeUndefined();
    expect(tokens.requests.map((r) => r.path)).toEqual(['/token']);
    expect(new URLSearchParams(tokens.requests[0]!.body).get('client_secret')).toBe(SECRET);
    expect(fake.requests.at(-1)!.authorization).toBe('Bearer token-from-idp-123');

    const own = await fakeServer((req, res, body) => {
      if (req.url === '/idp/token') return json(res, 200, { access_token: 'own-host-token-456', token_type: 'bearer' });
      return catalogRoutes({ 'oauth2-server-uri': 'idp/token' })(req, res, body);
    });
    expect(await catalog({ uri: own.url, credential: CREDENTIAL }).load(current)).toBeUndefined();
    expect(own.requests.map((r) => r.path)).toContain('/idp/token');
  });

  it("is known to the run's redactor from ICEBERG_REST_CREDENTIAL, in every form, as is ICEBERG_REST_TOKEN", () => {
    const [loaded] = parsePipelines(
      'name: p\nsource: { type: products.query, filter: { status: active } }\nsinks: [{ type: jsonl, path: out/p.jsonl }]\n',
      createRegistry(),
      { env: { ICEBERG_REST_CREDENTIAL: CREDENTIAL, ICEBERG_REST_TOKEN: 'tk5' } },
    );
    const shown = loaded!.redactor.redact(`echo: ${secretForms().join(' | ')} | ${CREDENTIAL} | bearer tk5 | stk5s`);
    expect(shown).toBe('echo: *** | *** | *** | *** | *** | *** | bearer *** | stk5s');
  });
});
