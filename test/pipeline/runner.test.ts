// The runner: its helpers (withUpdatedSince, nextCursor, fuseTransforms) and
// runPipeline in-process against the sandbox: the summary's counters (read,
// written per sink, invalid, dropped by fused stages), a user's own stage type
// from a pipeline file, a stopped run that leaves nothing and the cursor as it
// was, and a base URL nobody answers.
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CatalogClient } from '../../src/client/catalog-client.js';
import { NetworkError } from '../../src/client/errors.js';
import { AbortedError } from '../../src/errors.js';
import { RunEvents } from '../../src/events.js';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import {
  RunFailedError,
  fuseTransforms,
  nextCursor,
  runPipeline,
  withUpdatedSince,
  type RunOptions,
} from '../../src/pipeline/runner.js';
import { defineStage } from '../../src/core/stage.js';
import type { RecordTransform } from '../../src/transforms/index.js';
import { filter, map } from '../../src/transforms/index.js';
import { pick } from '../../src/pipeline/code-api.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { waitFor } from '../sinks/stream-harness.js';

describe('withUpdatedSince', () => {
  const since = { updatedSince: { from: 1700 } };
  it('adds the cursor to the filter by `and`', () => {
    expect(withUpdatedSince({ type: 'media.stream' }, 1700)).toEqual({ type: 'media.stream', filter: since });
    expect(withUpdatedSince({ type: 'products.query', filter: { status: 'active' }, pageSize: 100 }, 1700)).toEqual({
      type: 'products.query',
      filter: { and: [{ status: 'active' }, since] },
      pageSize: 100,
    });
    // An `and` already there takes one more member (its code lists stay splittable).
    expect(
      withUpdatedSince({ type: 'products.query', filter: { and: [{ status: 'active' }, { brand: [1, 2] }] } }, 1700)
        .filter,
    ).toEqual({
      and: [{ status: 'active' }, { brand: [1, 2] }, since],
    });
    expect(
      withUpdatedSince({ type: 'products.query', filter: { or: [{ status: 'active' }, { brand: 1 }] } }, 1700).filter,
    ).toEqual({
      and: [{ or: [{ status: 'active' }, { brand: 1 }] }, since],
    });
  });
});

describe('withUpdatedSince with a bounded window', () => {
  it('adds `until` (the first run has no `from`), never below the cursor', () => {
    expect(withUpdatedSince({ type: 'products.query', filter: { status: 'active' } }, 1700, 1900).filter).toEqual({
      and: [{ status: 'active' }, { updatedSince: { from: 1700, until: 1900 } }],
    });
    expect(withUpdatedSince({ type: 'media.stream' }, undefined, 1900).filter).toEqual({
      updatedSince: { until: 1900 },
    });
    expect(withUpdatedSince({ type: 'media.stream' }, 2000, 1900).filter).toEqual({
      updatedSince: { from: 2000, until: 2000 },
    });
  });
});

describe('nextCursor', () => {
  const start = new Date('2026-03-01T02:00:00Z');
  const startSeconds = start.getTime() / 1000;
  it('is the start minus the overlap, or the newest updatedAt seen when that is earlier (the safer one)', () => {
    expect(nextCursor(start, 300, undefined)).toBe(startSeconds - 300);
    expect(nextCursor(start, 300, startSeconds - 10)).toBe(startSeconds - 300);
    expect(nextCursor(start, 300, startSeconds - 3600)).toBe(startSeconds - 3600);
    // A server clock ahead of ours never moves the cursor past our start.
    expect(nextCursor(start, 0, startSeconds + 50)).toBe(startSeconds);
  });
});

describe('fuseTransforms', () => {
  it('fuses each run of adjacent RecordTransforms; other transforms stay; stage stats stay readable', async () => {
    const a = pick({ fields: ['id', 'n'] });
    const b = filter((r: { n: number }) => r.n % 2 === 0);
    const plain = new Transform({ objectMode: true, transform: (r, _e, cb) => cb(null, r) });
    const c = map((r: { id: string }) => ({ id: r.id }));
    const fused = fuseTransforms([a, b, plain, c]);
    expect(fused).toHaveLength(3);
    expect((fused[0] as RecordTransform).stages).toEqual([a, b]);
    expect(fused[1]).toBe(plain);
    expect(fused[2]).toBe(c);
    const out: unknown[] = [];
    const streams = [
      Readable.from(Array.from({ length: 10 }, (_, n) => ({ id: `x${n}`, n, extra: true }))),
      ...fused,
      new Writable({ objectMode: true, write: (r, _e, cb) => (out.push(r), cb()) }),
    ];
    await pipeline(streams as [Readable, ...Transform[], Writable]);
    expect(out).toEqual([0, 2, 4, 6, 8].map((n) => ({ id: `x${n}` })));
    expect([a.stats.in, a.stats.out, b.stats.in, b.stats.out, b.stats.dropped, c.stats.in]).toEqual([
      10, 10, 10, 5, 5, 5,
    ]);
  });
});

describe('runPipeline against the sandbox', () => {
  let sandbox: TestSandbox;
  let dir: string;
  beforeAll(async () => {
    sandbox = await startTestSandbox({
      products: 2000,
      faults: { invalidRecordRate: 0.02, endpoints: ['products.query'] },
    });
    dir = await mkdtemp(join(tmpdir(), 'runner-'));
  });
  afterAll(async () => {
    await sandbox?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const connection = () => ({ baseUrl: sandbox.url, ...sandbox.credentials, rateLimit: Infinity });
  const load = (text: string, registry = createRegistry()) =>
    parsePipelines(text, registry, { env: {}, file: join(dir, 'p.yml') });
  const run = (text: string, opts: Partial<RunOptions> = {}) => {
    const registry = opts.registry ?? createRegistry();
    return runPipeline(load(text, registry)[0]!, { registry, connection: connection(), env: {}, ...opts });
  };

  it('counts read, invalid, dropped by fused stages and written per sink; read = written + invalid + dropped', async () => {
    await writeFile(join(dir, 'odd.mjs'), 'export const even = (r) => Number(r.id.slice(1)) % 2 === 0;\n');
    const events = new RunEvents();
    const summary = await run(
      `name: counted
source: { type: products.query, filter: { status: [active, inactive, replaced] }, pageSize: 250 }
transforms:
  - { type: validate, onInvalid: skip }
  - { type: custom, module: ./odd.mjs, export: even, kind: filter }
  - { type: dedupe }
  - { type: pick, fields: [id, status] }
sinks:
  - { type: jsonl, path: "out/counted/{name}.jsonl" }
  - { type: parquet, path: "out/counted/{name}.parquet" }
`,
      { events },
    );
    const expectedRead = Array.from(sandbox.dataset.status).filter((s) => s !== 3).length;
    expect(summary.status).toBe('succeeded');
    expect(summary.records.read).toBe(expectedRead);
    expect(summary.records.invalid).toBeGreaterThan(0);
    expect(summary.records.skipped).toBe(summary.records.invalid);
    expect(summary.records.dropped).toBeGreaterThan(0);
    expect(summary.records.written.jsonl).toBe(summary.records.written.parquet);
    expect(summary.records.read).toBe(
      summary.records.written.jsonl! + summary.records.invalid + summary.records.dropped,
    );
    const lines = (await readFile(join(dir, 'out/counted/counted.jsonl'), 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(summary.records.written.jsonl!);
    expect(lines.every((l) => Number(JSON.parse(l).id.slice(1)) % 2 === 0)).toBe(true);
    // The pages the records fill, and one more per lane the read split into at most (concurrency 3).
    expect(summary.requests).toBe(summary.pages);
    expect(summary.pages).toBeGreaterThanOrEqual(Math.ceil(expectedRead / 250));
    expect(summary.pages).toBeLessThanOrEqual(Math.ceil(expectedRead / 250) + 3);
    expect(summary).toMatchObject({
      retries: 0,
      throttles: 0,
      files: 2,
      objects: 0,
    });
    expect(summary.bytes).toBe(summary.outputs.reduce((n, o) => n + o.bytes, 0));
  });

  it('two pipelines on one shared client and the same endpoint each count their own requests', async () => {
    const client = new CatalogClient({ ...connection(), events: new RunEvents() });
    const caller = new RunEvents();
    let heard = 0;
    caller.on('request', () => heard++);
    const text = (name: string, status: string, pageSize: number) =>
      `name: ${name}\nsource: { type: products.query, filter: { status: ${status} }, pageSize: ${pageSize} }\nsinks: [{ type: jsonl, path: out/${name}.jsonl }]\n`;
    const registry = createRegistry();
    try {
      const [a, b] = await Promise.all([
        runPipeline(load(text('shared-a', 'active', 50), registry)[0]!, { registry, client, events: caller, env: {} }),
        runPipeline(load(text('shared-b', 'inactive', 100), registry)[0]!, {
          registry,
          client,
          events: caller,
          env: {},
        }),
      ]);
      // The pages each read fills, and one more per lane at most: the head lane and the lanes of at
      // most 8 pages the createdAt read hands its range out in (sources/createdat-split.ts).
      const pages = (n: number, size: number) => Math.max(1, Math.ceil(n / size));
      const most = (n: number, size: number) => pages(n, size) + 1 + Math.ceil(pages(n, size) / 8);
      expect(a.requests).toBeGreaterThanOrEqual(pages(a.records.read, 50));
      expect(a.requests).toBeLessThanOrEqual(most(a.records.read, 50));
      expect(b.requests).toBeGreaterThanOrEqual(pages(b.records.read, 100));
      expect(b.requests).toBeLessThanOrEqual(most(b.records.read, 100));
      expect(a.requests + b.requests).toBe(client.stats.requests);
      // The caller's bus hears every request once.
      expect(heard).toBe(client.stats.requests);
    } finally {
      await client.close();
    }
  });

  it('runs a stage type a user registered in code, named in the pipeline file', async () => {
    const shout = defineStage({
      kind: 'transform',
      type: 'shout',
      description: 'Upper-cases a field',
      options: z.strictObject({ field: z.string() }),
      create: (o) =>
        new Transform({
          objectMode: true,
          transform: (r: Record<string, unknown>, _e, cb) =>
            cb(null, { id: r.id, [o.field]: String(r[o.field]).toUpperCase() }),
        }),
    });
    const registry = createRegistry().register(shout);
    const summary = await run(
      'name: shouted\nsource: { type: brands.query }\ntransforms: [{ type: shout, field: name }]\nsinks: [{ type: jsonl, path: out/shouted.jsonl }]\n',
      { registry },
    );
    const rows = (await readFile(join(dir, 'out/shouted.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows).toHaveLength(sandbox.dataset.ref.brands.length);
    expect(rows.every((r) => r.name === r.name.toUpperCase())).toBe(true);
    expect(summary.records.dropped).toBe(0);
  });

  it.each([
    ['one sink', '[{ type: parquet, path: "out/stopped/p-{run}.parquet" }]'],
    [
      'two sinks (tee)',
      '[{ type: parquet, path: "out/stopped/p-{run}.parquet" }, { type: jsonl, path: "out/stopped/p-{run}.jsonl" }]',
    ],
  ])(
    'stopped mid-run (%s): status aborted, no output under a final name, no temp file, the cursor as it was',
    async (_what, sinks) => {
      const stateFile = join(dir, '.state/stopped.json');
      const text = `name: stopped
source: { type: products.query, filter: { status: [active, inactive, replaced] }, pageSize: 10, concurrency: 1 }
sinks: ${sinks}
state: { path: .state/stopped.json }
`;
      await writeFile(join(dir, 'p.yml'), text);
      const before = JSON.stringify({
        version: 1,
        pipeline: 'stopped',
        cursor: 1_000,
        updatedAt: '2026-01-01T00:00:00.000Z',
      });
      await (await import('node:fs/promises')).mkdir(join(dir, '.state'), { recursive: true });
      await writeFile(stateFile, before);
      sandbox.setFaults({ latencyMs: 20 });
      const controller = new AbortController();
      const events = new RunEvents();
      let pages = 0;
      events.on('page', () => {
        if (++pages === 5) controller.abort('received SIGTERM');
      });
      const error = await run(text, { signal: controller.signal, events }).then(
        () => undefined,
        (err: unknown) => err,
      );
      sandbox.setFaults({});
      expect(error).toBeInstanceOf(RunFailedError);
      const failed = error as RunFailedError;
      expect(failed.cause).toBeInstanceOf(AbortedError);
      expect(failed.message).toBe(
        'the run was stopped (received SIGTERM); outputs were discarded and the state cursor was left as it was',
      );
      expect(failed.summary).toMatchObject({
        status: 'aborted',
        outputs: [],
        cursor: { previous: 1_000, stored: false },
      });
      // A part being opened when the abort came is removed as soon as its open
      // completes, which can be just after the sink closed (see the report on
      // src/sinks/shared/rotation.ts): allow it a moment.
      await waitFor(
        async () => (await readdir(join(dir, 'out/stopped')).catch(() => [])).length === 0,
        'no file left in out/stopped',
        2_000,
      ).catch(() => {});
      expect(await readdir(join(dir, 'out/stopped')).catch(() => [])).toEqual([]);
      expect(await readFile(stateFile, 'utf8')).toBe(before);
    },
  );

  it('a base URL nobody answers: a NetworkError naming the host and what to check, exit 1', async () => {
    const { createServer } = await import('node:net');
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const loaded = load(
      `name: nowhere\nconnection: { maxAttempts: 2 }\nsource: { type: brands.query }\nsinks: [{ type: jsonl, path: out/nowhere.jsonl }]\n`,
    );
    const error = await runPipeline(loaded[0]!, {
      registry: createRegistry(),
      connection: { baseUrl: `http://127.0.0.1:${port}`, apiKey: 'k', apiSecret: 's3cret-value' },
      env: {},
    }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(RunFailedError);
    expect((error as RunFailedError).cause).toBeInstanceOf(NetworkError);
    expect((error as RunFailedError).exitCode).toBe(1);
    expect((error as RunFailedError).message).toBe(
      `cannot reach the catalog API at 127.0.0.1:${port} (ECONNREFUSED) for brands.query: check CATALOG_BASE_URL (host, port, https), your network, proxy and firewall`,
    );
    expect((error as RunFailedError).summary).toMatchObject({
      status: 'failed',
      // Refused by a loopback host: one attempt, whatever maxAttempts says (retry-policy.ts).
      requests: 1,
      retries: 0,
      outputs: [],
      error: { code: 'network.unreachable' },
    });
    expect(await readdir(join(dir, 'out')).then((names) => names.includes('nowhere.jsonl'))).toBe(false);
  });
});
