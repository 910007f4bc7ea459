// The soak test (issue 15, Done-when): 20 incremental runs of the shipped nightly
// pipeline (pipelines/products-nightly.yml with pages of 10, so that even the small
// incremental runs read several pages; run by the built CLI as a scheduler would),
// with no cursor overlap (NIGHTLY_OVERLAP_SECONDS=0: each run must hand the next
// a cursor that loses nothing by itself), against a sandbox whose products are touched continuously through its
// touch route, some runs killed at seeded random points (SIGKILL: no clean-up at
// all; SIGTERM: a stop). Each touched product is touched once, so each touch is a
// change that no later touch hides. At the end:
// - every run that was not killed exited 0 (a source completes over a live catalog);
// - the union of the outputs holds the latest version of every product;
// - every change made after the first run is in the outputs (id and updatedAt);
// - nothing a manifest lists is missing, and every file under a final name reads whole.
// The checks are soft: a failure reports every one of them, not only the first.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRODUCT_STATUSES } from '../../src/sandbox/index.js';
import { type CliResult, listFiles, sandboxEnv, startCli, workspace } from '../cli/cli-process.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

const RUNS = 20;
const PRODUCTS = 1200;
const SEED = 15;
/** Products touched per touch, and the pause between touches. */
const TOUCH_BATCH = 2;
const TOUCH_EVERY_MS = 100;

/** mulberry32: a small seeded generator, so the kill points are the same on every machine. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface RunRecord {
  index: number;
  /** Killed once the sandbox has answered `afterRequests` of its requests, `afterMs` later. */
  kill?: { signal: 'SIGKILL' | 'SIGTERM'; afterRequests: number; afterMs: number; sent: boolean };
  result: CliResult;
}

let sandbox: TestSandbox;
let ws: Awaited<ReturnType<typeof workspace>>;
beforeAll(async () => {
  sandbox = await startTestSandbox({ products: PRODUCTS, seed: SEED });
  ws = await workspace('catalog-streams-soak-');
  const nightly = await readFile(join(ws.dir, 'pipelines/products-nightly.yml'), 'utf8');
  if (!nightly.includes('  sorting: { id: ASC }\n'))
    throw new Error('products-nightly.yml changed: update the soak test');
  await writeFile(
    join(ws.dir, 'pipelines/products-nightly.yml'),
    nightly.replace('  sorting: { id: ASC }\n', '  sorting: { id: ASC }\n  pageSize: 10\n'),
  );
});
afterAll(async () => {
  await sandbox?.close();
  await ws?.remove();
});

describe('soak: 20 incremental runs over a catalog that keeps changing, some killed', () => {
  // Measured: 33-54 s on two cores at load average ~20 (eight sessions sharing the machine).
  it(
    'delivers the latest version of every product and every change, and no manifest lists a missing file',
    { timeout: 90_000 },
    async () => {
      const rng = random(SEED);
      const ds = sandbox.dataset;
      const selected = new Set(
        ['active', 'replaced', 'inactive'].map((s) => PRODUCT_STATUSES.indexOf(s as (typeof PRODUCT_STATUSES)[number])),
      );
      const selectable: string[] = [];
      for (let i = 0; i < ds.productCount; i++) if (selected.has(ds.status[i]!)) selectable.push(ds.productId(i));
      // A seeded order of products to touch, each once.
      const toTouch = [...selectable];
      for (let i = toTouch.length - 1; i > 0; i--) {
        const j = Math.floor(rng() * (i + 1));
        [toTouch[i], toTouch[j]] = [toTouch[j]!, toTouch[i]!];
      }
      const touches: { id: string; at: number }[] = [];
      let touchError: unknown;
      const touchOnce = async () => {
        const ids = toTouch.splice(0, TOUCH_BATCH);
        if (ids.length === 0) return;
        const answer = await sandbox.post('/_sandbox/touch', { ids });
        if (answer.status !== 200) throw new Error(`touch answered ${answer.status}: ${answer.text}`);
        const { at } = answer.json<{ at: number }>();
        for (const id of ids) touches.push({ id, at });
      };

      // No overlap: each run must hand the next a cursor that loses nothing on its own, and the
      // last run cannot make up for earlier losses by re-reading the last five minutes.
      const env = sandboxEnv(sandbox, { NIGHTLY_OVERLAP_SECONDS: '0' });
      const runs: RunRecord[] = [];
      let toucher: NodeJS.Timeout | undefined;
      for (let index = 0; index < RUNS; index++) {
        // The first run (the full extract) and the last (after the touching stops) are never killed.
        const kill =
          index > 0 && index < RUNS - 1 && rng() < 0.4
            ? {
                signal: rng() < 0.5 ? ('SIGKILL' as const) : ('SIGTERM' as const),
                afterRequests: Math.floor(rng() * 3),
                afterMs: Math.floor(rng() * 150),
                sent: false,
              }
            : undefined;
        if (index === RUNS - 1) {
          clearInterval(toucher);
          toucher = undefined;
          // Let the last touch land in a second the final run's window covers.
          await new Promise((r) => setTimeout(r, 1100));
        }
        const cli = startCli(['run', 'pipelines/products-nightly.yml', '--quiet'], { cwd: ws.dir, env });
        let timer: NodeJS.Timeout | undefined;
        if (kill) {
          // Start-up (no request yet), between pages, or around the commit: wherever the count lands.
          const base = sandbox.stats.requests;
          const poll = () => {
            if (sandbox.stats.requests - base < kill.afterRequests) {
              timer = setTimeout(poll, 5);
              return;
            }
            timer = setTimeout(() => {
              if (cli.child.exitCode === null && cli.child.signalCode === null) {
                kill.sent = true;
                cli.child.kill(kill.signal);
              }
            }, kill.afterMs);
          };
          poll();
        }
        const result = await cli.done;
        clearTimeout(timer);
        runs.push({ index, kill, result });
        if (index === 0) {
          expect(result.code, `the first (full) run: ${result.stderr}`).toBe(0);
          // Requests take a little time from now on, so kills land in the middle of runs as well as in start-up.
          sandbox.setFaults({ latencyMs: 50 });
          toucher = setInterval(() => void touchOnce().catch((err: unknown) => (touchError ??= err)), TOUCH_EVERY_MS);
        }
      }
      clearInterval(toucher);
      sandbox.setFaults({});
      expect(touchError).toBeUndefined();
      expect(touches.length).toBeGreaterThan(50);
      expect(runs.filter((r) => r.kill?.sent).length).toBeGreaterThan(2);

      // Every run not killed succeeded; a killed one ended by its signal (or finished first).
      const unexpected = runs
        .filter((r) =>
          r.kill?.sent ? ![137, 143, null].includes(r.result.code) && r.result.code !== 0 : r.result.code !== 0,
        )
        .map(
          (r) =>
            `run ${r.index}${r.kill?.sent ? ` (${r.kill.signal})` : ''}: exit ${r.result.code} ${lastError(r.result.stderr)}`,
        );
      expect.soft(unexpected).toEqual([]);

      // Every file under a final name reads whole (DuckDB reads the union), each row's version.
      const out = join(ws.dir, 'out/products-nightly');
      const files = await listFiles(out);
      const finals = files.filter((f) => f.endsWith('.parquet') && !/(^|\/)\./.test(f));
      expect(finals.length).toBeGreaterThan(1);
      const { rows } = await duckdbQuery(
        `SELECT id, epoch(meta_updated_at)::BIGINT AS u FROM read_parquet(${sqlString(join(out, 'dt=*/products-*.parquet'))})`,
      );
      const versions = new Map<string, Set<number>>();
      for (const r of rows) {
        const id = String(r.id);
        if (!versions.has(id)) versions.set(id, new Set());
        versions.get(id)!.add(Number(r.u));
      }

      // The latest version of every product.
      const stale = selectable.filter((id) => {
        const latest = ds.updatedAt[ds.productIndex(id)]!;
        return !versions.get(id)?.has(latest);
      });
      expect
        .soft(stale.slice(0, 10), `${stale.length} of ${selectable.length} products without their latest version`)
        .toEqual([]);

      // Every change after the first run.
      const lost = touches.filter((t) => !versions.get(t.id)?.has(t.at));
      expect.soft(lost.slice(0, 10), `${lost.length} of ${touches.length} changes never delivered`).toEqual([]);

      // Nothing a manifest lists is missing.
      const manifests = files.filter((f) => f.endsWith('_manifest.json') || f.endsWith('.manifest.json'));
      for (const m of manifests) {
        const listed = listedFiles(JSON.parse(await readFile(join(out, m), 'utf8')));
        const missing = listed.filter(
          (p) =>
            !files.includes(p.replace(/^.*?out\/products-nightly\//, '')) && !files.some((f) => join(out, f) === p),
        );
        expect.soft(missing, `${m} lists files that are not there`).toEqual([]);
      }
    },
  );
});

/** A run's error as its summary states it (code and message), for the failure message. */
function lastError(stderr: string): string {
  for (const line of stderr.trim().split('\n').reverse()) {
    try {
      const l = JSON.parse(line) as { event?: string; error?: { code: string; message: string }; message?: string };
      if (l.error) return `${l.error.code}: ${l.error.message}`;
      if (l.event === 'failed') return l.message ?? '';
    } catch {
      return line;
    }
  }
  return '';
}

/** Every file path a manifest names (entries with a path, key, file or location). */
function listedFiles(manifest: unknown): string[] {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (['path', 'file', 'location'].includes(k) && typeof x === 'string') out.push(x);
        else walk(x);
      }
    }
  };
  walk(manifest);
  return out;
}
