// `run --dry-run` of a pipeline with a media-mirror sink (issue 39, follow-up): from the mirror's
// state, the known files not stored yet (to fetch, or waiting for a backoff) and the stored ones a
// run asks again; what it cannot know (files no earlier run saw) said plainly; nothing written.
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { faultFixture, runCli, runInProcess, sandboxEnv } from '../faults/support.js';
import { mirrorPipeline } from './mirror-pipeline.js';

const f = faultFixture('mirror-dry', mirrorPipeline(), { products: 10, rateLimit: 0, assetHost: true });

async function dryRun(options = ''): Promise<string> {
  await writeFile(f.ws.path(f.ws.file), mirrorPipeline(options));
  const dry = await runCli(['run', f.ws.file, '--dry-run', '--log-format', 'pretty'], {
    cwd: f.ws.dir,
    env: sandboxEnv(f.sandbox),
  });
  expect(dry.code, dry.stderr).toBe(0);
  return dry.stdout;
}

describe('media-mirror in the dry run', () => {
  it('says plainly that nothing is known without a state, and writes nothing', async () => {
    const text = await dryRun();
    expect(text).toContain('media-mirror out/media: 0 files known from earlier runs');
    expect(text).toContain('not counted: no state yet: every file the records name is new');
    expect(text).toContain('a dry run reads no records');
    expect(existsSync(f.ws.path('out/media'))).toBe(false);
    expect(f.sandbox.assets!.requests.length).toBe(0);
  });

  it('estimates from the state: files not stored yet, waiting ones, and revalidated ones', async () => {
    const assets = f.sandbox.assets!;
    // A first run stores every file but one the host lost (404): that one has no good copy.
    const first = await runInProcess(f.ws, f.sandbox);
    expect(first.ok, first.ok ? '' : first.error.message).toBe(true);
    const statePath = f.ws.path('out/media/_mirror/state.json');
    const doc = JSON.parse(await readFile(statePath, 'utf8')) as { files: Record<string, any> };
    const entries = Object.values(doc.files);
    const [lostRel, lost] = Object.entries(doc.files).find(([, e]) => e.type !== 'brochure')!;
    assets.remove(new URL(lost.url).pathname);
    // Played as never stored: neither the file nor a good copy in the state.
    await rm(f.ws.path(`out/media/${lostRel}`));
    Object.assign(lost, { stored: false, bytes: null, sha256: null });
    await writeFile(statePath, JSON.stringify(doc));
    const failing = await runInProcess(f.ws, f.sandbox);
    expect(failing.ok, failing.ok ? '' : failing.error.message).toBe(true);
    const state = await readFile(statePath, 'utf8');
    const n = entries.length;
    assets.resetStats();

    // Within its backoff: nothing to fetch, the lost file waits.
    let text = await dryRun();
    expect(text).toContain(`media-mirror out/media: ${n} files known from earlier runs`);
    expect(text).toContain(`${n - 1} stored`);
    expect(text).toContain('to fetch: 0 known files not stored yet');
    expect(text).toContain('1 failed file waiting for a backoff');
    expect(text).toContain('asked again: 0 stored files by conditional GET');
    expect(text).toContain('not counted: files the records name that no earlier run saw');

    // Forced: the lost file is to fetch, its bytes estimated from the stored files of its type.
    text = await dryRun('    retryFailed: true\n    revalidate: always\n');
    const sameType = entries.filter((e) => e.type === lost.type && e !== lost);
    const mean = Math.round(sameType.reduce((sum, e) => sum + e.bytes, 0) / sameType.length);
    expect(text).toContain(`to fetch: 1 known file not stored yet, ~${mean.toLocaleString('en-US')} bytes`);
    expect(text).toContain(`asked again: ${n - 1} stored files by conditional GET`);

    // The dry run wrote nothing and asked the asset host nothing.
    expect(await readFile(statePath, 'utf8')).toBe(state);
    expect(existsSync(f.ws.path('out/media/_mirror/lock.json'))).toBe(false);
    expect(assets.requests.length).toBe(0);
  });
});
