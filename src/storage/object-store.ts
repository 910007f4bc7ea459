// One interface for where outputs, tables, states and locks live: a local folder or an S3 prefix.
// Everything above (sinks, the table, the state store, the locks) is written once against it, so a
// rule of the publication protocol (ARCHITECTURE.md) holds the same on both. The contract tests
// (test/storage/object-store.test.ts) run the same cases against both implementations.
//
// Names are relative to the store's root, with `/`. A name that would resolve outside the root
// (`../x`, an absolute path, an empty segment) is refused before any I/O: a manifest or a record
// that names something elsewhere can never make the toolkit read, write or delete it. Locally,
// no symbolic link under the root is followed either (storage/no-symlink.ts): every folder between
// the root and a name is checked with lstat before the operation, a file is read with O_NOFOLLOW,
// and a listing never descends into a link. The root itself may be a link (a lake moved onto a
// bigger disk). The check runs per operation: a folder swapped for a link mid-run is caught at the
// next operation. A staged file's folder is checked in full once, then by its identity (one lstat
// per file, storage/checked-folders.ts): a store writing thousands of files into one folder (the
// media mirror) would otherwise spend more on the check than on the write it guards.
import { readdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { StorageError } from '../errors.js';
import { AtomicFile } from './atomic-file.js';
import type { S3ObjectUpload } from './s3-object-upload.js';
import { openRegularFileStream, READ_LIMITS, readBoundedRegularFile } from './bounded-read.js';
import { createFileExclusive, isStaleTemp, parseTempName, writeFileAtomic } from './local-file.js';
import { assertNoSymlinks } from './no-symlink.js';
import { CheckedFolders } from './checked-folders.js';
import { makeFolder } from './make-folder.js';
import { storageStep } from './step-hook.js';

export interface StoredObject {
  /** Relative to the store's root, with `/`. */
  readonly rel: string;
  readonly size: number;
}

export interface ObjectWriteOptions {
  /** S3 Content-Type (ignored locally). */
  contentType?: string;
  /** S3 user metadata, `x-amz-meta-*` (ignored locally). */
  metadata?: Record<string, string>;
  /**
   * `stage` on S3: the upload completes only if no object has the key (`If-None-Match: *` on the
   * PUT or the completing request; 412 when one has). Ignored locally. A server that ignores the
   * header (s3rver) overwrites: the caller checked the name beforehand, so only an object put
   * there meanwhile is at stake.
   */
  ifAbsent?: boolean;
}

/**
 * Data written under a temporary identity, then made visible (stage then commit). Locally a
 * hidden temp file beside the final name, renamed by `commit`; on S3 a multipart upload streamed
 * as the bytes come (s3-object-upload.ts), completed under its final key by `finish` (the key is
 * not yet listed by any manifest, so readers do not see it) and left as is by `commit`.
 */
export interface StagedObject {
  readonly rel: string;
  /** Where readers find it once committed. */
  readonly location: string;
  /** Receives the bytes (a ByteDestination by shape). */
  readonly file: AtomicFile | S3ObjectUpload;
  /** The data is complete and durable; not yet visible under its final name locally. */
  finish(): Promise<void>;
  /** Visible under its final name. */
  commit(): Promise<void>;
  /** Removes every trace of it, committed or not. */
  discard(): Promise<void>;
}

export interface ReadTextOptions {
  /** The most bytes the object may have (READ_LIMITS.text when absent). */
  maxBytes?: number;
}

export interface ObjectStore {
  readonly kind: 'file' | 'object';
  /** A path or `s3://bucket/key`, for messages and outputs. */
  location(rel: string): string;
  /**
   * The object as text, or undefined when there is none. Bounded: more than `maxBytes`
   * (READ_LIMITS.text by default) fails with `storage.too_large`; locally, anything but a regular
   * file fails with `storage.not_regular_file` (storage/bounded-read.ts).
   */
  readText(rel: string, options?: ReadTextOptions): Promise<string | undefined>;
  /** The object's bytes; locally, anything but a regular file fails with `storage.not_regular_file`. */
  readStream(rel: string): Promise<AsyncIterable<Buffer>>;
  /** Replaces the object atomically: a reader sees the old or the new content, never a part. */
  write(rel: string, body: string | Uint8Array, options?: ObjectWriteOptions): Promise<void>;
  /** Creates the object only if none exists: false when one does (locks). */
  putIfAbsent(rel: string, body: string | Uint8Array, options?: ObjectWriteOptions): Promise<boolean>;
  /**
   * Every object whose name starts with `prefix` (recursively; `maxDepth`: names of at most that
   * many segments, so a walk never wanders through a big unrelated tree); locally hidden temp
   * files included, and `size` 0.
   */
  list(prefix: string, maxDepth?: number): AsyncIterable<StoredObject>;
  /** Removes the object; one that is already gone is fine. */
  remove(rel: string): Promise<void>;
  /** `options`: on S3 the uploaded object's Content-Type and user metadata (ignored locally). */
  stage(rel: string, options?: ObjectWriteOptions): Promise<StagedObject>;
  /**
   * Removes temp files under `prefix` that killed writers left (their writer a dead process of
   * this host, or untouched for a day) and whose final name `accept` claims; returns their
   * locations. Only local stores have them: an S3 upload that never completed is invisible.
   */
  removeAbandoned(prefix: string, accept: (finalRel: string) => boolean, maxDepth?: number): Promise<string[]>;
  /** Releases what the store holds (the S3 client); it opens again on use. */
  close(): Promise<void>;
}

/** `rel` split into checked segments, or a StorageError naming it. */
export function checkedSegments(rel: string, root: string, allowRoot = false): string[] {
  if (rel === '' && allowRoot) return [];
  const segments = rel.split('/');
  if (rel === '' || segments.some((s) => s === '' || s === '.' || s === '..' || s.includes('\\')) || rel.includes('\0'))
    throw new StorageError(
      'use',
      JSON.stringify(rel),
      `it is not a name under ${root} (names are relative, with "/", and never leave their root); nothing was read, written or removed`,
      { code: 'storage.outside_root' },
    );
  return segments;
}

export interface LocalStoreOptions {
  /**
   * A folder above `root` from which the folders down to the root are checked for links too: the
   * table's folder for its Iceberg `current/` store, the pipeline's folder for a state file. This
   * folder itself may be a link; a `root` outside it is checked from the root alone.
   */
  checkedFrom?: string;
}

export class LocalObjectStore implements ObjectStore {
  readonly kind = 'file' as const;
  readonly root: string;
  /** Where the no-symlink check starts, and the segments from there to the root. */
  readonly #checkFrom: string;
  readonly #lead: string[];
  /** The folders `stage` checked and made (a file per folder then costs one lstat). */
  readonly #folders = new CheckedFolders();

  constructor(root: string, options: LocalStoreOptions = {}) {
    this.root = path.resolve(root);
    const from = path.resolve(options.checkedFrom ?? this.root);
    const lead = path.relative(from, this.root);
    const inside = !lead.startsWith('..') && !path.isAbsolute(lead);
    this.#checkFrom = inside ? from : this.root;
    this.#lead = inside && lead !== '' ? lead.split(path.sep) : [];
  }

  /**
   * Fails with `storage.symlink` when a folder between the root (or `checkedFrom`) and `rel` is a
   * symbolic link, or `rel` itself unless `parentsOnly`; names that do not exist yet are fine.
   */
  async assertNoLinks(rel: string, parentsOnly = false): Promise<void> {
    const segments = checkedSegments(rel, this.root, true);
    await assertNoSymlinks(
      this.#checkFrom,
      [...this.#lead, ...(parentsOnly ? segments.slice(0, -1) : segments)].join('/'),
    );
  }

  /** `location('')` is the root itself. */
  location(rel: string): string {
    return path.join(this.root, ...checkedSegments(rel, this.root, true));
  }

  async readText(rel: string, options: ReadTextOptions = {}): Promise<string | undefined> {
    const file = this.location(rel);
    await this.assertNoLinks(rel);
    try {
      return (await readBoundedRegularFile(file, options.maxBytes ?? READ_LIMITS.text)).toString('utf8');
    } catch (err) {
      if (err instanceof StorageError) throw err;
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new StorageError('read', file, (err as Error).message, { code: 'storage.read_failed', cause: err });
    }
  }

  async readStream(rel: string): Promise<AsyncIterable<Buffer>> {
    const file = this.location(rel);
    await this.assertNoLinks(rel);
    try {
      return await openRegularFileStream(file);
    } catch (err) {
      if (err instanceof StorageError) throw err;
      throw new StorageError('read', file, (err as Error).message, { code: 'storage.read_failed', cause: err });
    }
  }

  // A link at the name itself is replaced by the rename (or makes link(2) fail), never followed:
  // only the folders above it need checking.
  async write(rel: string, body: string | Uint8Array): Promise<void> {
    checkedSegments(rel, this.root);
    const location = this.location(rel);
    // A folder that cannot be made is left to writeFileAtomic, whose error names the file and the cause.
    const folderReady = await this.#readyFolder(rel, location).then(
      () => true,
      (err: unknown) => {
        if (err instanceof StorageError) throw err;
        return false;
      },
    );
    return writeFileAtomic(location, body, { folderReady });
  }

  async putIfAbsent(rel: string, body: string | Uint8Array): Promise<boolean> {
    checkedSegments(rel, this.root);
    await this.assertNoLinks(rel, true);
    return createFileExclusive(this.location(rel), body);
  }

  async *list(prefix: string, maxDepth = Infinity): AsyncIterable<StoredObject> {
    const slash = prefix.lastIndexOf('/');
    const folder = slash < 0 ? '' : prefix.slice(0, slash);
    const start = folder === '' ? this.root : this.location(folder);
    // The start folder and those above it: a link there fails; below it, #walk skips links.
    await this.assertNoLinks(folder);
    const depth = folder === '' ? 1 : folder.split('/').length + 1;
    yield* this.#walk(start, folder === '' ? '' : `${folder}/`, prefix, depth, maxDepth);
  }

  async *#walk(
    dir: string,
    relDir: string,
    prefix: string,
    depth: number,
    maxDepth: number,
  ): AsyncIterable<StoredObject> {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    // A Dirent is typed by lstat (readdir's d_type, or lstat where the file system gives none): a
    // link is neither a folder nor a file here, so the walk never descends into one nor lists it.
    for (const entry of entries) {
      const rel = `${relDir}${entry.name}`;
      if (entry.isDirectory()) {
        // Descends only into folders that can hold names starting with the prefix.
        if (depth < maxDepth && (`${rel}/`.startsWith(prefix) || prefix.startsWith(`${rel}/`)))
          yield* this.#walk(path.join(dir, entry.name), `${rel}/`, prefix, depth + 1, maxDepth);
      } else if (entry.isFile() && rel.startsWith(prefix)) {
        yield { rel, size: 0 };
      }
    }
  }

  async remove(rel: string): Promise<void> {
    checkedSegments(rel, this.root);
    const file = this.location(rel);
    // unlink removes a link at the name itself, never its target; a linked folder above it is refused.
    await this.assertNoLinks(rel, true);
    storageStep('remove', file);
    await unlink(file).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT')
        throw new StorageError('remove', file, err.message, { code: 'storage.remove_failed', cause: err });
    });
  }

  async stage(rel: string): Promise<StagedObject> {
    checkedSegments(rel, this.root);
    const location = this.location(rel);
    const file = await AtomicFile.create(location, {
      check: () => this.assertNoLinks(rel, true),
      folder: () => this.#readyFolder(rel, location),
    });
    return {
      rel,
      location,
      file,
      finish: () => file.close(),
      commit: () => file.commit(),
      discard: async () => {
        await file.abort();
        await file.revoke();
      },
    };
  }

  /** The folder of `rel` made and free of links (checked in full once, then by identity). */
  #readyFolder(rel: string, location: string): Promise<void> {
    // Checked before, made, and checked again once made: the identity kept is that of a folder no link leads to.
    const full = async () => {
      await this.assertNoLinks(rel, true);
      await makeFolder(path.dirname(location));
      await this.assertNoLinks(rel, true);
    };
    return this.#folders.ready(path.dirname(location), full);
  }

  async removeAbandoned(prefix: string, accept: (finalRel: string) => boolean, maxDepth = Infinity): Promise<string[]> {
    const removed: string[] = [];
    for await (const { rel } of this.list(prefix, maxDepth)) {
      const slash = rel.lastIndexOf('/') + 1;
      const temp = parseTempName(rel.slice(slash));
      if (!temp || !accept(`${rel.slice(0, slash)}${temp.finalName}`)) continue;
      const file = this.location(rel);
      await this.assertNoLinks(rel, true);
      if (
        (await isStaleTemp(file)) &&
        (await unlink(file).then(
          () => true,
          () => false,
        ))
      )
        removed.push(file);
    }
    return removed;
  }

  async close(): Promise<void> {}
}
