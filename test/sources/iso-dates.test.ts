// Filters with ISO dates (issue 25) against the sandbox: the sources send unix seconds (the
// sandbox, like the service, refuses a date on the wire) and get the records the same filter
// in seconds gets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isoSeconds } from '../../src/catalog/index.js';
import { productsQuery, productsStream } from '../../src/sources/index.js';
import { type SandboxHarness, sandboxHarness } from './sandbox-harness.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

const DAY = 86_400;

async function ids(source: AsyncIterable<unknown>): Promise<string[]> {
  const out: string[] = [];
  for await (const r of source) out.push(String((r as { id: unknown }).id));
  return out;
}

describe('time filters written as ISO dates', () => {
  let h: SandboxHarness;
  let all: { id: string; meta: { createdAt: number; updatedAt: number } }[];
  beforeAll(async () => {
    h = await sandboxHarness({ products: 600 });
    all = [];
    for await (const r of productsStream(h.client, { filter: { status: ['active', 'replaced', 'inactive'] } }))
      all.push(r as (typeof all)[number]);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('updatedSince "YYYY-MM-DD" reads what the same day in seconds reads', async () => {
    const median = all.map((r) => r.meta.updatedAt).sort((a, b) => a - b)[Math.floor(all.length / 2)]!;
    const day = median - (median % DAY);
    const date = isoSeconds(day).slice(0, 10);
    const expected = all.filter((r) => r.meta.updatedAt >= day).map((r) => r.id);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(all.length);
    const byDate = await ids(productsQuery(h.client, { filter: { updatedSince: date }, sorting: { id: 'ASC' } }));
    const bySeconds = await ids(productsQuery(h.client, { filter: { updatedSince: day }, sorting: { id: 'ASC' } }));
    expect(byDate.sort()).toEqual(bySeconds.sort());
    // The sandbox's updatedSince may see more than meta.updatedAt (other statuses); never less.
    expect(byDate).toEqual(expect.arrayContaining(expected));
  });

  it('a createdAt range with offsets is the same instants in UTC', async () => {
    const times = all.map((r) => r.meta.createdAt).sort((a, b) => a - b);
    const from = times[Math.floor(times.length / 4)]!;
    const until = times[Math.floor((3 * times.length) / 4)]!;
    // 2 hours ahead of UTC: the same instant written in local time at +02:00.
    const plus2 = (t: number) => `${isoSeconds(t + 2 * 3600).slice(0, 19)}+02:00`;
    const expected = all.filter((r) => r.meta.createdAt >= from && r.meta.createdAt <= until).map((r) => r.id);
    const got = await ids(
      productsStream(h.client, {
        filter: {
          and: [
            { status: ['active', 'replaced', 'inactive'] },
            { createdAt: { from: plus2(from), until: isoSeconds(until) } },
          ],
        },
      }),
    );
    expect(got.sort()).toEqual(expected.sort());
  });
});

describe('the sandbox, like the service, takes times in seconds only', () => {
  let sandbox: TestSandbox;
  beforeAll(async () => {
    sandbox = await startTestSandbox({ products: 50 });
  });
  afterAll(async () => {
    await sandbox?.close();
  });

  it('refuses a date on the wire (the clients convert it), naming where it was', async () => {
    const answer = await sandbox.post('/v4/products/query', {
      filter: { updatedSince: { from: '2024-01-01' } },
      sorting: { id: 'ASC' },
      page: { no: 0, size: 100 },
    });
    expect(answer.status).toBeGreaterThanOrEqual(400);
    expect(answer.text).toContain('filter.updatedSince.from');
    expect(answer.text).toContain('is not unix seconds');
    const ok = await sandbox.post('/v4/products/query', {
      filter: { updatedSince: { from: 1_704_067_200 } },
      sorting: { id: 'ASC' },
      page: { no: 0, size: 100 },
    });
    expect(ok.status).toBe(200);
  });
});
