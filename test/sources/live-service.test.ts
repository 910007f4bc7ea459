// Issue 24 (the live service, second look), toolkit side: what the client and the sources do
// with the facts public clients of the live service show (README "What the live service sends",
// F1-F3). Against the sandbox's live profiles over loopback (port 0) where the sandbox models
// the fact, and against a node:http server writing sample exchanges in random chunk sizes where
// the fact is about bytes (content types, stream line shapes, find bodies).
import { afterEach, describe, expect, it } from 'vitest';
import { CatalogClient, StreamProtocolError } from '../../src/client/index.js';
import { ConfigError } from '../../src/errors.js';
import { RunEvents } from '../../src/events.js';
import type { SandboxProfile } from '../../src/sandbox/profiles.js';
import { mediaStream, productsQuery, productsStream } from '../../src/sources/index.js';
import { type TestServer, rng, sendJson, startTestServer, writeInRandomChunks } from '../client/http-test-server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let sandbox: TestSandbox | undefined;
let server: TestServer | undefined;
let client: CatalogClient | undefined;
afterEach(async () => {
  await client?.close();
  await sandbox?.close();
  await server?.close();
  sandbox = server = client = undefined;
});

async function onSandbox(profile: SandboxProfile, products = 1500): Promise<{ sb: TestSandbox; events: RunEvents }> {
  sandbox = await startTestSandbox({ products, seed: 24, profile });
  const events = new RunEvents();
  client = new CatalogClient({
    baseUrl: sandbox.url,
    apiKey: sandbox.credentials.apiKey,
    apiSecret: sandbox.credentials.apiSecret,
    rateLimit: 0,
    events,
  });
  return { sb: sandbox, events };
}

async function onServer(handler: Parameters<typeof startTestServer>[0]): Promise<RunEvents> {
  server = await startTestServer(handler);
  const events = new RunEvents();
  client = new CatalogClient({
    baseUrl: server.url,
    apiKey: 'k',
    apiSecret: 'secret',
    rateLimit: 0,
    events,
    retry: { maxAttempts: 1 },
  });
  return events;
}

const warnings = (events: RunEvents) => {
  const out: { code: string; message: string }[] = [];
  events.on('warning', (w) => out.push(w));
  return out;
};

describe('lookups (F1: {"product": ...} / {"media": ...})', () => {
  it.each(['be', 'fr', 'au'] as const)('%s: products.find and media.find give the inner record', async (profile) => {
    const { sb } = await onSandbox(profile, 300);
    const product = (await sb.stream('/v4/products/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } }))
      .lines[9]!.result;
    expect(await client!.find('products.find', product.id)).toEqual(product);
    const media = (await sb.stream('/v4/media/stream', {})).lines[4]!.result;
    expect(await client!.find('media.find', media.id)).toEqual(media);
    expect(await client!.find('products.find', 'P9999999')).toBeUndefined();
  });

  it('unwraps {result}, reads a bare record, takes {"product": null} as not found, refuses anything else', async () => {
    const record = { id: 'M0A1B2C3D4', status: 'active', meta: { createdAt: 1700000000, updatedAt: 1710000000 } };
    const bodies: Record<string, unknown> = {
      wrapped: { product: record },
      result: { result: record },
      bare: record,
      nulled: { product: null },
      list: { products: [record] },
      'no-id': { product: { status: 'active' } },
      empty: {},
      'other-wrapper': { media: record },
    };
    await onServer((req, res) => sendJson(res, 200, bodies[new URL(req.url, 'http://x').searchParams.get('id')!]));
    expect(await client!.find('products.find', 'wrapped')).toEqual(record);
    expect(await client!.find('products.find', 'result')).toEqual(record);
    expect(await client!.find('products.find', 'bare')).toEqual(record);
    expect(await client!.find('products.find', 'nulled')).toBeUndefined();
    for (const id of ['list', 'no-id', 'empty', 'other-wrapper']) {
      const err = await client!.find('products.find', id).catch((e: unknown) => e);
      expect(err, id).toMatchObject({ apiCode: 'invalid_response' });
      expect((err as Error).message).toMatch(
        /products\.find answered 200 but the response is neither \{"product": record\}/,
      );
    }
  });
});

describe('media filters (F1, F3: `type`, not `kind`)', () => {
  it('be: `kind` in a pipeline keeps working: sent as `type`, with a warning naming `type`', async () => {
    const { sb, events } = await onSandbox('be', 400);
    const said = warnings(events);
    const frontals = (await sb.stream('/v4/media/stream', { filter: { type: 'frontal' } })).lines.map(
      (l) => l.result.id,
    );
    expect(frontals.length).toBeGreaterThan(0);
    // The be sandbox answers 400 to `kind`, as the live service would: the run works only if it was not sent.
    const records = await mediaStream(client!, {
      filter: { and: [{ kind: 'frontal' }, { published: true }] },
    }).toArray();
    expect(records.map((r) => r.id)).toEqual(
      (await sb.stream('/v4/media/stream', { filter: { and: [{ type: 'frontal' }, { published: true }] } })).lines.map(
        (l) => l.result.id,
      ),
    );
    expect(said).toEqual([
      expect.objectContaining({
        code: 'filter.deprecated_name',
        message: expect.stringMatching(/`kind` \(use `type`\) at filter\.and\[0\]\.kind is deprecated/),
      }),
    ]);
    const plain = warnings(events);
    await mediaStream(client!, { filter: { type: 'link' }, sorting: { touchedAt: 'ASC' } }).toArray();
    expect(plain).toEqual([]);
  });
});

describe('national codes and regional product filters (F1, F2)', () => {
  it('be: a cnk list of 1,500 codes is split at 1,000 and the codes go out as strings with their zeros', async () => {
    const { sb } = await onSandbox('be');
    const all = (
      await sb.stream('/v4/products/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } })
    ).lines.map((l) => l.result);
    const carried = all.filter((p) => p.cnk).map((p) => p.cnk as string);
    // Integers too: YAML reads 0012345 as 12345; they must still find the product.
    const asked = [...carried.slice(0, 20).map(Number), ...carried.slice(20)];
    const filler = Array.from({ length: 1500 - asked.length }, (_, k) => `9${String(k).padStart(6, '0')}`);
    const got = await productsQuery(client!, { filter: { cnk: [...asked, ...filler] } }).toArray();
    expect(got.map((p) => p.id).sort()).toEqual(
      all
        .filter((p) => p.cnk)
        .map((p) => p.id)
        .sort(),
    );
    const stats = sb.stats.byEndpoint['products.query']!;
    expect(stats[200]).toBeGreaterThanOrEqual(2);
  });

  it('sends national codes as zero-padded strings whatever form they were given in', async () => {
    await onServer((_req, res) =>
      sendJson(res, 200, { meta: { total: 0, page: { no: 0, offset: 0, size: 250 } }, results: [] }),
    );
    await productsQuery(client!, {
      filter: { or: [{ cnk: [12345, '0012346'] }, { cipOrAcl7: 34009 }, { cip13: '3400930000001' }] },
    }).toArray();
    // The first request of a read by createdAt sends the user's filter as it is (createdat-query.ts).
    expect(server!.requests[0]!.body.filter).toEqual({
      or: [{ cnk: ['0012345', '0012346'] }, { cipOrAcl7: '0034009' }, { cip13: '3400930000001' }],
    });
  });

  it('"0" and "" are refused before sending, naming the values', () => {
    expect(() => productsStream(client as never, { filter: { cipOrAcl7: ['3400930', '0', ''] } })).toThrow(ConfigError);
    expect(() => productsStream(client as never, { filter: { cipOrAcl7: ['3400930', '0', ''] } })).toThrow(
      /filter\.cipOrAcl7: "0", "" are not codes: the live service treats "0" \(and ""\) as no value/,
    );
    expect(() => productsStream(client as never, { filter: { and: [{ ean: 0 }] } })).toThrow(/"0"|0 is not a code/);
  });

  it.each(['query', 'stream'] as const)(
    'fr: products.%s by cipOrAcl7 keeps only products carrying the code; the others are counted and reported',
    async (mode) => {
      const { sb, events } = await onSandbox('fr');
      const all = (
        await sb.stream('/v4/products/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } })
      ).lines.map((l) => l.result);
      const code = all
        .map((p) => p.cipOrAcl7)
        .find((c) => c && all.some((q) => q.cipOrAcl7 !== c && q.cip13?.startsWith(c)));
      expect(code).toBeDefined();
      const served = (await sb.stream('/v4/products/stream', { filter: { cipOrAcl7: code }, sorting: { id: 'ASC' } }))
        .lines.length;
      const exact = all
        .filter((p) => [p.cipOrAcl7, p.cip13, p.acl13, ...(p.ean ?? [])].includes(code))
        .map((p) => p.id);
      expect(served).toBeGreaterThan(exact.length);
      const infos: any[] = [];
      events.on('info', (i) => infos.push(i));
      const source =
        mode === 'query'
          ? productsQuery(client!, { filter: { cipOrAcl7: code } })
          : productsStream(client!, { filter: { cipOrAcl7: code } });
      const got = await source.toArray();
      // The query comes in createdAt order, the stream in id order.
      expect(got.map((p) => p.id)).toEqual(mode === 'query' ? expect.arrayContaining(exact) : exact);
      expect(got).toHaveLength(exact.length);
      expect(source.total).toBe(exact.length);
      expect(infos).toContainEqual(
        expect.objectContaining({ code: 'source.unrelated_dropped', unrelated: served - exact.length }),
      );
      // Beside another filter in `or`, a record may have matched that way: nothing is left out.
      const either = await productsStream(client!, {
        filter: { or: [{ cipOrAcl7: code }, { status: 'replaced' }] },
      }).toArray();
      expect(either.length).toBeGreaterThan(exact.length);
    },
  );
});

describe('streams (F1: Accept and content types; F2: lines with `results`)', () => {
  const record = (id: string, at: number) => ({ id, status: 'active', meta: { createdAt: at, updatedAt: at } });
  const sample8 = [
    { meta: { total: 2, index: 0 }, result: record('M0D1E2F3A4', 1700000000) },
    { meta: { total: 2, index: 1 }, result: record('M0D1E2F3A5', 1700000001) },
  ];

  it.each(['application/x-json-stream', 'application/x-ndjson', 'application/json', 'text/plain; charset=utf-8', ''])(
    'asks for application/x-json-stream and reads the answer typed %j in random chunks',
    async (type) => {
      const random = rng(type.length + 1);
      await onServer(async (_req, res) => {
        res.writeHead(200, type ? { 'content-type': type } : {});
        await writeInRandomChunks(res, sample8.map((l) => `${JSON.stringify(l)}\n`).join(''), random, { maxChunk: 7 });
      });
      const got = await productsStream(client!, { filter: { status: 'active' } }).toArray();
      expect(got.map((r) => r.id)).toEqual(['M0D1E2F3A4', 'M0D1E2F3A5']);
      expect(String(server!.requests[0]!.headers.accept).split(',')[0]).toBe('application/x-json-stream');
    },
  );

  it('be sandbox: a media stream arrives as application/x-json-stream and is read whole', async () => {
    const { sb } = await onSandbox('be', 200);
    const answer = await sb.post('/v4/media/stream', {});
    expect(answer.headers['content-type']).toBe('application/x-json-stream');
    const want = (await sb.stream('/v4/media/stream', {})).lines.map((l) => l.result.id);
    expect((await mediaStream(client!, {}).toArray()).map((r) => r.id)).toEqual(want);
  });

  const plural = (records: object[], at: number, total: number, key: 'results' | 'result') =>
    JSON.stringify({ meta: { total, index: at }, [key]: records });

  it.each(['results', 'result'] as const)(
    'a line whose `%s` is a list gives each record once, counted against total, whatever the chunks',
    async (key) => {
      const ids = Array.from({ length: 9 }, (_, k) => `M0E1F2A3B${k}`);
      const recs = ids.map((id, k) => record(id, 1700000000 + k));
      // Lines of 2, 1, 3 and 3 records (sample 9 is one line of 2).
      const text = [
        plural(recs.slice(0, 2), 0, 9, key),
        JSON.stringify({ meta: { total: 9, index: 2 }, result: recs[2] }),
        plural(recs.slice(3, 6), 3, 9, key),
        plural(recs.slice(6), 6, 9, key),
      ]
        .map((l) => `${l}\n`)
        .join('');
      for (const seed of [1, 2, 3]) {
        const random = rng(seed);
        await server?.close();
        await client?.close();
        await onServer(async (_req, res) => {
          res.writeHead(200, { 'content-type': 'application/x-json-stream' });
          await writeInRandomChunks(res, text, random, { maxChunk: 11 });
        });
        const source = productsStream(client!, { filter: { status: 'active' } });
        expect((await source.toArray()).map((r) => r.id)).toEqual(ids);
        expect(source.total).toBe(9);
      }
    },
  );

  it.each([
    ['counts its records past total', [plural([record('A', 1), record('B', 2)], 0, 1, 'results')], /index_gap|index 0/],
    [
      'is followed by a line indexed as if it held one record',
      [
        plural([record('A', 1), record('B', 2)], 0, 3, 'results'),
        JSON.stringify({ meta: { total: 3, index: 1 }, result: record('C', 3) }),
      ],
      /expected meta\.index 2 but got 1/,
    ],
    [
      'holds an empty list',
      [plural([], 0, 2, 'results')],
      /line at index 0 is not a \{meta: \{total, index\}, result\} line/,
    ],
    [
      'holds something that is not a record',
      [plural([record('A', 1), 7 as never], 0, 2, 'results')],
      /line at index 0/,
    ],
  ])('a plural line that %s fails the run naming the index, never a short success', async (_what, lines, message) => {
    await onServer(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      await writeInRandomChunks(res, lines.map((l) => `${l}\n`).join(''), rng(5), { maxChunk: 5 });
    });
    const err = await productsStream(client!, { filter: { status: 'active' }, maxResumes: 0 })
      .toArray()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamProtocolError);
    expect((err as Error).message).toMatch(message);
  });
});
