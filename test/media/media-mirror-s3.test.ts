// The mirror into an S3 prefix (issue 39, "S3 conditional put"): a name the mirror never stored is
// created with If-None-Match: *, so an object another writer put there during the run is left as
// it is (the file is reported failed, naming it) instead of overwritten. s3rver itself ignores the
// header; the test server honours it as S3 does (test/helpers/s3-server.ts).
import { createHash } from 'node:crypto';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAssetHost } from '../../src/sandbox/asset-host.js';
import { MediaMirror } from '../../src/sinks/media/media-mirror.js';
import { type MediaTarget, storedName } from '../../src/sinks/media/media-targets.js';
import type { ObjectWriteOptions, StagedObject } from '../../src/storage/object-store.js';
import { createS3Client } from '../../src/storage/s3-client.js';
import { S3ObjectStore } from '../../src/storage/s3-object-store.js';
import { s3ServerForFile } from '../helpers/s3-server.js';

const s3 = s3ServerForFile();
let host: Awaited<ReturnType<typeof startAssetHost>>;
beforeAll(async () => {
  host = await startAssetHost();
});
afterAll(() => host.close());

/** Another writer puts an object at `raced` just before the mirror stages its body there. */
class RacedStore extends S3ObjectStore {
  constructor(
    prefix: string,
    readonly raced: string,
  ) {
    super({ bucket: s3.bucket, prefix, client: () => createS3Client({}), feature: 's3-sink' });
  }

  override async stage(rel: string, options?: ObjectWriteOptions): Promise<StagedObject> {
    if (rel === this.raced) await this.write(rel, 'put by someone else', { contentType: 'text/plain' });
    return super.stage(rel, options);
  }
}

async function objectText(key: string): Promise<string> {
  const out = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
  return Buffer.from(await out.Body!.transformToByteArray()).toString('latin1');
}

describe('media-mirror into S3', () => {
  it('creates a new name only if absent: an object put there during the run stays, the others are stored', async () => {
    const paths = [1, 2, 3].map((i) => `/media/large/${i.toString(16).padStart(24, '0')}.webp`);
    const targets = new Map<string, MediaTarget>();
    for (const p of paths) {
      const url = `${host.url}${p}`;
      const { rel, contentName } = storedName(new URL(url));
      const target: MediaTarget = {
        url,
        rel,
        contentName,
        mediaId: undefined,
        type: 'photo',
        format: 'largeWebp',
        expect: 'image/webp',
        productIds: new Set(['P1']),
      };
      targets.set(rel, target);
    }
    const raced = `files${paths[1]}`;
    const store = new RacedStore('mirror-s3/', raced);
    const warnings: string[] = [];
    const summary = await new MediaMirror(store, {
      concurrency: 2,
      requestsPerSecond: 1000,
      timeoutMs: 10_000,
      maxBytes: 2 ** 20,
      userAgent: 'test',
      retries: 0,
      retryDelayMs: 1,
      revalidate: 'auto',
      removeAfterMs: 86_400_000,
      full: true,
      runId: 'run-s3',
      signal: new AbortController().signal,
      warn: (code) => warnings.push(code),
    }).run(targets);
    await store.close();
    expect(summary).toMatchObject({ files: 3, fetched: 2, failed: 1 });
    expect(summary.failures).toEqual([{ url: `${host.url}${paths[1]}`, reason: expect.stringContaining('appeared') }]);
    expect(await objectText(`mirror-s3/${raced}`)).toBe('put by someone else');
    for (const p of [paths[0]!, paths[2]!]) {
      const bytes = Buffer.from(await objectText(`mirror-s3/files${p}`), 'latin1');
      expect(createHash('sha256').update(bytes).digest('hex'), p).toBe(host.sha256(p));
    }
  });
});
