// The csv format: RFC 4180 text a reader gets back exactly (quotes, delimiters, line breaks,
// empty strings apart from nulls), the lake contract's columns whatever the data, codes with their
// leading zeros, and the same records as the jsonl sink of the same run against every sandbox profile.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { runPipeline } from '../../src/pipeline/runner.js';
import { SANDBOX_PROFILES } from '../../src/sandbox/profiles.js';
import { csvSink, type CsvSinkOptions } from '../../src/sinks/index.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { testContext } from '../helpers/stage-context.js';
import { PRODUCT_HINT, productRecord, productRecords, randomBatches, tempDir } from './records.js';

/**
 * Every column as text, as the file holds it (no type guessing between us and the bytes); `""` is an empty
 * string and an empty field a null, as in PostgreSQL's COPY ... CSV.
 */
const readCsv = (file: string, options = '') =>
  duckdbQuery(
    `SELECT * FROM read_csv(${sqlString(file)}, all_varchar = true, header = true, allow_quoted_nulls = false${options})`,
  );

const TRICKY = [
  'plain',
  'a, comma',
  'a "quoted" word',
  'two\r\nlines',
  'one\nline feed',
  '  spaces kept  ',
  '',
  'Δ8-THC 大麻 ✓',
  '"',
  ',',
];

function productSink(options: CsvSinkOptions, ctx?: ReturnType<typeof testContext>) {
  return csvSink({ schemaHint: PRODUCT_HINT, ...options }, ctx);
}

describe('csv sink', () => {
  it('writes the contract columns; DuckDB reads every value back exactly, quotes and line breaks included', async () => {
    const dir = await tempDir();
    const file = join(dir, 'products.csv');
    const records = [...productRecords(3000)].map((r, i) => ({
      ...r,
      name: { en: `${TRICKY[i % TRICKY.length]!}`, nl: i % 4 === 0 ? null : `Druppels ${i}` },
      ...(i === 2500 ? { regionalCode: '0042' } : {}),
    }));
    const ctx = testContext();
    const warnings: string[] = [];
    ctx.events.on('warning', (w) => warnings.push(w.code));
    const sink = productSink({ path: file }, ctx);
    await pipeline(randomBatches(records, 97), sink);

    const text = await readFile(file, 'utf8');
    expect(text.split('\r\n')[0]).toBe(
      'id,status,name_en,name_nl,eanGtin13,ean,publicPrice,vat,requiresLegalText,isANutritionSupplement,atcCategory,meta_createdAt,meta_updatedAt,serial,_extra',
    );
    expect(sink.outputs).toEqual([
      { kind: 'file', location: file, rows: 3000, bytes: Buffer.byteLength(text), sink: 'csv' },
    ]);
    expect(warnings).toEqual(['sink.csv.extra']);

    const { rows } = await readCsv(file);
    expect(rows).toHaveLength(records.length);
    rows.forEach((row, i) => {
      const r = records[i]!;
      expect(row).toEqual({
        id: r.id,
        status: r.status,
        name_en: r.name.en,
        name_nl: r.name.nl,
        eanGtin13: r.eanGtin13,
        ean: JSON.stringify(r.ean),
        publicPrice: String(r.publicPrice),
        vat: String(r.vat),
        requiresLegalText: String(r.requiresLegalText),
        isANutritionSupplement: r.isANutritionSupplement === null ? null : String(r.isANutritionSupplement),
        atcCategory: r.atcCategory === null ? null : JSON.stringify(r.atcCategory),
        meta_createdAt: new Date(r.meta.createdAt * 1000).toISOString(),
        meta_updatedAt: new Date(r.meta.updatedAt * 1000).toISOString(),
        serial: r.serial.toString(),
        _extra: i === 2500 ? '{"regionalCode":"0042"}' : null,
      });
    });
    // The codes that start with zeros kept them.
    expect(rows.filter((r) => String(r.eanGtin13).startsWith('00')).length).toBe(
      records.filter((r) => r.eanGtin13.startsWith('00')).length,
    );
    expect(records.some((r) => r.eanGtin13.startsWith('00'))).toBe(true);
  });

  it('gzip, tab-delimited, without header, decimal prices; an empty run still writes its header', async () => {
    const dir = await tempDir();
    const file = join(dir, 'products.tsv.gz');
    await pipeline(
      randomBatches(productRecords(500), 40),
      productSink({ path: file, delimiter: 'tab', header: false, prices: 'decimal' }),
    );
    const lines = gunzipSync(await readFile(file))
      .toString('utf8')
      .split('\r\n');
    expect(lines).toHaveLength(501);
    expect(lines[500]).toBe('');
    const first = lines[0]!.split('\t');
    expect(first[0]).toBe('P0000000');
    expect(first[6]).toBe('1.00');
    expect(lines[7]!.split('\t')[6]).toBe(((100 + 7) / 100).toFixed(2));
    const { rows } = await duckdbQuery(
      `SELECT count(*) AS n, sum(column06::DECIMAL(18,2)) AS prices FROM read_csv(${sqlString(file)}, all_varchar = true, header = false, delim = '\t')`,
    );
    const cents = [...productRecords(500)].reduce((n, r) => n + r.publicPrice, 0);
    expect(rows[0]).toEqual({ n: 500n, prices: cents / 100 });

    const empty = join(dir, 'empty.csv');
    await pipeline(randomBatches([], 1), productSink({ path: empty }));
    expect((await readFile(empty, 'utf8')).split('\r\n')).toEqual([expect.stringMatching(/^id,status,/), '']);
  });

  it('in code, records nothing declares get columns from the records themselves', async () => {
    const dir = await tempDir('csv-inferred-');
    const file = join(dir, 'inferred.csv');
    const records = [
      { id: 'a', n: 1, ok: true },
      { id: 'b', n: null, ok: false },
    ];
    await pipeline(Readable.from(records), csvSink({ path: file }, testContext({ baseDir: dir })));
    expect((await readFile(file, 'utf8')).trim().split('\r\n')).toEqual(['id,n,ok,_extra', 'a,1,true,', 'b,,false,']);
    expect(() => csvSink({ path: 'x.csv', schemaHint: z.object({ id: z.string() }) }, testContext())).not.toThrow();
    // a sanity check of the fixture the other cases rely on
    expect(productRecord(0).eanGtin13).toBe('0000000000000');
  });
});

describe('csv sink against the sandbox profiles', () => {
  let sandboxes: Map<string, TestSandbox>;
  beforeAll(async () => {
    sandboxes = new Map();
    for (const profile of SANDBOX_PROFILES)
      sandboxes.set(profile, await startTestSandbox({ products: 400, seed: 5, profile }));
  });
  afterAll(async () => {
    for (const s of sandboxes.values()) await s.close();
  });

  it.each([...SANDBOX_PROFILES])(
    '%s: the same products as the jsonl sink of the same run, codes as digit strings',
    async (profile) => {
      const sandbox = sandboxes.get(profile)!;
      const dir = await tempDir('csv-profile-');
      const registry = createRegistry();
      const [loaded] = parsePipelines(
        `name: csv-${profile}
source: { type: products.query, filter: { status: [active, inactive, replaced] }, sorting: { id: ASC } }
transforms:
  - { type: validate, onInvalid: fail }
  - { type: normalize-codes }
  - { type: flatten-locales, locales: [en, nl, fr], fallback: [en, nl, fr, de] }
sinks:
  - { type: csv, path: out/products.csv }
  - { type: jsonl, path: out/products.jsonl }
`,
        registry,
        { file: join(dir, 'p.yml') },
      );
      const summary = await runPipeline(loaded!, {
        registry,
        connection: {
          baseUrl: sandbox.url,
          apiKey: sandbox.credentials.apiKey,
          apiSecret: sandbox.credentials.apiSecret,
        },
      });
      const read = summary.records.read;
      expect(read).toBeGreaterThan(300);
      expect(summary.records.written).toEqual({ csv: read, jsonl: read });
      const jsonl = (await readFile(join(dir, 'out/products.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const { rows } = await readCsv(join(dir, 'out/products.csv'));
      expect(rows.map((r) => r.id)).toEqual(jsonl.map((r) => r.id));
      expect(new Set(rows.map((r) => r.id)).size).toBe(read);
      let codes = 0;
      rows.forEach((row, i) => {
        const record = jsonl[i]!;
        expect(row.name_en ?? null).toEqual(record.name_en ?? null);
        for (const code of ['eanGtin13', 'eanGtin14', 'cnk', 'cip7', 'cip13'] as const) {
          if (record[code] === undefined || record[code] === null) continue;
          if (Array.isArray(record[code])) {
            // a list of codes (one client, issue 24): the first in the column, every code in the
            // list column beside it when there are several (issue 37)
            const list = record[code] as unknown[];
            expect(row[code]).toBe(String(list[0]));
            const beside = String(row[`${code}List`] ?? '');
            for (const c of list.length > 1 ? list : []) expect(beside).toContain(String(c));
            if (list.length === 1) expect(row[`${code}List`] ?? null).toBe(null);
            continue;
          }
          expect(row[code]).toBe(String(record[code]));
          expect(row[code]).toMatch(/^\d+$/);
          codes++;
        }
      });
      expect(codes).toBeGreaterThan(100);
    },
  );
});
