// Where a table lives: its root store (a local folder or an S3 prefix) and the layout over it
// (hive folders and `_table.json`, or two Iceberg tables with a store each).
import path from 'node:path';
import type { StageContext } from '../../core/stage.js';
import { LocalObjectStore, type ObjectStore } from '../../storage/object-store.js';
import { S3ObjectStore } from '../../storage/s3-object-store.js';
import { createS3Client, parseS3Location } from '../../storage/s3-client.js';
import { HiveLayout } from './hive-layout.js';
import { IcebergLayout } from './iceberg-layout.js';
import { icebergCatalog } from './iceberg-catalog-option.js';
import type { ResolvedConfig } from './table-options.js';
import type { TableLayout } from './table-layout.js';
import { TableStore } from './table-store.js';

/** The table's root store and its layout. */
export function openTableLocation(
  config: ResolvedConfig,
  ctx: StageContext,
): { store: TableStore; layout: TableLayout } {
  const s3 = parseS3Location(config.path);
  // The table's root, and for an Iceberg layout each table's root (Iceberg locations are per table).
  const storeAt = (sub: string): ObjectStore =>
    s3
      ? new S3ObjectStore({
          bucket: s3.bucket,
          prefix: `${s3.prefix}${sub ? `${sub}/` : ''}`,
          client: () => createS3Client(config, process.env, 's3-table'),
          feature: 's3-table',
        })
      : // `current/` and `changes/` are the table's folders: a link there is refused like one below them.
        new LocalObjectStore(path.resolve(ctx.baseDir, config.path, sub), {
          checkedFrom: path.resolve(ctx.baseDir, config.path),
        });
  const store = new TableStore(storeAt(''), { shard: config.shard });
  const layout =
    config.format === 'iceberg'
      ? new IcebergLayout(store, {
          key: config.key,
          keepSnapshots: config.keepSnapshots,
          keepSnapshotsDays: config.keepSnapshotsDays,
          shard: config.shard,
          retried: (message) => ctx.events.emit('info', { code: 'iceberg.commit_retried', message }),
          catalog: icebergCatalog(config, ctx),
          // Their writes (data files aside: staged by the sink) are journaled in the table's root.
          stores: {
            current: store.journaled(storeAt('current'), 'current/'),
            changes: store.journaled(storeAt('changes'), 'changes/'),
          },
        })
      : new HiveLayout(store, config.key);
  return { store, layout };
}
