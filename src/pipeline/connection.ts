// Where the API is and with which credentials: the plan's `connection:` block, completed by the
// environment and by an override (`--sandbox`), resolved once per run; and the CatalogClient
// settings it makes.
import { DEFAULT_RATE_LIMIT_PER_MINUTE } from '../catalog/limits.js';
import {
  type CatalogClientOptions,
  type ClientTimeouts,
  envRateLimit,
  envResultWindow,
} from '../client/catalog-client.js';
import { ConfigError } from '../errors.js';
import type { LoadedPipeline } from './loader.js';
import type { ConnectionBlock } from './pipeline-file.js';

export interface ResolvedConnection {
  baseUrl: string;
  apiKey: string;
  apiSecret: string;
  /** Where the key and secret came from (named by a credentials error). */
  credentialSource?: string;
  rateLimit: number;
  concurrency?: number;
  /** Attempts per request before it fails (default: the client's, 8). */
  maxAttempts?: number;
  /** Total wait between the attempts of one request, ms (default: the client's, 180 s). */
  maxRetryWaitMs?: number;
  /** Connect / headers / body timeouts, ms (default: the client's). */
  timeouts?: ClientTimeouts;
  /** Largest page body, bytes (default: the client's, 256 MiB). */
  maxPageBytes?: number;
  /** Results one query reaches, for a sandbox started with --result-window (CATALOG_RESULT_WINDOW; default 10000). */
  resultWindow?: number;
  /** The embedded sandbox (`--sandbox`): a state cursor records the host `sandbox`, whatever its port. */
  sandbox?: boolean;
}

/** Connection settings: the override, then the file's block, then the environment. */
export function resolveConnection(
  loaded: Pick<LoadedPipeline, 'file' | 'redactor' | 'plan'>,
  override: Partial<ResolvedConnection> = {},
  env: NodeJS.ProcessEnv = process.env,
): ResolvedConnection {
  const block: ConnectionBlock = loaded.plan.connection;
  const baseUrl = override.baseUrl ?? block.baseUrl ?? env.CATALOG_BASE_URL;
  const apiKey = override.apiKey ?? block.apiKey ?? env.CATALOG_API_KEY;
  const apiSecret = override.apiSecret ?? block.apiSecret ?? env.CATALOG_API_SECRET;
  const missing = [
    !baseUrl && 'CATALOG_BASE_URL',
    !apiKey && 'CATALOG_API_KEY',
    !apiSecret && 'CATALOG_API_SECRET',
  ].filter(Boolean);
  if (missing.length > 0) {
    throw new ConfigError(
      `${loaded.file}: no API connection: set ${missing.join(', ')} (or a connection: block in the file), or pass --sandbox to run against the embedded sandbox`,
      { file: loaded.file, path: 'connection' },
      { code: 'config.connection' },
    );
  }
  loaded.redactor.add(apiKey);
  loaded.redactor.add(apiSecret);
  const from = (name: 'apiKey' | 'apiSecret', variable: string) =>
    override[name] !== undefined
      ? 'sandbox'
      : block[name] !== undefined
        ? `connection.${name} in ${loaded.file}`
        : `${variable} in the environment`;
  const keyFrom = from('apiKey', 'CATALOG_API_KEY');
  const secretFrom = from('apiSecret', 'CATALOG_API_SECRET');
  const credentialSource =
    keyFrom === 'sandbox'
      ? 'the sandbox credentials given by --sandbox'
      : keyFrom.endsWith(' in the environment') && secretFrom.endsWith(' in the environment')
        ? 'CATALOG_API_KEY and CATALOG_API_SECRET in the environment'
        : `${keyFrom} and ${secretFrom}`;
  checkBaseUrl(
    baseUrl!,
    override.baseUrl !== undefined
      ? undefined
      : block.baseUrl !== undefined
        ? { file: loaded.file, path: 'connection.baseUrl' }
        : { path: 'CATALOG_BASE_URL' },
  );
  return {
    baseUrl: baseUrl!,
    apiKey: apiKey!,
    apiSecret: apiSecret!,
    credentialSource,
    rateLimit: override.rateLimit ?? block.rateLimit ?? envRateLimit(env) ?? DEFAULT_RATE_LIMIT_PER_MINUTE,
    concurrency: override.concurrency ?? block.concurrency,
    maxAttempts: override.maxAttempts ?? block.maxAttempts,
    maxRetryWaitMs: override.maxRetryWaitMs ?? block.maxRetryWait,
    timeouts: override.timeouts ?? block.timeouts,
    maxPageBytes: override.maxPageBytes ?? block.maxPageBytes,
    resultWindow: override.resultWindow ?? envResultWindow(env),
    ...(override.sandbox ? { sandbox: true } : {}),
  };
}

/** A base URL without http:// or https:// (`127.0.0.1:42911`) is a usage error naming where it was set. */
function checkBaseUrl(baseUrl: string, where: { file?: string; path: string } | undefined): void {
  if (!where) return;
  let protocol: string | undefined;
  try {
    protocol = new URL(baseUrl).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol === 'http:' || protocol === 'https:') return;
  const name = where.file ? `${where.file}: ${where.path}` : where.path;
  // A URL with user:password@ is never echoed.
  const shown = baseUrl.includes('@') ? '(not shown: it contains "@")' : `"${baseUrl}"`;
  const hint =
    /^[\w.-]+(:\d+)?(\/|$)/.test(baseUrl) && !baseUrl.includes('@')
      ? `; add the scheme: http://${baseUrl} or https://${baseUrl}`
      : '';
  throw new ConfigError(
    `${name} must be an http:// or https:// URL such as https://api.example.com, got ${shown}${hint}`,
    where,
    { code: 'config.connection' },
  );
}

/** The CatalogClient settings of a resolved connection (one client per run). */
export function clientOptions(connection: ResolvedConnection): CatalogClientOptions {
  const {
    baseUrl,
    apiKey,
    apiSecret,
    credentialSource,
    rateLimit,
    maxAttempts,
    maxRetryWaitMs,
    timeouts,
    maxPageBytes,
    resultWindow,
  } = connection;
  const retry = {
    ...(maxAttempts !== undefined ? { maxAttempts } : {}),
    ...(maxRetryWaitMs !== undefined ? { maxWaitMs: maxRetryWaitMs } : {}),
  };
  return {
    baseUrl,
    apiKey,
    apiSecret,
    ...(credentialSource !== undefined ? { credentialSource } : {}),
    rateLimit,
    ...(resultWindow !== undefined ? { resultWindow } : {}),
    ...(Object.keys(retry).length > 0 ? { retry } : {}),
    ...(maxPageBytes !== undefined ? { maxPageBytes } : {}),
    ...(timeouts
      ? { timeouts: Object.fromEntries(Object.entries(timeouts).filter(([, ms]) => ms !== undefined)) }
      : {}),
  };
}
