// Product rows as the bench chain's Parquet sink receives them, for one sandbox profile: the
// sandbox's live-shaped products through products.query -> validate -> flatten-locales ->
// select-media-format -> normalize-codes, captured as they reach the sink (a custom filter at
// the end of the chain keeps each record), then shaped by a ParquetFormat made from the plan's
// record schema. Used by the shredder test and by test/bench/shredder.ts.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { runPipeline } from '../../src/pipeline/runner.js';
import type { SandboxProfile } from '../../src/sandbox/profiles.js';
import { ParquetFormat, type ParquetFormatOptions } from '../../src/sinks/parquet/parquet-encoding.js';
import type { TypedColumn, ShapedRow } from '../../src/sinks/shared/column-types.js';
import { startTestSandbox } from '../helpers/sandbox.js';
import { testContext } from '../helpers/stage-context.js';

const CAPTURE = `
export default function capture(record) {
  (globalThis.__chainRowsCapture ??= []).push(record);
  return true;
}
`;

function chainYaml(pageSize: number): string {
  return `name: chain-rows
source: { type: products.query, filter: { createdAt: { from: 0 } }, sorting: { id: ASC }, pageSize: ${pageSize} }
transforms:
  - { type: validate, onInvalid: dead-letter, deadLetter: { type: jsonl, path: rejected.jsonl } }
  - { type: flatten-locales, locales: [en, nl, fr] }
  - { type: select-media-format, formats: [largeWebp, large] }
  - { type: normalize-codes }
  - { type: custom, module: ./capture.mjs, kind: filter }
sinks:
  - { type: jsonl, path: records.jsonl }
`;
}

export interface ChainRows {
  records: Array<Record<string, unknown>>;
  columns: TypedColumn[];
  /** Shapes records with the sink's ParquetFormat (the `_extra` column included). */
  shape(records: ReadonlyArray<Record<string, unknown>>): ShapedRow[];
}

/** `products` records of `profile` after the chain's transforms, and the parquet sink's shaping of them. */
export async function chainRows(profile: SandboxProfile, products: number, dir: string, seed = 26): Promise<ChainRows> {
  const sandbox = await startTestSandbox({ products, profile, seed });
  const registry = createRegistry();
  const yaml = chainYaml(products >= 250 ? 250 : 100);
  try {
    await writeFile(join(dir, 'capture.mjs'), CAPTURE);
    const captured = ((globalThis as { __chainRowsCapture?: unknown[] }).__chainRowsCapture = []);
    const [loaded] = parsePipelines(yaml, registry, { file: join(dir, 'chain.yml') });
    await runPipeline(loaded!, {
      registry,
      connection: {
        baseUrl: sandbox.url,
        apiKey: sandbox.credentials.apiKey,
        apiSecret: sandbox.credentials.apiSecret,
      },
    });
    delete (globalThis as { __chainRowsCapture?: unknown[] }).__chainRowsCapture;
    const plan = loaded!.plan;
    const ctx = testContext({ baseDir: dir, fields: { recordSchema: plan.recordSchema } });
    const checked = registry.check('sink', { type: 'parquet', path: 'x.parquet' });
    if (!checked.ok) throw new Error('parquet options');
    const options = checked.options as ParquetFormatOptions;
    const format = new ParquetFormat({
      options,
      ctx,
      stage: 'parquet',
      schema: plan.recordSchema,
      excludedColumns: new Set(),
    });
    return {
      records: captured as Array<Record<string, unknown>>,
      columns: format.schema.parquetColumns(),
      shape(records) {
        const rows: ShapedRow[] = [];
        for (const record of records) void format.accept(record, 0, (_r, row) => void rows.push(row));
        return rows;
      },
    };
  } finally {
    await sandbox.close();
  }
}
