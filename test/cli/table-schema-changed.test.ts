// Issue 37 item 10 for tables: a hive table's `_table.json` keeps each version's columns, so a run
// whose columns differ from the current version's (a field promoted with columns:) says so in its
// summary, as the s3 sink does from its manifest (schema-changed.test.ts).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { jsonLines, runCli, sandboxEnv, workspace } from './cli-process.js';

const pipeline = (sinkOptions: string) => `name: brands-table
source: { type: brands.query, sorting: { id: ASC } }
sinks:
  - { type: table, path: out/brands${sinkOptions} }
`;

describe('a table run says when its columns changed since the current version', { timeout: 120_000 }, () => {
  let sandbox: TestSandbox;
  let ws: Awaited<ReturnType<typeof workspace>>;
  beforeAll(async () => {
    [sandbox, ws] = await Promise.all([startTestSandbox({ products: 50 }), workspace()]);
  });
  afterAll(async () => {
    await Promise.all([sandbox?.close(), ws?.remove()]);
  });

  async function summary(sinkOptions: string) {
    const file = join(ws.dir, 'brands-table.yml');
    await writeFile(file, pipeline(sinkOptions));
    const r = await runCli(['run', file], { cwd: ws.dir, env: sandboxEnv(sandbox) });
    expect(r.code, r.stderr).toBe(0);
    return jsonLines(r.stderr).find((l) => l.event === 'summary')!;
  }

  it('first run nothing; a promoted column is listed; the same columns again nothing', async () => {
    expect(await summary('')).not.toHaveProperty('schemaChanges');
    const promoted = await summary(', columns: { logoUrl: string }');
    expect(promoted.schemaChanges).toEqual([
      {
        sink: 'table',
        location: expect.stringContaining('out/brands'),
        change: expect.objectContaining({ added: [{ name: 'logoUrl', type: 'VARCHAR' }], removed: [], retyped: [] }),
      },
    ]);
    expect(await summary(', columns: { logoUrl: string }')).not.toHaveProperty('schemaChanges');
  });
});
