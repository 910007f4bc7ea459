// Bench: how fast the sandbox serves a paged extract, measured from a client
// over loopback, and how much memory it holds. Starts `catalog-streams
// sandbox` (the built CLI) in its own process, plans createdAt windows under
// the 10000 result cap by bisection, then pages through every window with
// pages of 250 (`concurrency` requests in flight), checking that every
// product arrives exactly once. Reports products/s and the sandbox's RSS.
//
//   npx tsc -p tsconfig.json && node dist/test/bench/sandbox-serving.js [products] [concurrency] [--no-parse]
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Pool } from 'undici';

export interface SandboxServingResult {
  products: number;
  concurrency: number;
  /** Whether the client parsed every page as JSON (as a real client does). */
  parsed: boolean;
  startupSeconds: number;
  windows: number;
  planRequests: number;
  pages: number;
  bytes: number;
  extractSeconds: number;
  productsPerSec: number;
  /** The sandbox process's resident memory after the extract, and its peak (Linux), in MB. */
  sandboxRssMb: number;
  sandboxPeakRssMb?: number;
}

const PAGE_SIZE = 250;
const CAP = 10_000;

export async function measureSandboxServing(options: { products?: number; concurrency?: number; parse?: boolean } = {}): Promise<SandboxServingResult> {
  const products = options.products ?? 1_000_000;
  const concurrency = options.concurrency ?? 4;
  const parse = options.parse ?? true;
  const main = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
  const started = performance.now();
  const child = spawn(process.execPath, [main, 'sandbox', '--port', '0', '--products', String(products), '--rate-limit', '0', '--true-total'], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve);
      child.once('exit', (code) => reject(new Error(`the sandbox exited (${code}) before listening`)));
    });
    const [, url, key, secret] = /listening on (\S+) \(CATALOG_API_KEY=(\S+) CATALOG_API_SECRET=(\S+),/.exec(line) ?? [];
    if (!url) throw new Error(`unexpected first line: ${line}`);
    const startupSeconds = (performance.now() - started) / 1000;
    const pool = new Pool(url, { connections: concurrency, pipelining: 1 });
    const headers = { authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`, 'content-type': 'application/json' };
    const post = async (path: string, body: unknown) => {
      const res = await pool.request({ path, method: path.startsWith('/_') ? 'GET' : 'POST', headers, body: path.startsWith('/_') ? undefined : JSON.stringify(body) });
      const buffer = Buffer.from(await res.body.arrayBuffer());
      if (res.statusCode !== 200) throw new Error(`${path} answered ${res.statusCode}: ${buffer.toString().slice(0, 300)}`);
      return buffer;
    };
    const query = async (filter: unknown, sorting: unknown, no: number, size: number) => JSON.parse((await post('/v4/products/query', { filter, sorting, page: { no, size } })).toString());

    // Plan: createdAt windows of fewer than 10000 products (the sandbox runs with --true-total).
    let planRequests = 2;
    const lo = (await query({ createdAt: 0 }, { createdAt: 'ASC' }, 0, 10)).results[0].meta.createdAt as number;
    const hi = (await query({ createdAt: 0 }, { createdAt: 'DESC' }, 0, 10)).results[0].meta.createdAt as number;
    const windows: { from: number; until: number; total: number }[] = [];
    const plan = async (from: number, until: number): Promise<void> => {
      planRequests++;
      const total = (await query({ createdAt: { from, until } }, { id: 'ASC' }, 0, 10)).meta.total as number;
      if (total === 0) return;
      if (total < CAP || from === until) {
        if (total >= CAP) throw new Error(`more than ${CAP} products share createdAt ${from}`);
        windows.push({ from, until, total });
        return;
      }
      const mid = Math.floor((from + until) / 2);
      await plan(from, mid);
      await plan(mid + 1, until);
    };
    await plan(lo, hi);

    // Extract: every page of every window, `concurrency` in flight.
    const jobs = windows.flatMap((w) => Array.from({ length: Math.ceil(w.total / PAGE_SIZE) }, (_, no) => ({ w, no })));
    const seen = new Uint8Array(products);
    let received = 0;
    let bytes = 0;
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < jobs.length) {
          const { w, no } = jobs[next++]!;
          const body = await post('/v4/products/query', { filter: { createdAt: { from: w.from, until: w.until } }, sorting: { id: 'ASC' }, page: { no, size: PAGE_SIZE } });
          bytes += body.length;
          if (parse) {
            for (const p of JSON.parse(body.toString()).results as { id: string }[]) {
              const i = Number(p.id.slice(1)) - 1;
              if (seen[i]) throw new Error(`${p.id} arrived twice`);
              seen[i] = 1;
              received++;
            }
          } else received += Math.min(PAGE_SIZE, w.total - no * PAGE_SIZE);
        }
      }),
    );
    const extractSeconds = (performance.now() - t0) / 1000;
    if (received !== products) throw new Error(`received ${received} products, expected ${products}`);
    const stats = JSON.parse((await post('/_sandbox/stats', undefined)).toString());
    let sandboxPeakRssMb: number | undefined;
    try {
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      const hwm = /VmHWM:\s+(\d+) kB/.exec(status);
      if (hwm) sandboxPeakRssMb = Math.round(Number(hwm[1]) / 1024);
    } catch {
      // not Linux: the peak is unknown
    }
    await pool.close();
    return {
      products,
      concurrency,
      parsed: parse,
      startupSeconds: round(startupSeconds),
      windows: windows.length,
      planRequests,
      pages: jobs.length,
      bytes,
      extractSeconds: round(extractSeconds),
      productsPerSec: Math.round(products / extractSeconds),
      sandboxRssMb: Math.round(stats.memory.rss / 2 ** 20),
      sandboxPeakRssMb,
    };
  } finally {
    child.kill('SIGTERM');
  }
}

const round = (n: number) => Math.round(n * 100) / 100;

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [products, concurrency] = process.argv.slice(2).filter((a) => !a.startsWith('--')).map(Number);
  const result = await measureSandboxServing({ products: products || undefined, concurrency: concurrency || undefined, parse: !process.argv.includes('--no-parse') });
  console.log(JSON.stringify(result, null, 2));
}
