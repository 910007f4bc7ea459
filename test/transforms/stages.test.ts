import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { StageRegistry } from '../../src/core/registry.js';
// The public entry: it wires the code API's dead-letter sinks (pipeline/builtins.ts), as a user's import does.
import * as api from '../../src/index.js';
import {
  RecordTransform,
  flattenLocales,
  normalizeCodes,
  pick,
  selectMediaFormat,
  transformStages,
  validate,
} from '../../src/index.js';
import { context, fixture, run } from './support.js';

describe('transformStages', () => {
  it('lists every transform type once, under its exact name', () => {
    // Each registered transform is exported for code as <camelCase type>Stage, under a kebab-case type name.
    const types = transformStages.map((d) => d.type);
    expect(new Set(types).size).toBe(types.length);
    for (const d of transformStages) {
      expect(d.type).toMatch(/^[a-z]+(-[a-z]+)*$/);
      const exportName = `${d.type.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())}Stage`;
      expect((api as Record<string, unknown>)[exportName]).toBe(d);
    }
    expect(() => new StageRegistry().register(...transformStages)).not.toThrow();
    for (const d of transformStages) {
      expect(d.kind).toBe('transform');
      expect(d.description.length).toBeGreaterThan(20);
    }
  });

  it('describes every option and exports as JSON Schema (for the stages command and the README)', () => {
    for (const d of transformStages) {
      const shape = (d.options as unknown as z.ZodObject).shape;
      for (const [name, option] of Object.entries(shape)) {
        expect((option as z.ZodType).description, `${d.type}.${name}`).toBeTruthy();
      }
      const schema = z.toJSONSchema(d.options, { io: 'input' }) as { additionalProperties?: boolean };
      expect(schema.additionalProperties, d.type).toBe(false);
    }
  });

  it('builds through the registry from pipeline-file specs, with path-named errors', async () => {
    const registry = new StageRegistry().register(...transformStages);
    const ctx = context();
    const specs = [
      { type: 'validate', onInvalid: 'skip', maxInvalid: 'none' },
      { type: 'flatten-locales', locales: ['en', 'nl', 'fr'] },
      { type: 'select-media-format', formats: ['largeWebp', 'large'] },
      { type: 'normalize-codes' },
      { type: 'pick', fields: ['id', 'name_en', 'photo_url', 'eanGtin13'] },
    ];
    const stages = specs.map((s, i) => registry.create<RecordTransform>('transform', s, ctx, `transforms[${i}]`));
    expect(stages.every((s) => s instanceof RecordTransform)).toBe(true);
    const out = await run(fixture<any[]>('products.json').slice(0, 3), ...stages);
    expect(out[0]).toEqual({
      id: 'P0000001',
      name_en: 'Vitamin C 500 mg',
      photo_url: 'https://img/p1/1-large.jpg',
      eanGtin13: '0012345678905',
    });
    expect(() =>
      registry.create('transform', { type: 'flatten-locales', locale: ['en'] }, ctx, 'transforms[1]'),
    ).toThrow(/^transforms\[1\].*"locale"/);
    expect(() => registry.create('transform', { type: 'valdate' }, ctx, 'transforms[0]')).toThrow(
      /did you mean "validate"/,
    );
  });

  it('work in code without a context, inside stream.pipeline', async () => {
    const out = await run(
      fixture<any[]>('products.json').slice(0, 3),
      validate({ resource: 'product' }),
      flattenLocales({ fallback: ['en', 'fr'] }),
      selectMediaFormat(),
      normalizeCodes(),
      pick({ fields: ['id', 'name', 'photo_format', 'eanGtin13'] }),
    );
    expect(out[1]).toEqual({
      id: 'P0000002',
      name: "Crème hydratante à l'aloe — 50 ml ✓",
      photo_format: null,
      eanGtin13: null,
    });
    // no runner context: the dead-letter sink is built from the built-in sinks
    const dir = await mkdtemp(join(tmpdir(), 'cs-deadletter-'));
    const rejected = join(dir, 'rejected.jsonl');
    const kept = await run(
      [{ id: 'X' }, { id: 'P1', status: 'active', meta: { createdAt: 1, updatedAt: 2 } }],
      validate({
        resource: 'product',
        onInvalid: 'dead-letter',
        maxInvalid: 'none',
        deadLetter: { type: 'jsonl', path: rejected },
      }),
    );
    expect(kept.map((r: any) => r.id)).toEqual(['P1']);
    const letters = (await readFile(rejected, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(letters.map((l) => l.id)).toEqual(['X']);
    expect(letters[0].issues.map((i: any) => i.path)).toEqual(expect.arrayContaining(['status', 'meta']));
    await rm(dir, { recursive: true, force: true });
    expect(() => validate()).toThrow(/set the option "resource"/);
  });
});
