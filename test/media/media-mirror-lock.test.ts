// One mirror run per folder (issue 39, follow-up): a second run into a folder whose lock another
// live run holds stops before writing anything and names the holder; a run that lost its lock
// writes neither the state nor the table.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LockLostError } from '../../src/core/lock.js';
import { MediaMirror } from '../../src/sinks/media/media-mirror.js';
import { LocalObjectStore } from '../../src/storage/object-store.js';
import { faultFixture, runInProcess } from '../faults/support.js';

const f = faultFixture(
  'mirror-lock',
  `name: mirror
source: { type: products.query, filter: { status: active } }
sinks:
  - type: media-mirror
    path: out/media
    retries: 0
`,
  { products: 10, rateLimit: 0, assetHost: true },
);

/** A lock document as a live run of this process writes it (same host and pid: never stale by pid). */
function liveHolder(runId: string): string {
  const now = new Date().toISOString();
  return JSON.stringify({
    runId,
    pipeline: 'other-mirror',
    host: hostname(),
    pid: process.pid,
    acquiredAt: now,
    heartbeatAt: now,
    token: 'another-token',
  });
}

describe('media-mirror folder lock', () => {
  it('a second run into a locked folder fails fast naming the holder, and writes nothing', async () => {
    const out = f.ws.path('out/media');
    await mkdir(join(out, '_mirror'), { recursive: true });
    await writeFile(join(out, '_mirror/lock.json'), liveHolder('run-holding-it'));
    f.sandbox.assets!.resetStats();
    const run = await runInProcess(f.ws, f.sandbox);
    expect(run.ok).toBe(false);
    if (run.ok) return;
    expect(run.error.code).toBe('publish.locked');
    expect(run.error.message).toContain('run-holding-it');
    expect(run.error.message).toContain(join(out, '_mirror/lock.json'));
    expect(f.sandbox.assets!.requests.length).toBe(0);
    expect(existsSync(join(out, '_mirror/state.json'))).toBe(false);
    expect(existsSync(join(out, 'media.parquet'))).toBe(false);
    // The holder's lock is left as it was.
    expect(JSON.parse(await readFile(join(out, '_mirror/lock.json'), 'utf8')).runId).toBe('run-holding-it');
  });

  it('takes the lock and releases it after a good run', async () => {
    const out = f.ws.path('out/media');
    const run = await runInProcess(f.ws, f.sandbox);
    expect(run.ok, run.ok ? '' : run.error.message).toBe(true);
    expect(existsSync(join(out, '_mirror/state.json'))).toBe(true);
    expect(existsSync(join(out, '_mirror/lock.json'))).toBe(false);
  });

  it('a mirror whose fence fails writes neither the state nor the table', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mirror-fence-'));
    try {
      const store = new LocalObjectStore(dir);
      const mirror = new MediaMirror(store, {
        concurrency: 1,
        requestsPerSecond: 100,
        timeoutMs: 1000,
        maxBytes: 1024,
        userAgent: 'test',
        retries: 0,
        retryDelayMs: 1,
        revalidate: 'auto',
        removeAfterMs: 0,
        full: true,
        runId: 'fenced',
        fence: { assertHeld: () => Promise.reject(new LockLostError('lost the lock (test)')) },
        signal: new AbortController().signal,
        warn: () => {},
      });
      await expect(mirror.run(new Map())).rejects.toThrow(/lost the lock/);
      expect(existsSync(join(dir, '_mirror/state.json'))).toBe(false);
      expect(existsSync(join(dir, 'media.parquet'))).toBe(false);
      await store.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
