// Runs the `table` sink over the sandbox day by day and checks every published version with
// DuckDB against a model computed from the sandbox's own records (not from the sink's files).
import { readFileSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { RunEvents } from '../../src/events.js';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { RunFailedError, runPipeline, type RunSummary } from '../../src/pipeline/runner.js';
import type { TableManifest } from '../../src/sinks/table/table-sink.js';
import { GENERATION_EPOCH } from '../../src/sandbox/index.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import type { TestSandbox } from '../helpers/sandbox.js';

export const FIELDS = ['id', 'status', 'deleted', 'publicPrice', 'brands', 'meta.updatedAt'] as const;

export interface Row {
  id: string;
  status: string;
  deleted: boolean;
  publicPrice: number;
  u: number;
}

/** What the pipeline keeps of a product, as the model holds it (brands compared as JSON). */
export function modelRow(p: Record<string, any>): Row & { brands: string } {
  return {
    id: p.id,
    status: p.status,
    deleted: p.deleted,
    publicPrice: p.publicPrice,
    u: p.meta.updatedAt,
    brands: JSON.stringify(p.brands ?? []),
  };
}

export function pipelineYaml(tablePath: string, options: { maxRatio?: number; extraSink?: string } = {}): string {
  return `name: products-table
source:
  type: products.query
  filter: { createdAt: 0 }
  sorting: { id: ASC }
  pageSize: 100
transforms:
  - { type: validate, onInvalid: fail }
  - { type: pick, fields: [${FIELDS.join(', ')}] }
sinks:
  - type: table
    path: "${tablePath}"
    deletes: { maxRatio: ${options.maxRatio ?? 0.05} }
    rowGroupRows: 50
    maxRows: 200
    sortBufferBytes: 20000
${options.extraSink ?? ''}state: { path: .state/products-table.json, overlapSeconds: 600 }
`;
}

/** Day d's run time (02:00 UTC by default), well after every generated timestamp. */
export function dayTime(d: number, hour = 2): Date {
  return new Date((GENERATION_EPOCH + 40 * 86_400 + d * 86_400 + hour * 3600) * 1000);
}

/** The 20 days' schedule: full runs (deletes inferred), the failed run, the same-day rerun. */
export const FULL_DAYS = new Set([4, 9, 14, 19]);
export const FAILED_DAY = 7;
export const RERUN_DAY = 12;

export type Model = Map<string, ReturnType<typeof modelRow>>;

/** What a layout checks of the 20 days (table-history.test.ts, table-iceberg-history.test.ts). */
export interface DayChecks<Before> {
  /** What the failed run must leave as it was, read before it. */
  before(at: Date): Promise<Before>;
  /** After the failed run: nothing published (`before` is what was read before it). */
  unchanged(before: Before, at: Date): Promise<void>;
  /** After a successful run: its version is exactly `next`; `rerunOf` is the same day's earlier run. */
  published(summary: RunSummary, at: Date, next: Model, rerunOf?: RunSummary): Promise<void>;
}

/**
 * Issue 13's 20 simulated days over `days`: each day the sandbox's changes (drawn from `rnd`),
 * then a run: incremental, full on FULL_DAYS, a full run failed by invalid records on FAILED_DAY
 * (nothing published, the cursor kept: the next day brings its changes), and on RERUN_DAY a
 * second run after more changes.
 */
export async function twentyDays<Before>(days: TableDays, rnd: () => number, checks: DayChecks<Before>): Promise<void> {
  for (let d = 0; d < 20; d++) {
    if (d > 0) await days.mutateDay(d, 1, rnd);
    const at = dayTime(d);
    if (d === FAILED_DAY) {
      const before = await checks.before(at);
      // A full run in which one record in 40 is served schema-invalid: validate fails it part-way through.
      await days.sandbox.post('/_sandbox/faults', { invalidRecordRate: 0.025 });
      const failed = await days.run(at, { full: true }).then(
        () => undefined,
        (err: unknown) => err,
      );
      await days.sandbox.post('/_sandbox/faults', {});
      expect(failed).toBeInstanceOf(RunFailedError);
      expect((failed as RunFailedError).exitCode).toBe(1);
      expect((failed as RunFailedError).code).toBe('data.invalid');
      await checks.unchanged(before, at);
      continue;
    }
    const full = FULL_DAYS.has(d);
    const next = await days.expectedAfter(d === 0 ? 'first' : full ? 'full' : 'incremental');
    const summary = await days.run(at, { full });
    await checks.published(summary, at, next);
    if (d === RERUN_DAY) {
      await days.mutateDay(d, 4, rnd);
      const later = dayTime(d, 5);
      const expected = await days.expectedAfter('incremental');
      await checks.published(await days.run(later), later, expected, summary);
    }
  }
}

export class TableDays {
  readonly registry = createRegistry();
  /** The model: the latest version of every live key, from the sandbox's records. */
  model = new Map<string, ReturnType<typeof modelRow>>();
  /** Ids changed in the sandbox since the last successful run. */
  pending = new Set<string>();
  /** Every published version's model and run time, in order. */
  readonly versions: Array<{ runId: string; at: Date; model: Map<string, ReturnType<typeof modelRow>> }> = [];

  constructor(
    readonly sandbox: TestSandbox,
    readonly dir: string,
    readonly yaml: string,
  ) {}

  async write(): Promise<void> {
    await writeFile(join(this.dir, 'products-table.yml'), this.yaml);
  }

  async mutate(verb: 'touch' | 'hide' | 'reveal' | 'status', body: Record<string, unknown>): Promise<string[]> {
    const answer = await this.sandbox.post(`/_sandbox/${verb}`, body);
    expect(answer.status, JSON.stringify(answer.json())).toBe(200);
    const ids = answer.json().products as string[];
    for (const id of ids) this.pending.add(id);
    return ids;
  }

  /** Day d's changes at `hour`: touches, reveals, status changes (some deleted) and hides, drawn from `rnd`. */
  async mutateDay(d: number, hour: number, rnd: () => number): Promise<void> {
    const at = Math.floor(dayTime(d, hour).getTime() / 1000);
    await this.mutate('touch', { count: 1 + Math.floor(rnd() * 6), at });
    await this.mutate('reveal', { count: Math.floor(rnd() * 5), at });
    const statuses = ['active', 'inactive', 'replaced', 'no_selection'];
    await this.mutate('status', {
      count: Math.floor(rnd() * 4),
      status: statuses[Math.floor(rnd() * 4)],
      ...(rnd() < 0.3 ? { deleted: true } : {}),
      at,
    });
    await this.mutate('hide', { count: Math.floor(rnd() * 4), at });
  }

  async visible(ids?: string[]): Promise<Array<Record<string, any>>> {
    const out: Array<Record<string, any>> = [];
    for (let no = 0; ; no++) {
      const body = { filter: ids ? { id: ids } : { createdAt: 0 }, sorting: { id: 'ASC' }, page: { no, size: 250 } };
      const { results } = await this.sandbox.query('/v4/products/query', body);
      out.push(...(results as Array<Record<string, any>>));
      if (results.length < 250) return out;
    }
  }

  /** Runs the pipeline once; `full` forces a full refresh. Returns the summary or the failure. */
  async run(at: Date, opts: { full?: boolean; allowDeletes?: boolean } = {}): Promise<RunSummary> {
    return this.runWith(at, opts);
  }

  async runWith(
    at: Date,
    opts: { full?: boolean; allowDeletes?: boolean; signal?: AbortSignal; events?: RunEvents } = {},
  ): Promise<RunSummary> {
    const [loaded] = parsePipelines(this.yaml, this.registry, { file: join(this.dir, 'products-table.yml') });
    const connection = {
      baseUrl: this.sandbox.url,
      apiKey: this.sandbox.credentials.apiKey,
      apiSecret: this.sandbox.credentials.apiSecret,
    };
    return runPipeline(loaded!, {
      registry: this.registry,
      connection,
      now: () => at,
      fullRefresh: opts.full ?? false,
      allowDeletes: opts.allowDeletes ?? false,
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.events ? { events: opts.events } : {}),
    });
  }

  /** The model after a successful run of this kind (computed from the sandbox, before or after the run: nothing changes during it). */
  async expectedAfter(mode: 'first' | 'full' | 'incremental'): Promise<Map<string, ReturnType<typeof modelRow>>> {
    if (mode !== 'incremental') return new Map((await this.visible()).map((p) => [p.id as string, modelRow(p)]));
    const next = new Map(this.model);
    const ids = [...this.pending];
    for (let i = 0; i < ids.length; i += 500)
      for (const p of await this.visible(ids.slice(i, i + 500))) next.set(p.id, modelRow(p));
    return next;
  }

  /** Records a successful run and checks its files with DuckDB; `root` is the table read locally. */
  async check(
    root: string,
    summary: RunSummary,
    at: Date,
    next: Map<string, ReturnType<typeof modelRow>>,
  ): Promise<void> {
    expect(summary.status).toBe('succeeded');
    const manifest = JSON.parse(await readFile(join(root, '_table.json'), 'utf8')) as TableManifest;
    expect(manifest.current).toBe(summary.runId);
    const version = manifest.versions.at(-1)!;
    const date = at.toISOString().slice(0, 10);
    expect(version.date).toBe(date);

    // The snapshot: exactly the model, one row per key, sorted by key.
    const snapshotGlob = sqlString(join(root, `snapshot/dt=${date}/*.parquet`));
    // Read in file order without ORDER BY: equal to the sorted model only if written sorted by key.
    const snap = await duckdbQuery(
      `SELECT id, status, deleted, publicPrice::INTEGER AS publicPrice, epoch(meta_updatedAt)::BIGINT AS u FROM read_parquet(${snapshotGlob}, hive_partitioning = false)`,
    );
    const got = snap.rows.map((r) => ({
      id: r.id,
      status: r.status,
      deleted: r.deleted,
      publicPrice: r.publicPrice,
      u: Number(r.u),
    }));
    const want = [...next.values()].sort((a, b) => (a.id < b.id ? -1 : 1)).map(({ brands: _b, ...r }) => r);
    expect(got.length).toBe(want.length);
    expect(got).toEqual(want);
    // Every file the manifest lists for this version exists with its row count; nothing else in the day's folder.
    const listed = version.snapshot.map((f) => f.path.split('/').at(-1)).sort();
    expect((await readdir(join(root, `snapshot/dt=${date}`))).sort()).toEqual(listed);
    expect(version.rows).toBe(want.length);

    // The change rows: exactly the differences against the previous version.
    const prev = this.model;
    const expected: string[] = [];
    for (const [id, row] of next) {
      const before = prev.get(id);
      if (!before) expected.push(`${id} insert`);
      else if (JSON.stringify(before) !== JSON.stringify(row)) expected.push(`${id} update`);
    }
    for (const id of prev.keys()) if (!next.has(id)) expected.push(`${id} delete`);
    expected.sort();
    const changesGlob = sqlString(join(root, `changes/dt=${date}/*.parquet`));
    const changes =
      version.changes.length === 0
        ? { rows: [] }
        : await duckdbQuery(
            `SELECT id, _change, status, publicPrice::INTEGER AS publicPrice, _changed_at, _run_id FROM read_parquet(${changesGlob}, hive_partitioning = false) WHERE _run_id = '${summary.runId}' ORDER BY id`,
          );
    expect(changes.rows.map((r) => `${r.id} ${r._change}`).sort()).toEqual(expected);
    for (const r of changes.rows) {
      expect((r._changed_at as Date).getTime()).toBe(at.getTime());
      // A delete row carries the last known values.
      const known = r._change === 'delete' ? prev.get(r.id as string)! : next.get(r.id as string)!;
      expect([r.status, r.publicPrice]).toEqual([known.status, known.publicPrice]);
    }
    expect(version.counts).toEqual({
      inserted: expected.filter((e) => e.endsWith(' insert')).length,
      updated: expected.filter((e) => e.endsWith(' update')).length,
      deleted: expected.filter((e) => e.endsWith(' delete')).length,
      unchanged: next.size - expected.filter((e) => !e.endsWith(' delete')).length,
    });

    this.model = next;
    this.pending.clear();
    this.versions.push({ runId: summary.runId, at, model: next });
    await this.checkHistory(root);
  }

  /** The README's type-2 view, "as of" every version published so far, equals that version's model. */
  async checkHistory(root: string): Promise<void> {
    const times = this.versions.map((v, i) => `(${i}, TIMESTAMPTZ '${v.at.toISOString()}')`).join(', ');
    const { rows } = await duckdbQuery(`${historyViewSql(join(root, 'changes/dt=*/*.parquet'))};
      SELECT v.i, h.id, h.status, h.publicPrice::INTEGER AS publicPrice
      FROM (VALUES ${times}) v(i, t)
      JOIN products_history h ON h.valid_from <= v.t AND (h.valid_to IS NULL OR h.valid_to > v.t)
      ORDER BY v.i, h.id`);
    for (let i = 0; i < this.versions.length; i++) {
      const got = rows.filter((r) => r.i === i).map((r) => `${r.id} ${r.status} ${r.publicPrice}`);
      const want = [...this.versions[i]!.model.values()]
        .sort((a, b) => (a.id < b.id ? -1 : 1))
        .map((r) => `${r.id} ${r.status} ${r.publicPrice}`);
      expect(got, `as of version ${i} (${this.versions[i]!.at.toISOString()})`).toEqual(want);
    }
    const current = await duckdbQuery(
      `${historyViewSql(join(root, 'changes/dt=*/*.parquet'))}; SELECT count(*)::INTEGER AS n FROM products_history WHERE is_current`,
    );
    expect(current.rows[0]!.n).toBe(this.model.size);
  }
}

const README_VIEW = (() => {
  const doc = readFileSync(new URL('../../docs/tables.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('**History** (type 2)'));
  const sql = /```sql\n([\s\S]*?)```/.exec(section)![1]!;
  return sql.slice(0, sql.indexOf(';'));
})();

/** The DuckDB history view of docs/tables.md, as the page writes it, over `changesGlob`. */
export function historyViewSql(changesGlob: string): string {
  const placeholder = "'out/products-table/changes/dt=*/*.parquet'";
  expect(README_VIEW).toContain(placeholder);
  return README_VIEW.replace(placeholder, sqlString(changesGlob));
}
