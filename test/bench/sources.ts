// Benchmark: extract N products (default 100,000) from an in-process sandbox
// (rate limit off) through `productsQuery`, next to a baseline measured in the
// same run: a plain loop of undici requests + JSON.parse over the same pages
// (the same createdAt windows, page by page). Each mode runs in its own child
// process so its peak RSS is its own; both include the sandbox serving in the
// same process (its JSON building is most of the CPU), which is the same for
// both, so the ratio shows what the source adds.
//
//   npx tsc -p tsconfig.json && node dist/test/bench/sources.js [products]
import { fileURLToPath } from 'node:url';
import { CatalogClient } from '../../src/client/index.js';
import { startSandbox } from '../../src/sandbox/index.js';
import { productsQuery } from '../../src/sources/index.js';
import { isMain, round, runScenario } from './measure.js';
import { fetchPages, plannedWindows } from './page-floor.js';

export interface ModeResult {
  mode: 'source' | 'baseline';
  products: number;
  requests: number;
  seconds: number;
  productsPerSecond: number;
  /** CPU (user + system) of the whole process during the extract, sandbox included. */
  cpuSeconds: number;
  /** Peak RSS of the process (sandbox and its dataset included). */
  peakRssMb: number;
  /** RSS once the sandbox is up, before the extract. */
  startRssMb: number;
}

export interface SourcesBenchResult {
  products: number;
  source: ModeResult;
  baseline: ModeResult;
  /** source / baseline: throughput (higher is better), CPU and peak RSS (lower is better). */
  ratio: { throughput: number; cpu: number; peakRss: number };
}

const FILTER = { createdAt: { from: 0 } };
const MB = 1024 * 1024;

/** One mode in this process. */
export async function runMode(mode: 'source' | 'baseline', productCount: number): Promise<ModeResult> {
  const sandbox = await startSandbox({ products: productCount, rateLimit: 0 });
  const client = new CatalogClient({ baseUrl: sandbox.url, ...sandbox.credentials, rateLimit: 0 });
  try {
    // The baseline asks for the very pages the source asks for: the planned windows' pages.
    const connection = { baseUrl: sandbox.url, ...sandbox.credentials };
    const windows = mode === 'baseline' ? (await plannedWindows(connection, FILTER)).windows : [];
    const startRss = process.memoryUsage().rss;
    let peak = startRss;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    sandbox.resetStats();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let products = 0;
    if (mode === 'source') {
      for await (const _ of productsQuery(client, { filter: FILTER })) products++;
    } else {
      // One request at a time, like the source's page order (it keeps up to 3 in flight).
      products = (await fetchPages(connection, windows, { concurrency: 1 })).records;
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    clearInterval(sampler);
    peak = Math.max(peak, process.resourceUsage().maxRSS * 1024);
    const requests = Object.values(sandbox.stats.byEndpoint['products.query'] ?? {}).reduce((a, b) => a + b, 0);
    return {
      mode,
      products,
      requests,
      seconds: round(seconds),
      productsPerSecond: Math.round(products / seconds),
      cpuSeconds: round((cpu.user + cpu.system) / 1e6),
      peakRssMb: Math.round(peak / MB),
      startRssMb: Math.round(startRss / MB),
    };
  } finally {
    await client.close();
    await sandbox.close();
  }
}

/** Both modes, each in a fresh child process when this file runs compiled (else in this process, one after the other). */
export async function benchSources(options: { products?: number } = {}): Promise<SourcesBenchResult> {
  const products = options.products ?? 100_000;
  const isolate = fileURLToPath(import.meta.url).endsWith('.js');
  const run = (mode: 'source' | 'baseline') =>
    isolate ? runScenario<ModeResult>('sources', { mode, products }) : runMode(mode, products);
  const baseline = await run('baseline');
  const source = await run('source');
  return {
    products,
    source,
    baseline,
    ratio: {
      throughput: round(source.productsPerSecond / baseline.productsPerSecond),
      cpu: round(source.cpuSeconds / baseline.cpuSeconds),
      peakRss: round(source.peakRssMb / baseline.peakRssMb),
    },
  };
}

export function formatSourcesBench(r: SourcesBenchResult): string {
  const row = (m: ModeResult) =>
    `${m.mode.padEnd(9)} ${String(m.products).padStart(8)} ${String(m.requests).padStart(6)} ${m.seconds.toFixed(2).padStart(8)} ${String(m.productsPerSecond).padStart(11)} ${m.cpuSeconds.toFixed(2).padStart(7)} ${String(m.peakRssMb).padStart(9)} ${String(m.startRssMb).padStart(10)}`;
  return [
    `sources bench: ${r.products} products from an in-process sandbox (rate limit off)`,
    'mode      products  reqs   seconds  products/s   CPU s  peak MB  start MB',
    row(r.baseline),
    row(r.source),
    `ratio source/baseline: throughput ${r.ratio.throughput}, CPU ${r.ratio.cpu}, peak RSS ${r.ratio.peakRss}`,
  ].join('\n');
}

if (isMain(import.meta.url)) {
  const arg = process.argv[2];
  if (arg?.startsWith('{')) {
    // A child of benchSources (runScenario): one mode, its result as the last line.
    const { mode, products } = JSON.parse(arg) as { mode: 'source' | 'baseline'; products: number };
    process.stdout.write(`${JSON.stringify(await runMode(mode, products))}\n`);
  } else {
    console.log(formatSourcesBench(await benchSources({ products: arg ? Number(arg) : undefined })));
  }
}
