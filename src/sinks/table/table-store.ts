// Where a table lives (a local folder or an S3 prefix, storage/object-store.ts) and the names it
// writes there (ARCHITECTURE.md, "The table sink"). Data files are staged (a hidden temp file
// renamed at publication; on S3 uploaded under their final keys, which carry the run id, before
// `_table.json` lists them); `_table.json` is one atomic write, the commit point.
import type { LockBackend } from '../../core/lock.js';
import { storeLockBackend } from '../../core/lock.js';
import type { ObjectStore, StagedObject } from '../../storage/object-store.js';

/**
 * The names a table writes, relative to its root: a part number as written (five digits, more
 * without a leading zero) and a run id, in the table's own folders. Clean-up removes nothing else,
 * whatever `_table.json` lists or the folder holds: a path escaping the root, or another file under
 * it (a README under `changes/`), is never the table's.
 */
const TABLE_FILE =
  /^(?:(?:snapshot|changes)\/dt=\d{4}-\d{2}-\d{2}\/part-(?:\d{5}|[1-9]\d{5,})-[A-Za-z0-9][\w.-]*\.parquet|_table\/state-[A-Za-z0-9][\w.-]*\.v8\.gz)$/;

/** Whether `rel` (relative to the table's root, with `/`) is a name the table writes. */
export function isTableFile(rel: string): boolean {
  return TABLE_FILE.test(rel);
}

export type StagedFile = StagedObject;

/** The folders that hold the table's files. */
const TABLE_FOLDERS = ['snapshot/', 'changes/', '_table/'];

export class TableStore {
  readonly objects: ObjectStore;

  constructor(objects: ObjectStore) {
    this.objects = objects;
  }

  get kind(): 'file' | 'object' {
    return this.objects.kind;
  }

  location(rel: string): string {
    return this.objects.location(rel);
  }

  /** Where the table's publication lock lives (one run publishes into a table at a time). */
  lockBackend(): LockBackend {
    // The names earlier versions used: a hidden file locally, `_publish.lock` on S3.
    return storeLockBackend(this.objects, this.objects.kind === 'file' ? '.publish.lock' : '_publish.lock');
  }

  /**
   * Removes what killed runs left, under the table's lock, the same way locally and on S3: the
   * table's own names (`isTableFile`) that `_table.json` does not list (`listed`: relative paths),
   * i.e. parts renamed or uploaded before a kill, and versions a published `_table.json` no longer
   * lists; and locally the temp files of its names whose writer is gone.
   */
  async removeLeftovers(listed: ReadonlySet<string>): Promise<string[]> {
    const removed = await this.objects.removeAbandoned('', (rel) => rel === '_table.json' || isTableFile(rel), 3);
    for (const folder of TABLE_FOLDERS) {
      for await (const { rel } of this.objects.list(folder, 3)) {
        if (listed.has(rel) || !isTableFile(rel)) continue;
        await this.objects.remove(rel);
        removed.push(this.objects.location(rel));
      }
    }
    return removed;
  }
}
