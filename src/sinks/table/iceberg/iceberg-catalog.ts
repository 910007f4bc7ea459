// What the table sink asks of an Iceberg catalog, whichever keeps the tables: the files-only
// catalog (files-catalog.ts: metadata JSON beside the data, a version hint naming the current
// file) or a REST catalog (rest-catalog.ts). A commit is expressed the REST way, requirements and
// updates, so the sink builds it once (iceberg-commit.ts) and either catalog applies it: the REST
// server applies it itself, the files-only catalog with `applyUpdates` below.
import { SinkError } from '../../../errors.js';
import type { Fence } from '../../../core/lock.js';
import type { ObjectStore } from '../../../storage/object-store.js';
import type {
  IcebergSchema,
  PartitionSpec,
  SnapshotLogEntry,
  SortOrder,
  TableMetadata,
  TableRequirement,
  TableUpdate,
} from './iceberg-types.js';

export interface IcebergTableRef {
  /** 'current' or 'changes': the folder under the sink's path, and the default table name. */
  readonly name: 'current' | 'changes';
  /** The table root as a URI, as written in metadata and manifests: file:///abs/path/current or s3://bucket/prefix/current */
  readonly location: string;
  /** The ObjectStore rooted at the table root (relative names: metadata/v3.metadata.json, data/...). */
  readonly store: ObjectStore;
}

export interface LoadedTable {
  metadata: TableMetadata;
  metadataLocation: string;
  version?: number;
}

export interface TableCommit {
  table: IcebergTableRef;
  /** The metadata the updates apply to; undefined for a table this commit creates (requirements: assert-create). */
  base: LoadedTable | undefined;
  requirements: TableRequirement[];
  updates: TableUpdate[];
}

export interface IcebergCatalog {
  readonly kind: 'files' | 'rest';
  load(table: IcebergTableRef): Promise<LoadedTable | undefined>;
  /** All or nothing where the catalog can (REST: POST /v1/{prefix}/transactions/commit); the
   * files-only catalog commits them in the order given, each atomically. `fence`: asserted
   * right before each write that makes a commit visible (core/lock.ts, Fencing). */
  commit(changes: readonly TableCommit[], fence?: Fence): Promise<LoadedTable[]>;
  close(): Promise<void>;
}

/**
 * Another writer changed the table since it was loaded (a requirement no longer holds, or the
 * next metadata version exists already): nothing of this commit is visible; running again
 * reloads the table and retries.
 */
export class IcebergCommitConflictError extends SinkError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { ...options, code: 'iceberg.commit_conflict' });
  }
}

/** Table metadata or a manifest that cannot be read, or an update that cannot apply. */
export class IcebergMetadataError extends SinkError {
  constructor(
    message: string,
    options: ErrorOptions & {
      code?: 'iceberg.metadata_invalid' | 'iceberg.update_invalid' | 'iceberg.avro_limit';
    } = {},
  ) {
    super(message, { ...options, code: options.code ?? 'iceberg.metadata_invalid' });
  }
}

function checkRequirement(base: TableMetadata | undefined, req: TableRequirement): string | undefined {
  if (req.type === 'assert-create') return base ? 'the table exists already' : undefined;
  if (!base) return `the table does not exist (${req.type})`;
  switch (req.type) {
    case 'assert-table-uuid':
      return base['table-uuid'] === req.uuid ? undefined : `its uuid is ${base['table-uuid']}, not ${req.uuid}`;
    case 'assert-ref-snapshot-id': {
      const actual = base.refs?.[req.ref]?.['snapshot-id'] ?? null;
      return actual === req['snapshot-id']
        ? undefined
        : `ref ${req.ref} is at snapshot ${String(actual)}, not ${String(req['snapshot-id'])}`;
    }
    case 'assert-last-assigned-field-id':
      return base['last-column-id'] === req['last-assigned-field-id']
        ? undefined
        : `its last column id is ${base['last-column-id']}, not ${req['last-assigned-field-id']}`;
    case 'assert-current-schema-id':
      return base['current-schema-id'] === req['current-schema-id']
        ? undefined
        : `its current schema is ${base['current-schema-id']}, not ${req['current-schema-id']}`;
    case 'assert-last-assigned-partition-id':
      return base['last-partition-id'] === req['last-assigned-partition-id']
        ? undefined
        : `its last partition id is ${base['last-partition-id']}, not ${req['last-assigned-partition-id']}`;
    case 'assert-default-spec-id':
      return base['default-spec-id'] === req['default-spec-id']
        ? undefined
        : `its default spec is ${base['default-spec-id']}, not ${req['default-spec-id']}`;
    case 'assert-default-sort-order-id':
      return base['default-sort-order-id'] === req['default-sort-order-id']
        ? undefined
        : `its default sort order is ${base['default-sort-order-id']}, not ${req['default-sort-order-id']}`;
  }
}

function maxFieldId(fields: IcebergSchema['fields']): number {
  let max = 0;
  for (const f of fields) {
    max = Math.max(max, f.id);
    let type = f.type;
    // Lists of lists nest their element ids the same way: walk down to the innermost.
    while (typeof type === 'object' && type.type === 'list') {
      max = Math.max(max, type['element-id']);
      type = type.element;
    }
    if (typeof type === 'object' && type.type === 'struct') max = Math.max(max, maxFieldId(type.fields));
  }
  return max;
}

/** A table with nothing yet: what a create commit's updates build on. */
function emptyMetadata(now: Date): TableMetadata {
  return {
    'format-version': 2,
    'table-uuid': '',
    location: '',
    'last-sequence-number': 0,
    'last-updated-ms': now.getTime(),
    'last-column-id': 0,
    schemas: [],
    'current-schema-id': -1,
    'partition-specs': [],
    'default-spec-id': -1,
    // The spec starts partition field ids at 1000, so 999 is "none assigned yet".
    'last-partition-id': 999,
    'sort-orders': [],
    'default-sort-order-id': -1,
    properties: {},
    snapshots: [],
    'snapshot-log': [],
    refs: {},
  };
}

const invalid = (message: string): IcebergMetadataError =>
  new IcebergMetadataError(message, { code: 'iceberg.update_invalid' });

/** The metadata being built by one commit's updates, and the ids a `-1` ("the last added") means. */
interface UpdateState {
  readonly m: TableMetadata & Required<Pick<TableMetadata, 'snapshots' | 'snapshot-log' | 'refs' | 'properties'>>;
  readonly base: TableMetadata | undefined;
  readonly now: Date;
  lastSchema?: number | undefined;
  lastSpec?: number | undefined;
  lastOrder?: number | undefined;
}

type UpdateOf<A extends TableUpdate['action']> = Extract<TableUpdate, { action: A }>;

/** One function per update action, as the REST spec lists them. */
const APPLY: { [A in TableUpdate['action']]: (u: UpdateOf<A>, s: UpdateState) => void } = {
  'assign-uuid': (u, { m, base }) => {
    if (base && base['table-uuid'] !== u.uuid) throw invalid(`cannot change the table uuid to ${u.uuid}`);
    m['table-uuid'] = u.uuid;
  },
  'upgrade-format-version': (u) => {
    if (u['format-version'] !== 2) throw invalid(`format version ${u['format-version']} is not supported (2 is)`);
  },
  'add-schema': (u, s) => {
    const { m } = s;
    const existing = m.schemas.find((x) => x['schema-id'] === u.schema['schema-id']);
    if (existing && JSON.stringify(existing) !== JSON.stringify(u.schema))
      throw invalid(`schema ${u.schema['schema-id']} exists already with other fields`);
    if (!existing) m.schemas.push(structuredClone(u.schema));
    m['last-column-id'] = Math.max(m['last-column-id'], u['last-column-id'] ?? 0, maxFieldId(u.schema.fields));
    s.lastSchema = u.schema['schema-id'];
  },
  'set-current-schema': (u, { m, lastSchema }) => {
    const id = u['schema-id'] === -1 ? lastSchema : u['schema-id'];
    if (id === undefined || !m.schemas.some((x) => x['schema-id'] === id))
      throw invalid(`schema ${u['schema-id']} is not in the table`);
    m['current-schema-id'] = id;
  },
  'add-spec': (u, s) => {
    const { m } = s;
    if (!m['partition-specs'].some((x) => x['spec-id'] === u.spec['spec-id']))
      m['partition-specs'].push(structuredClone(u.spec) satisfies PartitionSpec);
    m['last-partition-id'] = Math.max(m['last-partition-id'], ...u.spec.fields.map((f) => f['field-id']));
    s.lastSpec = u.spec['spec-id'];
  },
  'set-default-spec': (u, { m, lastSpec }) => {
    const id = u['spec-id'] === -1 ? lastSpec : u['spec-id'];
    if (id === undefined || !m['partition-specs'].some((x) => x['spec-id'] === id))
      throw invalid(`partition spec ${u['spec-id']} is not in the table`);
    m['default-spec-id'] = id;
  },
  'add-sort-order': (u, s) => {
    const { m } = s;
    if (!m['sort-orders'].some((x) => x['order-id'] === u['sort-order']['order-id']))
      m['sort-orders'].push(structuredClone(u['sort-order']) satisfies SortOrder);
    s.lastOrder = u['sort-order']['order-id'];
  },
  'set-default-sort-order': (u, { m, lastOrder }) => {
    const id = u['sort-order-id'] === -1 ? lastOrder : u['sort-order-id'];
    if (id === undefined || !m['sort-orders'].some((x) => x['order-id'] === id))
      throw invalid(`sort order ${u['sort-order-id']} is not in the table`);
    m['default-sort-order-id'] = id;
  },
  'add-snapshot': (u, { m }) => {
    const s = u.snapshot;
    if (m.snapshots.some((x) => x['snapshot-id'] === s['snapshot-id']))
      throw invalid(`snapshot ${s['snapshot-id']} is in the table already`);
    // A sequence number at or below the table's means the snapshot was built on an older version.
    if (s['sequence-number'] <= m['last-sequence-number'])
      throw new IcebergCommitConflictError(
        `snapshot ${s['snapshot-id']} has sequence number ${s['sequence-number']}, the table is at ${m['last-sequence-number']} already`,
      );
    m.snapshots.push(structuredClone(s));
    m['last-sequence-number'] = s['sequence-number'];
  },
  'set-snapshot-ref': (u, { m, now }) => {
    const { action: _action, 'ref-name': name, ...ref } = u;
    if (!m.snapshots.some((x) => x['snapshot-id'] === ref['snapshot-id']))
      throw invalid(`ref ${name} names snapshot ${ref['snapshot-id']}, which is not in the table`);
    m.refs[name] = ref;
    if (name === 'main' && m['current-snapshot-id'] !== ref['snapshot-id']) {
      m['current-snapshot-id'] = ref['snapshot-id'];
      m['snapshot-log'].push({ 'timestamp-ms': now.getTime(), 'snapshot-id': ref['snapshot-id'] });
    }
  },
  'remove-snapshots': (u, { m }) => {
    const removed = new Set(u['snapshot-ids']);
    m.snapshots = m.snapshots.filter((s) => !removed.has(s['snapshot-id']));
    for (const [name, ref] of Object.entries(m.refs)) if (removed.has(ref['snapshot-id'])) delete m.refs[name];
    if (m['current-snapshot-id'] != null && removed.has(m['current-snapshot-id'])) delete m['current-snapshot-id'];
    // The spec: entries before an expired snapshot's are removed with it.
    const snapshotLog: SnapshotLogEntry[] = m['snapshot-log'];
    let cut = 0;
    snapshotLog.forEach((e, i) => {
      if (removed.has(e['snapshot-id'])) cut = i + 1;
    });
    snapshotLog.splice(0, cut);
  },
  'remove-snapshot-ref': (u, { m }) => {
    delete m.refs[u['ref-name']];
    if (u['ref-name'] === 'main') delete m['current-snapshot-id'];
  },
  'set-location': (u, { m }) => {
    m.location = u.location;
  },
  'set-properties': (u, { m }) => {
    Object.assign(m.properties, u.updates);
  },
  'remove-properties': (u, { m }) => {
    for (const key of u.removals) delete m.properties[key];
  },
};

/** What every table's metadata needs once its updates applied (a create commit must bring them). */
function checkComplete(m: TableMetadata): void {
  if (!m['table-uuid']) throw invalid('the new table has no uuid (an assign-uuid update is needed)');
  if (!m.location) throw invalid('the new table has no location (a set-location update is needed)');
  if (!m.schemas.some((s) => s['schema-id'] === m['current-schema-id']))
    throw invalid('the table has no current schema');
  if (!m['partition-specs'].some((s) => s['spec-id'] === m['default-spec-id']))
    throw invalid('the table has no default partition spec');
  if (!m['sort-orders'].some((s) => s['order-id'] === m['default-sort-order-id']))
    throw invalid('the table has no default sort order');
}

/**
 * Pure: the metadata after the updates, as a REST catalog would compute it (the files-only
 * catalog's commit). Throws IcebergCommitConflictError when a requirement fails (another writer
 * got there first) and IcebergMetadataError (iceberg.update_invalid) for an update that cannot
 * apply. `metadata-log` is left as it is: it names metadata files, which only the catalog that
 * writes them knows.
 */
export function applyUpdates(
  base: TableMetadata | undefined,
  requirements: readonly TableRequirement[],
  updates: readonly TableUpdate[],
  now: Date,
): TableMetadata {
  for (const req of requirements) {
    const failure = checkRequirement(base, req);
    if (failure !== undefined)
      throw new IcebergCommitConflictError(`the table changed since it was loaded: ${failure} (${req.type})`);
  }
  const m = structuredClone(base ?? emptyMetadata(now)) as UpdateState['m'];
  m.snapshots ??= [];
  m['snapshot-log'] ??= [];
  m.refs ??= {};
  m.properties ??= {};
  const state: UpdateState = { m, base, now };
  // An action this toolkit does not know is left alone (the REST spec has more than it writes).
  for (const u of updates) (APPLY[u.action] as ((u: TableUpdate, s: UpdateState) => void) | undefined)?.(u, state);
  checkComplete(m);
  m['last-updated-ms'] = now.getTime();
  return m;
}
