// The table sink's `catalog:` option (format: iceberg): which catalog commits the two tables.
// Without it the tables are files only, their `metadata/version-hint.text` the commit point;
// with `type: rest` an Iceberg REST catalog (Polaris, Lakekeeper, Nessie, S3 Tables, Glue's
// Iceberg REST endpoint) holds the pointer and commits both tables in one transaction.
// Secrets come from the environment, never from the pipeline file.
import path from 'node:path';
import { z } from 'zod';
import type { StageContext } from '../../core/stage.js';
import { FilesCatalog } from './iceberg/files-catalog.js';
import type { IcebergCatalog } from './iceberg/iceberg-catalog.js';
import { RestCatalog } from './iceberg/rest-catalog.js';

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
  });
}
