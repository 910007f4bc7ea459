// The JSON shapes of Iceberg table metadata (format version 2, spec "Table Metadata Fields" and
// "Appendix C: JSON serialization") and of the REST catalog's commit request (TableUpdate,
// TableRequirement in rest-catalog-open-api.yaml). Field names are the spec's own kebab-case
// names, so a metadata file or a request body is these objects given to JSON.stringify as they
// are: the files-only catalog and the REST catalog send and store the same values.
//
// Numbers: snapshot ids are positive random integers below 2^53 (see iceberg-commit.ts), so the
// JSON a Java writer or we write reads back exact as a JS number; sizes and counts stay far below.

/** A primitive type as the spec writes it: `string`, `long`, `timestamptz`, `decimal(18,2)`... */
export type IcebergPrimitive = string;

export interface IcebergListType {
  type: 'list';
  'element-id': number;
  'element-required': boolean;
  element: IcebergType;
}

export interface IcebergStructType {
  type: 'struct';
  fields: IcebergField[];
}

export type IcebergType = IcebergPrimitive | IcebergListType | IcebergStructType;

export interface IcebergField {
  id: number;
  name: string;
  required: boolean;
  type: IcebergType;
  doc?: string;
}

export interface IcebergSchema {
  type: 'struct';
  'schema-id': number;
  'identifier-field-ids'?: number[];
  fields: IcebergField[];
}

export interface PartitionField {
  'source-id': number;
  'field-id': number;
  name: string;
  transform: string;
}

export interface PartitionSpec {
  'spec-id': number;
  fields: PartitionField[];
}

export interface SortField {
  transform: string;
  'source-id': number;
  direction: 'asc' | 'desc';
  'null-order': 'nulls-first' | 'nulls-last';
}

export interface SortOrder {
  'order-id': number;
  fields: SortField[];
}

export interface Snapshot {
  'snapshot-id': number;
  'parent-snapshot-id'?: number;
  'sequence-number': number;
  'timestamp-ms': number;
  'manifest-list': string;
  /** `operation` (append, replace, overwrite, delete) is required; the rest is free. */
  summary: { operation: 'append' | 'replace' | 'overwrite' | 'delete' } & Record<string, string>;
  'schema-id'?: number;
}

export interface SnapshotRef {
  type: 'branch' | 'tag';
  'snapshot-id': number;
  'max-ref-age-ms'?: number;
  'max-snapshot-age-ms'?: number;
  'min-snapshots-to-keep'?: number;
}

export interface SnapshotLogEntry {
  'timestamp-ms': number;
  'snapshot-id': number;
}

export interface MetadataLogEntry {
  'timestamp-ms': number;
  'metadata-file': string;
}

export interface TableMetadata {
  'format-version': 2;
  'table-uuid': string;
  location: string;
  'last-sequence-number': number;
  'last-updated-ms': number;
  'last-column-id': number;
  schemas: IcebergSchema[];
  'current-schema-id': number;
  'partition-specs': PartitionSpec[];
  'default-spec-id': number;
  'last-partition-id': number;
  properties?: Record<string, string>;
  'current-snapshot-id'?: number | null;
  snapshots?: Snapshot[];
  'snapshot-log'?: SnapshotLogEntry[];
  'metadata-log'?: MetadataLogEntry[];
  'sort-orders': SortOrder[];
  'default-sort-order-id': number;
  refs?: Record<string, SnapshotRef>;
}

/** The REST spec's TableUpdate, discriminated on `action`. */
export type TableUpdate =
  | { action: 'assign-uuid'; uuid: string }
  | { action: 'upgrade-format-version'; 'format-version': number }
  | { action: 'add-schema'; schema: IcebergSchema; 'last-column-id'?: number }
  /** -1: the schema added last in the same commit. */
  | { action: 'set-current-schema'; 'schema-id': number }
  | { action: 'add-spec'; spec: PartitionSpec }
  | { action: 'set-default-spec'; 'spec-id': number }
  | { action: 'add-sort-order'; 'sort-order': SortOrder }
  | { action: 'set-default-sort-order'; 'sort-order-id': number }
  | { action: 'add-snapshot'; snapshot: Snapshot }
  | ({ action: 'set-snapshot-ref'; 'ref-name': string } & SnapshotRef)
  | { action: 'remove-snapshots'; 'snapshot-ids': number[] }
  | { action: 'remove-snapshot-ref'; 'ref-name': string }
  | { action: 'set-location'; location: string }
  | { action: 'set-properties'; updates: Record<string, string> }
  | { action: 'remove-properties'; removals: string[] };

/** The REST spec's TableRequirement, discriminated on `type`. */
export type TableRequirement =
  | { type: 'assert-create' }
  | { type: 'assert-table-uuid'; uuid: string }
  /** `snapshot-id` null: the ref must not exist. */
  | { type: 'assert-ref-snapshot-id'; ref: string; 'snapshot-id': number | null }
  | { type: 'assert-last-assigned-field-id'; 'last-assigned-field-id': number }
  | { type: 'assert-current-schema-id'; 'current-schema-id': number }
  | { type: 'assert-last-assigned-partition-id'; 'last-assigned-partition-id': number }
  | { type: 'assert-default-spec-id'; 'default-spec-id': number }
  | { type: 'assert-default-sort-order-id'; 'default-sort-order-id': number };
