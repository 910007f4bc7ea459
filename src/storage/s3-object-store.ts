// An S3 prefix as an ObjectStore (object-store.ts). The client is made on first use (the AWS SDK
// loads only then) and closed by `close()`; a later call opens it again (a sink asked to revoke
// after it closed). Every error names the action and the object (s3Error).
import type { S3Client } from '@aws-sdk/client-s3';
import { StorageError } from '../errors.js';
import { limitBytes, READ_LIMITS, tooLarge } from './bounded-read.js';
import {
  checkedSegments,
  type ObjectStore,
  type ObjectWriteOptions,
  type ReadTextOptions,
  type StagedObject,
  type StoredObject,
} from './object-store.js';
import { isS3NotFound, s3Error, s3Location, s3Status } from './s3-client.js';
import { loadS3Sdk, type S3Feature, type S3Sdk } from './s3-sdk.js';
import { S3ObjectUpload } from './s3-object-upload.js';
import { storageStep } from './step-hook.js';

export interface S3StoreOptions {
  bucket: string;
  /** Ends with `/`, or is empty (the bucket's root). */
  prefix: string;
  client: () => Promise<S3Client>;
  /** Who uses the store, named when the AWS SDK is not installed. */
  feature: S3Feature;
  /** Multipart part size and parallel parts of staged (streamed) uploads. */
  partSize?: number;
  queueSize?: number;
}

export class S3ObjectStore implements ObjectStore {
  readonly kind = 'object' as const;
  readonly bucket: string;
  readonly prefix: string;
  readonly #options: S3StoreOptions;
  #client: Promise<S3Client> | undefined;

  constructor(options: S3StoreOptions) {
    this.#options = options;
    this.bucket = options.bucket;
    this.prefix = options.prefix;
  }

  /** The key of `rel`, checked to stay under the prefix. */
  key(rel: string): string {
    checkedSegments(rel, s3Location(this.bucket, this.prefix));
    return `${this.prefix}${rel}`;
  }

  /** `location('')` is the prefix itself. */
  location(rel: string): string {
    checkedSegments(rel, s3Location(this.bucket, this.prefix), true);
    return s3Location(this.bucket, `${this.prefix}${rel}`);
  }

  /** The SDK and a client (made on first use, again after `close()`). */
  async s3(): Promise<{ sdk: S3Sdk; client: S3Client }> {
    const sdk = await loadS3Sdk(this.#options.feature);
    const pending = (this.#client ??= this.#options.client());
    try {
      return { sdk, client: await pending };
    } catch (err) {
      this.#client = undefined;
      throw err;
    }
  }

  async readText(rel: string, options: ReadTextOptions = {}): Promise<string | undefined> {
    const Key = this.key(rel);
    const maxBytes = options.maxBytes ?? READ_LIMITS.text;
    const { sdk, client } = await this.s3();
    try {
      const out = await client.send(new sdk.s3.GetObjectCommand({ Bucket: this.bucket, Key }));
      // Bounded like a local file: by the size the store announces, and by what actually comes.
      if (out.ContentLength !== undefined && out.ContentLength > maxBytes) {
        (out.Body as { destroy?: () => void } | undefined)?.destroy?.();
        throw tooLarge(this.location(rel), maxBytes, out.ContentLength);
      }
      const chunks: Buffer[] = [];
      for await (const chunk of limitBytes(out.Body as AsyncIterable<Buffer>, maxBytes, this.location(rel)))
        chunks.push(Buffer.from(chunk));
      return Buffer.concat(chunks).toString('utf8');
    } catch (err) {
      if (err instanceof StorageError) throw err;
      if (isS3NotFound(err)) return undefined;
      throw s3Error(err, 'read', this.location(rel));
    }
  }

  async readStream(rel: string): Promise<AsyncIterable<Buffer>> {
    const Key = this.key(rel);
    const { sdk, client } = await this.s3();
    try {
      const out = await client.send(new sdk.s3.GetObjectCommand({ Bucket: this.bucket, Key }));
      return out.Body as AsyncIterable<Buffer>;
    } catch (err) {
      throw s3Error(err, 'read', this.location(rel));
    }
  }

  /** The object's user metadata, or undefined when it is gone. */
  async metadata(rel: string): Promise<Record<string, string> | undefined> {
    const Key = this.key(rel);
    const { sdk, client } = await this.s3();
    try {
      const head = await client.send(new sdk.s3.HeadObjectCommand({ Bucket: this.bucket, Key }));
      return head.Metadata ?? {};
    } catch (err) {
      if (isS3NotFound(err)) return undefined;
      throw s3Error(err, 'read the metadata of', this.location(rel));
    }
  }

  async write(rel: string, body: string | Uint8Array, options: ObjectWriteOptions = {}): Promise<void> {
    await this.#put(rel, body, options, false);
  }

  async putIfAbsent(rel: string, body: string | Uint8Array, options: ObjectWriteOptions = {}): Promise<boolean> {
    return this.#put(rel, body, options, true);
  }

  async #put(rel: string, body: string | Uint8Array, options: ObjectWriteOptions, ifAbsent: boolean): Promise<boolean> {
    const Key = this.key(rel);
    const { sdk, client } = await this.s3();
    storageStep(ifAbsent ? 'put-if-absent' : 'put', this.location(rel));
    try {
      await client.send(
        new sdk.s3.PutObjectCommand({
          Bucket: this.bucket,
          Key,
          Body: body,
          ContentType: options.contentType ?? 'application/json',
          ...(options.metadata ? { Metadata: options.metadata } : {}),
          ...(ifAbsent ? { IfNoneMatch: '*' } : {}),
        }),
      );
      return true;
    } catch (err) {
      // A conditional put: 412 the object exists, 409 another conditional put of it is under way.
      if (ifAbsent && (s3Status(err) === 412 || s3Status(err) === 409)) return false;
      throw s3Error(err, 'write', this.location(rel));
    }
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    const { sdk, client } = await this.s3();
    let token: string | undefined;
    do {
      let page;
      try {
        page = await client.send(
          new sdk.s3.ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: `${this.prefix}${prefix}`,
            ContinuationToken: token,
          }),
        );
      } catch (err) {
        throw s3Error(err, 'list', s3Location(this.bucket, `${this.prefix}${prefix}`));
      }
      for (const object of page.Contents ?? [])
        if (object.Key) yield { rel: object.Key.slice(this.prefix.length), size: object.Size ?? 0 };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async remove(rel: string): Promise<void> {
    const Key = this.key(rel);
    const { sdk, client } = await this.s3();
    storageStep('delete', this.location(rel));
    try {
      await client.send(new sdk.s3.DeleteObjectCommand({ Bucket: this.bucket, Key }));
    } catch (err) {
      throw s3Error(err, 'delete', this.location(rel));
    }
  }

  /**
   * Streams the object up as it is written (S3ObjectUpload, the s3 sink's parts too): `finish`
   * completes the upload under the final key, which no manifest lists yet, so readers do not see it;
   * nothing is staged on local disk, so a table on S3 needs no free space the size of its snapshot.
   */
  async stage(rel: string, options: ObjectWriteOptions = {}): Promise<StagedObject> {
    const Key = this.key(rel);
    const { sdk, client } = await this.s3();
    const upload = new S3ObjectUpload(sdk, () => client, {
      bucket: this.bucket,
      key: Key,
      contentType: options.contentType,
      ...(options.metadata ? { metadata: options.metadata } : {}),
      ...(options.ifAbsent ? { ifAbsent: true } : {}),
      partSize: this.#options.partSize ?? 16 * 1024 * 1024,
      queueSize: this.#options.queueSize ?? 2,
    });
    let completed = false;
    return {
      rel,
      location: upload.location,
      file: upload,
      finish: async () => {
        await upload.commit();
        completed = true;
      },
      commit: async () => {},
      // A completed object goes through the store, whose client opens again after close().
      discard: async () => (completed ? this.remove(rel) : upload.abort()),
    };
  }

  async removeAbandoned(): Promise<string[]> {
    return [];
  }

  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) (await client.catch(() => undefined))?.destroy();
  }
}
