import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it, vi } from 'vitest';
import { DataError } from '../../src/errors.js';
import { setOrigin } from '../../src/core/origin.js';
import { RecordTransform, filter, flatMap, map } from '../../src/transforms/index.js';
import {
  explode,
  flattenLocales,
  normalizeCodes,
  pick,
  selectMediaFormat,
  validate,
} from '../../src/pipeline/code-api.js';
import { context, fixture, memorySinks, plain, run, runInBursts } from './support.js';

const RAISE_HINT =
  'if that many invalid records are expected, raise maxInvalid (e.g. "25%") or lift it (maxInvalid: none)';

/** 250 products (fixture variations) of page 0: 3 break the schema, 2 more have a wrong check digit. */
function page() {
  const base = fixture<any[]>('products.json').filter((p) => typeof p.eanGtin13 !== 'string');
  const records = Array.from({ length: 250 }, (_, i) =>
    setOrigin(
      { ...base[i % base.length], id: `P${String(i).padStart(7, '0')}` },
      { endpoint: 'products.query', page: 0, index: i },
    ),
  );
  records[10] = setOrigin({ ...records[10], status: 'gone' }, { endpoint: 'products.query', page: 0, index: 10 });
  records[50] = setOrigin({ ...records[50], meta: {} }, { endpoint: 'products.query', page: 0, index: 50 });
  records[90] = setOrigin(
    { ...records[90], eanGtin13: 4006381333932 },
    { endpoint: 'products.query', page: 0, index: 90 },
  );
  records[130] = setOrigin(
    { ...records[130], eanGtin13: 12345678906 },
    { endpoint: 'products.query', page: 0, index: 130 },
  );
  records[170] = setOrigin({ ...records[170], eanGtin8: 'x' }, { endpoint: 'products.query', page: 0, index: 170 });
  return records;
}

function chain(sinks: ReturnType<typeof memorySinks>) {
  const ctx = context({ stages: [sinks.def] });
  return [
    validate({ onInvalid: 'dead-letter' }, ctx),
    flattenLocales({ locales: ['en', 'nl'], fallback: ['en', 'nl', 'fr'] }, ctx),
    selectMediaFormat({ formats: ['largeWebp', 'large'] }, ctx),
    normalizeCodes(
      {
        fields: ['eanGtin13'],
        checkDigit: true,
        onInvalid: 'dead-letter',
        deadLetter: { type: 'jsonl', path: 'out/codes.jsonl' },
      },
      ctx,
    ),
    filter(async (p: any) => p.status !== 'replaced', ctx),
    flatMap((p: any) => [p, { ...p, id: `${p.id}-copy` }], ctx),
    explode({ field: 'brands', carry: { photo: 'photo_url', name: 'name' } }, ctx),
    pick({ fields: ['productId', 'id', 'name', 'name_en', 'photo', 'photo_url'] }, ctx),
  ];
}

const letters = (sinks: ReturnType<typeof memorySinks>) =>
  sinks.made.map((s) => ({
    path: s.path,
    committed: s.committed,
    records: s.records.map(({ rejectedAt: _, ...l }) => l),
  }));

describe('RecordTransform', () => {
  it('fused stages give the same records, counters and dead letters as piped ones', async () => {
    const pipedSinks = memorySinks();
    const piped = chain(pipedSinks);
    const expected = await run(page(), ...piped);

    const fusedSinks = memorySinks();
    const stages = chain(fusedSinks);
    const fused = RecordTransform.fuse(stages);
    expect(fused.stage).toBe(
      'validate+flatten-locales+select-media-format+normalize-codes+filter+flat-map+explode+pick',
    );
    const actual = await run(page(), fused);

    expect(expected.length).toBeGreaterThan(100);
    expect(actual.map(plain)).toEqual(expected.map(plain));
    expect(stages.map((s) => s.stats)).toEqual(piped.map((s) => s.stats));
    expect(stages[0]!.stats).toMatchObject({ in: 250, invalid: 3, deadLettered: 3 });
    expect(stages[3]!.stats).toMatchObject({ in: 247, invalid: 2, deadLettered: 2 });
    expect(letters(fusedSinks)).toEqual(letters(pipedSinks));
    expect(letters(fusedSinks).map((l) => [l.path, l.committed, l.records.length])).toEqual([
      ['out/test-rejected.jsonl', true, 3],
      ['out/codes.jsonl', true, 2],
    ]);
  });

  it('gives the same output when records arrive in random bursts (batched writes)', async () => {
    const expected = await run(page(), ...chain(memorySinks()));
    for (const seed of [1, 7, 42]) {
      const fused = RecordTransform.fuse(chain(memorySinks()));
      const writev = vi.spyOn(fused, '_writev');
      const out = await runInBursts(page(), fused, seed);
      expect(out.map(plain)).toEqual(expected.map(plain));
      expect(writev).toHaveBeenCalled();
    }
    // a single stage batches too
    const single = flattenLocales({ locales: ['en'] }, context());
    const writev = vi.spyOn(single, '_writev');
    const out = await runInBursts(page(), single, 3);
    expect(out).toHaveLength(250);
    expect(writev).toHaveBeenCalled();
  });

  it("fails a fused chain with the failing stage's own error", async () => {
    const stages = [
      validate({}, context()),
      flattenLocales({ locales: ['en'] }, context()),
      pick({ fields: ['id'] }, context()),
    ];
    const err = await run(page(), RecordTransform.fuse(stages)).catch((e) => e);
    expect(err.code).toBe('data.invalid');
    expect(err.message).toMatch(/^validate: product "P0000010" field status: expected one of/);
    expect(stages[2]!.stats.in).toBe(10);
  });

  it('commits dead letters and fails on maxInvalid inside a fused chain', async () => {
    const sinks = memorySinks();
    const ctx = context({ stages: [sinks.def] });
    const stages = [validate({ onInvalid: 'dead-letter', maxInvalid: 1 }, ctx), pick({ fields: ['id'] }, ctx)];
    const err = await run(page(), RecordTransform.fuse(stages)).catch((e) => e);
    expect(err).toBeInstanceOf(DataError);
    expect(err.message).toBe(
      'validate: 2 invalid records exceed maxInvalid 1 (after 51 records); the rejected records are in out/test-rejected.jsonl; ' +
        RAISE_HINT,
    );
    expect(sinks.made[0]!.records.map((l) => l.id)).toEqual(['P0000010', 'P0000050']);
    expect(sinks.made[0]!.committed).toBe(true);
    expect(stages[1]!.stats.in).toBe(49);
  });

  it('copies a record once in a fused chain, and never changes a record it does not own', async () => {
    const input = page();
    const before = input.map(plain);
    // A user stage keeps what it returns: the stages after it must copy again.
    const kept: any[] = [];
    const keeping = (sinks: ReturnType<typeof memorySinks>) => {
      const [v, f, s, n] = chain(sinks);
      const ctx = context({ stages: [sinks.def] });
      return [v!, f!, map((r: any) => (kept.push(r), r), ctx), s!, n!];
    };
    const pipedSinks = memorySinks();
    const expected = await run(page(), ...keeping(pipedSinks));
    const keptPiped = kept.splice(0).map(plain);
    const sinks = memorySinks();
    const actual = await run(input, RecordTransform.fuse(keeping(sinks) as RecordTransform[]));

    expect(actual.map(plain)).toEqual(expected.map(plain));
    expect(input.map(plain)).toEqual(before);
    // What the user stage returned is what it still holds: no photo or code columns added later.
    expect(kept.map(plain)).toEqual(keptPiped);
    expect(kept.some((r) => 'photo_url' in r)).toBe(false);
    // normalize-codes' dead letters hold the records as they reached it, bad code and all.
    expect(letters(sinks)).toEqual(letters(pipedSinks));
    expect(letters(sinks)[1]!.records).toHaveLength(2);
  });

  it('owned records are changed in place; others are copied; a rejected one is left as it came', () => {
    const ctx = context({ stages: [memorySinks().def] });
    const product = () => ({
      ...fixture<any[]>('products.json')[0],
      id: 'P1',
      eanGtin13: 4006381333931,
    });
    const media = selectMediaFormat({ formats: ['largeWebp', 'large'] }, ctx);
    const own = product();
    expect(media.processRecord(own, true)).toBe(own);
    expect(own).toHaveProperty('photo_url');
    const shared = product();
    const copied = media.processRecord(shared, false) as any;
    expect(copied).not.toBe(shared);
    expect(shared).not.toHaveProperty('photo_url');
    expect(plain(copied)).toEqual(plain(own));

    const codes = normalizeCodes({ fields: ['eanGtin13'], checkDigit: true, onInvalid: 'skip' }, ctx);
    const good = product();
    expect(codes.processRecord(good, true)).toBe(good);
    expect(good.eanGtin13).toBe('4006381333931');
    const bad = { ...product(), eanGtin13: 4006381333932 };
    expect(codes.processRecord(bad, true)).toBeNull();
    expect(bad.eanGtin13).toBe(4006381333932);
  });

  it('refuses to fuse a stage twice or one already in use', async () => {
    const a = pick({ fields: ['id'] }, context());
    const b = pick({ fields: ['id'] }, context());
    RecordTransform.fuse([a, b]);
    expect(() => RecordTransform.fuse([a])).toThrow(/already fused or in use/);
    const c = pick({ fields: ['id'] }, context());
    await run([{ id: 1 }], c);
    expect(() => RecordTransform.fuse([c, pick({ fields: ['id'] }, context())])).toThrow(/already fused or in use/);
  });

  it('rejects chunks that are not records', async () => {
    const err = await pipeline(
      Readable.from(['a line of text']),
      pick({ fields: ['id'] }, context()),
      async function* (s) {
        for await (const _ of s);
      },
    ).catch((e) => e);
    expect(err).toBeInstanceOf(DataError);
    expect(err.message).toMatch(/^pick: expected a record \(a plain object\) but received string/);
  });

  it("reports each stage's counters as an info event at the end", async () => {
    const ctx = context();
    const infos: any[] = [];
    ctx.events.on('info', (e) => infos.push(e));
    await run(
      page(),
      RecordTransform.fuse([
        validate({ onInvalid: 'skip' }, ctx),
        map((r: any) => (r.id.endsWith('1') ? null : r), ctx),
      ]),
    );
    expect(infos.map((i) => i.message)).toEqual([
      'validate: 250 in, 247 out, 3 invalid, 3 dropped',
      'map: 247 in, 222 out, 25 dropped',
    ]);
    expect(infos[0]).toMatchObject({ code: 'transform.stats', stage: 'validate', stats: { skipped: 3 } });
  });

  it('keeps backpressure: a slow consumer never lets a stage run far ahead', async () => {
    let produced = 0;
    const source = Readable.from(
      (function* () {
        for (let i = 0; i < 10_000; i++) {
          produced++;
          yield { id: i };
        }
      })(),
    );
    const stage = RecordTransform.fuse([
      flatMap((r: any) => [r, r, r], context()),
      pick({ fields: ['id'] }, context()),
    ]);
    let consumed = 0;
    await pipeline(source, stage, async function* (s) {
      for await (const _ of s) {
        if (++consumed === 300) {
          // at this point the chain has buffered at most a few hundred records, not all 10000
          expect(produced).toBeLessThan(1000);
        }
        if (consumed % 100 === 0) await new Promise((r) => setImmediate(r));
      }
    });
    expect(consumed).toBe(30_000);
  });
});
