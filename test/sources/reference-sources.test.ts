// The sources of the endpoints the spec only names (issue 17): public-categories,
// dietary-restrictions, colors and media query, against the sandbox over
// loopback. Each is read paged (several page sizes, through a pipeline into
// Parquet read back by DuckDB) and compared with the sandbox's unpaged answer
// (no `page`: all results, `meta.total`, no `meta.page`). media.query past its
// result window slices by createdAt; filters the documentation does not show
// are refused with a message saying so.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CatalogClient } from '../../src/client/index.js';
import { ConfigError, DataError } from '../../src/errors.js';
import { startTestServer } from '../client/http-test-server.js';
import { colorsQuery, dietaryRestrictionsQuery, mediaQuery, publicCategoriesQuery } from '../../src/sources/index.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { type TestSandbox, startTestSandbox } from '../helpers/sandbox.js';
import { runMain, sandboxEnv, workspace } from '../cli/cli-process.js';
import { type SandboxHarness, sandboxHarness } from './sandbox-harness.js';

const NEW_SOURCES = [
  { type: 'public-categories.query', path: '/v4/public-categories/query' },
  { type: 'dietary-restrictions.query', path: '/v4/dietary-restrictions/query' },
  { type: 'colors.query', path: '/v4/colors/query' },
  { type: 'media.query', path: '/v4/media/query' },
] as const;

async function drain(source: AsyncIterable<unknown>): Promise<Record<string, any>[]> {
  const out: Record<string, any>[] = [];
  for await (const r of source) out.push(r as Record<string, any>);
  return out;
}

describe('reference sources: paged through a pipeline into Parquet, equal to the unpaged answer', () => {
  let sandbox: TestSandbox;
  let ws: Awaited<ReturnType<typeof workspace>>;
  beforeAll(async () => {
    sandbox = await startTestSandbox({ products: 1200 });
    ws = await workspace('catalog-streams-reference-');
  });
  afterAll(async () => {
    await sandbox?.close();
    await ws?.remove();
  });

  it.each(NEW_SOURCES.flatMap((s) => [10, 250].map((pageSize) => ({ ...s, pageSize }))))(
    '$type with pageSize $pageSize',
    async ({ type, path, pageSize }) => {
      const unpaged = await sandbox.query<{ id: string | number }>(path, {});
      expect(unpaged.meta.page).toBeUndefined();
      expect(unpaged.meta.total).toBe(unpaged.results.length);
      expect(unpaged.results.length).toBeGreaterThan(type === 'media.query' ? 2000 : 5);

      const out = join(ws.dir, `out/${type}-${pageSize}.parquet`);
      const file = join(ws.dir, `${type}-${pageSize}.yml`);
      await writeFile(
        file,
        `name: ${type.replace('.', '-')}\nsource: { type: ${type}, pageSize: ${pageSize} }\nsinks:\n  - { type: parquet, path: ${JSON.stringify(out)} }\n`,
      );
      const { code, stderr } = await runMain(['run', file, '--quiet'], sandboxEnv(sandbox));
      expect(code, stderr).toBe(0);
      const [summary] = stderr
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      // media is read by createdAt, page 0 of what is left (createdat-query.ts): the pages its records
      // fill, and one more for each lane but the first at most (lanes of at most 8 pages beside the
      // head, createdat-split.ts); a reference table is read whole, in one request, whatever the page
      // size (read-window.ts).
      const pages = Math.ceil(unpaged.results.length / pageSize);
      if (type === 'media.query') {
        expect(summary.pages).toBeGreaterThanOrEqual(pages);
        expect(summary.pages).toBeLessThanOrEqual(pages + Math.ceil(pages / 8) + 3);
      } else expect(summary.pages).toBe(1);

      // The unpaged answer is in the default id order; so is the extract of a reference table, row for
      // row; media comes in createdAt order, the same records.
      const { rows } = await duckdbQuery(`SELECT id FROM read_parquet(${sqlString(out)})`);
      const order = (ids: string[]) => (type === 'media.query' ? [...ids].sort() : ids);
      expect(order(rows.map((r) => String(r.id)))).toEqual(order(unpaged.results.map((r) => String(r.id))));
    },
  );

  it('public categories read back with the §2.2 fields: integer id, localized name, parent (null on roots), meta', async () => {
    const out = join(ws.dir, 'out/public-categories-fields.parquet');
    const file = join(ws.dir, 'public-categories-fields.yml');
    await writeFile(
      file,
      `name: pc\nsource: { type: public-categories.query }\nsinks:\n  - { type: parquet, path: ${JSON.stringify(out)} }\n`,
    );
    expect((await runMain(['run', file, '--quiet'], sandboxEnv(sandbox))).code).toBe(0);
    const { rows } = await duckdbQuery(
      `SELECT count(*) AS n, count(*) FILTER (WHERE parent IS NULL) AS roots, count(*) FILTER (WHERE parent IS NOT NULL AND parent NOT IN (SELECT id FROM read_parquet(${sqlString(out)}))) AS orphans FROM read_parquet(${sqlString(out)})`,
    );
    expect(Number(rows[0]!.roots)).toBeGreaterThan(0);
    expect(Number(rows[0]!.orphans)).toBe(0);
    const { rows: cols } = await duckdbQuery(
      `SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(${sqlString(out)}))`,
    );
    const types = Object.fromEntries(cols.map((c) => [c.column_name, c.column_type]));
    expect(types.id).toBe('BIGINT');
    expect(types.parent).toBe('BIGINT');
  });
});

describe('reference sources in code', () => {
  let h: SandboxHarness;
  beforeAll(async () => {
    // A result window of 1000 makes media.query slice on a small catalog.
    h = await sandboxHarness({ products: 800, resultWindow: 1000 }, { resultWindow: 1000 });
  });
  afterAll(() => h?.close());

  it('media.query past the result window reads by createdAt and yields every media record exactly once', async () => {
    const all = h.sandbox.dataset.mediaCount;
    expect(all).toBeGreaterThan(1500);
    h.seen.length = 0;
    const records = await drain(mediaQuery(h.client, { pageSize: 250 }));
    const ids = records.map((r) => Number(r.id));
    expect(new Set(ids).size).toBe(all);
    expect(ids.length).toBe(all);
  });

  it('media.query with a filter under the window pages without slicing, like the stream', async () => {
    const filter = { kind: 'frontal' as const };
    const paged = await drain(mediaQuery(h.client, { filter, pageSize: 50 }));
    const stream = h.sandbox.dataset;
    let expected = 0;
    for (let m = 0; m < stream.mediaCount; m++) if (stream.mediaRecord(m).kind === 'frontal') expected++;
    expect(paged.length).toBe(expected);
    expect(paged.every((r) => r.kind === 'frontal')).toBe(true);
  });

  it('accepts the empty filter and id; the order follows the id sorting', async () => {
    const all = await drain(colorsQuery(h.client, { filter: {} as never }));
    expect(all.length).toBeGreaterThan(2);
    const some = await drain(
      colorsQuery(h.client, { filter: { id: [all[2]!.id, all[0]!.id] }, sorting: { id: 'DESC' } }),
    );
    expect(some.map((r) => r.id)).toEqual([all[2]!.id, all[0]!.id]);
    const cats = await drain(publicCategoriesQuery(h.client, { filter: { not: { id: 1 } } }));
    expect(cats.map((r) => r.id)).not.toContain(1);
    expect(cats.length).toBe((await drain(publicCategoriesQuery(h.client))).length - 1);
  });

  it.each([
    [
      'public-categories.query',
      () => publicCategoriesQuery(h.client, { filter: { parent: 1 } as never }),
      'filter.parent',
    ],
    [
      'dietary-restrictions.query',
      () => dietaryRestrictionsQuery(h.client, { filter: { search: 'vegan' } as never }),
      'filter.search',
    ],
    ['colors.query', () => colorsQuery(h.client, { sorting: { name: 'ASC' } as never }), 'sorting.name'],
  ])('%s refuses a filter or sorting the documentation does not show, saying so', (endpoint, make, path) => {
    let error: unknown;
    try {
      make();
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain(`${endpoint}.${path}`);
    expect(message).toContain("The API's documentation names");
    expect(message).toContain('does not show its filters or sortings');
  });

  it('the client refuses such a request before sending it', async () => {
    const before = h.client.stats.requests;
    await expect(h.client.query('colors.query', { filter: { name: 'Blue' } } as never)).rejects.toThrow(
      /does not show its filters or sortings/,
    );
    expect(h.client.stats.requests).toBe(before);
  });

  it('the sandbox answers media/query without page with the first window of results, total capped', async () => {
    const answer = await (h.sandbox as TestSandbox).post('/v4/media/query', {});
    expect(answer.status).toBe(200);
    const body = answer.json();
    expect(body.meta.total).toBe(1000);
    expect(body.results).toHaveLength(1000);
  });
});

describe('media.query against a service that refuses slicing', () => {
  it('fails past the cap with a message pointing at media.stream when createdAt is refused (422)', async () => {
    // 10000 total on page 0 (the cap: "maybe more"); any createdAt sorting is refused.
    const server = await startTestServer((req, res) => {
      const body = req.body as { sorting?: Record<string, unknown>; page?: { no: number; size: number } };
      if (body.sorting && 'createdAt' in body.sorting) {
        res.writeHead(422, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ error: { status: 422, code: 'validation_failed', message: 'unknown sorting createdAt' } }),
        );
        return;
      }
      const size = body.page?.size ?? 100;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          meta: { total: 10000, page: { no: 0, offset: 0, size } },
          results: Array.from({ length: size }, (_, i) => ({ id: i + 1 })),
        }),
      );
    });
    const client = new CatalogClient({
      baseUrl: server.url,
      apiKey: 'key-1234',
      apiSecret: 'secret-1234',
      rateLimit: 0,
      retry: { minTimeout: 1, maxTimeout: 2 },
    });
    try {
      const error = await drain(mediaQuery(client)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DataError);
      expect((error as Error & { code: string }).code).toBe('source.unsliceable');
      expect((error as Error).message).toMatch(
        /^media\.query: the service refused the createdAt filter or sorting an exact read needs \(422: .*use media\.stream/,
      );
    } finally {
      await client.close();
      await server.close();
    }
  });
});
