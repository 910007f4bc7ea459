// `catalog-streams sandbox`: serves the embedded Catalog API simulator until
// stopped. The first stdout line gives the base URL and the sandbox
// credentials (scripts read it to find a port-0 server), a later line the
// admin routes' credential; SIGINT/SIGTERM close it cleanly and the command
// exits 0. Secrets can come from the environment, where `ps` does not show
// them; the secrets it makes up (extra keys, the admin secret) are random.
import { DEFAULT_RATE_LIMIT_PER_MINUTE, MAX_REACHABLE_RESULTS } from '../catalog/index.js';
import { UsageError } from '../errors.js';
import {
  ADMIN_SECRET_ENV,
  DEFAULT_CREDENTIALS,
  DEFAULT_PRODUCT_COUNT,
  DEFAULT_PROFILE,
  DEFAULT_SEED,
  PROFILE_ENV,
  SANDBOX_PROFILES,
  type SandboxFaults,
  parseProfile,
  randomSecret,
  startSandbox,
} from '../sandbox/index.js';
import { MAX_PRODUCTS } from '../sandbox/generate-products.js';
import { type Command, integerOption, numberOption, parseOptions } from './command.js';
import type { CliIO } from './io.js';

const NAME = 'sandbox';
/** The environment variable the API secret is read from when --api-secret is not given. */
const API_SECRET_ENV = 'CATALOG_SANDBOX_API_SECRET';

const options = {
  port: { type: 'string' },
  profile: { type: 'string' },
  host: { type: 'string' },
  products: { type: 'string' },
  seed: { type: 'string' },
  'rate-limit': { type: 'string' },
  'rate-window-ms': { type: 'string' },
  'true-total': { type: 'boolean' },
  'result-window': { type: 'string' },
  'bulk-instant': { type: 'string' },
  'retry-after': { type: 'boolean' },
  'api-key': { type: 'string' },
  'api-secret': { type: 'string' },
  keys: { type: 'string' },
  'admin-secret': { type: 'string' },
  'latency-ms': { type: 'string' },
  'error-rate': { type: 'string' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const usage = `Usage: catalog-streams sandbox [options]

Serves a generated, deterministic Product Catalog API v4 over HTTP until stopped
(Ctrl-C). The first line printed gives the base URL and the credentials.

Options:
  --port N            TCP port (default 8787; 0 picks a free one)
  --host H            interface to listen on (default 127.0.0.1)
  --profile P         shapes to serve: ${SANDBOX_PROFILES.join('|')} (default ${DEFAULT_PROFILE}, or ${PROFILE_ENV});
                      spec = the documented shapes, au/be/fr = what the live service sends in that region
  --products N        number of products (default ${DEFAULT_PRODUCT_COUNT}, at most ${MAX_PRODUCTS})
  --seed S            integer seed; the same seed serves the same bytes (default ${DEFAULT_SEED})
  --rate-limit N      requests per minute per credential (default ${DEFAULT_RATE_LIMIT_PER_MINUTE}; 0 = no limit)
  --rate-window-ms N  length of the rolling window --rate-limit counts in, ms (default 60000): a shorter one
                      is the same budget scaled up in rate (100 per 6000 ms: the live budget 10x as fast;
                      a client is then told rateLimit 1000 with rateLimitWindowMs 6000)
  --true-total        report products/query's real meta.total; by default it is capped at
                      ${MAX_REACHABLE_RESULTS} as the public service does (offsets past the cap are refused either way)
  --result-window N   results products/query can reach (default and maximum ${MAX_REACHABLE_RESULTS})
  --bulk-instant N    put N products on one single createdAt instant
  --retry-after       send Retry-After on 429 (the public service does not)
  --api-key K         sandbox API key (default ${DEFAULT_CREDENTIALS.apiKey})
  --api-secret S      sandbox API secret (default ${API_SECRET_ENV}, else ${DEFAULT_CREDENTIALS.apiSecret});
                      the variable keeps it out of the process list
  --keys N            accept N keys, each with its own --rate-limit budget: the first as given,
                      then <key>-2, <key>-3... each with a random secret (default 1)
  --admin-secret S    secret of the admin routes (default ${ADMIN_SECRET_ENV}, else a random
                      one, printed once at start)
  --latency-ms N      delay every API answer by N ms
  --error-rate F      answer this fraction of API requests with 500/503 (0 to 1)
  --verbose           log one line per request on stderr
  -h, --help          show this help

Admin routes (Authorization: Bearer <admin secret>, never an API key; not rate
limited): GET /_sandbox/stats, POST /_sandbox/touch {"ids":[...]} or {"count":N},
POST /_sandbox/faults {...}, POST /_sandbox/changes {...} (docs/sandbox.md).
`;

async function run(args: string[], io: CliIO): Promise<number> {
  const v = parseOptions(NAME, args, options);
  const port = integerOption(NAME, 'port', v.port, 0, 65535) ?? 8787;
  const profile =
    parseProfile(v.profile, `${NAME} --profile`) ??
    parseProfile(io.env[PROFILE_ENV], `${NAME}: ${PROFILE_ENV}`) ??
    DEFAULT_PROFILE;
  const products = integerOption(NAME, 'products', v.products, 1, MAX_PRODUCTS) ?? DEFAULT_PRODUCT_COUNT;
  const seed = integerOption(NAME, 'seed', v.seed, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER) ?? DEFAULT_SEED;
  const { rateLimit, rateLimitWindowMs } = rateLimitOf(v);
  const resultWindow = integerOption(NAME, 'result-window', v['result-window'], 1, MAX_REACHABLE_RESULTS);
  const bulkInstant = integerOption(NAME, 'bulk-instant', v['bulk-instant'], 0, products);
  const latencyMs = integerOption(NAME, 'latency-ms', v['latency-ms'], 0, 600_000);
  const errorRate = numberOption(NAME, 'error-rate', v['error-rate'], 0, 1);
  const keys = integerOption(NAME, 'keys', v.keys, 1, 100) ?? 1;
  const { apiSecret, admin } = secretsOf(v, io.env);
  if (v['api-key'] === '' || apiSecret === '')
    throw new UsageError(`${NAME}: --api-key and --api-secret (or ${API_SECRET_ENV}) cannot be empty`);
  const extraCredentials = moreKeys(v['api-key'], keys);
  const faults: SandboxFaults = { ...(latencyMs ? { latencyMs } : {}), ...(errorRate ? { errorRate } : {}) };
  if (products >= 200_000) io.stderr.write(`generating ${products.toLocaleString('en-US')} products...\n`);
  let sandbox;
  try {
    sandbox = await startSandbox({
      port,
      host: v.host ?? '127.0.0.1',
      products,
      seed,
      profile,
      rateLimit,
      rateLimitWindowMs,
      resultWindow,
      bulkInstant,
      trueTotal: v['true-total'] ?? false,
      retryAfter: v['retry-after'] ?? false,
      credentials: { apiKey: v['api-key'], apiSecret },
      extraCredentials,
      adminSecret: admin.secret,
      faults,
      // The media URLs point at it (sandbox/asset-host.ts), so a media mirror can be tried locally.
      assetHost: true,
      log: v.verbose ? (line) => io.stderr.write(`${line}\n`) : undefined,
    });
  } catch (err) {
    const e = err as Error & { code?: string };
    if (e.code === 'EADDRINUSE')
      throw new Error(
        `port ${port} on ${v.host ?? '127.0.0.1'} is in use; choose another with --port (0 picks a free one)`,
        { cause: err },
      );
    throw err;
  }
  const { url } = sandbox;
  // Several keys print as the comma-separated lists CATALOG_API_KEY and CATALOG_API_SECRET take.
  const all = [sandbox.credentials, ...extraCredentials];
  const credentials = {
    apiKey: all.map((c) => c.apiKey).join(','),
    apiSecret: all.map((c) => c.apiSecret).join(','),
  };
  // Serve until SIGINT or SIGTERM (the command's only way to end). The handlers are in place before
  // the listening line: a script that signals as soon as it reads the line must not kill the process
  // (a signal without a listener ends it at once, exit code null).
  const stopped = new Promise<void>((resolve) => {
    const stop = () => {
      io.signals?.off('SIGINT', stop);
      io.signals?.off('SIGTERM', stop);
      resolve();
    };
    io.signals?.on('SIGINT', stop);
    io.signals?.on('SIGTERM', stop);
  });
  io.stdout.write(
    `catalog-streams sandbox listening on ${url} (CATALOG_API_KEY=${credentials.apiKey} CATALOG_API_SECRET=${credentials.apiSecret}, ${products.toLocaleString('en-US')} products, seed ${seed}, profile ${profile})\n` +
      `export CATALOG_BASE_URL=${url} CATALOG_API_KEY=${credentials.apiKey} CATALOG_API_SECRET=${credentials.apiSecret}${resultWindow !== undefined ? ` CATALOG_RESULT_WINDOW=${resultWindow}` : ''}\n` +
      `${adminLine(admin.from, sandbox.adminSecret)}\n` +
      `rate limit: ${rateLimit > 0 ? `${rateLimit.toLocaleString('en-US')} ${rateLimit === 1 ? 'request' : 'requests'} per ${rateLimitWindowMs === undefined ? 'minute' : `${rateLimitWindowMs} ms`} per credential${keys > 1 ? ` (${keys} keys)` : ''}` : 'off'}; products/query meta.total ${v['true-total'] ? 'is the true total' : `is capped at ${resultWindow ?? MAX_REACHABLE_RESULTS} like the public service (--true-total to report the real count)`}\n` +
      `media files (no key needed) on ${sandbox.assets?.url ?? 'no asset host'}\n`,
  );
  await stopped;
  const served = sandbox.stats.requests;
  await sandbox.close();
  io.stderr.write(`catalog-streams sandbox stopped after ${served} request${served === 1 ? '' : 's'}\n`);
  return 0;
}

/** --rate-limit and its window (--rate-window-ms: undefined, the default minute). */
function rateLimitOf(v: { 'rate-limit'?: string; 'rate-window-ms'?: string }) {
  return {
    rateLimit: integerOption(NAME, 'rate-limit', v['rate-limit'], 0, 1_000_000_000) ?? DEFAULT_RATE_LIMIT_PER_MINUTE,
    rateLimitWindowMs: integerOption(NAME, 'rate-window-ms', v['rate-window-ms'], 100, 3_600_000),
  };
}

/**
 * Keys 2..n of `--keys n`: the first key with `-2`, `-3`... appended, each with a random secret
 * (they were the first secret with `-2`...: one secret gave away all the others).
 */
function moreKeys(apiKey: string | undefined, n: number) {
  return Array.from({ length: n - 1 }, (_, i) => ({
    apiKey: `${apiKey ?? DEFAULT_CREDENTIALS.apiKey}-${i + 2}`,
    apiSecret: randomSecret(),
  }));
}

type AdminSource = 'flag' | 'env' | 'generated';

/** The API secret (flag, then environment) and the admin secret (flag, environment, else random). */
function secretsOf(
  v: { 'api-secret'?: string; 'admin-secret'?: string },
  env: Record<string, string | undefined>,
): { apiSecret: string | undefined; admin: { secret: string; from: AdminSource } } {
  const apiSecret = v['api-secret'] ?? env[API_SECRET_ENV];
  const fromEnv = env[ADMIN_SECRET_ENV];
  if (v['admin-secret'] === '' || (v['admin-secret'] === undefined && fromEnv === ''))
    throw new UsageError(`${NAME}: the admin secret (--admin-secret or ${ADMIN_SECRET_ENV}) cannot be empty`);
  const admin: { secret: string; from: AdminSource } =
    v['admin-secret'] !== undefined
      ? { secret: v['admin-secret'], from: 'flag' }
      : fromEnv !== undefined
        ? { secret: fromEnv, from: 'env' }
        : { secret: randomSecret(), from: 'generated' };
  return { apiSecret, admin };
}

/** How to call the admin routes: a generated secret is printed (once, here); a chosen one is not. */
function adminLine(from: AdminSource, secret: string): string {
  if (from === 'generated')
    return `admin routes (/_sandbox/*): Authorization: Bearer ${secret} (generated for this process; set ${ADMIN_SECRET_ENV} to choose it)`;
  return `admin routes (/_sandbox/*): Authorization: Bearer <the secret of ${from === 'flag' ? '--admin-secret' : ADMIN_SECRET_ENV}>`;
}

export const sandboxCommand: Command = {
  name: NAME,
  summary: 'serve the embedded Catalog API simulator (base URL and credentials on the first line)',
  usage,
  run,
};
