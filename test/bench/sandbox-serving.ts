// Bench: how fast the sandbox serves a paged extract, measured from a client
// over loopback, and how much memory it holds. Starts `catalog-streams
// sandbox` (the built CLI) in its own process, plans createdAt windows under
// the 10000 result cap by bisection, then pages through every window with
// pages of 250 (`concurrency` requests in flight), checking that every
// product arrives exactly once. Reports products/s and the sandbox's RSS.
//
//   npx tsc -p tsconfig.json && node dist/test/bench/sandbox-serving.js [products] [concurrency] [--no-parse]
import { request } from 'undici';
import { isMain, round } from './measure.js';
import { basicAuthorization, fetchPages, type PageWindow } from './page-floor.js';
import { type SandboxConnection, startSandboxProcess } from './sandbox-process.js';

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

const CAP = 10_000;

/** createdAt windows of fewer than 10000 products, by bisection (the sandbox reports true totals). */
async function bisectWindows(connection: SandboxConnection): Promise<{ windows: PageWindow[]; requests: number }> {
  let requests = 0;
  const query = async (filter: unknown, sorting: unknown) => {
    requests++;
    const res = await request(`${connection.baseUrl}/v4/products/query`, {
      method: 'POST',
      headers: { authorization: basicAuthorization(connection), 'content-type': 'application/json' },
      body: JSON.stringify({ filter, sorting, page: { no: 0, size: 10 } }),
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`products/query answered ${res.statusCode}: ${text.slice(0, 300)}`);
    return JSON.parse(text) as { meta: { total: number }; results: { meta: { createdAt: number } }[] };
  };
  const lo = (await query({ createdAt: 0 }, { createdAt: 'ASC' })).results[0]!.meta.createdAt;
  const hi = (await query({ createdAt: 0 }, { createdAt: 'DESC' })).results[0]!.meta.createdAt;
  const windows: PageWindow[] = [];
  const plan = async (from: number, until: number): Promise<void> => {
    const { total } = (await query({ createdAt: { from, until } }, { id: 'ASC' })).meta;
    if (total === 0) return;
    if (total < CAP || from === until) {
      if (total >= CAP) throw new Error(`more than ${CAP} products share createdAt ${from}`);
      windows.push({ filter: { createdAt: { from, until } }, total });
      return;
    }
    const mid = Math.floor((from + until) / 2);
    await plan(from, mid);
    await plan(mid + 1, until);
  };
  await plan(lo, hi);
  return { windows, requests };
}

export async function measureSandboxServing(
  options: { products?: number; concurrency?: number; parse?: boolean } = {},
): Promise<SandboxServingResult> {
  const products = options.products ?? 1_000_000;
  const concurrency = options.concurrency ?? 4;
  const parse = options.parse ?? true;
  const sandbox = await startSandboxProcess({ products, trueTotal: true });
  try {
    const { windows, requests: planRequests } = await bisectWindows(sandbox);
    const seen = new Uint8Array(products);
    const t0 = performance.now();
    const extract = await fetchPages(sandbox, windows, {
      concurrency,
      parse,
      onResults(results) {
        for (const p of results as { id: string }[]) {
          const i = Number(p.id.slice(1)) - 1;
          if (seen[i]) throw new Error(`${p.id} arrived twice`);
          seen[i] = 1;
        }
      },
    });
    const extractSeconds = (performance.now() - t0) / 1000;
    if (extract.records !== products) throw new Error(`received ${extract.records} products, expected ${products}`);
    const stats = await sandbox.stats();
    return {
      products,
      concurrency,
      parsed: parse,
      startupSeconds: sandbox.startupSeconds,
      windows: windows.length,
      planRequests,
      pages: extract.pages,
      bytes: extract.bytes,
      extractSeconds: round(extractSeconds),
      productsPerSec: Math.round(products / extractSeconds),
      sandboxRssMb: Math.round(stats.memory.rss / 2 ** 20),
      sandboxPeakRssMb: await sandbox.peakRssMb(),
    };
  } finally {
    await sandbox.stop();
  }
}

if (isMain(import.meta.url)) {
  const [products, concurrency] = process.argv
    .slice(2)
    .filter((a) => !a.startsWith('--'))
    .map(Number);
  const result = await measureSandboxServing({
    products: products || undefined,
    concurrency: concurrency || undefined,
    parse: !process.argv.includes('--no-parse'),
  });
  console.log(JSON.stringify(result, null, 2));
}
