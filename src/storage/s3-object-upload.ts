// One S3 object written as a stream (the only way the toolkit uploads a data file: the s3 sink's
// parts and the table's staged files, S3ObjectStore.stage; ARCHITECTURE.md, "Storage"): a PassThrough body feeding
// @aws-sdk/lib-storage's Upload (multipart once the body passes one part size,
// a single PUT below that). Nothing is staged on disk; memory holds at most
// (queueSize + 1) parts plus the body's buffer.
//
// Backpressure: Upload pulls the body only when one of its `queueSize` uploaders
// is free, so when the queue is full the body fills up and write() waits.
//
// Failure: abort() destroys the body, which makes every uploader fail, so Upload
// sends AbortMultipartUpload itself; we then send it again for the known UploadId
// (a no-op if it is gone), so no multipart upload is left open. A part that fails
// (after the SDK's retries) aborts the whole object at once, even while other
// uploaders could go on.
import { PassThrough } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import type { Upload } from '@aws-sdk/lib-storage';
import { s3Error, s3Location, s3Status } from './s3-client.js';
import { storageStep } from './step-hook.js';
import { waitForDrain } from './stream-write.js';
import type { S3Sdk } from './s3-sdk.js';

const BODY_HIGH_WATER_MARK = 1024 * 1024;

export interface S3ObjectUploadOptions {
  bucket: string;
  key: string;
  /** Content-Type of the object; S3's default (binary/octet-stream) when absent. */
  contentType?: string | undefined;
  partSize: number;
  queueSize: number;
  /** User metadata (`x-amz-meta-*`) of the object. */
  metadata?: Record<string, string>;
  /** Completes only if no object has the key (`If-None-Match: *` on the PUT or CompleteMultipartUpload). */
  ifAbsent?: boolean;
}

/** A ByteDestination (sinks/shared/byte-destination.ts) by shape: storage imports nothing of the sinks. */
export class S3ObjectUpload {
  readonly kind = 'object' as const;
  readonly location: string;
  readonly key: string;
  bytes = 0;
  etag: string | undefined;
  readonly #sdk: S3Sdk;
  /** The sink's client (opened again after the sink closed, for a revoke). */
  readonly #client: () => S3Client;
  readonly #bucket: string;
  readonly #body = new PassThrough({ highWaterMark: BODY_HIGH_WATER_MARK });
  readonly #upload: Upload;
  readonly #done: Promise<{ ETag?: string | undefined }>;
  /** Rejects when a request of this upload failed for good; never resolves. */
  readonly #failed: Promise<never>;
  #failure: Error | undefined;
  #state: 'open' | 'committing' | 'committed' | 'aborted' = 'open';

  /** `sdk`: the loaded AWS SDK (loadS3Sdk()). */
  constructor(sdk: S3Sdk, client: () => S3Client, options: S3ObjectUploadOptions) {
    this.#sdk = sdk;
    this.#client = client;
    this.#bucket = options.bucket;
    this.key = options.key;
    this.location = s3Location(options.bucket, options.key);
    let fail!: (err: Error) => void;
    this.#failed = new Promise<never>((_, reject) => {
      fail = reject;
    });
    this.#failed.catch(() => {});
    const onRequestError = (err: Error) => {
      if (this.#failure || this.#state !== 'open') return;
      this.#failure = s3Error(err, 'upload', this.location);
      fail(this.#failure);
      // Stop feeding the other uploaders: the object is lost anyway.
      this.#body.destroy(this.#failure);
    };
    this.#upload = new sdk.Upload({
      client: watchErrors(client(), onRequestError),
      params: {
        Bucket: options.bucket,
        Key: options.key,
        Body: this.#body,
        ...(options.contentType ? { ContentType: options.contentType } : {}),
        ...(options.metadata ? { Metadata: options.metadata } : {}),
        // lib-storage passes its params to PutObject and CompleteMultipartUpload, which both take it.
        ...(options.ifAbsent ? { IfNoneMatch: '*' } : {}),
      },
      partSize: options.partSize,
      queueSize: options.queueSize,
      leavePartsOnError: false,
    });
    this.#done = this.#upload.done();
    this.#done.catch((err: Error) => {
      if (!this.#failure) {
        this.#failure = s3Error(err, 'upload', this.location);
        fail(this.#failure);
      }
    });
  }

  write(chunk: Uint8Array): void | Promise<void> {
    if (this.#failure) throw this.#failure;
    this.bytes += chunk.byteLength;
    if (this.#body.write(chunk)) return;
    return Promise.race([waitForDrain(this.#body), this.#failed]);
  }

  async commit(): Promise<void> {
    if (this.#state === 'committed') return;
    if (this.#failure) throw this.#failure;
    this.#state = 'committing';
    storageStep('complete-upload', this.location);
    this.#body.end();
    try {
      const result = await this.#done;
      this.etag = result.ETag;
      this.#state = 'committed';
    } catch (err) {
      throw this.#failure ?? s3Error(err, 'upload', this.location);
    }
  }

  async abort(reason?: unknown): Promise<void> {
    if (this.#state === 'aborted' || this.#state === 'committed') return;
    this.#state = 'aborted';
    if (!this.#body.destroyed) this.#body.destroy(reason instanceof Error ? reason : new Error('upload aborted'));
    const completed = await this.#done.then(
      () => true,
      () => false,
    );
    if (completed) {
      // A small object went up in one PUT before the abort: remove it.
      await this.#delete();
      return;
    }
    const uploadId = this.#upload.uploadId;
    if (uploadId) {
      try {
        await this.#client().send(
          new this.#sdk.s3.AbortMultipartUploadCommand({ Bucket: this.#bucket, Key: this.key, UploadId: uploadId }),
        );
      } catch (err) {
        if (s3Status(err) !== 404) throw s3Error(err, 'abort the multipart upload of', this.location);
      }
    }
  }

  /** Deletes the object this run completed (a later part of the run failed). */
  async revoke(): Promise<void> {
    if (this.#state !== 'committed') return this.abort();
    await this.#delete();
  }

  async #delete(): Promise<void> {
    storageStep('delete', this.location);
    try {
      await this.#client().send(new this.#sdk.s3.DeleteObjectCommand({ Bucket: this.#bucket, Key: this.key }));
    } catch (err) {
      throw s3Error(err, 'delete', this.location);
    }
  }
}

/** A view of the client whose send() reports failed requests (after the SDK's own retries). */
function watchErrors(client: S3Client, onError: (err: Error) => void): S3Client {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property !== 'send') return Reflect.get(target, property, receiver);
      return (...args: Parameters<S3Client['send']>) =>
        (target.send as (...a: unknown[]) => Promise<unknown>)(...args).catch((err: Error) => {
          onError(err);
          throw err;
        });
    },
  });
}
