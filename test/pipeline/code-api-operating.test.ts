// The code API as a user meets it (issue 37, item 15):
// - warnings of stages and clients made in code reach stderr by default (before: a bus nobody
//   listened to, and 46 EANs went to `_extra` silently), each once; `events`, `warnings: fn` or
//   'silent' replace that, and setDefaultWarnings sets it for a process;
// - tee(...sinks) writes one stream to several sinks, each with the schema it would have piped alone;
// - chain(source).map/.filter type their callbacks from the stage before (`Product` after
//   productsQuery, the map's result after a map): no `any` (checked by tsc over this file).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, afterEach, beforeAll, describe, expect, expectTypeOf, it, vi } from 'vitest';
import type { Product } from '../../src/catalog/resources/index.js';
import {
  CatalogClient,
  RunEvents,
  chain,
  jsonlSink,
  map,
  parquetSink,
  productsQuery,
  setDefaultWarnings,
  tee,
  type CodeWarning,
} from '../../src/index.js';
import { SAMPLE_RECORDS } from '../../src/sinks/shared/inferred-schema.js';
import { parquetColumnTypes } from '../helpers/duckdb.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let sandbox: TestSandbox;
let dir: string;
const clients: CatalogClient[] = [];

beforeAll(async () => {
  sandbox = await startTestSandbox({ products: 60 });
  dir = await mkdtemp(join(tmpdir(), 'code-api-operating-'));
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await sandbox?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function client(): CatalogClient {
  const c = new CatalogClient({ baseUrl: sandbox.url, ...sandbox.credentials, rateLimit: Infinity });
  clients.push(c);
  return c;
}

/** SAMPLE_RECORDS records with `n`, then two with a field the sample never saw: a `sink.parquet.extra` warning. */
const withLateField = () =>
  Readable.from([
    ...Array.from({ length: SAMPLE_RECORDS }, (_, i) => ({ id: `r${i}`, n: i })),
    { id: 'late-1', n: 1, late: 'x' },
    { id: 'late-2', n: 2, late: 'y' },
  ]);

/** What was written to stderr while `fn` ran. */
async function stderrOf(fn: () => Promise<void>): Promise<string> {
  let text = '';
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    text += String(chunk);
    return true;
  });
  try {
    await fn();
  } finally {
    spy.mockRestore();
  }
  return text;
}

describe('warnings in code', () => {
  // The suite runs with CATALOG_STREAMS_WARNINGS=silent (vitest.config.ts); here, the user's default.
  beforeAll(() => setDefaultWarnings('stderr'));
  afterEach(() => setDefaultWarnings('stderr'));
  afterAll(() => setDefaultWarnings('silent'));

  it('go to stderr by default, each once', async () => {
    const out = join(dir, 'late-default.parquet');
    const text = await stderrOf(() => pipeline(withLateField(), parquetSink({ path: out })));
    const lines = text.split('\n').filter((l) => l.includes('[sink.parquet.extra]'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^catalog-streams warning \[sink\.parquet\.extra\]: .*late/);
  });

  it("a caller's events, a warnings function, or 'silent' take them instead", async () => {
    const events = new RunEvents();
    const heard: string[] = [];
    events.on('warning', (w) => heard.push(w.code));
    const got: CodeWarning[] = [];
    const text = await stderrOf(async () => {
      await pipeline(withLateField(), parquetSink({ path: join(dir, 'late-events.parquet') }, { events }));
      await pipeline(
        withLateField(),
        parquetSink({ path: join(dir, 'late-fn.parquet') }, { warnings: (w) => got.push(w) }),
      );
      await pipeline(withLateField(), parquetSink({ path: join(dir, 'late-silent.parquet') }, { warnings: 'silent' }));
    });
    expect(text).toBe('');
    expect(heard).toContain('sink.parquet.extra');
    expect(got.map((w) => w.code)).toContain('sink.parquet.extra');
  });

  it('setDefaultWarnings and a client made without a bus', async () => {
    setDefaultWarnings('silent');
    const quiet = await stderrOf(() =>
      pipeline(withLateField(), parquetSink({ path: join(dir, 'late-quiet.parquet') })),
    );
    expect(quiet).toBe('');
    setDefaultWarnings('stderr');
    const c = client();
    const said = await stderrOf(async () => {
      c.events.emit('warning', { code: 'test.warning', message: 'from the client' });
      c.events.emit('warning', { code: 'test.warning', message: 'from the client' });
    });
    expect(said).toBe('catalog-streams warning [test.warning]: from the client\n');
  });
});

describe('tee(...sinks)', () => {
  it('writes the stream to every sink; a Parquet sink behind it keeps the declared columns', async () => {
    const viaTee = join(dir, 'tee.parquet');
    const direct = join(dir, 'direct.parquet');
    const lines = join(dir, 'tee.jsonl');
    const source = () => productsQuery(client(), { filter: { status: 'active' }, sorting: { id: 'ASC' } });
    await pipeline(source(), tee(parquetSink({ path: viaTee }), jsonlSink({ path: lines })));
    await pipeline(source(), parquetSink({ path: direct }));
    const ids = (await readFile(lines, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { id: string }).id);
    expect(ids.length).toBeGreaterThan(0);
    expect(new Set(ids).size).toBe(ids.length);
    // The same typed columns as piped alone: the schema reached the sink through the tee.
    const teeColumns = await parquetColumnTypes(viaTee);
    expect(teeColumns).toEqual(await parquetColumnTypes(direct));
    expect(Object.keys(teeColumns).length).toBeGreaterThan(5);
  });

  it('needs a sink', () => {
    expect(() => tee()).toThrow(/tee\(\) needs at least one sink/);
  });
});

describe('chain(source): callbacks typed by the stage before', () => {
  it('map and filter receive the record type; to() runs into several sinks', async () => {
    const out = join(dir, 'chain.jsonl');
    const out2 = join(dir, 'chain-2.jsonl');
    await chain(productsQuery(client(), { filter: { status: 'active' }, sorting: { id: 'ASC' } }))
      .filter((p) => {
        expectTypeOf(p).toEqualTypeOf<Product>();
        // @ts-expect-error: a Product's id is a string (with `any` this line would compile)
        const notANumber: number = p.id;
        void notANumber;
        return p.id.endsWith('0') || p.id.endsWith('5');
      })
      .map((p) => ({ id: p.id, active: p.status === 'active' }))
      .map((r) => {
        expectTypeOf(r).toEqualTypeOf<{ id: string; active: boolean }>();
        return { ...r, short: r.id.slice(-3) };
      })
      .to(jsonlSink({ path: out }), jsonlSink({ path: out2 }));
    const rows = (await readFile(out, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; active: boolean; short: string });
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((r) => r.active && /[05]$/.test(r.id) && r.short === r.id.slice(-3))).toBe(true);
    expect(await readFile(out2, 'utf8')).toBe(await readFile(out, 'utf8'));
  });

  it('a map outside a chain is not `any` either: an unannotated record is Record<string, unknown>', () => {
    map((r) => {
      expectTypeOf(r).toEqualTypeOf<Record<string, unknown>>();
      return r;
    });
  });
});
