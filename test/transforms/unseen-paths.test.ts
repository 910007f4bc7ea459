// Issue 37 item 8: demo.yml's `drop: [seoName]` came after flatten-locales, which had already made
// seoName into seoName_en..., and nothing said so. A drop, pick or rename path that no record of
// the run had is now one warning at the end, naming the nearest field that was seen.
import { describe, expect, it } from 'vitest';
import { drop, flattenLocales, pick, rename } from '../../src/pipeline/code-api.js';
import { context, run } from './support.js';

const products = [
  { id: 'P1', status: 'active', seoName: { en: 'a', nl: 'b' }, meta: { updatedAt: 1 }, photos: [{ id: 1 }] },
  { id: 'P2', status: 'active', seoName: { en: 'c' }, meta: { updatedAt: 2 }, photos: [] },
];

function warningsOf(ctx: ReturnType<typeof context>) {
  const warnings: Array<{ code: string; message: string }> = [];
  ctx.events.on('warning', (w) => warnings.push(w));
  return warnings;
}

describe('a drop, pick or rename path no record had (issue 37)', () => {
  it('drop after flatten-locales: one warning at the end naming the flattened columns', async () => {
    const ctx = context();
    const warnings = warningsOf(ctx);
    const out = await run(
      products,
      flattenLocales({ locales: ['en', 'nl'] }, ctx),
      drop({ fields: ['seoName', 'status', 'meta.createdAt', 'photos[].url'] }, ctx),
    );
    expect(out[0]).toMatchObject({ seoName_en: 'a', seoName_nl: 'b' });
    expect(warnings.map((w) => w.code)).toEqual([
      'transform.path_unseen',
      'transform.path_unseen',
      'transform.path_unseen',
    ]);
    expect(warnings[0]!.message).toMatch(/^drop: fields\[0\] "seoName" was in none of the run's 2 records/);
    expect(warnings[0]!.message).toContain('nearest field seen: "seoName_en", "seoName_nl"');
    expect(warnings[1]!.message).toMatch(/fields\[2\] "meta\.createdAt".*nearest field seen: "updatedAt"/);
    expect(warnings[2]!.message).toMatch(/fields\[3\] "photos\[\]\.url"/);
  });

  it('paths every record or one record has say nothing; a run without records says nothing', async () => {
    const ctx = context();
    const warnings = warningsOf(ctx);
    await run(
      products,
      drop({ fields: ['seoName', 'photos[].id'] }, ctx),
      pick({ fields: ['id', 'meta.updatedAt'] }, ctx),
    );
    await run([], drop({ fields: ['nothing'] }, ctx));
    expect(warnings).toEqual([]);
  });

  it('pick and rename: a misspelt name is named with the closest one seen', async () => {
    const ctx = context();
    const warnings = warningsOf(ctx);
    const out = await run(
      products,
      pick({ fields: ['id', 'stauts'] }, ctx),
      rename({ fields: { idd: 'productId', id: 'product' } }, ctx),
    );
    expect(out[0]).toEqual({ product: 'P1', stauts: null });
    expect(warnings.map((w) => w.message)).toEqual([
      expect.stringMatching(
        /^pick: fields\[1\] "stauts" was in none of the run's 2 records.*nearest field seen: "status"/,
      ),
      expect.stringMatching(/^rename: fields "idd" was in none of the run's 2 records.*nearest field seen: "id"/),
    ]);
  });
});
