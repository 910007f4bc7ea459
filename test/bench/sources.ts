// Benchmark: extract N products (default 100,000) from an in-process sandbox
// (rate limit off) through `productsQuery`, next to a baseline measured in the
// same run: a plain loop of undici requests + JSON.parse over the same pages
// (the same createdAt windows, page by page). Each mode runs in its own child
// process so its peak RSS is its own; both include the sandbox serving in the
// same process (its JSON building is most of the CPU), which is the same for
// both, so the ratio shows what the source adds.
//
//   npx tsc -p tsconfig.json && node dist/test/bench/sources.js [products]
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { EXTRACT_PAGE_SIZE } from '../../src/catalog/index.js';
import { CatalogClient } from '../../src/client/index.js';
import { startSandbox } from '../../src/sandbox/index.js';
import { plan, productsQuery } from '../../src/sources/index.js';

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
    const windows = mode === 'baseline' ? (await plan(client, 'products.query', { filter: FILTER })).slices : [];
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
      const pool = new Pool(sandbox.url, { connections: 4 });
      const headers = {
        authorization: `Basic ${Buffer.from(`${sandbox.credentials.apiKey}:${sandbox.credentials.apiSecret}`).toString('base64')}`,
        'content-type': 'application/json',
      };
      for (const w of windows) {
        for (let no = 0; no * EXTRACT_PAGE_SIZE < w.total!; no++) {
          const body = JSON.stringify({ filter: w.filter, sorting: { id: 'ASC' }, page: { no, size: EXTRACT_PAGE_SIZE } });
          const res = await pool.request({ path: '/v4/products/query', method: 'POST', headers, body });
          const page = JSON.parse(await res.body.text()) as { results: unknown[] };
          products += page.results.length;
        }
      }
      await pool.close();
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
  const self = fileURLToPath(import.meta.url);
  const isolate = self.endsWith('.js');
  const run = (mode: 'source' | 'baseline') => (isolate ? runChild(self, mode, products) : runMode(mode, products));
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

function runChild(file: string, mode: string, products: number): Promise<ModeResult> {
  return new Promise((resolveResult, reject) => {
    const child = spawn(process.execPath, [file, '--mode', mode, String(products)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`bench child (${mode}) exited with ${code}`));
      resolveResult(JSON.parse(out.trim().split('\n').at(-1)!) as ModeResult);
    });
  });
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

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

const isMain = process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const args = process.argv.slice(2);
  if (args[0] === '--mode') {
    const result = await runMode(args[1] as 'source' | 'baseline', Number(args[2]));
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } else {
    const result = await benchSources({ products: args[0] ? Number(args[0]) : undefined });
    console.log(formatSourcesBench(result));
  }
}
