// Sortings of every endpoint (order checked against the records; ties by id
// ascending, missing values last in ASC) and paging arithmetic: offsets, the
// last partial page, pages past the end, the 10000 result window with its
// capped meta.total, and the options that change it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let sb: TestSandbox;
let products: any[];
/** The products the sorting tests order: not the active ones (a fifth, so answers stay small). */
const SUBSET = { not: { status: 'active' } };
let subset: any[];

beforeAll(async () => {
  sb = await startTestSandbox({ products: 900, seed: 5 });
  products = (await sb.stream('/v4/products/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } })).lines.map(
    (l) => l.result,
  );
  subset = products.filter((p) => p.status !== 'active');
});
afterAll(() => sb.close());

type Key = number | string | undefined;
/** The order a sorting must give: by key (missing greatest), ties by id ascending. */
function orderBy<T>(records: T[], key: (r: T) => Key, desc: boolean, id: (r: T) => number | string): T[] {
  const cmp = (a: Key, b: Key) => (a === b ? 0 : a === undefined ? 1 : b === undefined ? -1 : a < b ? -1 : 1);
  const idCmp = (a: T, b: T) => cmp(id(a), id(b));
  return [...records].sort((a, b) => (desc ? cmp(key(b), key(a)) : cmp(key(a), key(b))) || idCmp(a, b));
}

const indexOf = (p: any) => Number(p.id.slice(1)) - 1;

describe('products sortings', () => {
  const cases: [string, (p: any) => Key][] = [
    ['id', (p) => p.id],
    ['createdAt', (p) => p.meta.createdAt],
    ['touchedAt', (p) => p.meta.updatedAt],
    // The spec shows no record field for it: the dataset column is what the sorting reads.
    ['statusTouchedAt', (p) => sb.dataset.statusTouchedAt[indexOf(p)]],
    ['status', (p) => p.status],
    ['pbs', (p) => p.pbs],
  ];
  it.each(cases.flatMap(([name, key]) => (['ASC', 'DESC'] as const).map((dir) => [name, dir, key] as const)))(
    '%s %s',
    async (name, dir, key) => {
      const { lines } = await sb.stream('/v4/products/stream', { filter: SUBSET, sorting: { [name]: dir } });
      const want = orderBy(subset, key, dir === 'DESC', (p) => p.id).map((p) => p.id);
      expect(lines.map((l) => l.result.id)).toEqual(want);
      // Keys really vary, so the check is not trivially the id order.
      if (name !== 'id')
        expect(want).not.toEqual(
          orderBy(
            subset,
            (p) => p.id,
            dir === 'DESC',
            (p) => p.id,
          ).map((p) => p.id),
        );
    },
  );

  it.each(['ASC', 'DESC'] as const)(
    'name %s in a locale; products without a name there sort last in ASC',
    async (dir) => {
      const { lines } = await sb.stream('/v4/products/stream', {
        filter: SUBSET,
        sorting: { name: { direction: dir, locale: 'de' } },
      });
      expect(lines.map((l) => l.result.id)).toEqual(
        orderBy(
          subset,
          (p) => p.name.de?.toLowerCase(),
          dir === 'DESC',
          (p) => p.id,
        ).map((p) => p.id),
      );
      const missing = subset.filter((p) => p.name.de === undefined).length;
      expect(missing).toBeGreaterThan(0);
      const ids = lines.map((l) => l.result);
      if (dir === 'ASC') expect(ids.slice(-missing).every((p) => p.name.de === undefined)).toBe(true);
      else expect(ids.slice(0, missing).every((p) => p.name.de === undefined)).toBe(true);
    },
  );

  it('paged products/query pages follow the same order as the stream (ties broken the same way)', async () => {
    const sorting = { createdAt: 'DESC' };
    const { lines } = await sb.stream('/v4/products/stream', { filter: SUBSET, sorting });
    const paged: string[] = [];
    for (let no = 0; ; no++) {
      const page = await sb.query('/v4/products/query', { filter: SUBSET, sorting, page: { no, size: 100 } });
      paged.push(...page.results.map((p: any) => p.id));
      if (page.results.length < 100) break;
    }
    expect(paged).toEqual(lines.map((l) => l.result.id));
  });
});

describe('other endpoints sortings', () => {
  it('media/stream: id and createdAt, both directions; default id ASC', async () => {
    const all = (await sb.stream('/v4/media/stream', {})).lines.map((l) => l.result);
    expect(all.map((m) => m.id)).toEqual([...all.map((m) => m.id)].sort((a, b) => a - b));
    for (const dir of ['ASC', 'DESC'] as const) {
      const byCreated = (await sb.stream('/v4/media/stream', { sorting: { createdAt: dir } })).lines.map(
        (l) => l.result.id,
      );
      expect(byCreated).toEqual(
        orderBy(
          all,
          (m) => m.meta.createdAt,
          dir === 'DESC',
          (m) => m.id,
        ).map((m) => m.id),
      );
      const byId = (await sb.stream('/v4/media/stream', { sorting: { id: dir } })).lines.map((l) => l.result.id);
      expect(byId).toEqual(
        orderBy(
          all,
          (m) => m.id,
          dir === 'DESC',
          (m) => m.id,
        ).map((m) => m.id),
      );
    }
  });

  const reference: [string, string, (r: any, i: number) => Key][] = [
    ['organizations', 'name', (r) => r.name.toLowerCase()],
    ['organizations', 'id', (r) => r.id],
    ['corrections', 'touchedAt', (r) => r.meta.updatedAt],
    ['corrections', 'id', (r) => r.id],
    ['updates', 'createdAt', (r) => r.meta.createdAt],
    ['updates', 'id', (r) => r.id],
    // sortOrder is not a record field the spec shows: the dataset keeps it.
    ['updates', 'sortOrder', (r) => sb.dataset.news[r.id - 1]!.sortOrder],
    ['brands', 'name', (r) => r.name.toLowerCase()],
    ['brands', 'id', (r) => r.id],
  ];
  it.each(reference.flatMap(([e, s, k]) => (['ASC', 'DESC'] as const).map((d) => [e, s, d, k] as const)))(
    '%s sorted by %s %s',
    async (endpoint, sorting, dir, key) => {
      const all = (await sb.query(`/v4/${endpoint}/query`, {})).results;
      const sorted = (await sb.query(`/v4/${endpoint}/query`, { sorting: { [sorting]: dir } })).results;
      expect(sorted.map((r: any) => r.id)).toEqual(
        orderBy(all, key as (r: any) => Key, dir === 'DESC', (r: any) => r.id).map((r: any) => r.id),
      );
    },
  );

  it('reference endpoints default to id ascending; catalog categories come in id order', async () => {
    for (const e of ['organizations', 'corrections', 'updates', 'brands']) {
      const ids = (await sb.query(`/v4/${e}/query`, {})).results.map((r: any) => r.id);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
    }
    const cats = (await sb.query('/v4/catalog-categories/query', {})).results.map((r: any) => r.id);
    expect(cats).toEqual([...cats].sort());
  });
});

describe('paging', () => {
  it('meta.page gives no, offset and size; the last page is partial; a page past the end is empty', async () => {
    const total = products.filter((p) => p.status === 'active').length;
    const size = 50;
    const last = Math.floor((total - 1) / size);
    expect(total % size).not.toBe(0);
    const p0 = await sb.query('/v4/products/query', {
      filter: { status: 'active' },
      sorting: { id: 'ASC' },
      page: { no: 0, size },
    });
    expect(p0.meta).toEqual({ total, page: { no: 0, offset: 0, size } });
    const p3 = await sb.query('/v4/products/query', {
      filter: { status: 'active' },
      sorting: { id: 'ASC' },
      page: { no: 3, size },
    });
    expect(p3.meta.page).toEqual({ no: 3, offset: 150, size });
    expect(p3.results.map((p: any) => p.id)).toEqual(
      products
        .filter((p) => p.status === 'active')
        .slice(150, 200)
        .map((p) => p.id),
    );
    const pl = await sb.query('/v4/products/query', {
      filter: { status: 'active' },
      sorting: { id: 'ASC' },
      page: { no: last, size },
    });
    expect(pl.results).toHaveLength(total - last * size);
    const past = await sb.query('/v4/products/query', {
      filter: { status: 'active' },
      sorting: { id: 'ASC' },
      page: { no: last + 1, size },
    });
    expect(past.results).toEqual([]);
    expect(past.meta).toEqual({ total, page: { no: last + 1, offset: (last + 1) * size, size } });
  });

  it('page.size defaults to 100 when only page.no is sent', async () => {
    const page = await sb.query('/v4/products/query', {
      filter: { createdAt: 0 },
      sorting: { id: 'ASC' },
      page: { no: 1 },
    });
    expect(page.meta.page).toEqual({ no: 1, offset: 100, size: 100 });
    expect(page.results).toHaveLength(100);
  });

  it('reference endpoints return everything without page, and pages with it', async () => {
    const all = await sb.query('/v4/brands/query', {});
    expect(all.meta).toEqual({ total: all.results.length });
    expect(all.results.length).toBe(sb.dataset.ref.brands.length);
    const page = await sb.query('/v4/brands/query', { page: { no: 1, size: 10 } });
    expect(page.meta).toEqual({ total: all.results.length, page: { no: 1, offset: 10, size: 10 } });
    expect(page.results).toEqual(all.results.slice(10, 20));
    const orgs = await sb.query('/v4/organizations/query', { filter: { type: 'supplier' }, page: { no: 0, size: 10 } });
    expect(orgs.meta.total).toBe(sb.dataset.ref.organizations.filter((o) => o.record.type === 'supplier').length);
  });
});

describe('the products/query result window', () => {
  let big: TestSandbox;
  beforeAll(async () => {
    big = await startTestSandbox({ products: 12_000, seed: 2 });
  });
  afterAll(() => big.close());

  it('caps meta.total at 10000, serves offsets up to 9750 with size 250, refuses 10000 with result_window_exceeded', async () => {
    const body = (no: number, size = 250) => ({ filter: { createdAt: 0 }, sorting: { id: 'ASC' }, page: { no, size } });
    const first = await big.query('/v4/products/query', body(0));
    expect(first.meta.total).toBe(10_000);
    const last = await big.query('/v4/products/query', body(39));
    expect(last.results).toHaveLength(250);
    expect(last.results.at(-1).id).toBe('P0010000');
    const past = await big.post('/v4/products/query', body(40));
    expect(past.status).toBe(400);
    expect(past.json().error).toMatchObject({ status: 400, code: 'result_window_exceeded' });
    expect((await big.post('/v4/products/query', body(100, 100))).json().error.code).toBe('result_window_exceeded');
  });

  it('trueTotal reports the real count and still refuses offsets past the window', async () => {
    const sandbox = await startTestSandbox({ dataset: big.dataset, trueTotal: true });
    try {
      const page = await sandbox.query('/v4/products/query', {
        filter: { createdAt: 0 },
        sorting: { id: 'ASC' },
        page: { no: 0, size: 10 },
      });
      expect(page.meta.total).toBe(12_000);
      const past = await sandbox.post('/v4/products/query', {
        filter: { createdAt: 0 },
        sorting: { id: 'ASC' },
        page: { no: 40, size: 250 },
      });
      expect(past.json().error.code).toBe('result_window_exceeded');
    } finally {
      await sandbox.close();
    }
  });

  it('resultWindow shrinks the window: total capped, last page cut at the window, offsets past it refused', async () => {
    const sandbox = await startTestSandbox({ products: 500, resultWindow: 300 });
    try {
      const body = (no: number, size: number) => ({
        filter: { createdAt: 0 },
        sorting: { id: 'ASC' },
        page: { no, size },
      });
      expect((await sandbox.query('/v4/products/query', body(0, 10))).meta.total).toBe(300);
      const cut = await sandbox.query('/v4/products/query', body(1, 250));
      expect(cut.results).toHaveLength(50);
      expect(cut.results.at(-1).id).toBe('P0000300');
      expect((await sandbox.post('/v4/products/query', body(3, 100))).json().error.code).toBe('result_window_exceeded');
      const small = await sandbox.query('/v4/products/query', {
        filter: { status: 'replaced' },
        sorting: { id: 'ASC' },
        page: { no: 0, size: 10 },
      });
      expect(small.meta.total).toBeLessThan(300);
      // products/stream is not capped.
      const { lines } = await sandbox.stream('/v4/products/stream', {
        filter: { createdAt: 0 },
        sorting: { id: 'ASC' },
      });
      expect(lines).toHaveLength(500);
      expect(lines[0]!.meta.total).toBe(500);
    } finally {
      await sandbox.close();
    }
  });
});
