// Resuming a cut products.stream while the catalog changes (issue 22, case 2): the
// resumed request starts after what was delivered, found by content (the last id, or
// the last createdAt), never by position. One product before the cut leaves and one
// arrives while the stream is cut, so the total stays the same and a resume that skips
// delivered positions would lose the product that slid back into them. The sandbox's
// `beforeAnswer` hook changes the data exactly when the resumed request (the second
// products.stream request) comes in.
import { afterEach, describe, expect, it } from 'vitest';
import { StreamProtocolError } from '../../src/client/index.js';
import { productsStream } from '../../src/sources/index.js';
import { type SandboxHarness, sandboxHarness } from './sandbox-harness.js';

const PRODUCTS = 3001;
const CUT = 1500;
/** Every product: createdAt is never negative. */
const EVERYTHING = { createdAt: { from: 0 } };

let h: SandboxHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

interface ChangeAtResume {
  /** The id order of the whole catalog under the sorting (before anything is hidden). */
  order: (ids: string[]) => string[];
  /** Position, in that order, of the product that leaves during the cut (delivered before it). */
  leaves: number;
  /** The product that is hidden before the run and comes back during the cut. */
  arrives: (ordered: string[]) => string;
}

/**
 * A sandbox of 3,001 products with one of them hidden (3,000 in the result), cut once after
 * 1,500 lines; when the resumed request arrives, one delivered product leaves and the hidden one
 * comes back (the total stays 3,000).
 */
async function cutWhileChanging(change: ChangeAtResume) {
  const hook: { onAnswer?: (r: { endpoint: string; n: number }) => void } = {};
  h = await sandboxHarness({ products: PRODUCTS, seed: 22, beforeAnswer: (r) => hook.onAnswer?.(r) });
  const ds = h.sandbox.dataset;
  const all = Array.from({ length: ds.productCount }, (_, i) => ds.productId(i));
  const ordered = change.order(all);
  const arriving = change.arrives(ordered);
  ds.hideProducts([ds.productIndex(arriving)]);
  const present = ordered.filter((id) => id !== arriving);
  const leaving = present[change.leaves]!;
  expect(present).toHaveLength(3000);
  hook.onAnswer = (r) => {
    if (r.endpoint !== 'products.stream' || r.n !== 1) return;
    ds.hideProducts([ds.productIndex(leaving)]);
    ds.revealProducts([ds.productIndex(arriving)], Math.floor(Date.now() / 1000));
  };
  h.sandbox.setFaults({ streamCut: { afterLines: CUT, times: 1 }, endpoints: ['products.stream'] });
  return { present, leaving, arriving };
}

/** The guarantee: present for the whole run, exactly once; entered or left during it, at most once. */
function expectExact(delivered: string[], present: string[], changed: string[]): void {
  const counts = new Map<string, number>();
  for (const id of delivered) counts.set(id, (counts.get(id) ?? 0) + 1);
  const wrong = present
    .filter((id) => !changed.includes(id) && counts.get(id) !== 1)
    .map((id) => `${id} delivered ${counts.get(id) ?? 0} times`);
  for (const id of changed) if ((counts.get(id) ?? 0) > 1) wrong.push(`${id} delivered ${counts.get(id)} times`);
  const unknown = [...counts.keys()].filter((id) => !present.includes(id) && !changed.includes(id));
  expect({ wrong: wrong.slice(0, 5), unknown }).toEqual({ wrong: [], unknown: [] });
}

const ids = (records: any[]) => records.map((r) => r.id as string);
const byCreatedAt = (ds: SandboxHarness['sandbox']['dataset']) => (all: string[]) =>
  [...all].sort((a, b) => ds.createdAt[ds.productIndex(a)]! - ds.createdAt[ds.productIndex(b)]! || (a < b ? -1 : 1));

describe('a stream cut while one product leaves and one arrives (total unchanged)', () => {
  it('sorted by id ASC: resumed after the last delivered id; every product present throughout exactly once', async () => {
    const { present, leaving, arriving } = await cutWhileChanging({
      order: (all) => all,
      leaves: 100,
      arrives: (ordered) => ordered[ordered.length - 1]!,
    });
    const src = productsStream(h!.client, { filter: EVERYTHING, sorting: { id: 'ASC' } });
    const records = await src.toArray();
    const got = ids(records);
    expectExact(got, present, [leaving, arriving]);
    // In order, the arrival (the highest id) last; the leaving product was delivered before the cut.
    expect(got).toEqual([...got].sort());
    expect(got.at(-1)).toBe(arriving);
    expect(got).toContain(leaving);
    expect(got).toHaveLength(3001);
    expect(src.resumes).toBe(1);
    expect(h!.sandbox.stats.faults.streamCuts).toBe(1);
    // The resumed request asks the same body again; its total is the same 3,000.
    expect(h!.sandbox.stats.byEndpoint['products.stream']).toEqual({ 0: 1, 200: 1 });
    const resumed = h!.seen.find((e) => e.name === 'info' && e.payload.code === 'source.stream_resumed');
    expect(resumed?.payload.message).toMatch(/skipping the records up to id "P\d{7}"/);
    // The source's total is what it delivered: the resumed request showed one record more to come.
    expect(src.total).toBe(3001);
    expect(h!.seen.filter((e) => e.name === 'total').at(-1)?.payload).toMatchObject({ total: 3001, capped: false });
  });

  it('sorted by id DESC: resumed after the last delivered id in descending order', async () => {
    const { present, leaving, arriving } = await cutWhileChanging({
      order: (all) => [...all].reverse(),
      leaves: 100,
      arrives: (ordered) => ordered[ordered.length - 1]!, // the lowest id: it comes last
    });
    const records = await productsStream(h!.client, { filter: EVERYTHING, sorting: { id: 'DESC' } }).toArray();
    const got = ids(records);
    expectExact(got, present, [leaving, arriving]);
    expect(got).toEqual([...got].sort().reverse());
    expect(got.at(-1)).toBe(arriving);
    expect(got).toHaveLength(3001);
  });

  it('sorted by id, the arrival before the cut: not delivered (it entered during the run), nothing else lost', async () => {
    const { present, leaving, arriving } = await cutWhileChanging({
      order: (all) => all,
      leaves: 100,
      arrives: (ordered) => ordered[500]!,
    });
    const records = await productsStream(h!.client, { filter: EVERYTHING, sorting: { id: 'ASC' } }).toArray();
    const got = ids(records);
    expectExact(got, present, [leaving, arriving]);
    expect(got).not.toContain(arriving);
    expect(got).toHaveLength(3000);
  });

  it('sorted by createdAt ASC: resumed from the last delivered createdAt; every product present throughout exactly once', async () => {
    let ordered: string[] = [];
    const { present, leaving, arriving } = await cutWhileChanging({
      order: (all) => (ordered = byCreatedAt(h!.sandbox.dataset)(all)),
      leaves: 100,
      arrives: (o) => o[o.length - 1]!, // keeps its createdAt: the latest, so it comes last
    });
    const src = productsStream(h!.client, { filter: EVERYTHING, sorting: { createdAt: 'ASC' } });
    const got = ids(await src.toArray());
    expectExact(got, present, [leaving, arriving]);
    expect(got).toEqual(ordered.filter((id) => got.includes(id)));
    expect(got.at(-1)).toBe(arriving);
    expect(got).toHaveLength(3001);
    expect(src.total).toBe(3001);
    const resumed = h!.seen.find((e) => e.name === 'info' && e.payload.code === 'source.stream_resumed');
    expect(resumed?.payload.message).toMatch(/asking for the records from createdAt \d+ on/);
  });

  it('sorted by createdAt DESC: the same, downwards', async () => {
    const { present, leaving, arriving } = await cutWhileChanging({
      order: (all) => byCreatedAt(h!.sandbox.dataset)(all).reverse(),
      leaves: 100,
      arrives: (o) => o[o.length - 1]!, // the earliest createdAt: it comes last
    });
    const got = ids(await productsStream(h!.client, { filter: EVERYTHING, sorting: { createdAt: 'DESC' } }).toArray());
    expectExact(got, present, [leaving, arriving]);
    expect(got.at(-1)).toBe(arriving);
    expect(got).toHaveLength(3001);
  });
});

describe('a cut stream that cannot be resumed exactly fails loudly', () => {
  it('sorted by a value that changes (touchedAt): stream.resume_not_exact after the cut, naming the way out', async () => {
    const { present } = await cutWhileChanging({
      order: (all) => all,
      leaves: 100,
      arrives: (ordered) => ordered[ordered.length - 1]!,
    });
    const got: string[] = [];
    const src = productsStream(h!.client, { filter: EVERYTHING, sorting: { touchedAt: 'ASC' } });
    src.on('data', (r) => got.push(r.id));
    const err: any = await new Promise((resolve) => src.on('error', resolve).on('end', () => resolve(undefined)));
    expect(err).toBeInstanceOf(StreamProtocolError);
    expect(err.code).toBe('stream.resume_not_exact');
    expect(err.message).toMatch(/sorting \{touchedAt: ASC\}/);
    expect(err.message).toMatch(/sort by id .* or createdAt/);
    expect(err.index).toBe(CUT);
    expect(got).toHaveLength(CUT);
    expect(new Set(got).size).toBe(CUT);
    expect(got.every((id) => present.includes(id))).toBe(true);
    // No second request: nothing was asked for that could not be used.
    expect(h!.sandbox.stats.requests).toBe(1);
  });

  it('sorted by touchedAt, cut before anything was delivered: asked for again (nothing to skip)', async () => {
    h = await sandboxHarness({ products: 300, seed: 22 });
    h.sandbox.setFaults({ streamCut: { afterLines: 0, times: 1 }, endpoints: ['products.stream'] });
    const records = await productsStream(h.client, { filter: EVERYTHING, sorting: { touchedAt: 'ASC' } }).toArray();
    expect(new Set(ids(records)).size).toBe(300);
    expect(h.sandbox.stats.faults.streamCuts).toBe(1);
  });
});
