// Where a table lives: a local folder or an S3 prefix, behind one small interface so the
// table sink's merge and publication are written once.
//
// Data files (Parquet, the merge state) are staged: locally as hidden temp files beside their
// final names (renamed at publication, atomic); for S3 in a local staging folder, uploaded
// under their final keys (which carry the run id) before publication: `_table.json` does not
// list them yet, so readers that go through it never see them. `_table.json` itself is one
// atomic write (a rename, one PutObject): the commit point.
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { fileLockBackend, s3LockBackend, type LockBackend } from '../../core/lock.js';
import { AtomicFile } from '../atomic-file.js';
import { isStaleTemp, tempTarget } from '../local-dataset.js';
import { LOCAL_LOCK_NAME } from '../local-file-sink.js';
import { LOCK_NAME, lockIO } from '../destinations/s3.js';
import { s3Error, s3Location } from '../s3-object-upload.js';
import { loadS3Sdk } from '../s3-sdk.js';

/**
 * The names a table writes, relative to its root (the layout in table-sink.ts): a part number as
 * written (five digits, more without a leading zero) and a run id, in the table's own folders.
 * Clean-up removes nothing else, whatever `_table.json` lists or an S3 prefix holds: a path
 * escaping the root, or another file under it (a README under `changes/`), is never the table's.
 */
const TABLE_FILE =
  /^(?:(?:snapshot|changes)\/dt=\d{4}-\d{2}-\d{2}\/part-(?:\d{5}|[1-9]\d{5,})-[A-Za-z0-9][\w.-]*\.parquet|_table\/state-[A-Za-z0-9][\w.-]*\.v8\.gz)$/;

/** Whether `rel` (relative to the table's root, with `/`) is a name the table writes. */
export function isTableFile(rel: string): boolean {
  return TABLE_FILE.test(rel);
}

/** A staged data file: written through `file`, finished before the hold, published after it. */
export interface StagedFile {
  readonly rel: string;
  readonly file: AtomicFile;
  /** Where readers find it once published. */
  readonly location: string;
  uploaded?: boolean;
}

export interface TableStore {
  readonly kind: 'file' | 'object';
  location(rel: string): string;
  readText(rel: string): Promise<string | undefined>;
  /** Writes a small file atomically. */
  writeText(rel: string, text: string): Promise<void>;
  remove(rel: string): Promise<void>;
  readBytes(rel: string): Promise<AsyncIterable<Buffer>>;
  stage(rel: string): Promise<StagedFile>;
  /** The data is complete: closed (local), uploaded (S3). Still not listed by `_table.json`. */
  finish(staged: StagedFile): Promise<void>;
  /** Makes it visible under its final name (local rename; S3: nothing left to do). */
  publish(staged: StagedFile): Promise<void>;
  /** Removes every trace of it, published or not. */
  discard(staged: StagedFile): Promise<void>;
  /** Where the table's publication lock lives (one run publishes into a table at a time). */
  lockBackend(): Promise<LockBackend>;
  /**
   * Removes what killed runs left, called under the table's lock: local temp files of the table's
   * own names whose writer is gone; on S3 the objects of the table's own names (`isTableFile`)
   * that `_table.json` does not list (`listed`: relative paths).
   */
  removeLeftovers(listed: ReadonlySet<string>): Promise<string[]>;
  close(): Promise<void>;
}

export class LocalTableStore implements TableStore {
  readonly kind = 'file' as const;
  readonly #root: string;

  constructor(root: string) {
    this.#root = root;
  }

  location(rel: string): string {
    return path.join(this.#root, rel);
  }

  async readText(rel: string): Promise<string | undefined> {
    return readFile(this.location(rel), 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
  }

  async writeText(rel: string, text: string): Promise<void> {
    const file = await AtomicFile.create(this.location(rel));
    try {
      await file.write(Buffer.from(text));
      await file.close();
      await file.commit();
    } catch (err) {
      await file.abort();
      throw err;
    }
  }

  async remove(rel: string): Promise<void> {
    await unlink(this.location(rel)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }

  async readBytes(rel: string): Promise<AsyncIterable<Buffer>> {
    return createReadStream(this.location(rel), { highWaterMark: 256 * 1024 });
  }

  async stage(rel: string): Promise<StagedFile> {
    return { rel, file: await AtomicFile.create(this.location(rel)), location: this.location(rel) };
  }

  async finish(staged: StagedFile): Promise<void> {
    await staged.file.close();
  }

  async publish(staged: StagedFile): Promise<void> {
    await staged.file.commit();
  }

  async discard(staged: StagedFile): Promise<void> {
    await staged.file.abort();
    await staged.file.revoke?.();
  }

  async lockBackend(): Promise<LockBackend> {
    await mkdir(this.#root, { recursive: true });
    return fileLockBackend(path.join(this.#root, LOCAL_LOCK_NAME));
  }

  async removeLeftovers(_listed: ReadonlySet<string>): Promise<string[]> {
    const removed: string[] = [];
    // The table's layout: <root>/_table/, <root>/{snapshot,changes}/dt=*/.
    const folders = [path.join(this.#root, '_table')];
    for (const top of ['snapshot', 'changes']) {
      for (const d of await readdir(path.join(this.#root, top)).catch(() => []))
        folders.push(path.join(this.#root, top, d));
    }
    for (const folder of folders) {
      for (const name of await readdir(folder).catch(() => [])) {
        const file = path.join(folder, name);
        const target = tempTarget(name);
        const rel = path
          .relative(this.#root, path.join(folder, target ?? ''))
          .split(path.sep)
          .join('/');
        if (
          target !== undefined &&
          isTableFile(rel) &&
          (await isStaleTemp(file)) &&
          (await unlink(file).then(
            () => true,
            () => false,
          ))
        )
          removed.push(file);
      }
    }
    return removed;
  }

  async close(): Promise<void> {}
}

export interface S3TableOptions {
  bucket: string;
  prefix: string;
  client: () => Promise<S3Client>;
}

export class S3TableStore implements TableStore {
  readonly kind = 'object' as const;
  readonly #options: S3TableOptions;
  #staging: Promise<string> | undefined;
  #client: S3Client | undefined;

  constructor(options: S3TableOptions) {
    this.#options = options;
  }

  #key(rel: string): string {
    return `${this.#options.prefix}${rel}`;
  }

  async #s3(): Promise<{ client: S3Client; sdk: Awaited<ReturnType<typeof loadS3Sdk>> }> {
    const sdk = await loadS3Sdk();
    this.#client ??= await this.#options.client();
    return { client: this.#client, sdk };
  }

  location(rel: string): string {
    return s3Location(this.#options.bucket, this.#key(rel));
  }

  async readText(rel: string): Promise<string | undefined> {
    const { client, sdk } = await this.#s3();
    try {
      const out = await client.send(new sdk.s3.GetObjectCommand({ Bucket: this.#options.bucket, Key: this.#key(rel) }));
      return await out.Body!.transformToString('utf8');
    } catch (err) {
      if ((err as Error).name === 'NoSuchKey') return undefined;
      throw s3Error(err, 'read', this.location(rel));
    }
  }

  async writeText(rel: string, text: string): Promise<void> {
    const { client, sdk } = await this.#s3();
    const Key = this.#key(rel);
    await client
      .send(
        new sdk.s3.PutObjectCommand({ Bucket: this.#options.bucket, Key, Body: text, ContentType: 'application/json' }),
      )
      .catch((err: unknown) => {
        throw s3Error(err, 'write', this.location(rel));
      });
  }

  async remove(rel: string): Promise<void> {
    const { client, sdk } = await this.#s3();
    await client
      .send(new sdk.s3.DeleteObjectCommand({ Bucket: this.#options.bucket, Key: this.#key(rel) }))
      .catch((err: unknown) => {
        throw s3Error(err, 'delete', this.location(rel));
      });
  }

  async readBytes(rel: string): Promise<AsyncIterable<Buffer>> {
    const { client, sdk } = await this.#s3();
    try {
      const out = await client.send(new sdk.s3.GetObjectCommand({ Bucket: this.#options.bucket, Key: this.#key(rel) }));
      return out.Body as AsyncIterable<Buffer>;
    } catch (err) {
      throw s3Error(err, 'read', this.location(rel));
    }
  }

  async stage(rel: string): Promise<StagedFile> {
    const dir = await (this.#staging ??= mkdtemp(path.join(tmpdir(), 'catalog-streams-table-')));
    return { rel, file: await AtomicFile.create(path.join(dir, rel)), location: this.location(rel) };
  }

  async finish(staged: StagedFile): Promise<void> {
    await staged.file.close();
    await staged.file.commit();
    const { client, sdk } = await this.#s3();
    const upload = new sdk.Upload({
      client,
      params: {
        Bucket: this.#options.bucket,
        Key: this.#key(staged.rel),
        Body: createReadStream(staged.file.location),
      },
      partSize: 16 * 1024 * 1024,
      queueSize: 2,
    });
    await upload.done().catch((err: unknown) => {
      throw s3Error(err, 'upload', staged.location);
    });
    staged.uploaded = true;
    await unlink(staged.file.location).catch(() => {});
  }

  async publish(): Promise<void> {}

  async discard(staged: StagedFile): Promise<void> {
    await staged.file.abort();
    await unlink(staged.file.location).catch(() => {});
    if (staged.uploaded) await this.remove(staged.rel);
  }

  async lockBackend(): Promise<LockBackend> {
    const { client, sdk } = await this.#s3();
    return s3LockBackend(
      lockIO(sdk, () => this.#client ?? client),
      this.#options.bucket,
      this.#key(LOCK_NAME),
    );
  }

  async removeLeftovers(listed: ReadonlySet<string>): Promise<string[]> {
    const { client, sdk } = await this.#s3();
    const removed: string[] = [];
    for (const folder of ['snapshot/', 'changes/', '_table/']) {
      let token: string | undefined;
      do {
        const page = await client
          .send(
            new sdk.s3.ListObjectsV2Command({
              Bucket: this.#options.bucket,
              Prefix: this.#key(folder),
              ContinuationToken: token,
            }),
          )
          .catch((err: unknown) => {
            throw s3Error(err, 'list', this.location(folder));
          });
        for (const object of page.Contents ?? []) {
          const rel = object.Key!.slice(this.#options.prefix.length);
          if (listed.has(rel) || !isTableFile(rel)) continue;
          await this.remove(rel);
          removed.push(this.location(rel));
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    }
    return removed;
  }

  async close(): Promise<void> {
    if (this.#staging) await rm(await this.#staging, { recursive: true, force: true });
    this.#client?.destroy();
    this.#client = undefined;
  }
}
