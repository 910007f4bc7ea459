// Whole pipelines over a catalog that changes while it is read (docs: reading a
// changing catalog), with the changes made by the sandbox just before chosen
// requests are answered, so they interleave with the pages exactly:
// - a full extract where one product leaves page 0 and one arrives at the end
//   just before page 6 (the total stays the same, every later record shifts back);
// - incremental runs under steady churn (products changing before every page),
//   which must each complete and together hold every product's latest version.
import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import type { AnswerRequest } from '../../src/sandbox/index.js';
import { faultFixture, jsonlLines, runInProcess, type PipelineWorkspace } from './support.js';

const STATUSES = '[active, replaced, inactive]';
let hook: ((request: AnswerRequest) => void) | undefined;

const full = `name: full
source:
  type: products.query
  filter: { status: ${STATUSES} }
  sorting: { id: ASC }
  pageSize: 250
sinks:
  - { type: jsonl, path: out/products.jsonl }
`;

const f = faultFixture('full', full, {
  products: 3001,
  pending: 1,
  seed: 11,
  beforeAnswer: (request) => hook?.(request),
});

async function outputs(ws: PipelineWorkspace): Promise<string[]> {
  return (await readdir(ws.path('out')).catch(() => [] as string[])).filter((n) => n.endsWith('.jsonl')).sort();
}

describe('a catalog that changes between the pages', () => {
  it('one product read first leaves and one arrives at the end before the 7th request: every product present all along is written once', async () => {
    // The pending product is not in the catalog yet (add creates it).
    const ds = f.sandbox.dataset;
    const present = f.expected.filter((id) => !ds.hidden.has(ds.productIndex(id)));
    // The oldest product: the first answer (page 0 of the createdAt range) holds it.
    const first = [...present].sort(
      (a, b) => ds.createdAt[ds.productIndex(a)]! - ds.createdAt[ds.productIndex(b)]! || (a < b ? -1 : 1),
    )[0]!;
    let fired = false;
    let arrived: string | undefined;
    let queries = 0;
    hook = ({ endpoint }) => {
      if (endpoint !== 'products.query' || fired || ++queries !== 7) return;
      fired = true;
      f.sandbox.hide({ ids: [first] });
      arrived = f.sandbox.add({ count: 1 }).products[0];
    };
    try {
      const run = await runInProcess(f.ws, f.sandbox);
      expect(run.ok, run.ok ? '' : `${run.error.code}: ${run.error.message}`).toBe(true);
    } finally {
      hook = undefined;
    }
    expect(fired).toBe(true);
    const ids = (await jsonlLines(f.ws.path('out/products.jsonl'))).map((r) => r.id as string);
    // The product that left was read in the first answer, before it left; the one created during the run
    // entered the result: at most once.
    expect(ids.length).toBe(new Set(ids).size);
    expect(ids.filter((id) => id !== arrived).sort()).toEqual([...present].sort());
  });
});

const incremental = `name: churn
source:
  type: products.query
  filter: { status: ${STATUSES} }
  sorting: { id: ASC }
  pageSize: 100
sinks:
  - { type: jsonl, path: "out/products-{run}.jsonl" }
state: { path: .state/churn.json }
`;

const g = faultFixture('churn', incremental, {
  products: 3000,
  seed: 12,
  beforeAnswer: (request) => hook?.(request),
});

/** Waits past the next second boundary: a run's window ends the second before it starts. */
async function nextSecond() {
  await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 20));
}

describe('incremental runs under steady churn', () => {
  it('four runs in a row, half the catalog changed before each and four products before every page: each exits 0, together they hold every latest version', async () => {
    const latest = new Map<string, number>();
    let changedDuring = 0;
    for (let run = 0; run < 4; run++) {
      if (run > 0) {
        // Two boundaries: past every change of the previous run, so no updatedAt moves back.
        await nextSecond();
        await nextSecond();
        g.sandbox.touch({ count: 1500 }, Math.floor(Date.now() / 1000) - 1);
      }
      const before = new Set(await outputs(g.ws));
      hook = ({ endpoint }) => {
        if (endpoint !== 'products.query') return;
        changedDuring += g.sandbox.touch({ count: 4 }).products.length;
      };
      let result;
      try {
        result = await runInProcess(g.ws, g.sandbox);
      } finally {
        hook = undefined;
      }
      expect(result.ok, result.ok ? '' : `run ${run + 1}: ${result.error.code}: ${result.error.message}`).toBe(true);
      for (const file of (await outputs(g.ws)).filter((n) => !before.has(n)))
        for (const line of await jsonlLines(g.ws.path(`out/${file}`)))
          latest.set(line.id, Math.max(latest.get(line.id) ?? 0, line.meta.updatedAt));
    }
    // What the last run's touches changed is the fifth run's; settle it, then compare every product.
    await nextSecond();
    const lastBefore = new Set(await outputs(g.ws));
    const last = await runInProcess(g.ws, g.sandbox);
    expect(last.ok).toBe(true);
    for (const file of (await outputs(g.ws)).filter((n) => !lastBefore.has(n)))
      for (const line of await jsonlLines(g.ws.path(`out/${file}`)))
        latest.set(line.id, Math.max(latest.get(line.id) ?? 0, line.meta.updatedAt));
    expect(changedDuring).toBeGreaterThan(100);
    const stale: string[] = [];
    for (const id of g.expected) {
      const now = g.sandbox.dataset.updatedAt[g.sandbox.dataset.productIndex(id)]!;
      if (latest.get(id) !== now) stale.push(`${id}: ${latest.get(id)} != ${now}`);
    }
    expect(stale.slice(0, 10), 'products whose latest version no run wrote').toEqual([]);
  });
});
