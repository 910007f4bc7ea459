// The lake contract over several days (issue 12): one pipeline file run on
// different days (the run clock), over different subsets of the sandbox (status
// filters), one day with minimal records (only integer weights, no sparse fields),
// one with the live service's shapes (float weights, codes as digit strings or
// integers, a regional code, plain-string brand names, a field no schema declares,
// and issue 24's zero-led hsCode as a string or an integer and a decimal deprecated weight),
// one as the sandbox serves it. Then DuckDB reads the whole dataset with a plain
// read_parquet('.../dt=*/*.parquet') (no union_by_name): the same parquet_schema in
// every file, exact counts per day, and the values the runs were given.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { runPipeline } from '../../src/pipeline/runner.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { tempDir } from '../sinks/records.js';

// Turns sandbox products into the shapes of a day; the test applies the same function to compute what it expects.
const SHAPER = `
export default function shape(p, ctx) {
  const n = Number(String(p.id).replace(/\\D/g, '')) || 0;
  if (ctx.options.mode === 'minimal') {
    const out = { id: p.id, status: p.status, name: p.name, meta: p.meta };
    if (p.eanGtin13 !== undefined) out.eanGtin13 = p.eanGtin13;
    out.weightWithUnit = { value: n % 900, unit: 'g' };
    return out;
  }
  if (ctx.options.mode === 'live') {
    return {
      ...p,
      weightWithUnit: { value: (n % 500) + 0.37, unit: 'kg' },
      eanGtin13: p.eanGtin13 === undefined ? undefined : String(p.eanGtin13).padStart(13, '0'),
      cnk: n % 100000,
      hsCode: n % 2 ? '030211' : 30211,
      weight: (n % 50) + 0.5,
      brands: (p.brands ?? []).map((b) => ({ ...b, name: typeof b.name === 'object' && b.name ? Object.values(b.name)[0] : b.name })),
      regionalNote: 'note ' + n,
    };
  }
  return p;
}
`;

const PIPELINE = (mode: string, statuses: string[]) => `name: lake-days
source:
  type: products.query
  filter: { status: [${statuses.join(', ')}] }
  sorting: { id: ASC }
transforms:
  - { type: custom, module: ./shaper.mjs, kind: map, options: { mode: ${mode} }, columns: {} }
  - { type: validate, onInvalid: fail }
  - { type: flatten-locales, locales: [en, nl], fallback: [en, nl, fr, de] }
  - { type: select-media-format, formats: [largeWebp, large], keepOriginal: false }
  - { type: normalize-codes }
  - { type: drop, fields: [descriptions, leaflets, links] }
sinks:
  - { type: parquet, path: "lake/dt={date}/products-{run}.parquet", rowGroupRows: 100 }
`;

const DAYS = [
  { date: '2026-03-01', mode: 'minimal', statuses: ['active'] },
  { date: '2026-03-02', mode: 'live', statuses: ['replaced', 'inactive'] },
  { date: '2026-03-03', mode: 'none', statuses: ['active', 'replaced', 'inactive'] },
];

describe('the lake contract across days', () => {
  let sandbox: TestSandbox;
  beforeAll(async () => {
    sandbox = await startTestSandbox({ products: 700, seed: 12 });
  });
  afterAll(async () => {
    await sandbox?.close();
  });

  async function products(statuses: string[]): Promise<Array<Record<string, any>>> {
    const out: Array<Record<string, any>> = [];
    for (let no = 0; ; no++) {
      const { results } = await sandbox.query('/v4/products/query', {
        filter: { status: statuses },
        sorting: { id: 'ASC' },
        page: { no, size: 250 },
      });
      out.push(...(results as Array<Record<string, any>>));
      if (results.length < 250) return out;
    }
  }

  it('every file has the same Parquet schema; a plain glob reads every day with exact counts and values', async () => {
    const dir = await tempDir('lake-days-');
    await writeFile(join(dir, 'shaper.mjs'), SHAPER);
    const shape = (
      (await import(pathToFileURL(join(dir, 'shaper.mjs')).href)) as {
        default: (p: object, ctx: object) => Record<string, any>;
      }
    ).default;
    const registry = createRegistry();
    const connection = {
      baseUrl: sandbox.url,
      apiKey: sandbox.credentials.apiKey,
      apiSecret: sandbox.credentials.apiSecret,
    };
    const expected = new Map<string, Array<Record<string, any>>>();
    const warnings: string[] = [];
    for (const day of DAYS) {
      const [loaded] = parsePipelines(PIPELINE(day.mode, day.statuses), registry, {
        file: join(dir, `${day.mode}.yml`),
      });
      const summary = await runPipeline(loaded!, {
        registry,
        connection,
        now: () => new Date(`${day.date}T02:00:00Z`),
      });
      warnings.push(...summary.warnings);
      const given = (await products(day.statuses)).map((p) => shape(p, { options: { mode: day.mode } }));
      expect(summary.records.written.parquet).toBe(given.length);
      expected.set(day.date, given);
    }
    expect([...expected.values()].every((list) => list.length > 0)).toBe(true);
    const glob = sqlString(join(dir, 'lake/dt=*/*.parquet'));

    // The same schema in every file, whatever the day held.
    const schemas = await duckdbQuery(
      `SELECT file_name, string_agg(concat_ws(':', name, type, converted_type, logical_type, repetition_type), ',') AS s FROM parquet_schema(${glob}) GROUP BY file_name`,
    );
    expect(schemas.rows).toHaveLength(3);
    expect(new Set(schemas.rows.map((r) => r.s)).size).toBe(1);
    const hashes = await duckdbQuery(
      `SELECT DISTINCT decode(value) AS h FROM parquet_kv_metadata(${glob}) WHERE decode(key) = 'catalog-streams.schema-hash'`,
    );
    expect(hashes.rows).toHaveLength(1);

    // A plain glob, no union_by_name: counts per day.
    const counts = await duckdbQuery(
      `SELECT dt::VARCHAR AS dt, count(*) AS n FROM read_parquet(${glob}) GROUP BY dt ORDER BY dt`,
    );
    expect(counts.rows).toEqual(DAYS.map((d) => ({ dt: d.date, n: BigInt(expected.get(d.date)!.length) })));

    // Values: codes padded (from integers and from digit strings), float and integer weights in one DOUBLE
    // column, the regional code, plain-string brand names in the locale columns, the undeclared field in _extra.
    const { rows, types } = await duckdbQuery(
      `SELECT dt::VARCHAR AS dt, id, eanGtin13, weightWithUnit_value AS weight, cnk, brands[1].name_en AS brand,
              hsCode, weight AS grams,
              json_extract_string(_extra, '$.regionalNote') AS note, name_en
       FROM read_parquet(${glob}) ORDER BY dt, id`,
    );
    // Issue 24: hsCode a code (VARCHAR with its zero, from a string or an integer), weight a DOUBLE.
    expect(types).toMatchObject({
      eanGtin13: 'VARCHAR',
      weight: 'DOUBLE',
      cnk: 'VARCHAR',
      hsCode: 'VARCHAR',
      grams: 'DOUBLE',
    });
    const want = DAYS.flatMap((d) =>
      expected.get(d.date)!.map((p) => {
        const brand = p.brands?.[0]?.name;
        return {
          dt: d.date,
          id: p.id,
          eanGtin13: p.eanGtin13 === undefined ? null : String(p.eanGtin13).padStart(13, '0'),
          weight: p.weightWithUnit?.value ?? null,
          cnk: p.cnk === undefined ? null : String(p.cnk).padStart(7, '0'),
          brand: brand === undefined ? null : typeof brand === 'string' ? brand : (brand.en ?? null),
          hsCode: p.hsCode === undefined ? null : String(p.hsCode).padStart(6, '0'),
          grams: p.weight ?? null,
          note: p.regionalNote ?? null,
          name_en: p.name?.en ?? null,
        };
      }),
    );
    expect(rows).toEqual(want);
    // Some codes really start with zeros, and the live day really had float weights.
    expect(rows.some((r) => String(r.eanGtin13).startsWith('00'))).toBe(true);
    expect(rows.filter((r) => r.dt === '2026-03-02').every((r) => !Number.isInteger(r.weight))).toBe(true);
    expect(rows.filter((r) => r.dt === '2026-03-02').every((r) => r.hsCode === '030211')).toBe(true);
    expect(rows.filter((r) => r.dt === '2026-03-02').every((r) => !Number.isInteger(r.grams))).toBe(true);
    // The run summary names the field it kept in _extra, so a user can promote it.
    expect(
      warnings.some((w) => /field "regionalNote" \(string "note \d+"\) is not in the Parquet schema/.test(w)),
    ).toBe(true);
  }, 120_000);
});
