// The table sink's `catalog:` option (format: iceberg): which catalog commits the two tables.
// Without it the tables are files only, their `metadata/version-hint.text` the commit point;
// with `type: rest` an Iceberg REST catalog (Polaris, Lakekeeper, Nessie, S3 Tables, Glue's
// Iceberg REST endpoint) holds the pointer and commits both tables in one transaction.
// Secrets come from the environment, never from the pipeline file. `auth: sigv4` signs every request
// with AWS SigV4 and the AWS SDK's default credential chain instead (Glue, S3 Tables), with
// pyiceberg's `rest.signing-region` and `rest.signing-name` as `signingRegion` and `signingName`.
import path from 'node:path';
import { z } from 'zod';
import { SinkError } from '../../errors.js';
import type { StageContext } from '../../core/stage.js';
import { FilesCatalog } from './iceberg/files-catalog.js';
import type { IcebergCatalog } from './iceberg/iceberg-catalog.js';
import { RestCatalog } from './iceberg/rest-catalog.js';
import { SIGV4_PACKAGES, type SigV4Options } from './iceberg/sigv4-signer.js';

export const ICEBERG_REST_CREDENTIAL_ENV = 'ICEBERG_REST_CREDENTIAL';
export const ICEBERG_REST_TOKEN_ENV = 'ICEBERG_REST_TOKEN';

export const icebergCatalogOption = z
  .strictObject({
    type: z.literal('rest').describe('rest: an Iceberg REST catalog (the only kind besides none)'),
    uri: z.url().describe("The catalog's base URI, without /v1 (https://polaris.example.com/api/catalog)"),
    warehouse: z
      .string()
      .min(1)
      .optional()
      .describe('The warehouse the catalog serves the tables from (sent to /v1/config), e.g. an S3 Tables bucket ARN'),
    namespace: z
      .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
      .describe('The namespace of both tables: a name, or its levels as a list ([lake, catalog]); created when absent'),
    oauth2ServerUri: z
      .url()
      .optional()
      .describe(
        "The OAuth2 token endpoint, when it is not on the catalog's host (https, or a loopback address); default: the catalog config's oauth2-server-uri or {uri}/v1/oauth/tokens, on the catalog's host only",
      ),
    auth: z
      .enum(['oauth2', 'sigv4'])
      .default('oauth2')
      .describe(
        `How requests authenticate: oauth2 (a credential or token from the environment, or none) or sigv4 (AWS Signature V4 with the AWS SDK's credential chain: Glue's Iceberg REST endpoint, S3 Tables; needs npm install ${SIGV4_PACKAGES.join(' ')})`,
      ),
    signingRegion: z
      .string()
      .regex(/^[a-z0-9-]+$/, 'an AWS region such as eu-west-1')
      .optional()
      .describe(
        "auth: sigv4: the region to sign for; default AWS_REGION, else AWS_DEFAULT_REGION, else the uri's (glue.<region>.amazonaws.com)",
      ),
    signingName: z
      .string()
      .min(1)
      .optional()
      .describe(
        "auth: sigv4: the service's signing name: glue (default, Glue's Iceberg REST endpoint) or s3tables (S3 Tables' own endpoint)",
      ),
    tables: z
      .strictObject({
        current: z.string().min(1).optional().describe("The current table's name; default: the path's last folder"),
        changes: z
          .string()
          .min(1)
          .optional()
          .describe("The change table's name; default: the path's last folder with _changes"),
      })
      .optional()
      .describe('Table names in the catalog'),
  })
  .describe(
    `format: iceberg: commit through an Iceberg REST catalog; credentials from env ${ICEBERG_REST_CREDENTIAL_ENV} (client_id:client_secret, OAuth2) or ${ICEBERG_REST_TOKEN_ENV} (a bearer token). Default: no catalog, each table's metadata/version-hint.text is the commit point`,
  );

export type IcebergCatalogOption = z.output<typeof icebergCatalogOption>;

/** The catalog a table sink with format: iceberg commits through. */
export function icebergCatalog(
  config: { path: string; catalog?: IcebergCatalogOption | undefined },
  ctx: Pick<StageContext, 'env'>,
): IcebergCatalog {
  const option = config.catalog;
  if (!option) return new FilesCatalog();
  const env = ctx.env ?? process.env;
  const base = path.posix.basename(config.path.replace(/\/+$/, '')) || 'products';
  const credential = env[ICEBERG_REST_CREDENTIAL_ENV];
  const token = env[ICEBERG_REST_TOKEN_ENV];
  return new RestCatalog({
    uri: option.uri,
    ...(option.warehouse ? { warehouse: option.warehouse } : {}),
    namespace: typeof option.namespace === 'string' ? [option.namespace] : option.namespace,
    tables: {
      current: option.tables?.current ?? base,
      changes: option.tables?.changes ?? `${base}_changes`,
    },
    ...(option.oauth2ServerUri ? { oauth2ServerUri: option.oauth2ServerUri } : {}),
    ...(credential ? { credential } : {}),
    ...(token ? { token } : {}),
    ...(option.auth === 'sigv4' ? { sigv4: sigv4Options(option, env) } : {}),
  });
}

/** The signing region and name; the region from the options, the environment or the endpoint's host. */
function sigv4Options(option: IcebergCatalogOption, env: Record<string, string | undefined>): SigV4Options {
  const fromHost = /^[a-z0-9]+[.-](?:fips[.-])?([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com/.exec(
    new URL(option.uri).hostname,
  )?.[1];
  const region = option.signingRegion ?? (env.AWS_REGION || env.AWS_DEFAULT_REGION || fromHost);
  if (!region)
    throw new SinkError(
      `catalog.auth: sigv4 needs the region to sign for: set catalog.signingRegion (e.g. eu-west-1) or AWS_REGION; ${option.uri} does not name one`,
      { code: 'iceberg.rest_request' },
    );
  return { region, service: option.signingName ?? 'glue' };
}
