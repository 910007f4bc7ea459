// The sandbox's catalog changes (src/sandbox/changes.ts): at chosen requests,
// as steady churn on a clock, through options, setChanges and the admin route;
// and `add`, which creates a product now.
import { afterEach, describe, expect, it } from 'vitest';
import { ChangeSchedule } from '../../src/sandbox/changes.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let sb: TestSandbox | undefined;
afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

const page = (no: number) => ({ filter: { createdAt: { from: 0 } }, sorting: { id: 'ASC' }, page: { no, size: 10 } });

describe('sandbox changes', () => {
  it('changes at page 2 are made once, just before it is answered', async () => {
    sb = await startTestSandbox({ products: 200, pending: 10, changes: { at: [{ page: 2, remove: 5, add: 3 }] } });
    const before = await sb.query('/v4/products/query', page(1));
    const at = await sb.query('/v4/products/query', page(2));
    const again = await sb.query('/v4/products/query', page(2));
    expect(before.meta.total).toBe(190);
    expect(at.meta.total).toBe(188);
    expect(again.meta.total).toBe(188);
  });

  it('add creates products now: createdAt and updatedAt are the time given', async () => {
    sb = await startTestSandbox({ products: 50, pending: 2 });
    const at = Math.floor(Date.now() / 1000);
    const { products } = sb.add({ count: 2 }, at);
    expect(products.sort()).toEqual(['P0000049', 'P0000050']);
    const { results } = await sb.query('/v4/products/query', {
      filter: { createdAt: { from: at } },
      sorting: { id: 'ASC' },
      page: { no: 0, size: 10 },
    });
    expect(results.map((r: any) => [r.id, r.meta.createdAt, r.meta.updatedAt])).toEqual([
      ['P0000049', at, at],
      ['P0000050', at, at],
    ]);
  });

  it('churn makes perSecond changes as time passes, split by the weights', () => {
    let now = 0;
    const schedule = new ChangeSchedule(1, { churn: { perSecond: 10, remove: 1, touch: 3 } }, () => now);
    expect(schedule.due('products.query', {})).toEqual({ add: 0, remove: 0, touch: 0, status: 0 });
    now = 1500;
    const due = schedule.due('products.query', {});
    expect(due.add + due.remove + due.touch + due.status).toBe(15);
    expect(due.add + due.status).toBe(0);
    expect(due.touch).toBeGreaterThan(due.remove);
    now = 2000;
    const more = schedule.due('products.stream', {});
    expect(more.remove + more.touch).toBe(5);
  });

  it('request numbers count per endpoint: the resumed request of a cut stream is request 1', () => {
    const schedule = new ChangeSchedule(1, { at: [{ endpoint: 'products.stream', request: 1, touch: 2 }] });
    expect(schedule.due('products.stream', {}).touch).toBe(0);
    expect(schedule.due('products.query', {}).touch).toBe(0);
    expect(schedule.due('products.stream', {}).touch).toBe(2);
    expect(schedule.due('products.stream', {}).touch).toBe(0);
  });

  it('POST /_sandbox/changes sets the schedule; a bad one is a 400 naming the field', async () => {
    sb = await startTestSandbox({ products: 100 });
    const ok = await sb.post('/_sandbox/changes', { at: [{ endpoint: 'products.query', request: 0, remove: 1 }] });
    expect(ok.status).toBe(200);
    expect((await sb.query('/v4/products/query', page(0))).meta.total).toBe(99);
    const bad = await sb.post('/_sandbox/changes', { churn: { perSecond: -1 } });
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/perSecond/);
  });
});
