// Media mirror throughput (issue 39): the asset host answering at 10 ms per file, 16 downloads at
// once, the mirror (MediaMirror: pool, pacing lifted, content-type check, hashing, journal, atomic
// publish, state and table) against a hand-written undici loop with the same concurrency (GET,
// body to a file). Runs alternate, the best of each kept; target mirror/hand-written >= 0.8
// (files/s). Both first run `--warmup` unmeasured rounds (default 1): the target is the steady
// throughput, and the mirror's far larger code (its Parquet encoder above all) would otherwise be
// measured while V8 still compiles it, which the ten-line loop barely needs.
//
// What the two do differs, as the issue means it to: the loop writes each body with writeFile (no
// temp name, no fsync, no hash, no check); the mirror checks status, type and length, hashes the
// body, writes it under a temp name, fsyncs and renames it, and keeps its state, journal and table.
// Both write every file to the same disk, in a fresh folder per run.
//
//   npx tsc -p tsconfig.json && node dist/test/bench/media-mirror.js [--files 800] [--repeat 2] [--warmup 1] [--strict]
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { startAssetHost } from '../../src/sandbox/asset-host.js';
import { LocalObjectStore } from '../../src/storage/object-store.js';
import { MediaMirror } from '../../src/sinks/media/media-mirror.js';
import { type MediaTarget, storedName } from '../../src/sinks/media/media-targets.js';

const CONCURRENCY = 16;
const TARGET = 0.8;

function urls(base: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${base}/media/large/${i.toString(16).padStart(24, '0')}.webp`);
}

async function mirrorRun(list: string[]): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-mirror-'));
  const targets = new Map<string, MediaTarget>();
  for (const url of list) {
    const { rel, contentName } = storedName(new URL(url));
    targets.set(rel, {
      url,
      rel,
      contentName,
      mediaId: undefined,
      type: 'photo',
      format: 'largeWebp',
      expect: 'image/webp',
      productIds: new Set(['P1']),
    });
  }
  const mirror = new MediaMirror(new LocalObjectStore(dir), {
    concurrency: CONCURRENCY,
    requestsPerSecond: 1_000_000,
    timeoutMs: 30_000,
    maxBytes: 20 * 2 ** 20,
    userAgent: 'bench',
    retries: 0,
    retryDelayMs: 10,
    revalidate: 'auto',
    removeAfterMs: 7 * 86_400_000,
    full: true,
    runId: `bench-${Date.now()}`,
    signal: new AbortController().signal,
    warn: () => {},
  });
  const start = performance.now();
  const summary = await mirror.run(targets);
  const seconds = (performance.now() - start) / 1000;
  await rm(dir, { recursive: true, force: true });
  if (summary.fetched !== list.length) throw new Error(`mirror fetched ${summary.fetched} of ${list.length}`);
  return list.length / seconds;
}

/** What a careful user writes by hand: 16 workers, GET, body to a file. */
async function handRun(list: string[]): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-hand-'));
  const agent = new Agent({ connections: CONCURRENCY });
  let next = 0;
  const start = performance.now();
  const worker = async () => {
    while (next < list.length) {
      const url = list[next++]!;
      const res = await request(url, { dispatcher: agent });
      const body = Buffer.from(await res.body.arrayBuffer());
      const file = join(dir, new URL(url).pathname);
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, body);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = (performance.now() - start) / 1000;
  await agent.close();
  await rm(dir, { recursive: true, force: true });
  return list.length / seconds;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      files: { type: 'string', default: '800' },
      repeat: { type: 'string', default: '2' },
      warmup: { type: 'string', default: '1' },
      strict: { type: 'boolean' },
    },
  });
  const host = await startAssetHost({ faults: { latencyMs: 10 } });
  const files = Number(values.files);
  let mirror = 0;
  let hand = 0;
  try {
    for (let w = 0; w < Number(values.warmup); w++) {
      await handRun(urls(`${host.url}`, files).map((u) => u.replace('/large/', `/huge/w${w}h`)));
      await mirrorRun(urls(`${host.url}`, files).map((u) => u.replace('/large/', `/large/w${w}m`)));
    }
    for (let r = 0; r < Number(values.repeat); r++) {
      // Fresh URLs per run: nothing is skipped as already stored.
      hand = Math.max(hand, await handRun(urls(`${host.url}`, files).map((u) => u.replace('/large/', `/huge/${r}h`))));
      mirror = Math.max(
        mirror,
        await mirrorRun(urls(`${host.url}`, files).map((u) => u.replace('/large/', `/large/${r}m`))),
      );
    }
  } finally {
    await host.close();
  }
  const ratio = mirror / hand;
  console.log(
    `media-mirror: ${mirror.toFixed(0)} files/s, hand-written undici loop: ${hand.toFixed(0)} files/s, ratio ${ratio.toFixed(2)} (target >= ${TARGET}; ${CONCURRENCY} at once, 10 ms per file)`,
  );
  if (values.strict && ratio < TARGET) process.exitCode = 1;
}

await main();
