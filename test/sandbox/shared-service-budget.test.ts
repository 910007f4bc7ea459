// The sandbox as a service several teams share (issue 36, item 9):
// - a filter past the CPU budget is refused with 422 naming the limit before any record is scanned
//   (one 206 KB `or` of searches held the single-threaded server 21-35 s for every user);
// - the admin routes take an admin credential no API key opens (any key could call them);
// - extra keys' secrets are random, not the first secret with `-2` appended;
// - the API and admin secrets can come from the environment (a flag shows in `ps`);
// - churn owed after a long idle is made a bounded amount per request, in the same order.
// Work is measured with the sandbox's counters (records filtered, churn draws), never the clock.
import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { ChangeSchedule, MAX_CHURN_PER_REQUEST } from '../../src/sandbox/changes.js';
import {
  MAX_FILTER_NODES,
  MAX_LEAF_TESTS,
  MAX_SEARCH_TESTS,
  filterBudgetIssue,
  filterCost,
} from '../../src/sandbox/filter-budget.js';
import { unitFloat } from '../../src/sandbox/random.js';
import { basicAuthorization, startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let sb: TestSandbox | undefined;
afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

const page = { no: 0, size: 10 };
const searches = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ search: { query: `term-${i}-${'q'.repeat(20)}`, locale: 'en' } }));

describe('CPU budget of a filter', () => {
  it('a 206 KB `or` of searches is refused with 422 naming the node limit, before any record is scanned', async () => {
    sb = await startTestSandbox({ products: 200 });
    const body = JSON.stringify({ filter: { or: searches(3500) }, sorting: { id: 'ASC' }, page });
    expect(body.length).toBeGreaterThan(200_000);
    const before = sb.work.recordsFiltered;
    const answer = await sb.post('/v4/products/query', undefined, { rawBody: body });
    expect(answer.status, answer.text.slice(0, 300)).toBe(422);
    const error = answer.json().error;
    expect(error.code).toBe('validation_failed');
    expect(error.message).toContain(`3,501 nodes`);
    expect(error.message).toContain(`more than the ${MAX_FILTER_NODES}`);
    expect(error.violations).toEqual([{ path: 'filter', message: expect.stringContaining('nodes') }]);
    expect(sb.work.recordsFiltered).toBe(before);
    // a stream request of cheap filters the same way, and the sandbox still answers a normal filter
    const brands = Array.from({ length: 300 }, (_, i) => ({ brand: i + 1 }));
    const stream = await sb.post('/v4/products/stream', { filter: { or: brands }, sorting: { id: 'ASC' } });
    expect(stream.status, stream.text.slice(0, 300)).toBe(422);
    expect(sb.work.recordsFiltered).toBe(before);
    const ok = await sb.query('/v4/products/query', { filter: { or: searches(3) }, sorting: { id: 'ASC' }, page });
    expect(ok.meta.total).toBe(0);
    expect(sb.work.recordsFiltered).toBe(before + 200);
  });

  it('search terms x records past the budget: 422 naming it; within it, answered', async () => {
    const products = 12_000;
    sb = await startTestSandbox({ products });
    const over = Math.floor(MAX_SEARCH_TESTS / products) + 1; // 167: fewer nodes than the node limit
    expect(over + 1).toBeLessThanOrEqual(MAX_FILTER_NODES);
    const before = sb.work.recordsFiltered;
    const refused = await sb.post('/v4/products/query', {
      filter: { or: searches(over) },
      sorting: { id: 'ASC' },
      page,
    });
    expect(refused.status, refused.text.slice(0, 300)).toBe(422);
    expect(refused.json().error.message).toContain(`more than the ${MAX_SEARCH_TESTS.toLocaleString('en-US')}`);
    expect(refused.json().error.message).toContain(`send at most ${over - 1} searches per request`);
    expect(sb.work.recordsFiltered).toBe(before);
    // the same number of cheap filters is within the budget
    const brands = Array.from({ length: over }, (_, i) => ({ brand: i + 1 }));
    const answered = await sb.post('/v4/products/query', { filter: { or: brands }, sorting: { id: 'ASC' }, page });
    expect(answered.status, answered.text.slice(0, 300)).toBe(200);
    expect(sb.work.recordsFiltered).toBe(before + products);
  });

  it('the cost model: nodes, leaves and searches; one leaf is always allowed', () => {
    const filter = { and: [{ not: { brand: 1 } }, { or: [{ search: { query: 'a', locale: 'en' } }, { id: ['x'] }] }] };
    expect(filterCost(filter)).toEqual({ nodes: 6, leaves: 3, searches: 1 });
    expect(filterBudgetIssue(filter, 1_000_000)).toBeUndefined();
    expect(filterBudgetIssue({ search: { query: 'a', locale: 'en' } }, 5_000_000)).toBeUndefined();
    expect(filterBudgetIssue({ or: searches(2) }, MAX_SEARCH_TESTS)).toMatch(/2 text searches/);
    const leaves = { or: Array.from({ length: 100 }, (_, i) => ({ brand: i })) };
    expect(filterBudgetIssue(leaves, MAX_LEAF_TESTS / 100)).toBeUndefined();
    expect(filterBudgetIssue(leaves, MAX_LEAF_TESTS / 100 + 1)).toMatch(/100 filters over .* send at most 99 filters/);
    // a tree deeper than any stack is counted without recursion
    let deep: unknown = { brand: 1 };
    for (let d = 0; d < 100_000; d++) deep = { not: deep };
    expect(filterCost(deep).nodes).toBe(100_001);
  });
});

describe('admin credential', () => {
  const stats = (s: TestSandbox, authorization: string | null) =>
    s.post('/_sandbox/stats', undefined, { method: 'GET', authorization });

  it('an API key on an admin route is 403; the admin credential opens it; others 401', async () => {
    sb = await startTestSandbox({ products: 20, extraCredentials: [{ apiKey: 'k2', apiSecret: 's2' }] });
    for (const key of [sb.authorization, basicAuthorization('k2', 's2')]) {
      const refused = await stats(sb, key);
      expect(refused.status).toBe(403);
      expect(refused.json().error).toMatchObject({ status: 403, code: 'forbidden' });
      expect(refused.json().error.message).toContain('Authorization: Bearer <admin secret>');
      const touch = await sb.post('/_sandbox/touch', { count: 1 }, { authorization: key });
      expect(touch.status).toBe(403);
    }
    expect((await stats(sb, null)).status).toBe(401);
    expect((await stats(sb, 'Bearer not-the-secret')).status).toBe(401);
    expect((await stats(sb, `Basic ${Buffer.from(`admin:${sb.adminSecret}`).toString('base64')}`)).status).toBe(401);
    const ok = await stats(sb, `Bearer ${sb.adminSecret}`);
    expect(ok.status).toBe(200);
    expect(ok.json().dataset.products).toBe(20);
    // the admin credential is no API key
    const api = await sb.post('/v4/brands/query', {}, { authorization: sb.adminAuthorization });
    expect(api.status).toBe(401);
  });

  it('a chosen admin secret; a generated one is random per sandbox', async () => {
    sb = await startTestSandbox({ products: 20, adminSecret: 'team-admin' });
    expect(sb.adminAuthorization).toBe('Bearer team-admin');
    expect((await stats(sb, 'Bearer team-admin')).status).toBe(200);
    const other = await startTestSandbox({ products: 20 });
    const third = await startTestSandbox({ products: 20 });
    try {
      expect(other.adminSecret).toMatch(/^[\w-]{24}$/);
      expect(other.adminSecret).not.toBe(third.adminSecret);
      expect((await stats(other, `Bearer ${third.adminSecret}`)).status).toBe(401);
    } finally {
      await other.close();
      await third.close();
    }
  });
});

function captureIO(env: Record<string, string> = {}) {
  const out: string[] = [];
  const signals = new EventEmitter();
  const stdout = new Writable({
    write(chunk, _encoding, callback) {
      out.push(String(chunk));
      callback();
    },
  });
  const stderr = new Writable({ write: (_c, _e, callback) => callback() });
  return { io: { stdout, stderr, env, signals }, stdout: () => out.join(''), signals };
}

/** Runs `catalog-streams sandbox` until its banner is out, then `use`s it and stops it. */
async function withCli(args: string[], env: Record<string, string>, use: (banner: string) => Promise<void>) {
  const { io, stdout, signals } = captureIO(env);
  const exit = main(['sandbox', '--port', '0', '--products', '20', ...args], io);
  try {
    for (let tries = 0; !stdout().includes('rate limit:'); tries++) {
      if (tries > 1000) throw new Error(`no banner: ${stdout()}`);
      await sleep(20);
    }
    await use(stdout());
  } finally {
    signals.emit('SIGTERM');
    expect(await exit).toBe(0);
  }
}

const banner = (text: string) => {
  const [, url, keys, secrets] = /listening on (\S+) \(CATALOG_API_KEY=(\S+) CATALOG_API_SECRET=(\S+),/.exec(text)!;
  return { url: url!, keys: keys!.split(','), secrets: secrets!.split(',') };
};

async function status(url: string, path: string, authorization: string): Promise<number> {
  const res = await request(`${url}${path}`, {
    method: path.startsWith('/_sandbox/') ? 'GET' : 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: path.startsWith('/_sandbox/') ? undefined : '{}',
  });
  await res.body.dump();
  return res.statusCode;
}

describe('catalog-streams sandbox secrets', () => {
  it('--keys 3: the extra secrets are random, share nothing with the first or each other, and work', async () => {
    const seen: string[][] = [];
    for (let run = 0; run < 2; run++)
      await withCli(['--keys', '3', '--api-secret', 'first-secret'], {}, async (text) => {
        const { url, keys, secrets } = banner(text);
        expect(keys).toEqual(['sandbox-key', 'sandbox-key-2', 'sandbox-key-3']);
        expect(secrets[0]).toBe('first-secret');
        for (const s of secrets.slice(1)) {
          expect(s).toMatch(/^[\w-]{24}$/);
          expect(s).not.toContain('first-secret');
        }
        expect(secrets[1]!.slice(0, -1)).not.toBe(secrets[2]!.slice(0, -1));
        for (let k = 0; k < 3; k++)
          expect(await status(url, '/v4/brands/query', basicAuthorization(keys[k]!, secrets[k]!))).toBe(200);
        seen.push(secrets.slice(1));
      });
    expect(new Set(seen.flat()).size).toBe(4);
  });

  it('the API and admin secrets from the environment; the admin secret is printed only when generated', async () => {
    const env = { CATALOG_SANDBOX_API_SECRET: 'from-env', CATALOG_SANDBOX_ADMIN_SECRET: 'admin-from-env' };
    await withCli([], env, async (text) => {
      const { url, keys, secrets } = banner(text);
      expect(secrets).toEqual(['from-env']);
      expect(text).not.toContain('admin-from-env');
      expect(text).toContain('CATALOG_SANDBOX_ADMIN_SECRET');
      expect(await status(url, '/v4/brands/query', basicAuthorization(keys[0]!, 'from-env'))).toBe(200);
      expect(await status(url, '/v4/brands/query', basicAuthorization(keys[0]!, 'sandbox-secret'))).toBe(401);
      expect(await status(url, '/_sandbox/stats', 'Bearer admin-from-env')).toBe(200);
      expect(await status(url, '/_sandbox/stats', basicAuthorization(keys[0]!, 'from-env'))).toBe(403);
    });
    // an empty secret is a usage error (exit 2), not an open door
    for (const [args, vars] of [
      [['--admin-secret', ''], {}],
      [[], { CATALOG_SANDBOX_ADMIN_SECRET: '' }],
      [[], { CATALOG_SANDBOX_API_SECRET: '' }],
    ] as const) {
      const { io } = captureIO({ ...vars });
      expect(await main(['sandbox', '--port', '0', '--products', '20', ...args], io)).toBe(2);
    }
    // --api-secret wins over the environment
    await withCli(['--api-secret', 'flag'], env, async (text) => expect(banner(text).secrets).toEqual(['flag']));
    await withCli([], {}, async (text) => {
      const admin = /Authorization: Bearer ([\w-]{24}) \(generated/.exec(text)?.[1];
      expect(admin, text).toBeDefined();
      expect(await status(banner(text).url, '/_sandbox/stats', `Bearer ${admin}`)).toBe(200);
    });
  });
});

describe('churn after a long idle', () => {
  /** The unbounded model: kind of change k, as the sandbox always drew it. */
  const kindOf = (seed: number, k: number, weights: number[]) => {
    let draw = unitFloat(seed, 0x63687572, k, 0) * weights.reduce((a, b) => a + b, 0);
    return (['add', 'remove', 'touch', 'status'] as const).find((_, i) => (draw -= weights[i]!) < 0) ?? 'touch';
  };

  it('one request pays a bounded catch-up; the next ones make the rest, in the unbounded order', () => {
    let now = 0;
    const churn = { perSecond: 10_000, add: 1, remove: 2, touch: 5, status: 1 };
    const schedule = new ChangeSchedule(7, { churn }, () => now);
    now = 100_000; // 100 s idle: a million changes owed
    const first = schedule.due('products.query', {});
    const made = (c: typeof first) => c.add + c.remove + c.touch + c.status;
    expect(made(first)).toBe(MAX_CHURN_PER_REQUEST);
    expect(schedule.churnDraws).toBe(MAX_CHURN_PER_REQUEST);
    // the changes are those the unbounded model makes first, kind by kind
    const expected = { add: 0, remove: 0, touch: 0, status: 0 };
    for (let k = 0; k < MAX_CHURN_PER_REQUEST; k++) expected[kindOf(7, k, [1, 2, 5, 1])]++;
    expect(first).toEqual(expected);
    // the rest comes with the requests that follow, never more than the bound each
    let total = made(first);
    for (let r = 0; r < 200 && total < 1_000_000; r++) {
      const next = schedule.due('products.stream', {});
      expect(made(next)).toBeLessThanOrEqual(MAX_CHURN_PER_REQUEST);
      total += made(next);
    }
    expect(total).toBe(1_000_000);
    expect(schedule.churnDraws).toBe(1_000_000);
    expect(made(schedule.due('products.query', {}))).toBe(0);
  });

  it('through the server: the request after 100 s idle at 10,000 per second draws 10,000, not a million', async () => {
    sb = await startTestSandbox({ products: 300 });
    // Only the clock the churn reads is faked: the sockets keep their real timers.
    vi.useFakeTimers({ toFake: ['performance'] });
    try {
      sb.setChanges({ churn: { perSecond: 10_000, touch: 1 } });
      vi.advanceTimersByTime(100_000);
      const query = { filter: { updatedSince: 0 }, sorting: { id: 'ASC' }, page: { no: 0, size: 10 } };
      expect((await sb.post('/v4/products/query', query)).status).toBe(200);
      expect(sb.work.churnDraws).toBe(MAX_CHURN_PER_REQUEST);
      expect((await sb.post('/v4/products/query', query)).status).toBe(200);
      expect(sb.work.churnDraws).toBe(2 * MAX_CHURN_PER_REQUEST);
    } finally {
      vi.useRealTimers();
    }
  });
});
