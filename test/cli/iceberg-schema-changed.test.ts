// Issue 37 item 10 for Iceberg tables: the table sink with format: iceberg keeps the columns of the
// version current/ holds in a table property (catalog-streams.columns), so a run whose columns
// differ (a field promoted with columns:) says so in its summary, as a hive table does from
// _table.json (table-schema-changed.test.ts). A table whose property is missing or not ours
// compares nothing.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { jsonLines, runMain, sandboxEnv, workspace } from './cli-process.js';

const pipeline = (path: string, sinkOptions: string) => `name: brands-iceberg
source: { type: brands.query, sorting: { id: ASC } }
sinks:
  - { type: table, format: iceberg, path: ${path}${sinkOptions} }
`;

describe('an Iceberg table run says when its columns changed since the current snapshot', { timeout: 120_000 }, () => {
  let sandbox: TestSandbox;
  let ws: Awaited<ReturnType<typeof workspace>>;
  beforeAll(async () => {
    [sandbox, ws] = await Promise.all([startTestSandbox({ products: 20 }), workspace()]);
  });
  afterAll(async () => {
    await Promise.all([sandbox?.close(), ws?.remove()]);
  });

  async function summary(path: string, sinkOptions: string) {
    const file = join(ws.dir, 'brands-iceberg.yml');
    await writeFile(file, pipeline(path, sinkOptions));
    // In process: the summary line is the CLI's all the same.
    const r = await runMain(['run', file], sandboxEnv(sandbox));
    expect(r.code, r.stderr).toBe(0);
    return jsonLines(r.stderr).find((l) => l.event === 'summary')!;
  }

  /** The current/ table's metadata file the version hint names. */
  async function currentMetadata(path: string): Promise<{ file: string; metadata: Record<string, any> }> {
    const folder = join(ws.dir, path, 'current/metadata');
    const hint = (await readFile(join(folder, 'version-hint.text'), 'utf8')).trim();
    const file = join(folder, `v${hint}.metadata.json`);
    return { file, metadata: JSON.parse(await readFile(file, 'utf8')) };
  }

  it('first run nothing; a promoted column is listed; the same columns again nothing', async () => {
    expect(await summary('out/ice', '')).not.toHaveProperty('schemaChanges');
    const { metadata } = await currentMetadata('out/ice');
    const stored = JSON.parse(metadata.properties['catalog-streams.columns']);
    expect(stored.columns).toContainEqual({ name: 'id', type: expect.any(String) });

    const promoted = await summary('out/ice', ', columns: { logoUrl: string }');
    expect(promoted.schemaChanges).toEqual([
      {
        sink: 'table',
        location: expect.stringContaining(join('out', 'ice')),
        change: expect.objectContaining({
          from: stored.hash,
          added: [{ name: 'logoUrl', type: 'VARCHAR' }],
          removed: [],
          retyped: [],
        }),
      },
    ]);
    expect(await summary('out/ice', ', columns: { logoUrl: string }')).not.toHaveProperty('schemaChanges');
  });

  it('a table whose columns property is not ours (or absent) compares nothing, and the run succeeds', async () => {
    await summary('out/ice-foreign', '');
    const { file, metadata } = await currentMetadata('out/ice-foreign');
    metadata.properties['catalog-streams.columns'] = '{"hash": 7, "columns": "garbage"';
    await writeFile(file, JSON.stringify(metadata));
    expect(await summary('out/ice-foreign', ', columns: { logoUrl: string }')).not.toHaveProperty('schemaChanges');
    // The run wrote its own property again: the next change is said.
    const renamed = await summary('out/ice-foreign', ', columns: { logoUrl: string, cnk: string }');
    expect(renamed.schemaChanges?.[0]?.change.added).toEqual([{ name: 'cnk', type: 'VARCHAR' }]);
  });
});
