// The `catalog-streams` entry and its `sandbox` command, run in-process
// through `main(argv, io)`: usage errors exit 2 with one line on stderr, the
// first stdout line gives the URL and credentials, the served API answers,
// and SIGTERM/SIGINT stop it cleanly with exit 0.
import { EventEmitter } from 'node:events';
import { createServer } from 'node:net';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { basicAuthorization } from '../helpers/sandbox.js';

function captureIO() {
  const out: string[] = [];
  const err: string[] = [];
  const sink = (into: string[]) =>
    new Writable({
      write(chunk, _encoding, callback) {
        into.push(String(chunk));
        callback();
      },
    });
  const signals = new EventEmitter();
  return {
    io: { stdout: sink(out), stderr: sink(err), env: {}, signals },
    stdout: () => out.join(''),
    stderr: () => err.join(''),
    signals,
  };
}

async function firstLine(read: () => string): Promise<string> {
  for (let waited = 0; waited < 20_000; waited += 20) {
    const text = read();
    if (text.includes('\n')) return text.slice(0, text.indexOf('\n'));
    await sleep(20);
  }
  throw new Error('the command printed no line');
}

describe('catalog-streams', () => {
  it('--help prints the commands; no command is a usage error', async () => {
    const help = captureIO();
    expect(await main(['--help'], help.io)).toBe(0);
    expect(help.stdout()).toContain('sandbox');
    const none = captureIO();
    expect(await main(['--log-format', 'pretty'], none.io)).toBe(2);
    expect(none.stderr()).toContain('Usage: catalog-streams');
  });

  it.each([
    [['sandbx'], /unknown command "sandbx"; did you mean "sandbox"\?/],
    [['sandbox', '--prot', '80'], /unknown option --prot; did you mean --port\?/],
    [['sandbox', '--products', 'many'], /--products must be an integer from 1 to 9999999, got "many"/],
    [['sandbox', '--port', '70000'], /--port must be an integer from 0 to 65535/],
    [['sandbox', '--error-rate', '2'], /--error-rate must be a number from 0 to 1/],
    [['sandbox', 'extra'], /unexpected argument extra/],
    [['sandbox', '--port'], /--port needs a value/],
  ])('%j exits 2 with one clear line on stderr', async (argv, message) => {
    const { io, stderr, stdout } = captureIO();
    expect(await main([...argv, '--log-format', 'pretty'], io)).toBe(2);
    expect(stderr()).toMatch(message);
    expect(stderr().trim().split('\n')).toHaveLength(1);
    expect(stdout()).toBe('');
  });

  it('sandbox --help lists its options, including --true-total', async () => {
    const { io, stdout } = captureIO();
    expect(await main(['sandbox', '--help'], io)).toBe(0);
    for (const flag of ['--port', '--host', '--products', '--seed', '--rate-limit', '--true-total'])
      expect(stdout()).toContain(flag);
  });
});

describe('catalog-streams sandbox', () => {
  it.each(['SIGTERM', 'SIGINT'])('serves until %s; the first line gives URL and credentials', async (signal) => {
    const { io, stdout, stderr, signals } = captureIO();
    const exit = main(
      ['sandbox', '--port', '0', '--products', '300', '--seed', '3', '--rate-limit', '5', '--true-total'],
      io,
    );
    const line = await firstLine(stdout);
    const match =
      /^catalog-streams sandbox listening on (http:\/\/127\.0\.0\.1:\d+) \(CATALOG_API_KEY=(sandbox-key) CATALOG_API_SECRET=(sandbox-secret), 300 products, seed 3, profile be\)$/.exec(
        line,
      );
    expect(match, line).not.toBeNull();
    const [, url, key, secret] = match!;
    const post = (body: unknown, authorization?: string) =>
      request(`${url}/v4/products/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify(body),
      });
    const page = await post(
      { filter: { createdAt: 0 }, sorting: { id: 'ASC' }, page: { no: 0, size: 250 } },
      basicAuthorization(key!, secret!),
    );
    expect(page.statusCode).toBe(200);
    const json = (await page.body.json()) as any;
    expect(json.meta.total).toBe(300);
    expect(json.results).toHaveLength(250);
    const bad = await post(
      { filter: { createdAt: 0 }, sorting: { id: 'ASC' }, page: { no: 0, size: 33 } },
      basicAuthorization(key!, secret!),
    );
    expect(bad.statusCode).toBe(400);
    await bad.body.dump();
    const anonymous = await post({});
    expect(anonymous.statusCode).toBe(401);
    await anonymous.body.dump();
    signals.emit(signal);
    expect(await exit).toBe(0);
    expect(stderr()).toContain('stopped');
    await expect(request(`${url}/v4/brands/query`, { method: 'POST', body: '{}' })).rejects.toThrow();
  });

  it('--api-key and --api-secret replace the default credentials', async () => {
    const { io, stdout, signals } = captureIO();
    const exit = main(['sandbox', '--port', '0', '--products', '20', '--api-key', 'k1', '--api-secret', 's1'], io);
    const line = await firstLine(stdout);
    expect(line).toContain('(CATALOG_API_KEY=k1 CATALOG_API_SECRET=s1, 20 products, seed 1, profile be)');
    const url = /listening on (\S+)/.exec(line)![1]!;
    const status = async (authorization: string) => {
      const res = await request(`${url}/v4/brands/query`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: '{}',
      });
      await res.body.dump();
      return res.statusCode;
    };
    expect(await status(basicAuthorization('k1', 's1'))).toBe(200);
    expect(await status(basicAuthorization('sandbox-key', 'sandbox-secret'))).toBe(401);
    signals.emit('SIGINT');
    expect(await exit).toBe(0);
  });

  it('a port in use is a failure (exit 1) with one clear line', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const { io, stderr } = captureIO();
      expect(await main(['sandbox', '--port', String(port), '--products', '50'], io)).toBe(1);
      expect(stderr()).toContain(`port ${port} on 127.0.0.1 is in use`);
    } finally {
      blocker.close();
    }
  });
});
