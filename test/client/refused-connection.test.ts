// A refused connection fails fast (issue 37, item 14): nothing listening at the base URL's port is
// a wrong port or a server that is not running. To a loopback host it is not retried at all; to
// another host at most twice, whatever maxAttempts says. Counted in attempts (request events and
// NetworkError.attempts), never in time. Other connection failures keep every attempt.
import { createServer } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { CatalogClient } from '../../src/client/catalog-client.js';
import { NetworkError } from '../../src/client/errors.js';
import { REFUSED_ATTEMPTS, RetryPolicy, isLoopbackHost } from '../../src/client/retry-policy.js';
import { RunEvents } from '../../src/events.js';

/** A port nobody listens on at `host`: bound once, then closed. */
function closedPort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().on('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** An IPv4 address of this machine that is not loopback (a refused connection there is not loopback's rule). */
const OWN_ADDRESS = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });

describe('RetryPolicy: a refused connection', () => {
  it('knows loopback hosts', () => {
    for (const h of ['localhost', 'LOCALHOST', 'api.localhost', '127.0.0.1', '127.1.2.3', '::1', '[::1]'])
      expect(isLoopbackHost(h), h).toBe(true);
    for (const h of ['10.0.0.1', 'api.example.com', '128.0.0.1', 'localhost.example.com', '::2'])
      expect(isLoopbackHost(h), h).toBe(false);
  });

  it('gets 1 attempt to a loopback host, 2 elsewhere, never more than maxAttempts; other failures keep theirs', () => {
    const p = new RetryPolicy({ maxAttempts: 8 });
    expect(p.attemptLimit(refused, '127.0.0.1')).toBe(1);
    expect(p.attemptLimit(new Error('wrapped', { cause: refused }), 'localhost')).toBe(1);
    expect(p.attemptLimit(refused, 'api.example.com')).toBe(REFUSED_ATTEMPTS);
    expect(REFUSED_ATTEMPTS).toBe(2);
    expect(p.attemptLimit(reset, '127.0.0.1')).toBe(8);
    expect(new RetryPolicy({ maxAttempts: 1 }).attemptLimit(refused, 'api.example.com')).toBe(1);
    expect(p.allows(1, 0, 10, p.attemptLimit(refused, 'api.example.com'))).toBe(true);
    expect(p.allows(2, 0, 10, p.attemptLimit(refused, 'api.example.com'))).toBe(false);
    expect(p.allows(1, 0, 10, p.attemptLimit(refused, '127.0.0.1'))).toBe(false);
  });
});

describe('CatalogClient: a wrong port', () => {
  const clients: CatalogClient[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.destroy()));
  });

  async function attemptsAt(baseUrl: string): Promise<{ error: unknown; requests: number; retries: number }> {
    const events = new RunEvents();
    let requests = 0;
    let retries = 0;
    events.on('request', () => requests++);
    events.on('retry', () => retries++);
    const client = new CatalogClient({
      baseUrl,
      apiKey: 'k',
      apiSecret: 's',
      rateLimit: 0,
      events,
      retry: { maxAttempts: 8, minTimeout: 1, maxTimeout: 5 },
    });
    clients.push(client);
    const error = await client.query('brands.query', {}).then(
      () => undefined,
      (err: unknown) => err,
    );
    return { error, requests, retries };
  }

  it('127.0.0.1: one attempt, a NetworkError naming the host', async () => {
    const port = await closedPort('127.0.0.1');
    const { error, requests, retries } = await attemptsAt(`http://127.0.0.1:${port}`);
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ code: 'network.unreachable', errorCode: 'ECONNREFUSED', attempts: 1 });
    expect((error as Error).message).toContain(`127.0.0.1:${port}`);
    expect(requests).toBe(1);
    expect(retries).toBe(0);
  });

  it.skipIf(!OWN_ADDRESS)("this machine's own non-loopback address: two attempts, not eight", async () => {
    const port = await closedPort(OWN_ADDRESS!);
    const { error, requests, retries } = await attemptsAt(`http://${OWN_ADDRESS}:${port}`);
    expect(error).toMatchObject({ code: 'network.unreachable', errorCode: 'ECONNREFUSED', attempts: 2 });
    expect(requests).toBe(2);
    expect(retries).toBe(1);
  });
});
