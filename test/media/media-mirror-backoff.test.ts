// Backoff between runs for failed files (issue 39, follow-up): a file that failed is asked for
// again only after 1 h, doubled per failed run in a row; `retryFailed` asks at once. The clock is
// played by moving the failure time in the state file back.
import { readFile, writeFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { retryDelayAfter } from '../../src/sinks/media/media-mirror.js';
import { faultFixture, runInProcess } from '../faults/support.js';
import { mirrorPipeline } from './mirror-pipeline.js';

const f = faultFixture('mirror-backoff', mirrorPipeline(), { products: 10, rateLimit: 0, assetHost: true });
const HOUR = 3_600_000;

function summaryOf(run: { events: Array<{ name: string; payload: any }> }): any {
  return run.events.find((e) => e.name === 'info' && e.payload.code === 'media.summary')?.payload;
}

describe('media-mirror backoff for failed files', () => {
  it('doubles from 1 h per failed run, at most 7 days', () => {
    expect(retryDelayAfter(1, HOUR)).toBe(HOUR);
    expect(retryDelayAfter(2, HOUR)).toBe(2 * HOUR);
    expect(retryDelayAfter(4, HOUR)).toBe(8 * HOUR);
    expect(retryDelayAfter(20, HOUR)).toBe(7 * 24 * HOUR);
    expect(retryDelayAfter(1000, HOUR)).toBe(7 * 24 * HOUR);
  });

  it('asks for a failed file again only after its backoff, or at once with retryFailed', async () => {
    const assets = f.sandbox.assets!;
    const statePath = f.ws.path('out/media/_mirror/state.json');
    const state = async () => JSON.parse(await readFile(statePath, 'utf8')) as { files: Record<string, any> };
    const run = async (options = '') => {
      await writeFile(f.ws.path(f.ws.file), mirrorPipeline(options));
      assets.resetStats();
      const r = await runInProcess(f.ws, f.sandbox);
      expect(r.ok, r.ok ? '' : r.error.message).toBe(true);
      return r;
    };
    const askedForGone = () => assets.requests.filter((r) => r.path === gone).length;
    /** Moves the failure of the gone file `ms` into the past. */
    const age = async (ms: number) => {
      const doc = await state();
      const entry = Object.values(doc.files).find((e) => new URL(e.url).pathname === gone)!;
      entry.lastFailedAt -= ms;
      await writeFile(statePath, JSON.stringify(doc));
    };

    // The first run stores everything; then one file is removed from the host (404).
    await run();
    const stored = Object.values((await state()).files);
    const gone = new URL(stored[0]!.url).pathname;
    assets.remove(gone);
    await run('    revalidate: always\n');
    expect(askedForGone()).toBe(1);
    let entry = Object.values((await state()).files).find((e) => new URL(e.url).pathname === gone)!;
    expect(entry).toMatchObject({ lastStatus: 'failed', failures: 1, stored: true });
    expect(typeof entry.lastFailedAt).toBe('number');

    // At once: the failed file waits, the others are revalidated as usual.
    const waiting = await run('    revalidate: always\n');
    expect(askedForGone()).toBe(0);
    expect(assets.requests.length).toBe(stored.length - 1);
    expect(summaryOf(waiting)).toMatchObject({ waiting: 1, failed: 0 });
    expect(waiting.events.some((e) => e.name === 'warning' && e.payload.code === 'media.retry_later')).toBe(true);

    // An hour later it is asked for again (and fails a second time: the next wait is 2 h).
    await age(HOUR + 60_000);
    await run('    revalidate: always\n');
    expect(askedForGone()).toBe(1);
    entry = Object.values((await state()).files).find((e) => new URL(e.url).pathname === gone)!;
    expect(entry.failures).toBe(2);
    await age(HOUR + 60_000);
    await run('    revalidate: always\n');
    expect(askedForGone()).toBe(0);

    // retryFailed asks at once, whatever the backoff.
    await run('    revalidate: always\n    retryFailed: true\n');
    expect(askedForGone()).toBe(1);
  });
});
