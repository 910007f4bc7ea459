// The S3 client every S3 user of the toolkit shares (sinks, the table, the state, locks): its
// settings from options and the environment, object locations, and errors that name the action
// and the object. The AWS SDK loads on first use (s3-sdk.ts).
import type { S3Client, S3ClientConfig, S3ServiceException } from '@aws-sdk/client-s3';
import { SinkError } from '../errors.js';
import { loadS3Sdk, type S3Feature } from './s3-sdk.js';

/** The environment the client settings default from (S3_ENDPOINT, AWS_REGION). */
export type S3Env = Readonly<Record<string, string | undefined>>;

export function s3Location(bucket: string, key: string): string {
  return `s3://${bucket}/${key}`;
}

/** An `s3://bucket/rest` location split: `key` the rest as written, `prefix` the rest as a folder. */
export interface ParsedS3Location {
  bucket: string;
  /** What follows `s3://bucket/`, as written (may be empty). */
  key: string;
  /** `key` without its trailing slashes, then `/` unless empty: the folder's prefix. */
  prefix: string;
}

/**
 * The one parser of `s3://` locations (the table's path, the history folder, the state file):
 * undefined for anything else (a local path), so a caller tells a missing key from a local path.
 */
export function parseS3Location(location: string): ParsedS3Location | undefined {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(location);
  if (!m) return undefined;
  const key = m[2]!;
  const folder = key.replace(/\/+$/, '');
  return { bucket: m[1]!, key, prefix: folder ? `${folder}/` : '' };
}

/**
 * The S3 client for a sink's options (the state's: defaults): endpoint and checksum mode for S3-compatible servers.
 * Asynchronous because it loads the AWS SDK on first use (s3-sdk.ts).
 */
export async function createS3Client(
  options: S3ClientOptions,
  env: S3Env = process.env,
  feature: S3Feature = 's3-sink',
): Promise<S3Client> {
  const { s3 } = await loadS3Sdk(feature);
  return new s3.S3Client(s3ClientConfig(options, env));
}

/** The client settings of the s3 sink's options (endpoint, region, path style, checksums, attempts). */
export interface S3ClientOptions {
  endpoint?: string | undefined;
  region?: string | undefined;
  forcePathStyle?: boolean | undefined;
  checksums?: 'when-supported' | 'when-required' | undefined;
  maxAttempts?: number | undefined;
}

export function s3ClientConfig(options: S3ClientOptions, env: S3Env): S3ClientConfig {
  const endpoint = options.endpoint ?? (env.S3_ENDPOINT || undefined);
  const custom = endpoint !== undefined;
  const mode =
    (options.checksums ?? (custom ? 'when-required' : 'when-supported')) === 'when-required'
      ? 'WHEN_REQUIRED'
      : 'WHEN_SUPPORTED';
  const region = options.region ?? (custom && !env.AWS_REGION && !env.AWS_DEFAULT_REGION ? 'us-east-1' : undefined);
  const config: S3ClientConfig = {
    forcePathStyle: options.forcePathStyle ?? custom,
    requestChecksumCalculation: mode,
    responseChecksumValidation: mode,
    maxAttempts: options.maxAttempts,
    requestHandler: { connectionTimeout: 10_000, requestTimeout: 120_000 },
  };
  if (endpoint) config.endpoint = endpoint;
  if (region) config.region = region;
  return config;
}

const AUTH_ERRORS = new Set([
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'ExpiredToken',
  'InvalidToken',
  'CredentialsProviderError',
]);

/** A SinkError naming the object and the S3 error, with a hint for the usual causes. */
export function s3Error(err: unknown, action: string, location: string): SinkError {
  if (err instanceof SinkError) return err;
  const e = err as Partial<S3ServiceException> & Error;
  const name = e?.name ?? 'Error';
  const status = e?.$metadata?.httpStatusCode;
  const detail = `${name}${status ? ` (HTTP ${status})` : ''}: ${e?.message ?? String(err)}`;
  if (AUTH_ERRORS.has(name) || status === 403) {
    return new SinkError(
      `S3 rejected the credentials to ${action} ${location}: ${detail}; check the AWS credentials (AWS_ACCESS_KEY_ID, AWS_PROFILE, role)`,
      {
        code: 'sink.s3.auth',
        cause: err,
      },
    );
  }
  if (name === 'NoSuchBucket') {
    return new SinkError(`cannot ${action} ${location}: the bucket does not exist`, {
      code: 'sink.s3.bucket',
      cause: err,
    });
  }
  return new SinkError(`cannot ${action} ${location}: ${detail}`, { code: 'sink.s3.upload', cause: err });
}

/** The HTTP status of an S3 error, if it has one. */
export function s3Status(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
}

/** Whether an S3 error says the object does not exist. */
export function isS3NotFound(err: unknown): boolean {
  const name = (err as { name?: string } | undefined)?.name;
  return name === 'NoSuchKey' || name === 'NotFound' || s3Status(err) === 404;
}
