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

/** Another writer puts an object at `raced` just before the mirror writes its body there (one PUT, or staged). */
class RacedStore extends S3ObjectStore {
  constructor(
    prefix: string,
    readonly raced: string,
  ) {
    super({ bucket: s3.bucket, prefix, client: () => createS3Client({}), feature: 's3-sink' });
  }

  async #race(rel: string): Promise<void> {
    if (rel === this.raced) await this.write(rel, 'put by someone else', { contentType: 'text/plain' });
  }

  override async putIfAbsent(rel: string, body: string | Uint8Array, options?: ObjectWriteOptions): Promise<boolean> {
    await this.#race(rel);
    return super.putIfAbsent(rel, body, options);
  }

  override async stage(rel: string, options?: ObjectWriteOptions): Promise<StagedObject> {
    await this.#race(rel);
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

  it('a staged upload (a body too big to hold) with ifAbsent does not replace an object that exists', async () => {
    const store = new S3ObjectStore({
      bucket: s3.bucket,
      prefix: 'staged-s3/',
      client: () => createS3Client({}),
      feature: 's3-sink',
    });
    await store.write('files/a.pdf', 'theirs', { contentType: 'text/plain' });
    const staged = await store.stage('files/a.pdf', { contentType: 'application/pdf', ifAbsent: true });
    await staged.file.write(Buffer.from('ours'));
    await expect(staged.finish()).rejects.toMatchObject({ cause: { $metadata: { httpStatusCode: 412 } } });
    const fresh = await store.stage('files/b.pdf', { contentType: 'application/pdf', ifAbsent: true });
    await fresh.file.write(Buffer.from('ours'));
    await fresh.finish();
    await store.close();
    expect(await objectText('staged-s3/files/a.pdf')).toBe('theirs');
    expect(await objectText('staged-s3/files/b.pdf')).toBe('ours');
  });
});
