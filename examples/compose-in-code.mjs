// Composing stages in code: the same sources, transforms and sinks as the
// pipeline files, as typed factories joined with stream.pipeline, plus a map()
// of your own. Run it against the sandbox:
//
//   npx catalog-streams sandbox --port 8787 &      # prints the exports below
//   export CATALOG_BASE_URL=http://127.0.0.1:8787 CATALOG_API_KEY=sandbox-key CATALOG_API_SECRET=sandbox-secret
//   npm run build && node examples/compose-in-code.mjs out/compose/active-products.parquet
//
// In your own project you write `from 'catalog-streams'`; inside this
// repository the package name does not resolve, so it imports the build.
import { pipeline } from 'node:stream/promises';
import {
  CatalogClient,
  flattenLocales,
  map,
  normalizeCodes,
  parquetSink,
  productsQuery,
  validate,
} from '../dist/src/index.js';

const output = process.argv[2] ?? 'out/compose/active-products.parquet';
const brandName = (name) => (typeof name === 'string' ? name : (name?.en ?? Object.values(name ?? {})[0] ?? null));

// One client: the HTTP pool, Basic auth, the rate limiter and retries, from
// CATALOG_BASE_URL, CATALOG_API_KEY, CATALOG_API_SECRET; the budget is 100
// requests per minute unless CATALOG_RATE_LIMIT says more (0: no limit).
const perMinute = Number(process.env.CATALOG_RATE_LIMIT || 100);
const client = CatalogClient.fromEnv(process.env, { rateLimit: perMinute === 0 ? Infinity : perMinute });
// Ctrl-C stops the source and discards the half-written file.
const controller = new AbortController();
process.once('SIGINT', () => controller.abort());

try {
  await pipeline(
    productsQuery(client, { filter: { status: 'active' }, sorting: { id: 'ASC' } }),
    validate({ resource: 'product', onInvalid: 'skip' }),
    flattenLocales({ resource: 'product', fields: ['name'], fallback: ['en', 'nl', 'fr', 'de'] }),
    normalizeCodes({ resource: 'product' }),
    // Your own stage: any function of a record (return null to drop it).
    map((p) => ({
      id: p.id,
      name: p.name,
      // One code, or (one client) a list of them: a list does not fit the string column and is
      // kept whole in _extra, never cut to its first code.
      ean13: p.eanGtin13 ?? null,
      // The live service sends embedded brand names as plain strings; the spec shows localized ones.
      brand: brandName(p.brands?.[0]?.name),
      publicPrice: p.publicPrice ?? null,
      updatedAt: p.meta.updatedAt,
    })),
    // The stages before the map declare their records' schema, and the sink finds it through the
    // chain. A map declares nothing, so the sink decides its columns from the first 1,000 records:
    // a field named as in the product schema (id, name, publicPrice) keeps its declared type, a
    // field named like a timestamp holding unix seconds (updatedAt) is a TIMESTAMP, the others are
    // typed by their values. Give `columns: {...}` (or `schemaHint`) to fix a type yourself.
    // snake_case column names (public_price, updated_at): what lake engines and SQL expect.
    parquetSink({ path: output, columnNames: 'snake_case' }),
    { signal: controller.signal },
  );
  console.error(`wrote ${output}`);
} finally {
  await client.close();
}
