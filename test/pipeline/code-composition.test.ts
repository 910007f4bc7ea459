// Composing built-in stages in code with stream.pipeline: the records' schema travels to the sink
// without a hint (each factory marks its stream with its planned stage; the sink walks the chain
// when it is piped), a map that declares nothing gets columns inferred from the records, and the
// plan made from the streams is the plan the loader makes of the same stages in a file.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Product } from '../../src/catalog/resources/index.js';
import { CatalogClient } from '../../src/client/catalog-client.js';
import {
  csvSink,
  flattenLocales,
  jsonlSink,
  map,
  normalizeCodes,
  parquetSink,
  planFromStreams,
  productsQuery,
  validate,
} from '../../src/index.js';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import type { PlannedStage } from '../../src/core/planned-stage.js';
import type { PipelinePlan } from '../../src/pipeline/plan.js';
import { SAMPLE_RECORDS } from '../../src/sinks/shared/inferred-schema.js';
import { columnSchemaFor } from '../../src/sinks/parquet/parquet-encoding.js';
import { duckdbQuery, parquetColumnTypes, sqlString } from '../helpers/duckdb.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let sandbox: TestSandbox;
let dir: string;
const clients: CatalogClient[] = [];

beforeAll(async () => {
  sandbox = await startTestSandbox({ products: 1500 });
  dir = await mkdtemp(join(tmpdir(), 'code-composition-'));
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await sandbox?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function client(): CatalogClient {
  const c = new CatalogClient({ baseUrl: sandbox.url, ...sandbox.credentials, rateLimit: Infinity });
  clients.push(c);
  return c;
}

/** The README's chain, as a user writes it: no columns, no schemaHint. */
function readmeStages(out: string) {
  return [
    productsQuery(client(), { filter: { status: 'active' }, sorting: { id: 'ASC' } }),
    validate({ resource: 'product', onInvalid: 'skip' }),
    flattenLocales({ resource: 'product', fields: ['name'], fallback: ['en', 'nl', 'fr', 'de'] }),
    normalizeCodes({ resource: 'product' }),
    parquetSink({ path: out }),
  ] as const;
}

describe('the schema travels through stream.pipeline', () => {
  it('a chain of built-in stages writes the columns its plan declares (read back by DuckDB)', async () => {
    const out = join(dir, 'declared.parquet');
    const stages = readmeStages(out);
    const plan = planFromStreams(stages);
    await pipeline(...stages);
    const types = await parquetColumnTypes(out);
    const expected = columnSchemaFor(plan.recordSchema, { nested: 'native', lists: 'native' } as never, new Set());
    expect(Object.keys(types)).toEqual(expected.columns.map((c) => c.name));
    // flatten-locales made `name` a string; the resource declares prices as integers and codes as strings.
    expect(types.name).toBe('VARCHAR');
    expect(types.id).toBe('VARCHAR');
    const { rows } = await duckdbQuery(
      `SELECT count(*) AS n, count(DISTINCT id) AS ids FROM read_parquet(${sqlString(out)})`,
    );
    expect(Number(rows[0]!.n)).toBeGreaterThan(0);
    expect(rows[0]!.n).toBe(rows[0]!.ids);
  });

  it("csvSink's own example: pipeline(productsQuery(...), csvSink({path})) writes the product columns", async () => {
    const out = join(dir, 'products.csv');
    const source = productsQuery(client(), { filter: { status: 'active' } });
    await pipeline(source, csvSink({ path: out }));
    const header = (await readFile(out, 'utf8')).split('\n')[0]!.split(',');
    expect(header).toContain('id');
    expect(header).toContain('publicPrice');
    expect(header).not.toEqual(['_extra']);
  });

  it('a map that declares nothing: columns inferred from the records, same-named fields keep their declared type, a late field goes to _extra', async () => {
    const out = join(dir, 'mapped.parquet');
    let seen = 0;
    const sink = parquetSink({ path: out });
    await pipeline(
      productsQuery(client(), { filter: { status: 'active' }, sorting: { id: 'ASC' } }),
      map((p: Product) => {
        seen++;
        return {
          id: p.id,
          // Declared upstream (a price in minor units), so it keeps that type even when null in the sample.
          publicPrice: p.publicPrice ?? null,
          brandCount: Array.isArray(p.brands) ? p.brands.length : 0,
          isActive: p.status === 'active',
          updatedAt: p.meta.updatedAt,
          ...(seen > SAMPLE_RECORDS ? { late: 'after the sample' } : {}),
        };
      }),
      sink,
    );
    const types = await parquetColumnTypes(out);
    expect(types).toMatchObject({
      id: 'VARCHAR',
      publicPrice: 'BIGINT',
      brandCount: 'BIGINT',
      isActive: 'BOOLEAN',
      // The Parquet sink's timestampFields: a field named like a timestamp holding unix seconds.
      updatedAt: 'TIMESTAMP WITH TIME ZONE',
    });
    expect(types.late).toBeUndefined();
    const { rows } = await duckdbQuery(
      `SELECT count(*) AS n, count(_extra) AS extra, count(*) FILTER (WHERE isActive) AS active FROM read_parquet(${sqlString(out)})`,
    );
    expect(Number(rows[0]!.n)).toBe(seen);
    expect(seen).toBeGreaterThan(SAMPLE_RECORDS);
    expect(Number(rows[0]!.extra)).toBe(seen - SAMPLE_RECORDS);
    expect(Number(rows[0]!.active)).toBe(seen);
  });

  it("a Transform of the caller's hides what flows in: a CSV sink infers its columns, a JSON Lines sink needs none", async () => {
    const passthrough = () => new Transform({ objectMode: true, transform: (r, _e, cb) => cb(null, r) });
    const csv = join(dir, 'foreign.csv');
    const jsonl = join(dir, 'foreign.jsonl');
    await pipeline(productsQuery(client(), { filter: { status: 'active' } }), passthrough(), csvSink({ path: csv }));
    await pipeline(
      productsQuery(client(), { filter: { status: 'active' } }),
      passthrough(),
      jsonlSink({ path: jsonl }),
    );
    const [header, ...rows] = (await readFile(csv, 'utf8')).trim().split('\n');
    expect(header!.split(',')).toEqual(expect.arrayContaining(['id', 'status', 'publicPrice']));
    const records = (await readFile(jsonl, 'utf8')).trim().split('\n');
    expect(rows.length).toBe(records.length);
    expect(records.length).toBeGreaterThan(0);
  });
});

describe('one plan, written two ways', () => {
  const yaml = (out: string) => `
name: active-products
source:
  type: products.query
  filter: { status: active }
  sorting: { id: ASC }
transforms:
  - type: validate
    resource: product
    onInvalid: skip
  - type: flatten-locales
    resource: product
    fields: [name]
    fallback: [en, nl, fr, de]
  - type: normalize-codes
    resource: product
sinks:
  - type: parquet
    path: ${out}
`;

  /** What a plan says, without where it was written (a file position, `<code>`). */
  function essentials(plan: PipelinePlan) {
    const stage = (s: PlannedStage) => ({ kind: s.kind, type: s.type, options: s.options, at: s.at });
    return {
      source: stage(plan.source),
      transforms: plan.transforms.map(stage),
      sinks: plan.sinks.map(stage),
      schemas: plan.schemas,
      recordSchema: plan.recordSchema,
      schemaDeclared: plan.schemaDeclared,
      endpoint: plan.endpoint,
      outputs: plan.outputs,
    };
  }

  it('the loader and planFromStreams build the same plan', () => {
    const out = join(dir, 'same.parquet');
    const [fromFile] = parsePipelines(yaml(out), createRegistry(), { env: {} });
    const fromCode = planFromStreams(readmeStages(out), { name: 'active-products' });
    expect(essentials(fromCode)).toEqual(essentials(fromFile!.plan));
    expect(fromFile!.plan.transforms[1]!.position).toMatchObject({ line: 11 });
    expect(fromCode.transforms[1]!.position).toBeUndefined();
    expect(fromFile!.plan.recordSchema.fields.find((f) => f.name === 'name')?.type.kind).toBe('string');
  });
});
