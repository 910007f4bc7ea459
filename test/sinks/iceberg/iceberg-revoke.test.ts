// A sibling sink failing after the Iceberg commit (issue 35 item 8), `keepSnapshots: 1`: the tee
// revokes the table, which must find the snapshots it rolls back to (the run's commit keeps the
// one each table had before it, whatever keepSnapshots says), so both tables name the earlier run
// again and the tee lists no output. The sibling fails at the moment the table reports its new
// version (`table.version`, emitted once the commit landed): no timing guess. Read back by icebird.
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import type { HeldPublication, SinkStream } from '../../../src/core/stage.js';
import type { OutputRecord } from '../../../src/events.js';
import { TeeSink } from '../../../src/pipeline/tee.js';
import { tableSink } from '../../../src/sinks/index.js';
import { icebergReferences, readIceberg } from '../../helpers/iceberg-reader.js';
import { testContext, type TestContext } from '../../helpers/stage-context.js';
import { tempDir } from '../records.js';

const columns = { id: 'string', price: 'int64' } as const;

/** A held sink whose publication fails once the table committed its new version. */
class FailsAfterTableCommit extends Writable implements SinkStream {
  readonly outputs: OutputRecord[] = [];
  #ready!: () => void;
  readonly #readyPromise = new Promise<void>((resolve) => (this.#ready = resolve));
  #publish!: () => void;
  readonly #published = new Promise<void>((resolve) => (this.#publish = resolve));
  readonly #tableCommitted: Promise<void>;

  /** `beforeFailing`: what the test does at that moment (takes the name a rollback would write). */
  constructor(ctx: TestContext, beforeFailing: () => Promise<void> = async () => {}) {
    super({ objectMode: true });
    this.#tableCommitted = new Promise<void>((resolve) =>
      ctx.events.on('info', (info: { code: string }) => {
        if (info.code === 'table.version') resolve();
      }),
    ).then(beforeFailing);
  }
  holdPublication(): HeldPublication {
    return { ready: this.#readyPromise, publish: () => this.#publish(), settle: async () => {} };
  }
  override _write(_record: unknown, _enc: BufferEncoding, callback: () => void): void {
    callback();
  }
  override _final(callback: (err?: Error | null) => void): void {
    this.#ready();
    void this.#published
      .then(() => this.#tableCommitted)
      .then(() => callback(new Error('the sibling could not publish its manifest')));
  }
}

function context(dir: string, runId: string): TestContext {
  const ctx = testContext({ baseDir: dir });
  ctx.run.id = runId;
  ctx.run.startedAt = new Date('2026-11-02T02:00:00Z');
  return ctx;
}

const sink = (ctx: TestContext) =>
  tableSink({ path: 'table', key: 'id', format: 'iceberg', keepSnapshots: 1, columns }, ctx) as SinkStream;

describe('format: iceberg, keepSnapshots: 1, a sibling failing after the commit', () => {
  it('both tables are rolled back to the earlier run, and the tee lists no output', async () => {
    const dir = await tempDir('iceberg-revoke-');
    const root = join(dir, 'table');
    const first = [1, 2, 3].map((i) => ({ id: `P${i}`, price: i }));
    await pipeline(Readable.from(first), sink(context(dir, 'run-1')));
    const before = await readIceberg(join(root, 'changes'));
    expect(before.map((r) => `${String(r._run_id)} ${String(r.id)}`).sort()).toEqual([
      'run-1 P1',
      'run-1 P2',
      'run-1 P3',
    ]);

    const ctx = context(dir, 'run-2');
    const warnings: string[] = [];
    ctx.events.on('warning', (w: { code: string; message: string }) => warnings.push(`${w.code}: ${w.message}`));
    const tee = new TeeSink([sink(ctx), new FailsAfterTableCommit(ctx)], ctx.events);
    const second = [{ id: 'P1', price: 10 }, ...first.slice(1), { id: 'P4', price: 4 }];
    await expect(pipeline(Readable.from(second), tee)).rejects.toThrow(/could not publish its manifest/);

    for (const table of ['current', 'changes'])
      expect((await icebergReferences(join(root, table))).currentRunId, `${table}; ${warnings.join('; ')}`).toBe(
        'run-1',
      );
    expect(warnings).toEqual([]);
    expect(tee.outputs).toEqual([]);
    expect(tee.published).toBe(false);
    expect((await readIceberg(join(root, 'current'))).map((r) => `${String(r.id)} ${Number(r.price)}`)).toEqual([
      'P1 1',
      'P2 2',
      'P3 3',
    ]);
    expect(await readIceberg(join(root, 'changes'))).toEqual(before);
  });

  it('a rollback the catalog refuses: the table stays published, said, and its outputs stay listed', async () => {
    const dir = await tempDir('iceberg-revoke-refused-');
    const root = join(dir, 'table');
    await pipeline(Readable.from([{ id: 'P1', price: 1 }]), sink(context(dir, 'run-1')));

    const ctx = context(dir, 'run-2');
    const warnings: Array<{ code: string; message: string }> = [];
    ctx.events.on('warning', (w: { code: string; message: string }) => warnings.push(w));
    // Another writer takes the metadata file name the rollback of current/ would write (v3).
    const takeName = () => writeFile(join(root, 'current/metadata/v3.metadata.json'), '{}');
    const tee = new TeeSink([sink(ctx), new FailsAfterTableCommit(ctx, takeName)], ctx.events);
    await expect(pipeline(Readable.from([{ id: 'P1', price: 2 }]), tee)).rejects.toThrow(/could not publish/);

    expect(warnings.map((w) => w.code)).toEqual(['sink.cleanup', 'sink.revoke']);
    expect(warnings[1]!.message).toMatch(/run run-2 stays published/);
    expect((await icebergReferences(join(root, 'current'))).currentRunId).toBe('run-2');
    expect(tee.published).toBe(false);
    const listed = tee.outputs.map((o) => o.location);
    expect(listed.some((l) => l.endsWith('current/metadata/v2.metadata.json'))).toBe(true);
    // Its data files stay: the version readers see is whole.
    for (const o of tee.outputs.filter((o) => o.location.endsWith('.parquet')))
      expect(existsSync(o.location), o.location).toBe(true);
    expect((await readIceberg(join(root, 'current'))).map((r) => Number(r.price))).toEqual([2]);
  });
});
