// A mirror killed mid-download (SIGKILL of the CLI while bodies are half sent, temp files open)
// followed by a good run leaves no temp file and no partial file, and fetches only what the killed
// run had not stored. Needs the built CLI (npx tsc -p tsconfig.json).
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { faultFixture, leftBehind, listFiles, runInProcess, sandboxEnv, startCli } from '../faults/support.js';

const f = faultFixture(
  'mirror',
  `name: mirror
source: { type: products.query, filter: { status: active } }
sinks:
  - { type: media-mirror, path: out/media, retries: 0, requestsPerSecond: 1000 }
`,
  { products: 40, rateLimit: 0, assetHost: true },
);

const sha = async (file: string) =>
  createHash('sha256')
    .update(await readFile(file))
    .digest('hex');

async function until(check: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('media-mirror killed mid-download', () => {
  it('leaves no temp and no partial file after the next good run', async () => {
    const assets = f.sandbox.assets!;
    const out = f.ws.path('out/media');
    try {
      // Half of each body, then a pause: the kill finds downloads in the middle of their bodies.
      assets.faults = { slowBodyMs: 5000 };
      const cli = startCli(['run', f.ws.file], { cwd: f.ws.dir, env: sandboxEnv(f.sandbox) });
      // Killed while bodies are half sent. A small body is held in memory until its last byte
      // (downloaded-body.ts), so the kill may leave no temp at all; a large one leaves its staged
      // temp. Either way the next run must leave neither a temp nor a partial file.
      await until(async () => assets.bodiesInProgress > 0, 30_000);
      cli.child.kill('SIGKILL');
      const killed = await cli.done;
      expect(killed.signal).toBe('SIGKILL');
      const left = await leftBehind(out);
      const completeBefore = left.final.filter((p) => p.startsWith('files/'));

      assets.faults = {};
      assets.resetStats();
      const good = await runInProcess(f.ws, f.sandbox);
      expect(good.ok, good.ok ? '' : good.error.message).toBe(true);
      const after = await leftBehind(out);
      expect(after.temp).toEqual([]);
      const stored = (await listFiles(join(out, 'files'))).map((p) => `/${p}`);
      expect(stored.length).toBeGreaterThan(completeBefore.length);
      for (const p of stored) expect(await sha(join(out, 'files', p)), p).toBe(assets.sha256(p));
      // What the killed run had stored whole is not fetched again.
      for (const p of completeBefore) expect(assets.downloads(`/${p.slice('files/'.length)}`)).toBe(0);
      expect(assets.downloads()).toBe(stored.length - completeBefore.length);
    } finally {
      assets.faults = {};
    }
  });
});
