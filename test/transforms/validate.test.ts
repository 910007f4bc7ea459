import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { ConfigError, DataError } from '../../src/errors.js';
import { setOrigin } from '../../src/core/origin.js';
import { MAX_RECORD_DEPTH } from '../../src/core/record-depth.js';
import { InvalidRecordError, validateStage } from '../../src/transforms/index.js';
import { validate } from '../../src/pipeline/code-api.js';
import { context, fixture, memorySinks, run } from './support.js';

const RAISE_HINT =
  'if that many invalid records are expected, raise maxInvalid (e.g. "25%") or lift it (maxInvalid: none)';

const products = () => fixture<any[]>('products.json').filter((p) => typeof p.eanGtin13 !== 'string');
const invalid = () => fixture<Array<{ record: any; paths: string[] }>>('invalid-products.json');

/** A page of 250 products of products.query page 3; three of them broken at known paths. */
function pageWithThreeBroken() {
  const base = products()[0];
  const page = Array.from({ length: 250 }, (_, i) =>
    setOrigin(
      { ...base, id: `P${String(750 + i).padStart(7, '0')}` },
      { endpoint: 'products.query', page: 3, index: 750 + i },
    ),
  );
  page[17] = setOrigin({ ...page[17], eanGtin13: 12345678901234 }, { endpoint: 'products.query', page: 3, index: 767 });
  page[101] = setOrigin({ ...page[101], status: 'gone' }, { endpoint: 'products.query', page: 3, index: 851 });
  page[222] = setOrigin(
    { ...page[222], meta: { createdAt: 'yesterday', updatedAt: 2 } },
    { endpoint: 'products.query', page: 3, index: 972 },
  );
  return page;
}

describe('validate', () => {
  it('passes valid records through unchanged, the same objects', async () => {
    const input = products();
    const stage = validate({}, context());
    const out = await run(input, stage);
    expect(out).toHaveLength(input.length);
    out.forEach((r, i) => expect(r).toBe(input[i]));
    expect(stage.stats).toMatchObject({ in: input.length, out: input.length, invalid: 0, dropped: 0 });
  });

  it('fails on the first invalid record with an error naming id, field, value, expectation and origin', async () => {
    const bad = setOrigin(
      { ...products()[0], id: 'P0001234', eanGtin13: 12345678901234 },
      { endpoint: 'products.query', page: 3, index: 812 },
    );
    const ctx = context();
    const events: any[] = [];
    ctx.events.on('invalid', (e) => events.push(e));
    const err = await run([products()[1], bad, products()[2]], validate({}, ctx)).catch((e) => e);
    expect(err).toBeInstanceOf(InvalidRecordError);
    expect(err).toBeInstanceOf(DataError);
    expect(err.code).toBe('data.invalid');
    expect(err.message).toBe(
      'validate: product "P0001234" field eanGtin13: expected a code of at most 13 digits (an integer or a digit string), got number 12345678901234 (from products.query page 3, index 812)',
    );
    expect(err.recordId).toBe('P0001234');
    expect(err.issues).toEqual([
      {
        path: 'eanGtin13',
        message: 'expected a code of at most 13 digits (an integer or a digit string), got number 12345678901234',
        expected: 'a code of at most 13 digits (an integer or a digit string)',
        received: 'number 12345678901234',
      },
    ]);
    expect(events).toEqual([{ stage: 'validate', id: 'P0001234', action: 'fail', message: err.message }]);
  });

  it('reports every corner of the invalid fixtures at the right path', async () => {
    const ctx = context();
    const events: any[] = [];
    ctx.events.on('invalid', (e) => events.push(e));
    const stage = validate({ onInvalid: 'skip', maxInvalid: 'none' }, ctx);
    const cases = invalid();
    const out = await run([...cases.map((c) => c.record), ...products()], stage);
    expect(out.map((r) => r.id)).toEqual(products().map((p) => p.id));
    expect(stage.stats).toMatchObject({ invalid: cases.length, skipped: cases.length, deadLettered: 0 });
    expect(events).toHaveLength(cases.length);
    cases.forEach((c, i) => {
      expect(events[i].action).toBe('skip');
      for (const p of c.paths) expect(events[i].message).toContain(`field ${p}:`);
    });
    expect(events[1].message).toContain(
      'expected one of "active", "inactive", "replaced", "no_selection", got string "gone"',
    );
    expect(events[2].message).toContain('expected a unix timestamp (a non-negative integer), got string "yesterday"');
    expect(events[7].message).toContain(
      'field brands[0].name: expected a localized text (an object such as {"en": "..."}) or a plain string, got nothing (the field is missing)',
    );
    expect(events[8].message).toMatch(
      /^validate: product without id field id: expected a string, got nothing \(the field is missing\)/,
    );
  });

  it('dead-letters 3 broken records of a 250-record page: 247 out, 3 letters with paths and origin', async () => {
    const sinks = memorySinks();
    const ctx = context({ stages: [sinks.def], run: {} });
    const stage = validate({ onInvalid: 'dead-letter' }, ctx);
    const page = pageWithThreeBroken();
    const out = await run(page, stage);
    expect(out).toHaveLength(247);
    expect(out.map((r) => r.id)).not.toContain('P0000767');
    expect(stage.stats).toMatchObject({ in: 250, out: 247, invalid: 3, deadLettered: 3, skipped: 0, dropped: 3 });
    expect(sinks.made).toHaveLength(1);
    const [sink] = sinks.made;
    expect(sink!.path).toBe('out/test-rejected.jsonl');
    expect(sink!.committed).toBe(true);
    const letters = sink!.records;
    expect(letters.map((l) => l.id)).toEqual(['P0000767', 'P0000851', 'P0000972']);
    expect(letters.map((l) => l.issues.map((i: any) => i.path))).toEqual([
      ['eanGtin13'],
      ['status'],
      ['meta.createdAt'],
    ]);
    expect(letters[0]).toMatchObject({
      resource: 'product',
      stage: 'validate',
      origin: { endpoint: 'products.query', page: 3, index: 767 },
      issues: [
        {
          path: 'eanGtin13',
          expected: 'a code of at most 13 digits (an integer or a digit string)',
          received: 'number 12345678901234',
        },
      ],
      record: { id: 'P0000767', eanGtin13: 12345678901234 },
    });
    expect(Date.parse(letters[0].rejectedAt)).not.toBeNaN();
  });

  it('the maxInvalid failure speaks of one record in the singular', async () => {
    const page = pageWithThreeBroken().slice(17, 18);
    const stage = validate({ onInvalid: 'skip', maxInvalid: 0 }, context());
    const err = await pipeline(Readable.from(page), stage, async function* (src) {
      for await (const _ of src);
    }).catch((e) => e);
    expect(err.code).toBe('data.max_invalid');
    expect(err.message).toMatch(/^validate: 1 invalid record exceeds maxInvalid 0 \(after 1 record\); /);
  });

  it('one invalid record never exceeds a percentage: a night of few changes is judged like the full run', async () => {
    const broken = pageWithThreeBroken();
    const brokenIds = new Set([17, 101, 222].map((i) => broken[i]!.id));
    const valid = broken.filter((r) => !brokenIds.has(r.id)).slice(0, 7);
    const night = (invalid: number) => [...valid, ...broken.filter((r) => brokenIds.has(r.id)).slice(0, invalid)];
    await expect(run(night(1), validate({ onInvalid: 'skip', maxInvalid: '1%' }, context()))).resolves.toHaveLength(7);
    const two = await run(night(2), validate({ onInvalid: 'skip', maxInvalid: '1%' }, context())).catch((e) => e);
    expect(two.code).toBe('data.max_invalid');
    expect(two.message).toMatch(/^validate: 2 invalid records of 9 \(22.22%\) exceed maxInvalid 1%; /);
  });

  it('fails the run when more invalid records than a maxInvalid count arrive, keeping the dead letters', async () => {
    const sinks = memorySinks();
    const ctx = context({ stages: [sinks.def] });
    const stage = validate(
      { onInvalid: 'dead-letter', maxInvalid: 2, deadLetter: { type: 'jsonl', path: 'out/{name}-{stage}.jsonl' } },
      ctx,
    );
    const out: any[] = [];
    const err = await pipeline(Readable.from(pageWithThreeBroken()), stage, async function* (src) {
      for await (const r of src) out.push(r);
    }).catch((e) => e);
    expect(err).toBeInstanceOf(DataError);
    expect(err.code).toBe('data.max_invalid');
    expect(err.message).toBe(
      'validate: 3 invalid records exceed maxInvalid 2 (after 223 records); the rejected records are in out/test-validate.jsonl; ' +
        RAISE_HINT,
    );
    // stopped at the third invalid record: nothing after it went downstream
    expect(out.length).toBeLessThanOrEqual(220);
    expect(sinks.made[0]!.committed).toBe(true);
    expect(sinks.made[0]!.records).toHaveLength(3);
  });

  it('checks a maxInvalid percentage at the end of the input', async () => {
    const over = await run(pageWithThreeBroken(), validate({ onInvalid: 'skip', maxInvalid: '1%' }, context())).catch(
      (e) => e,
    );
    expect(over).toBeInstanceOf(DataError);
    expect(over.code).toBe('data.max_invalid');
    expect(over.message).toBe(
      'validate: 3 invalid records of 250 (1.2%) exceed maxInvalid 1%; the rejected records were skipped (onInvalid: skip), not kept; ' +
        RAISE_HINT,
    );
    const under = validate({ onInvalid: 'skip', maxInvalid: '1.2%' }, context());
    await expect(run(pageWithThreeBroken(), under)).resolves.toHaveLength(247);
    // 3 is not more than 3
    await expect(
      run(pageWithThreeBroken(), validate({ onInvalid: 'skip', maxInvalid: 3 }, context())),
    ).resolves.toHaveLength(247);
  });

  describe('the default maxInvalid (10%) with skip and dead-letter', () => {
    /** 100 products of which `broken` have an unknown status. */
    const hundred = (broken: number) => {
      const base = products()[0];
      return Array.from({ length: 100 }, (_, i) => ({
        ...base,
        id: `D${String(i).padStart(4, '0')}`,
        ...(i < broken ? { status: 'gone' } : {}),
      }));
    };

    it('a run that dead-letters everything fails, naming the committed dead-letter output', async () => {
      const sinks = memorySinks();
      const err = await run(
        hundred(100),
        validate(
          { onInvalid: 'dead-letter', deadLetter: { type: 'jsonl', path: 'out/all-rejected.jsonl' } },
          context({ stages: [sinks.def] }),
        ),
      ).catch((e) => e);
      expect(err).toBeInstanceOf(DataError);
      expect(err.code).toBe('data.max_invalid');
      expect(err.message).toBe(
        'validate: 100 invalid records of 100 (100%) exceed maxInvalid 10% (the default); the rejected records are in out/all-rejected.jsonl; ' +
          RAISE_HINT,
      );
      expect(sinks.made[0]!.committed).toBe(true);
      expect(sinks.made[0]!.records.map((l) => l.id)).toEqual(hundred(100).map((p) => p.id));
    });

    it('11 of 100 fail the run, 10 of 100 do not; skip has the same default', async () => {
      const over = await run(hundred(11), validate({ onInvalid: 'skip' }, context())).catch((e) => e);
      expect(over.code).toBe('data.max_invalid');
      expect(over.message).toMatch(
        /^validate: 11 invalid records of 100 \(11%\) exceed maxInvalid 10% \(the default\)/,
      );
      await expect(run(hundred(10), validate({ onInvalid: 'skip' }, context()))).resolves.toHaveLength(90);
    });

    it('users raise it or lift it: "100%" and none let a run reject everything', async () => {
      await expect(run(hundred(100), validate({ onInvalid: 'skip', maxInvalid: '100%' }, context()))).resolves.toEqual(
        [],
      );
      await expect(run(hundred(100), validate({ onInvalid: 'skip', maxInvalid: 'none' }, context()))).resolves.toEqual(
        [],
      );
      await expect(
        run(hundred(30), validate({ onInvalid: 'skip', maxInvalid: '30%' }, context())),
      ).resolves.toHaveLength(70);
    });
  });

  it('discards the dead-letter sink when the run fails for another reason', async () => {
    const sinks = memorySinks();
    const stage = validate({ onInvalid: 'dead-letter' }, context({ stages: [sinks.def] }));
    const page = pageWithThreeBroken();
    const err = await pipeline(
      async function* () {
        // the source fails mid-way, after two invalid records were dead-lettered
        yield* page.slice(0, 120);
        throw new Error('source broke');
      },
      stage,
      async function* (src) {
        for await (const _ of src);
      },
    ).catch((e) => e);
    expect(err.message).toBe('source broke');
    expect(sinks.made[0]!.records.length).toBeGreaterThan(0);
    expect(sinks.made[0]!.destroyed).toBe(true);
    expect(sinks.made[0]!.committed).toBe(false);
  });

  it('waits for a slow dead-letter sink (backpressure) and still writes every letter', async () => {
    const sinks = memorySinks({ highWaterMark: 1 });
    const stage = validate({ onInvalid: 'dead-letter', maxInvalid: 'none' }, context({ stages: [sinks.def] }));
    const records = invalid().map((c) => c.record);
    const all = Array.from({ length: 20 }, () => records).flat();
    await expect(run(all, stage)).resolves.toHaveLength(0);
    expect(sinks.made[0]!.records).toHaveLength(all.length);
  });

  it('fails the run when the dead-letter sink fails', async () => {
    const sinks = memorySinks({ failOnWrite: 2 });
    const stage = validate({ onInvalid: 'dead-letter', maxInvalid: 'none' }, context({ stages: [sinks.def] }));
    const err = await run([...invalid().map((c) => c.record), ...products()], stage).catch((e) => e);
    expect(err.message).toBe('disk full');
  });

  it('reports, rejects or allows fields the schema does not declare', async () => {
    const extra = {
      ...products()[0],
      futureField: 1,
      photos: [
        { ...products()[0].photos[0], shiny: true },
        { displayOrder: 5, shiny: false },
      ],
    };
    const ctx = context();
    const warnings: any[] = [];
    ctx.events.on('warning', (w) => warnings.push(w));
    const report = validate({}, ctx);
    expect(await run([extra, extra], report)).toHaveLength(2);
    expect(report.stats.unknownFields).toEqual({ 'photos[].shiny': 2, futureField: 2 });
    expect(warnings.map((w) => w.message)).toEqual([
      'validate: product field "photos[].shiny" is not in the catalog v4 schema; passed through (first seen on product "P0000001")',
      'validate: product field "futureField" is not in the catalog v4 schema; passed through (first seen on product "P0000001")',
    ]);
    const reject = validate({ unknownFields: 'reject', onInvalid: 'skip', maxInvalid: 'none' }, context());
    const events: any[] = [];
    reject['ctx'].events.on('invalid', (e: any) => events.push(e));
    expect(await run([extra, products()[1]], reject)).toHaveLength(1);
    expect(events[0].message).toBe(
      'validate: product "P0000001" field photos[0].shiny: not declared in the catalog v4 schema (unknownFields: reject); photos[1].shiny: not declared in the catalog v4 schema (unknownFields: reject); futureField: not declared in the catalog v4 schema (unknownFields: reject)',
    );
    const allow = validate({ unknownFields: 'allow' }, context());
    expect(await run([extra], allow)).toHaveLength(1);
    expect(allow.stats.unknownFields).toEqual({});
    // open objects (conservationMin: layout not shown) and localized maps take any key
    expect(
      await run(
        [{ ...products()[0], conservationMin: { celsius: 2 }, name: { de: 'x' } }],
        validate({ unknownFields: 'reject' }, context()),
      ),
    ).toHaveLength(1);
  });

  it('dead-letters a record nested too deep wherever the deep value is: an undeclared field, an open one', async () => {
    const levels = MAX_RECORD_DEPTH;
    const deep = () => JSON.parse(`${'['.repeat(levels)}${']'.repeat(levels)}`);
    const [a, b, c] = products();
    const records = [
      { ...a, futureField: deep() },
      { ...b, apbCategory: deep() },
      { ...c, attributes: [1, deep()] },
    ];
    for (const unknownFields of ['report', 'reject', 'allow'] as const) {
      const sinks = memorySinks();
      const options = { onInvalid: 'dead-letter', maxInvalid: 'none', unknownFields } as const;
      const stage = validate(options, context({ stages: [sinks.def], run: {} }));
      expect(await run(records, stage)).toEqual([]);
      const letters = sinks.made[0]!.records;
      expect(letters.map((l) => l.issues.map((i: any) => [i.path, i.message.split(',')[0]]))).toEqual([
        [['futureField', `nested ${levels + 1} levels deep`]],
        [['apbCategory', `nested ${levels + 1} levels deep`]],
        [['attributes', `nested ${levels + 2} levels deep`]],
      ]);
      expect(letters[0].record.futureField).toBe(`${'['.repeat(levels)}${']'.repeat(levels)}`);
      expect(stage.stats.unknownFields).toEqual({});
    }
  });

  it('reports a __proto__ key JSON.parse made an own field, and passes the record', async () => {
    const record = JSON.parse(`{"__proto__":{"x":1},${JSON.stringify(products()[0]).slice(1)}`);
    const report = validate({}, context());
    expect(await run([record], report)).toEqual([record]);
    expect(report.stats.unknownFields).toEqual({ __proto__: 1 });
    const allow = validate({ unknownFields: 'allow' }, context());
    expect(await run([record], allow)).toHaveLength(1);
  });

  it('takes the resource from the options or the source, and refuses to guess', () => {
    expect(validate({}, context()).resource).toBe('product');
    expect(validate({ resource: 'media' }, context()).resource).toBe('media');
    expect(() => validate({}, context({ source: { type: 'x' } }))).toThrow(ConfigError);
    expect(() => validate({}, context({ source: { type: 'x' } }))).toThrow(/set the option "resource"/);
  });

  it('has strict, checked options', () => {
    const parse = (o: unknown) => validateStage.options.safeParse(o);
    expect(parse({}).success).toBe(true);
    expect(parse({ onInvalid: 'dead-letter', maxInvalid: '0.5%' }).success).toBe(true);
    expect(parse({ onInvalid: 'skip', maxInvalid: 0.005 }).error?.issues[0]?.message).toMatch(
      /number of records .* a percentage string such as "0.5%", or none/,
    );
    expect(parse({ onInvalid: 'skip', maxInvalid: '150%' }).success).toBe(false);
    expect(parse({ maxInvalid: 10 }).error?.issues[0]?.message).toMatch(/applies to onInvalid: skip or dead-letter/);
    expect(parse({ onInvalidd: 'skip' }).success).toBe(false);
    expect(() => validate({ onInvalid: 'explode' } as never, context())).toThrow(/validate\.onInvalid/);
  });
});
