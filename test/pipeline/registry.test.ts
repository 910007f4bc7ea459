// The stage registry: one table of {kind, type, options schema, create} for the
// loader, the code API and `catalog-streams stages`; checks without building,
// suggests the closest type, and takes a user's own stages.
import { Transform } from 'node:stream';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { ENDPOINT_NAMES, endpoints } from '../../src/catalog/index.js';
import { ConfigError } from '../../src/errors.js';
import { outputFormats } from '../../src/sinks/index.js';
import { builtinStages, createRegistry } from '../../src/pipeline/builtins.js';
import { closestName } from '../../src/closest-name.js';
import { StageRegistry } from '../../src/core/registry.js';
import { defineStage } from '../../src/core/stage.js';
import { testContext } from '../helpers/stage-context.js';

const upper = defineStage({
  kind: 'transform',
  type: 'uppercase-id',
  description: 'Upper-cases the id',
  options: z.strictObject({ field: z.string().default('id').describe('Field to upper-case') }),
  create: (options) =>
    new Transform({
      objectMode: true,
      transform(record: Record<string, unknown>, _enc, callback) {
        callback(null, { ...record, [options.field]: String(record[options.field]).toUpperCase() });
      },
    }),
});

describe('StageRegistry', () => {
  it('holds every built-in stage once, by kind', () => {
    const registry = createRegistry();
    expect(registry.list()).toHaveLength(builtinStages.length);
    // A source per paged or stream endpoint of the endpoint table; a local sink per format, s3, table and media-mirror.
    const sourceEndpoints = ENDPOINT_NAMES.filter(
      (name) => endpoints[name].mode === 'paged' || endpoints[name].mode === 'stream',
    );
    expect(registry.types('source').sort()).toEqual([...sourceEndpoints].sort());
    expect(registry.types('sink').sort()).toEqual(
      [...outputFormats.map((f) => f.name), 's3', 'table', 'media-mirror'].sort(),
    );
    expect(() => createRegistry().register(upper, upper)).toThrow('stage type "uppercase-id" is registered twice');
  });

  it('check: options parsed with defaults, or issues with paths relative to the spec', () => {
    const registry = createRegistry();
    const ok = registry.check('transform', { type: 'flatten-locales', locales: ['en'] });
    expect(ok).toMatchObject({
      ok: true,
      options: { locales: ['en'], columns: '{field}_{locale}', keepOriginal: false },
    });
    expect(registry.check('transform', { type: 'flatten-locales', locales: ['en', 3] })).toEqual({
      ok: false,
      issues: [{ path: ['locales', 1], message: 'expected a string, got 3', kind: 'value' }],
    });
    expect(registry.check('transform', { type: 'pick', fields: ['id'], missng: 'omit' })).toEqual({
      ok: false,
      issues: [
        {
          path: ['missng'],
          message: 'unknown key "missng"; did you mean "missing"? (allowed: fields, missing)',
          kind: 'unknown-key',
        },
      ],
    });
    expect(registry.check('source', { type: 'products.query' })).toMatchObject({
      ok: false,
      issues: [{ path: ['filter'], message: 'required, but missing', kind: 'missing' }],
    });
  });

  it('unknown types get the closest name of the right kind; a type of another kind says so', () => {
    const registry = createRegistry();
    expect(registry.check('transform', { type: 'flaten-locales' })).toMatchObject({
      ok: false,
      issues: [
        {
          path: ['type'],
          message: expect.stringMatching(
            /^unknown transform type "flaten-locales"; did you mean "flatten-locales"\? \(known: validate, /,
          ),
        },
      ],
    });
    expect(registry.check('sink', { type: 'parket' })).toMatchObject({
      issues: [
        {
          message: `unknown sink type "parket"; did you mean "parquet"? (known: ${registry.types('sink').join(', ')})`,
        },
      ],
    });
    expect(registry.check('source', { type: 'zzz' })).toMatchObject({
      issues: [{ message: expect.stringMatching(/^unknown source type "zzz" \(known: /) }],
    });
    expect(registry.check('sink', { type: 'validate' })).toMatchObject({
      issues: [{ message: `"validate" is a transform, not a sink (sink types: ${registry.types('sink').join(', ')})` }],
    });
  });

  it('create: builds the stage, or throws a ConfigError naming the path', () => {
    const registry = createRegistry();
    const ctx = testContext();
    expect(registry.create('transform', { type: 'pick', fields: ['id'] }, ctx, 'transforms[0]')).toBeInstanceOf(
      Transform,
    );
    let error: unknown;
    try {
      registry.create('transform', { type: 'pick', fields: 'id' }, ctx, 'transforms[2]');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe(
      'transforms[2].fields: expected a list, got "id"; write [id] for a list of one',
    );
    expect((error as ConfigError).exitCode).toBe(2);
  });

  it('a user registers their own stage in code next to the built-ins', () => {
    const registry = createRegistry().register(upper);
    expect(registry.get('uppercase-id')?.kind).toBe('transform');
    expect(registry.check('transform', { type: 'uppercase-ids' })).toMatchObject({
      issues: [{ message: expect.stringContaining('did you mean "uppercase-id"?') }],
    });
    expect(new StageRegistry().register(upper).types()).toEqual(['uppercase-id']);
  });
});

describe('closestName', () => {
  it.each([
    ['flaten-locales', 'flatten-locales'],
    ['sink', 'sinks'],
    ['Sinks', 'sinks'],
    ['pageSze', 'pageSize'],
    ['xyz', undefined],
    ['transformations', 'transforms'],
    ['sorting', undefined],
  ])('%s -> %s', (input, expected) => {
    expect(closestName(input, ['flatten-locales', 'sinks', 'pageSize', 'transforms', 'name'])).toBe(expected);
  });
});
