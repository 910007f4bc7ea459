// AWS Signature Version 4 for the Iceberg REST catalog: what Glue's Iceberg REST endpoint
// (signing name `glue`) and S3 Tables' (`s3tables`) require instead of OAuth2. Every request is
// signed, each attempt again (the signature covers x-amz-date), as pyiceberg's SigV4Adapter and
// the Java client's RESTSigV4Signer do:
// - the signer is the AWS SDK's own (@smithy/signature-v4); credentials come from the SDK's
//   default chain (@aws-sdk/credential-provider-node: environment, profile, SSO, web identity,
//   container and instance roles), refreshed by the chain when they expire;
// - `x-amz-content-sha256` carries the body's SHA-256 on every request, the empty body's included
//   (AWS services that check the payload read it from there);
// - a header the signature would replace (an `authorization` from the catalog's `header.*` config
//   or the options) is sent as `original-authorization`, as both reference clients do.
//
// Both packages are optional peer dependencies, like the S3 SDK (storage/s3-sdk.ts): loaded on
// the first signed request, and a clear `dependency.missing.iceberg-sigv4` when absent.
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import type { SignatureV4 } from '@smithy/signature-v4';
import { MissingDependencyError, SinkError } from '../../../errors.js';

/** AWS credentials as the SDK's providers return them. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
  expiration?: Date | undefined;
}

export interface SigV4Options {
  /** The region of the endpoint (`eu-west-1`). */
  region: string;
  /** The signing name: `glue` for Glue's Iceberg REST endpoint, `s3tables` for S3 Tables' own. */
  service: string;
  /** Credentials or a provider of them; default the SDK's default chain. */
  credentials?: AwsCredentials | (() => Promise<AwsCredentials>);
}

export const SIGV4_FEATURE = 'iceberg-sigv4';
export const SIGV4_PACKAGES = ['@smithy/signature-v4', '@aws-sdk/credential-provider-node'] as const;

interface SigV4Sdk {
  SignatureV4: typeof SignatureV4;
  defaultProvider: () => () => Promise<AwsCredentials>;
}

/** How the packages are imported; a test replaces it to see the error of a missing package. */
export type Importer = (specifier: string) => Promise<unknown>;

// Literal specifiers, so bundlers and test/docs/dependencies.test.ts see both packages.
const importModule: Importer = (specifier) =>
  specifier === '@smithy/signature-v4' ? import('@smithy/signature-v4') : import('@aws-sdk/credential-provider-node');

export async function loadSigV4Sdk(importer: Importer = importModule): Promise<SigV4Sdk> {
  try {
    const [signer, provider] = (await Promise.all(SIGV4_PACKAGES.map((p) => importer(p)))) as [
      { SignatureV4: typeof SignatureV4 },
      { defaultProvider: SigV4Sdk['defaultProvider'] },
    ];
    return { SignatureV4: signer.SignatureV4, defaultProvider: provider.defaultProvider };
  } catch (err) {
    const e = err as NodeJS.ErrnoException | undefined;
    const missing =
      (e?.code === 'ERR_MODULE_NOT_FOUND' || e?.code === 'MODULE_NOT_FOUND') &&
      SIGV4_PACKAGES.some((p) => String(e.message).includes(p));
    if (!missing) throw err;
    throw new MissingDependencyError(
      SIGV4_FEATURE,
      SIGV4_PACKAGES,
      `the Iceberg REST catalog option auth: sigv4 needs the AWS SDK's signer and credential chain (${SIGV4_PACKAGES.join(', ')}), optional peer dependencies of catalog-streams that are not installed`,
      { cause: err },
    );
  }
}

/** A request about to be sent; `path` is as sent (url-encoded), `query` decoded. */
export interface SignableRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
}

export class SigV4Signer {
  readonly #options: SigV4Options;
  readonly #importer: Importer;
  #signer: Promise<SignatureV4> | undefined;

  constructor(options: SigV4Options, importer: Importer = importModule) {
    this.#options = options;
    this.#importer = importer;
  }

  get description(): string {
    return `AWS SigV4 (signing name ${this.#options.service}, region ${this.#options.region})`;
  }

  /**
   * The headers to send: the request's, with host, x-amz-date, x-amz-content-sha256, the session
   * token and authorization. `reveal` receives each secret before it can appear anywhere, for the
   * caller's redactor.
   */
  async sign(request: SignableRequest, reveal: (secret: string | undefined) => void): Promise<Record<string, string>> {
    const signer = await this.#ready(reveal);
    const url = new URL(request.url);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      const lower = name.toLowerCase();
      headers[lower === 'authorization' ? 'original-authorization' : lower] = value;
    }
    headers.host = url.host;
    headers['x-amz-content-sha256'] = createHash('sha256')
      .update(request.body ?? '')
      .digest('hex');
    const query: Record<string, string | string[]> = {};
    for (const [key, value] of url.searchParams) {
      const had = query[key];
      query[key] = had === undefined ? value : [...(Array.isArray(had) ? had : [had]), value];
    }
    let signed;
    try {
      signed = await signer.sign({
        method: request.method,
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port ? { port: Number(url.port) } : {}),
        path: url.pathname,
        query,
        headers,
        ...(request.body === undefined ? {} : { body: request.body }),
      });
    } catch (err) {
      // Nothing was sent: the credentials could not be had (or were malformed).
      throw new SinkError(describeCredentialFailure(err), { code: 'iceberg.rest_auth', cause: err });
    }
    return signed.headers;
  }

  #ready(reveal: (secret: string | undefined) => void): Promise<SignatureV4> {
    this.#signer ??= this.#make(reveal).catch((err: unknown) => {
      this.#signer = undefined;
      throw err;
    });
    return this.#signer;
  }

  async #make(reveal: (secret: string | undefined) => void): Promise<SignatureV4> {
    const sdk = await loadSigV4Sdk(this.#importer);
    const given = this.#options.credentials;
    const source = typeof given === 'function' ? given : given ? async () => given : sdk.defaultProvider();
    // Every credential the chain hands out is known to the redactor before the signer uses it.
    const credentials = async () => {
      const c = await source();
      reveal(c.secretAccessKey);
      reveal(c.sessionToken);
      return c;
    };
    return new sdk.SignatureV4({
      credentials,
      region: this.#options.region,
      service: this.#options.service,
      sha256: NodeSha256,
      // Non-S3 services sign the path url-encoded once more (the SDK's default, as botocore does).
      uriEscapePath: true,
    });
  }
}

function describeCredentialFailure(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return `no usable AWS credentials for SigV4 (${message}); set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run where a role provides them`;
}

type SourceData = string | ArrayBuffer | ArrayBufferView;

function bytes(data: SourceData): Buffer | string {
  if (typeof data === 'string') return data;
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}

/**
 * SHA-256 and HMAC-SHA-256 in the shape the signer takes (a hash constructor, HMAC when given a
 * secret), from node:crypto: the SDK's own implementations live in packages we would otherwise
 * have to declare as a third peer.
 */
class NodeSha256 {
  readonly #secret: SourceData | undefined;
  #hash: Hash | Hmac;

  constructor(secret?: SourceData) {
    this.#secret = secret;
    this.#hash = this.#fresh();
  }

  update(data: SourceData): void {
    this.#hash.update(bytes(data));
  }

  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.#hash.digest()));
  }

  reset(): void {
    this.#hash = this.#fresh();
  }

  #fresh(): Hash | Hmac {
    return this.#secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(this.#secret));
  }
}
