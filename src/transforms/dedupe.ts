// dedupe: drops records whose key was already seen in this run. The FIRST
// record with a key is kept and later ones are dropped and counted: a stream
// cannot keep "the last seen" without holding every record until the end.
// Within one incremental at-least-once extract, repeated records are the same
// version, so the first copy is as good as the last. Memory: one Set of keys.
import { z } from 'zod';
import { defineStage, type StageContext } from '../core/stage.js';
import { stageFactory } from '../core/stage-factory.js';
import { compileGetter, parseFieldPath, type Getter } from '../core/field-path.js';
import { ConfigError } from '../errors.js';
import { RecordTransform, type RecordOutput, type StageStats } from './record-transform.js';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';

export const DedupeOptionsSchema = z.strictObject({
  key: z
    .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
    .default('id')
    .describe('Field (or fields, for a composite key) identifying a record; paths allowed (meta.updatedAt)'),
});

/** Options as a caller writes them; each key documented on hover (src/generated/stage-option-docs.ts). */
export type DedupeOptions = WithOptionDocs<'dedupe', z.input<typeof DedupeOptionsSchema>>;

export interface DedupeStats extends StageStats {
  /** Later copies dropped. */
  duplicates: number;
  /** Records without a key value; they pass through unchecked. */
  withoutKey: number;
}

export class DedupeTransform extends RecordTransform {
  declare readonly stats: DedupeStats;
  readonly #getters: Getter[];
  readonly #seen = new Set<unknown>();

  constructor(options: z.output<typeof DedupeOptionsSchema>, ctx: StageContext) {
    super('dedupe', ctx);
    const keys = typeof options.key === 'string' ? [options.key] : options.key;
    this.#getters = keys.map((k, i) => {
      const optionPath = typeof options.key === 'string' ? 'key' : `key[${i}]`;
      const path = parseFieldPath(k, optionPath);
      // A list path gives a new array per record: never equal to another one, so nothing would be a duplicate.
      if (path.multi)
        throw new ConfigError(
          `dedupe: ${optionPath}: "${k}" reaches into a list; a key is one value per record (several fields: key: [a, b])`,
          { path: optionPath },
        );
      return compileGetter(path);
    });
    this.stats.duplicates = 0;
    this.stats.withoutKey = 0;
  }

  processRecord(record: object): RecordOutput {
    const key = this.#keyOf(record);
    if (key === undefined) {
      this.stats.withoutKey++;
      return record;
    }
    if (this.#seen.has(key)) {
      this.stats.duplicates++;
      return null;
    }
    this.#seen.add(key);
    return record;
  }

  #keyOf(record: object): unknown {
    const getters = this.#getters;
    if (getters.length === 1) {
      const v = getters[0]!(record);
      // An object is no key: it is new in every record, so it would never match.
      return v === null || typeof v === 'object' ? undefined : v;
    }
    let key = '';
    for (let i = 0; i < getters.length; i++) {
      const v = getters[i]!(record);
      if (v === undefined || v === null || typeof v === 'object') return undefined;
      // typed parts, so 1 and "1" differ and no separator inside a value can collide
      key += `${typeof v}:${String(v).length}:${String(v)}|`;
    }
    return key;
  }
}

export const dedupeStage = defineStage({
  kind: 'transform',
  type: 'dedupe',
  description:
    'Drops records whose key (default id) was already seen in this run: the FIRST copy is kept, later copies are dropped and counted',
  options: DedupeOptionsSchema,
  schema: (input) => input,
  create: (options, ctx) => new DedupeTransform(options, ctx),
});

/** Code API: `dedupe()` or `dedupe({key: ['id', 'meta.updatedAt']})`. */
export const dedupe = stageFactory(dedupeStage);
