// A full run of the `table` sink checks its delete candidates against the API before it writes
// delete rows (issue 22, case 4): keys of the previous version missing from the extract are
// asked for again by id, and what still exists stays current. Over the sandbox, on loopback:
// - a `state:` pipeline's full refresh while products are touched (from the run's own request
//   events, so the touches interleave with the pages): before the check, every product touched
//   ahead of its page left the bounded updatedSince window and the run refused to delete them
//   (or, below deletes.maxRatio, wrote delete rows for products that exist);
// - more than 1000 candidates: lookups of 1000 ids in pages of 250, the requests counted;
// - a key that is not `id` (the lookup goes by the previous record's id, the merge by key);
// - a product that left the source's filter is still deleted (the lookup keeps the filter).
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RunEvents } from '../../src/events.js';
import { PRODUCT_STATUSES } from '../../src/sandbox/index.js';
import type { TableManifest } from '../../src/sinks/table/table-sink.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { tempDir } from './records.js';
import { dayTime, pipelineYaml, TableDays } from './table-harness.js';

let sandbox: TestSandbox | undefined;
afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
});

const seconds = (d: Date) => Math.floor(d.getTime() / 1000);

async function readManifest(root: string): Promise<TableManifest> {
  return JSON.parse(await readFile(join(root, '_table.json'), 'utf8')) as TableManifest;
}

/** The snapshot of `version` in file order: key, id, updatedAt (seconds) and the _extra column. */
async function snapshotRows(root: string, manifest: TableManifest, key = 'id') {
  const version = manifest.versions.at(-1)!;
  const files = version.snapshot.map((f) => sqlString(join(root, f.path))).join(', ');
  const { rows } = await duckdbQuery(
    `SELECT ${key} AS k, id, epoch(meta_updatedAt)::BIGINT AS u, _extra FROM read_parquet([${files}], hive_partitioning = false)`,
  );
  return rows.map((r) => ({ k: r.k as string, id: r.id as string, u: Number(r.u), extra: r._extra }));
}

/** This version's change rows: id, change, updatedAt. */
async function changeRows(root: string, manifest: TableManifest) {
  const version = manifest.versions.at(-1)!;
  if (version.changes.length === 0) return [];
  const files = version.changes.map((f) => sqlString(join(root, f.path))).join(', ');
  const { rows } = await duckdbQuery(
    `SELECT id, _change, epoch(meta_updatedAt)::BIGINT AS u FROM read_parquet([${files}], hive_partitioning = false) ORDER BY id`,
  );
  return rows.map((r) => ({ id: r.id as string, change: r._change as string, u: Number(r.u) }));
}

/** Every product the sandbox serves now: id -> updatedAt. */
function visibleNow(sb: TestSandbox, statuses?: readonly string[]): Map<string, number> {
  const ds = sb.dataset;
  const out = new Map<string, number>();
  for (let i = 0; i < ds.productCount; i++) {
    if (ds.hidden.has(i)) continue;
    if (statuses && !statuses.includes(PRODUCT_STATUSES[ds.status[i]!]!)) continue;
    out.set(ds.productId(i), ds.updatedAt[i]!);
  }
  return out;
}

function infoEvents(events: RunEvents, code: string): Array<Record<string, any>> {
  const out: Array<Record<string, any>> = [];
  events.on('info', (e) => {
    if (e.code === code) out.push(e);
  });
  return out;
}

describe('table sink: a full refresh over a catalog that changes while it reads', () => {
  it('keeps every product touched during the run (latest version), deletes only the hidden ones', async () => {
    // 1000 products, 10 pages (issue 38: was 1,500): the touches after the first 10 requests miss
    // about 65 unread products, 1.3 times the 5 % below, as 1,500 products' 15 pages missed ~95 of 75.
    sandbox = await startTestSandbox({ products: 1000, seed: 22 });
    const dir = await tempDir('table-deletes-');
    const days = new TableDays(sandbox, dir, pipelineYaml('lake/products'));
    await days.write();
    const root = join(dir, 'lake/products');
    await days.check(root, await days.run(dayTime(0)), dayTime(0), await days.expectedAfter('first'));
    const before = new Map([...days.model].map(([id, row]) => [id, row.u]));

    const hidden = (await sandbox.post('/_sandbox/hide', { count: 4 })).json().products as string[];
    // During the full run: 15 products touched after each of the run's first 10 requests, stamped
    // with the run's start (past its window, which ends the second before).
    const at = dayTime(1);
    const touched = new Set<string>();
    const events = new RunEvents();
    let requests = 0;
    events.on('request', () => {
      if (++requests > 10) return;
      for (const id of sandbox!.touch({ count: 15 }, seconds(at)).products) touched.add(id);
    });
    const checked = infoEvents(events, 'table.deletes_checked');
    const summary = await days.runWith(at, { full: true, events }).catch((e: { summary?: unknown }) => e.summary ?? e);
    expect((summary as { status?: string }).status, JSON.stringify((summary as { error?: unknown }).error)).toBe(
      'succeeded',
    );

    const manifest = await readManifest(root);
    const version = manifest.versions.at(-1)!;
    expect(version.mode).toBe('full');
    const visible = visibleNow(sandbox);
    // The snapshot: every product that exists, once, in key order; no product of another shape (_extra empty:
    // the looked-up records went through the pipeline's validate and pick too).
    const snap = await snapshotRows(root, manifest);
    expect(snap.map((r) => r.id)).toEqual([...visible.keys()].sort());
    expect(snap.filter((r) => r.extra !== null).map((r) => r.id)).toEqual([]);
    // Untouched products as they are; touched ones either as read before their touch (the extract
    // delivered them, the next run brings the change) or, when they had left the window before
    // their page was read, in their latest version, found by the check.
    const latest = snap.filter((r) => touched.has(r.id) && r.u === visible.get(r.id));
    for (const r of snap) {
      if (touched.has(r.id)) expect([before.get(r.id), visible.get(r.id)]).toContain(r.u);
      else expect(r.u, r.id).toBe(visible.get(r.id));
    }
    // Delete rows for the hidden products only; an update row for each product the check kept.
    const changes = await changeRows(root, manifest);
    expect(changes.filter((c) => c.change === 'delete').map((c) => c.id)).toEqual([...hidden].sort());
    expect(changes.filter((c) => c.change !== 'delete')).toEqual(
      latest.map((r) => ({ id: r.id, change: 'update', u: r.u })),
    );
    expect(version.counts).toEqual({
      inserted: 0,
      updated: latest.length,
      deleted: hidden.length,
      unchanged: visible.size - latest.length,
    });
    // Enough products left the window to have refused the run before the check (above 5 %).
    expect(latest.length).toBeGreaterThan(0.05 * before.size);
    expect(checked).toHaveLength(1);
    expect(checked[0]).toMatchObject({ checked: latest.length + hidden.length, kept: latest.length, deleted: 4 });
    // ceil(candidates / 1000) lookups of 1 to 4 pages each.
    expect(checked[0]!.requests).toBeGreaterThanOrEqual(Math.ceil(latest.length / 250));
    expect(checked[0]!.requests).toBeLessThanOrEqual(4 * Math.ceil((latest.length + hidden.length) / 1000));

    // The next incremental run brings the changes the extract read before their touch.
    const next = await days.run(dayTime(2));
    expect(next.status).toBe('succeeded');
    const after = await snapshotRows(root, await readManifest(root));
    expect(after.map((r) => [r.id, r.u])).toEqual([...visibleNow(sandbox)].sort((a, b) => (a[0] < b[0] ? -1 : 1)));
  }, 120_000);

  it('checks more than 1000 candidates in lookups of 1000 ids, pages of 250', async () => {
    sandbox = await startTestSandbox({ products: 1200, seed: 23 });
    const dir = await tempDir('table-deletes-');
    const days = new TableDays(sandbox, dir, pipelineYaml('lake/products'));
    await days.write();
    const root = join(dir, 'lake/products');
    await days.check(root, await days.run(dayTime(0)), dayTime(0), await days.expectedAfter('first'));

    // 1050 products updated at the full run's start (outside its window: missing from the extract) and 5 hidden:
    // 1055 candidates, past one lookup's 1000 (issue 38: 1,200 products, was 1,600 with 1100 touched).
    const at = dayTime(1);
    const touched = sandbox.touch({ count: 1050 }, seconds(at)).products;
    const untouched = [...days.model.keys()].filter((id) => !touched.includes(id));
    const hidden = (await days.mutate('hide', { ids: untouched.slice(0, 5) })).sort();
    for (const id of touched) days.pending.add(id);
    const candidates = [...touched, ...hidden].sort();
    const gone = new Set(hidden);
    let lookups = 0;
    for (let i = 0; i < candidates.length; i += 1000) {
      const found = candidates.slice(i, i + 1000).filter((id) => !gone.has(id)).length;
      lookups += Math.max(1, Math.ceil(found / 250));
    }
    const inWindow = 1200 - 1050 - 5;
    sandbox.resetStats();
    const events = new RunEvents();
    const checked = infoEvents(events, 'table.deletes_checked');
    const summary = await days.runWith(at, { full: true, events });
    const served = sandbox.stats.byEndpoint['products.query'];
    await days.check(root, summary, at, await days.expectedAfter('full'));

    expect(lookups).toBe(5);
    expect(checked).toEqual([expect.objectContaining({ checked: 1055, kept: 1050, deleted: 5, requests: lookups })]);
    // The extract's pages (100 records each; one more per lane it splits into, at most concurrency 3) and the
    // lookups, nothing else.
    expect(Object.keys(served!)).toEqual(['200']);
    expect(served![200]! - lookups).toBeGreaterThanOrEqual(Math.ceil(inWindow / 100));
    expect(served![200]! - lookups).toBeLessThanOrEqual(Math.ceil(inWindow / 100) + 3);
    expect(summary.requests).toBe(served![200]);
    expect((await readManifest(root)).versions.at(-1)!.counts).toMatchObject({ updated: 1050, deleted: 5 });
  }, 120_000);

  it('a key that is not the id: looked up by id, merged by key', async () => {
    sandbox = await startTestSandbox({ products: 600, seed: 24 });
    const dir = await tempDir('table-deletes-');
    // sku: the id reversed, so key order is not id order.
    await writeFile(
      join(dir, 'sku.mjs'),
      "export default (record) => ({ ...record, sku: 'S' + [...record.id].reverse().join('') });\n",
    );
    const yaml = pipelineYaml('lake/products')
      .replace(
        '  - { type: pick',
        '  - { type: custom, module: ./sku.mjs, columns: { sku: string } }\n  - { type: pick',
      )
      .replace('fields: [id,', 'fields: [sku, id,')
      .replace('    path: "lake/products"', '    path: "lake/products"\n    key: sku');
    expect(yaml).toContain('key: sku');
    const days = new TableDays(sandbox, dir, yaml);
    await days.write();
    const root = join(dir, 'lake/products');
    const first = await days.run(dayTime(0));
    expect(first.status).toBe('succeeded');

    const at = dayTime(1);
    const touched = new Set(sandbox.touch({ count: 40 }, seconds(at)).products);
    const untouched = [...visibleNow(sandbox).keys()].filter((id) => !touched.has(id));
    const hidden = (await days.mutate('hide', { ids: untouched.slice(0, 3) })).sort();
    const events = new RunEvents();
    const checked = infoEvents(events, 'table.deletes_checked');
    const summary = await days.runWith(at, { full: true, events });
    expect(summary.status).toBe('succeeded');
    expect(checked[0]).toMatchObject({ checked: 43, kept: 40, deleted: 3 });

    const manifest = await readManifest(root);
    const snap = await snapshotRows(root, manifest, 'sku');
    const visible = visibleNow(sandbox);
    const sku = (id: string) => `S${[...id].reverse().join('')}`;
    // One row per key, in key (sku) order, each product in its latest version.
    expect(snap.map((r) => r.k)).toEqual([...visible.keys()].map(sku).sort());
    for (const r of snap) expect(r.u, r.id).toBe(visible.get(r.id));
    const changes = await changeRows(root, manifest);
    expect(changes.filter((c) => c.change === 'delete').map((c) => c.id)).toEqual([...hidden].sort());
    expect(changes.filter((c) => c.change === 'update').map((c) => c.id)).toEqual([...touched].sort());
    expect(manifest.versions.at(-1)!.counts).toEqual({
      inserted: 0,
      updated: 40,
      deleted: 3,
      unchanged: visible.size - 40,
    });
  }, 120_000);

  it("a product that left the source's filter is deleted: the lookup asks with the filter", async () => {
    sandbox = await startTestSandbox({ products: 400, seed: 25 });
    const dir = await tempDir('table-deletes-');
    const statuses = ['active', 'inactive', 'replaced'];
    const yaml = pipelineYaml('lake/products').replace(
      'filter: { createdAt: 0 }',
      `filter: { status: [${statuses.join(', ')}] }`,
    );
    const days = new TableDays(sandbox, dir, yaml);
    await days.write();
    const root = join(dir, 'lake/products');
    expect((await days.run(dayTime(0))).status).toBe('succeeded');

    const inTable = visibleNow(sandbox, statuses);
    const at = dayTime(1);
    // Both changed at the run's start, outside its window: some products still selected, some not.
    const touched = sandbox.touch({ count: 6 }, seconds(at)).products.filter((id) => inTable.has(id));
    const moved = (await sandbox.post('/_sandbox/status', { count: 2, status: 'no_selection', at: seconds(at) })).json()
      .products as string[];
    const stillSelected = touched.filter((id) => !moved.includes(id));
    const summary = await days.runWith(at, { full: true });
    expect(summary.status).toBe('succeeded');
    const manifest = await readManifest(root);
    const changes = await changeRows(root, manifest);
    expect(changes.filter((c) => c.change === 'delete').map((c) => c.id)).toEqual(
      moved.filter((id) => inTable.has(id)).sort(),
    );
    expect(moved.filter((id) => inTable.has(id)).length).toBeGreaterThan(0);
    expect(changes.filter((c) => c.change === 'update').map((c) => c.id)).toEqual([...stillSelected].sort());
    const snap = await snapshotRows(root, manifest);
    expect(snap.map((r) => r.id)).toEqual([...visibleNow(sandbox, statuses).keys()].sort());
  }, 120_000);
});

// Issue 35, case 6: the shipped table pipelines validate with `onInvalid: dead-letter` (or skip).
// A full refresh after a product was hidden, or after products the table holds got a version that
// fails validation, crashed in the delete check (the lookup's validate had no dead-letter spec).
// A product that exists but is now invalid is not deleted: its last valid row stays (unchanged),
// as an incremental run keeps it, and the invalid version is in the extract's dead letters only.
describe.each(['dead-letter', 'skip'] as const)('table sink: a full refresh with validate onInvalid: %s', (action) => {
  it('deletes the hidden product, keeps the products now invalid in their last valid row, one dead letter each', async () => {
    sandbox = await startTestSandbox({ products: 300, seed: 26 });
    const dir = await tempDir('table-deletes-');
    const policy =
      action === 'dead-letter'
        ? '{ type: validate, onInvalid: dead-letter, maxInvalid: "2%", deadLetter: { type: jsonl, path: "rejected/rejected-{run}.jsonl" } }'
        : '{ type: validate, onInvalid: skip, maxInvalid: "2%" }';
    const yaml = pipelineYaml('lake/products').replace('{ type: validate, onInvalid: fail }', policy);
    expect(yaml).toContain(`onInvalid: ${action}`);
    const days = new TableDays(sandbox, dir, yaml);
    await days.write();
    const root = join(dir, 'lake/products');
    const first = await days.run(dayTime(0));
    await days.check(root, first, dayTime(0), await days.expectedAfter('first'));
    const before = new Map(days.model);

    // Between the runs: one product hidden, three get a version that fails validation.
    const at = dayTime(1);
    const ids = [...before.keys()];
    const hidden = await days.mutate('hide', { ids: [ids[10]!] });
    const invalid = (
      await sandbox.post('/_sandbox/invalidate', { ids: ids.slice(20, 23), at: seconds(at) - 3600 })
    ).json().products as string[];
    const events = new RunEvents();
    const checked = infoEvents(events, 'table.deletes_checked');
    const summary = await days
      .runWith(at, { full: true, events })
      .catch((e: { summary?: unknown; message?: string }) => (e.summary ?? e) as never);
    expect(summary.status, JSON.stringify(summary)).toBe('succeeded');
    // Invalid once: the extract's three, not again by the check's lookup.
    expect(summary.records).toMatchObject({
      invalid: 3,
      ...(action === 'dead-letter' ? { deadLettered: 3, skipped: 0 } : { deadLettered: 0, skipped: 3 }),
    });
    expect(checked).toEqual([expect.objectContaining({ checked: 4, kept: 3, invalid: 3, deleted: 1 })]);

    const manifest = await readManifest(root);
    expect(manifest.versions.at(-1)!.counts).toEqual({
      inserted: 0,
      updated: 0,
      deleted: 1,
      unchanged: before.size - 1,
    });
    const changes = await changeRows(root, manifest);
    expect(changes).toEqual([{ id: hidden[0], change: 'delete', u: before.get(hidden[0]!)!.u }]);
    // The invalid products' rows as the first run wrote them.
    const snap = await snapshotRows(root, manifest);
    expect(snap.map((r) => r.id)).toEqual(ids.filter((id) => id !== hidden[0]));
    for (const id of invalid) expect(snap.find((r) => r.id === id)!.u).toBe(before.get(id)!.u);
    if (action === 'dead-letter') {
      const letters = (await readFile(join(dir, `rejected/rejected-${summary.runId}.jsonl`), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { id: string });
      expect(letters.map((l) => l.id)).toEqual(invalid);
    }
  }, 60_000);
});
