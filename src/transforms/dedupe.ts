// dedupe: drops records whose key was already seen in this run. The FIRST
// record with a key is kept and later ones are dropped and counted: a stream
// cannot keep "the last seen" without holding every record until the end.
// Within one incremental at-least-once extract, repeated records are the same
// version, so the first copy is as good as the last. Memory: one Set of keys.
//
// `id` is the default key because it is the only field that identifies one
// product: a code does not (one GTIN-14 is on several products in the live
// catalog: pack-level GTIN-14s, duplicate listings; 587 of 129,368 Australian
// codes). With another key, a later record whose `id` differs from the first
// one's is a different product dropped, not a copy: that is warned about
// (`dedupe.shared_key`) and counted (`sharedKeys`), so it is never silent.
import { z } from 'zod';
import { defineStage, type StageContext } from '../core/stage.js';
import { compileGetter, parseFieldPath, type Getter } from '../core/field-path.js';
import { ConfigError } from '../errors.js';
import { RecordTransform, type RecordOutput, type StageStats } from './record-transform.js';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';

export const DedupeOptionsSchema = z.strictObject({
  key: z
    .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
    .default('id')
    .describe(
      'Field (or fields, for a composite key) identifying a record; paths allowed (meta.updatedAt). Keep id for products: a code (eanGtin14) can be on several products',
    ),
});

/** Options as a caller writes them; each key documented on hover (src/generated/stage-option-docs.ts). */
export type DedupeOptions = WithOptionDocs<'dedupe', z.input<typeof DedupeOptionsSchema>>;

export interface DedupeStats extends StageStats {
  /** Later copies dropped. */
  duplicates: number;
  /** Records without a key value; they pass through unchecked. */
  withoutKey: number;
  /** Dropped records whose `id` differs from the kept one's: other products sharing the key (a code). */
  sharedKeys: number;
}

export class DedupeTransform extends RecordTransform {
  declare readonly stats: DedupeStats;
  readonly #getters: Getter[];
  readonly #seen = new Set<unknown>();
  /** With a key other than `id`: the `id` of the record kept for each key, to tell copies from other products. */
  readonly #idOfKey: Map<unknown, unknown> | undefined;
  readonly #keyName: string;

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
    this.stats.sharedKeys = 0;
    this.#keyName = keys.join(', ');
    this.#idOfKey = keys.length === 1 && keys[0] === 'id' ? undefined : new Map();
  }

  processRecord(record: object): RecordOutput {
    const key = this.#keyOf(record);
    if (key === undefined) {
      this.stats.withoutKey++;
      return record;
    }
    if (this.#seen.has(key)) {
      this.stats.duplicates++;
      if (this.#idOfKey) this.#checkShared(key, record);
      return null;
    }
    this.#seen.add(key);
    this.#idOfKey?.set(key, (record as { id?: unknown }).id);
    return record;
  }

  #checkShared(key: unknown, record: object): void {
    const kept = this.#idOfKey!.get(key);
    const id = (record as { id?: unknown }).id;
    if (id === undefined || kept === undefined || id === kept) return;
    if (this.stats.sharedKeys++ > 0) return;
    this.ctx.events.emit('warning', {
      code: 'dedupe.shared_key',
      message: `dedupe: records ${JSON.stringify(kept)} and ${JSON.stringify(id)} share the key ${this.#keyName} = ${JSON.stringify(key)}; the later one was dropped although it is another record. A code can belong to several products (pack-level GTIN-14s, duplicate listings): key by id (the default) to keep every product. Further ones are counted in this stage's sharedKeys`,
    });
  }

  protected override finish(): void {
    if (this.stats.sharedKeys > 1) {
      this.ctx.events.emit('warning', {
        code: 'dedupe.shared_key',
        message: `dedupe: ${this.stats.sharedKeys} records were dropped for a key (${this.#keyName}) an earlier record of another id had`,
      });
    }
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
    'Drops records whose key (default id) was already seen in this run: the FIRST copy is kept, later copies are dropped and counted; with another key (a code several products share), dropping a record of another id is warned about (dedupe.shared_key) and counted',
  options: DedupeOptionsSchema,
  schema: (input) => input,
  create: (options, ctx) => new DedupeTransform(options, ctx),
});
