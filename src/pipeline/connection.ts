// Where the API is and with which credentials: the plan's `connection:` block, completed by the
// environment and by an override (`--sandbox`), resolved once per run; and the CatalogClient
// settings it makes.
import { DEFAULT_RATE_LIMIT_PER_MINUTE } from '../catalog/limits.js';
import type { Environment, Region } from '../catalog/regions.js';
import { type ApiCredential, checkDistinct, pairCredentialLists } from '../client/credentials.js';
import {
  type CatalogClientOptions,
  type ClientTimeouts,
  envRateLimit,
  envResultWindow,
  presetBaseUrl,
} from '../client/catalog-client.js';
import { ConfigError } from '../errors.js';
import type { LoadedPipeline } from './loader.js';
import type { ConnectionBlock, RegionConnection } from './pipeline-file.js';

export interface ResolvedConnection {
  baseUrl: string;
  /** The region preset (`connection.region`): its filters and code formats are checked before each request. */
  region?: Region;
  /** With a region: production or the vendor's sandbox. */
  environment?: Environment;
  /** Where the base URL came from, for validate and the dry run (`region fr`, `connection.baseUrl`...). */
  baseUrlSource?: string;
  /** One key/secret pair or several, in the order given: each key has its own `rateLimit` budget. */
  credentials: ApiCredential[];
  /** Where the keys and secrets came from (named by a credentials error). */
  credentialSource?: string;
  /** Requests per minute of each key. */
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

/**
 * What a caller puts over the file and the environment (`--sandbox`, tests): any setting, and the
 * credentials as a list or as apiKey and apiSecret (comma-separated lists of the same length).
 */
export type ConnectionOverride = Partial<ResolvedConnection> & { apiKey?: string; apiSecret?: string };

/**
 * Connection settings: the override, then the file's block, then the environment. For a fan-out
 * (`connection.regions`), the first region's: what a caller that knows one connection (the
 * progress plan, the dry run) reads; the run itself resolves every region (resolveRegionConnections).
 */
export function resolveConnection(
  loaded: Pick<LoadedPipeline, 'file' | 'redactor' | 'plan'>,
  override: ConnectionOverride = {},
  env: NodeJS.ProcessEnv = process.env,
): ResolvedConnection {
  const regions = loaded.plan.connection.regions;
  if (regions) return resolveRegion(loaded, regions[0]!, override, env);
  return resolveBlock(loaded, loaded.plan.connection, override, env);
}

/** The region of an entry of `connection.regions`. */
export function regionOf(entry: RegionConnection): Region {
  return typeof entry === 'string' ? entry : entry.region;
}

/**
 * Each region of a fan-out (`connection.regions`) resolved as a connection of its own: the file's
 * shared settings (rateLimit, concurrency, timeouts...) with the region's base URL and its own
 * credentials, from the entry or from CATALOG_<REGION>_API_KEY / _SECRET. A key serves one
 * platform, so the unprefixed CATALOG_API_KEY and CATALOG_BASE_URL are never used for a region.
 */
export function resolveRegionConnections(
  loaded: Pick<LoadedPipeline, 'file' | 'redactor' | 'plan'>,
  overrides: Partial<Record<Region, ConnectionOverride>> = {},
  env: NodeJS.ProcessEnv = process.env,
): { region: Region; connection: ResolvedConnection }[] {
  return (loaded.plan.connection.regions ?? []).map((entry) => ({
    region: regionOf(entry),
    connection: resolveRegion(loaded, entry, overrides[regionOf(entry)] ?? {}, env),
  }));
}

/** One region of a fan-out resolved: see resolveRegionConnections. */
function resolveRegion(
  loaded: Pick<LoadedPipeline, 'file' | 'redactor' | 'plan'>,
  entry: RegionConnection,
  override: ConnectionOverride,
  env: NodeJS.ProcessEnv,
): ResolvedConnection {
  const { regions: _regions, ...shared } = loaded.plan.connection;
  const region = regionOf(entry);
  const own = typeof entry === 'string' ? { region } : entry;
  const prefix = `CATALOG_${region.toUpperCase()}_`;
  const regionEnv: NodeJS.ProcessEnv = {
    ...env,
    CATALOG_BASE_URL: undefined,
    CATALOG_API_KEY: env[`${prefix}API_KEY`],
    CATALOG_API_SECRET: env[`${prefix}API_SECRET`],
  };
  // Messages name the unprefixed variables resolveBlock reads; the region's are what to set.
  const named = (text: string) =>
    text.replaceAll('CATALOG_API_KEY', `${prefix}API_KEY`).replaceAll('CATALOG_API_SECRET', `${prefix}API_SECRET`);
  try {
    const connection = resolveBlock(loaded, { ...shared, ...own }, override, regionEnv);
    const source = connection.credentialSource;
    return { ...connection, ...(source ? { credentialSource: named(source) } : {}) };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw new ConfigError(`region ${region}: ${named(err.message)}`, err.location, { code: err.code });
  }
}

function resolveBlock(
  loaded: Pick<LoadedPipeline, 'file' | 'redactor' | 'plan'>,
  block: ConnectionBlock,
  override: ConnectionOverride,
  env: NodeJS.ProcessEnv,
): ResolvedConnection {
  const region = override.region ?? block.region;
  const environment = override.environment ?? block.environment;
  // An explicit base URL wins over the region's (a proxy, the sandbox); the region's over CATALOG_BASE_URL.
  const { baseUrl, baseUrlSource } = resolveBaseUrl(loaded.file, override, block, region, environment, env);
  const listed = override.credentials ?? (override.apiKey === undefined ? block.credentials : undefined);
  if (block.credentials && (block.apiKey !== undefined || block.apiSecret !== undefined)) {
    throw new ConfigError(
      `${loaded.file}: connection has both credentials and ${block.apiKey !== undefined ? 'apiKey' : 'apiSecret'}: ` +
        'list every key under credentials, or give apiKey and apiSecret alone',
      { file: loaded.file, path: 'connection.credentials' },
      { code: 'config.credentials' },
    );
  }
  const apiKey = listed ? undefined : (override.apiKey ?? block.apiKey ?? env.CATALOG_API_KEY);
  const apiSecret = listed ? undefined : (override.apiSecret ?? block.apiSecret ?? env.CATALOG_API_SECRET);
  const missing = [
    !baseUrl && 'CATALOG_BASE_URL',
    !listed && !apiKey && 'CATALOG_API_KEY',
    !listed && !apiSecret && 'CATALOG_API_SECRET',
  ].filter(Boolean);
  if (missing.length > 0) {
    throw new ConfigError(
      `${loaded.file}: no API connection: set ${missing.join(', ')} (or a connection: block in the file), or pass --sandbox to run against the embedded sandbox`,
      { file: loaded.file, path: 'connection' },
      { code: 'config.connection' },
    );
  }
  const { credentials, credentialSource } = listed
    ? {
        credentials: listed,
        credentialSource:
          override.credentials !== undefined
            ? 'the credentials given by the caller'
            : `connection.credentials in ${loaded.file}`,
      }
    : pairedCredentials(loaded.file, override, block, apiKey!, apiSecret!);
  // Every value is a secret, the lists whole and each key and secret alone.
  loaded.redactor.add(apiKey);
  loaded.redactor.add(apiSecret);
  for (const c of credentials) {
    loaded.redactor.add(c.apiKey);
    loaded.redactor.add(c.apiSecret);
  }
  if (listed)
    checkDistinct(listed, `connection.credentials in ${loaded.file}`, {
      file: loaded.file,
      path: 'connection.credentials',
    });
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
    credentials,
    credentialSource,
    rateLimit: override.rateLimit ?? block.rateLimit ?? envRateLimit(env) ?? DEFAULT_RATE_LIMIT_PER_MINUTE,
    concurrency: override.concurrency ?? block.concurrency,
    maxAttempts: override.maxAttempts ?? block.maxAttempts,
    maxRetryWaitMs: override.maxRetryWaitMs ?? block.maxRetryWait,
    timeouts: override.timeouts ?? block.timeouts,
    maxPageBytes: override.maxPageBytes ?? block.maxPageBytes,
    resultWindow: override.resultWindow ?? envResultWindow(env),
    ...(override.sandbox ? { sandbox: true } : {}),
    ...(region !== undefined ? { region } : {}),
    ...(environment !== undefined ? { environment } : {}),
    ...(baseUrlSource !== undefined ? { baseUrlSource } : {}),
  };
}

/** The base URL and where it came from: the override, the file's baseUrl, the region, the environment. */
function resolveBaseUrl(
  file: string,
  override: ConnectionOverride,
  block: ConnectionBlock,
  region: Region | undefined,
  environment: Environment | undefined,
  env: NodeJS.ProcessEnv,
): { baseUrl: string | undefined; baseUrlSource?: string } {
  if (override.baseUrl !== undefined)
    return { baseUrl: override.baseUrl, baseUrlSource: override.sandbox ? 'the embedded sandbox' : 'the caller' };
  if (block.baseUrl !== undefined) return { baseUrl: block.baseUrl, baseUrlSource: `connection.baseUrl in ${file}` };
  if (region !== undefined || environment !== undefined) {
    try {
      const baseUrl = presetBaseUrl({ region, environment });
      return { baseUrl, baseUrlSource: `region ${region}${environment ? ` (${environment})` : ''}` };
    } catch (err) {
      if (err instanceof ConfigError)
        throw new ConfigError(`${file}: ${err.message}`, { file, path: err.location.path }, { code: err.code });
      throw err;
    }
  }
  return env.CATALOG_BASE_URL
    ? { baseUrl: env.CATALOG_BASE_URL, baseUrlSource: 'CATALOG_BASE_URL' }
    : { baseUrl: undefined };
}

/** The pairs of apiKey and apiSecret (comma-separated lists), named by where each came from. */
function pairedCredentials(
  file: string,
  override: ConnectionOverride,
  block: ConnectionBlock,
  apiKey: string,
  apiSecret: string,
): { credentials: ApiCredential[]; credentialSource: string } {
  const from = (name: 'apiKey' | 'apiSecret', variable: string) =>
    override[name] !== undefined
      ? { name: `the --sandbox ${name}`, where: 'sandbox' }
      : block[name] !== undefined
        ? {
            name: `connection.${name}`,
            where: `connection.${name} in ${file}`,
            location: { file, path: `connection.${name}` },
          }
        : { name: variable, where: `${variable} in the environment`, location: { path: variable } };
  const key = from('apiKey', 'CATALOG_API_KEY');
  const secret = from('apiSecret', 'CATALOG_API_SECRET');
  const credentialSource =
    key.where === 'sandbox'
      ? 'the sandbox credentials given by --sandbox'
      : key.where.endsWith(' in the environment') && secret.where.endsWith(' in the environment')
        ? 'CATALOG_API_KEY and CATALOG_API_SECRET in the environment'
        : `${key.where} and ${secret.where}`;
  const credentials = pairCredentialLists(apiKey, apiSecret, {
    keys: key.name,
    secrets: secret.name,
    ...(key.location ? { location: key.location } : {}),
  });
  return { credentials, credentialSource };
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
    credentials,
    credentialSource,
    rateLimit,
    maxAttempts,
    maxRetryWaitMs,
    timeouts,
    maxPageBytes,
    resultWindow,
    region,
  } = connection;
  const retry = {
    ...(maxAttempts !== undefined ? { maxAttempts } : {}),
    ...(maxRetryWaitMs !== undefined ? { maxWaitMs: maxRetryWaitMs } : {}),
  };
  return {
    baseUrl,
    ...(region !== undefined ? { region } : {}),
    credentials,
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
