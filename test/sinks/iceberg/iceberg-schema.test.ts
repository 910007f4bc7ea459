// Iceberg field ids from the lake's columns (stable by name path, never reused) and the files
// they go into (a column without ids writes the same bytes as before ids existed); applyUpdates
// as a REST catalog would apply a commit.
import { describe, expect, it } from 'vitest';
import type { ByteDestination } from '../../../src/sinks/shared/byte-destination.js';
import { ParquetEncoder, parquetSchema } from '../../../src/sinks/parquet/parquet-encoder.js';
import { type TypedColumn } from '../../../src/sinks/shared/column-types.js';
import { applyUpdates, IcebergCommitConflictError } from '../../../src/sinks/table/iceberg/iceberg-catalog.js';
import { icebergSchema } from '../../../src/sinks/table/iceberg/iceberg-schema.js';
import type { TableMetadata, TableUpdate } from '../../../src/sinks/table/iceberg/iceberg-types.js';

const COLUMNS: TypedColumn[] = [
  { name: 'id', type: { kind: 'string' } },
  { name: 'price', type: { kind: 'decimal' } },
  { name: 'updatedAt', type: { kind: 'timestamp-micros' } },
  {
    name: 'variants',
    type: {
      kind: 'list',
      element: {
        kind: 'struct',
        fields: [
          { name: 'sku', type: { kind: 'string' } },
          { name: 'stock', type: { kind: 'int32' } },
        ],
      },
    },
  },
  { name: 'raw', type: { kind: 'json' } },
];

describe('icebergSchema', () => {
  it('maps every type and numbers a new table depth first from 1', () => {
    const { schema, columns, lastColumnId, changed } = icebergSchema(COLUMNS, undefined, 0);
    expect(changed).toBe(true);
    expect(lastColumnId).toBe(8);
    expect(schema).toEqual({
      type: 'struct',
      'schema-id': 0,
      fields: [
        { id: 1, name: 'id', required: false, type: 'string' },
        { id: 2, name: 'price', required: false, type: 'decimal(18,2)' },
        { id: 3, name: 'updatedAt', required: false, type: 'timestamptz' },
        {
          id: 4,
          name: 'variants',
          required: false,
          type: {
            type: 'list',
            'element-id': 5,
            'element-required': false,
            element: {
              type: 'struct',
              fields: [
                { id: 6, name: 'sku', required: false, type: 'string' },
                { id: 7, name: 'stock', required: false, type: 'int' },
              ],
            },
          },
        },
        { id: 8, name: 'raw', required: false, type: 'string' },
      ],
    });
    expect(columns[3]).toEqual({
      name: 'variants',
      fieldId: 4,
      type: {
        kind: 'list',
        elementId: 5,
        element: {
          kind: 'struct',
          fields: [
            { name: 'sku', type: { kind: 'string' }, fieldId: 6 },
            { name: 'stock', type: { kind: 'int32' }, fieldId: 7 },
          ],
        },
      },
    });
  });

  it('keeps ids by name path, retires dropped ones, and gives a type Iceberg cannot promote a new id', () => {
    const first = icebergSchema(COLUMNS, undefined, 0);
    expect(icebergSchema(COLUMNS, first.schema, first.lastColumnId)).toMatchObject({
      changed: false,
      lastColumnId: 8,
      schema: { 'schema-id': 0 },
    });
    const next: TypedColumn[] = [
      { name: 'raw', type: { kind: 'json' } },
      { name: 'id', type: { kind: 'int64' } },
      {
        name: 'variants',
        type: {
          kind: 'list',
          element: {
            kind: 'struct',
            fields: [
              { name: 'stock', type: { kind: 'int64' } },
              { name: 'color', type: { kind: 'string' } },
            ],
          },
        },
      },
    ];
    const second = icebergSchema(next, first.schema, first.lastColumnId, 3);
    expect(second.changed).toBe(true);
    expect(second.schema['schema-id']).toBe(3);
    const ids = JSON.stringify(second.schema.fields);
    // raw keeps 8; id (string -> long) is new: 9; variants keeps 4 and its element 5; stock
    // (int -> long, a promotion) keeps 7; color is new: 10; price, updatedAt, sku are gone.
    expect(second.schema.fields.map((f) => [f.name, f.id])).toEqual([
      ['raw', 8],
      ['id', 9],
      ['variants', 4],
    ]);
    expect(ids).toContain('"element-id":5');
    expect(ids).toContain('{"id":7,"name":"stock","required":false,"type":"long"}');
    expect(ids).toContain('{"id":10,"name":"color","required":false,"type":"string"}');
    expect(second.lastColumnId).toBe(10);
  });

  it('takes a schema sent back in another key order, with docs, as unchanged', () => {
    const first = icebergSchema(COLUMNS, undefined, 0);
    const reordered = JSON.parse(
      JSON.stringify(first.schema, (_key, value: unknown) =>
        value && typeof value === 'object' && !Array.isArray(value)
          ? Object.fromEntries(
              Object.entries(value)
                .reverse()
                .concat('id' in value ? [['doc', 'x']] : []),
            )
          : value,
      ),
    ) as typeof first.schema;
    expect(icebergSchema(COLUMNS, reordered, 8)).toMatchObject({ changed: false, schema: reordered });
  });

  it('refuses millisecond timestamps', () => {
    expect(() => icebergSchema([{ name: 'at', type: { kind: 'timestamp-millis' } }], undefined, 0)).toThrow(
      expect.objectContaining({ code: 'config.iceberg_timestamps', message: expect.stringContaining('micros') }),
    );
  });
});

describe('Parquet field ids', () => {
  it('go to the column elements and the list element, not the repeated group', () => {
    const { columns } = icebergSchema(COLUMNS, undefined, 0);
    expect(parquetSchema(columns).map((e) => [e.name, e.field_id])).toEqual([
      ['root', undefined],
      ['id', 1],
      ['price', 2],
      ['updatedAt', 3],
      ['variants', 4],
      ['list', undefined],
      ['element', 5],
      ['sku', 6],
      ['stock', 7],
      ['raw', 8],
    ]);
  });

  // Files without ids: test/sinks/parquet-encoder.test.ts holds them byte for byte against hyparquet-writer, unchanged.
  it('change nothing but the field_id of the schema elements', async () => {
    const encode = async (columns: TypedColumn[]): Promise<Buffer> => {
      const chunks: Uint8Array[] = [];
      const dest: ByteDestination = {
        kind: 'file',
        location: 'memory',
        bytes: 0,
        write: (chunk) => void chunks.push(chunk),
        commit: async () => {},
        abort: async () => {},
      };
      const encoder = new ParquetEncoder(dest, columns, {
        compression: 'none',
        rowGroupRows: 10,
        rowGroupBytes: 1 << 20,
      });
      await encoder.write({ values: ['a', 123n, 1n, [{ sku: 's', stock: 1 }], '{}'], bytes: 10 });
      await encoder.end();
      return Buffer.concat(chunks);
    };
    const plain = await encode(COLUMNS);
    const withIds = await encode(icebergSchema(COLUMNS, undefined, 0).columns);
    expect(withIds.equals(plain)).toBe(false);
    expect(JSON.parse(JSON.stringify(parquetSchema(COLUMNS)))).toEqual(
      JSON.parse(
        JSON.stringify(parquetSchema(icebergSchema(COLUMNS, undefined, 0).columns).map(({ field_id: _, ...e }) => e)),
      ),
    );
    // field_id is a thrift i32 in the footer's schema: one field header and a varint per id.
    expect(withIds.length - plain.length).toBeGreaterThanOrEqual(8 * 2);
    expect(withIds.length - plain.length).toBeLessThanOrEqual(8 * 3);
  });
});

describe('applyUpdates', () => {
  const now = new Date('2026-11-01T00:00:00Z');
  const create: TableUpdate[] = [
    { action: 'assign-uuid', uuid: '9c12d441-03fe-4693-9a96-a0705ddf69c1' },
    { action: 'upgrade-format-version', 'format-version': 2 },
    { action: 'add-schema', schema: icebergSchema(COLUMNS, undefined, 0).schema, 'last-column-id': 8 },
    { action: 'set-current-schema', 'schema-id': -1 },
    { action: 'add-spec', spec: { 'spec-id': 0, fields: [] } },
    { action: 'set-default-spec', 'spec-id': -1 },
    { action: 'add-sort-order', 'sort-order': { 'order-id': 0, fields: [] } },
    { action: 'set-default-sort-order', 'sort-order-id': -1 },
    { action: 'set-location', location: 'file:///lake/current' },
  ];
  const snapshot = (id: number, seq: number) =>
    ({
      action: 'add-snapshot',
      snapshot: {
        'snapshot-id': id,
        'sequence-number': seq,
        'timestamp-ms': now.getTime(),
        'manifest-list': `file:///lake/current/metadata/snap-${id}-r.avro`,
        summary: { operation: 'append' },
      },
    }) satisfies TableUpdate;
  const main = (id: number): TableUpdate => ({
    action: 'set-snapshot-ref',
    'ref-name': 'main',
    type: 'branch',
    'snapshot-id': id,
  });

  it('creates a table, moves main, expires snapshots and trims the snapshot log', () => {
    const t1: TableMetadata = applyUpdates(
      undefined,
      [{ type: 'assert-create' }],
      [...create, snapshot(11, 1), main(11)],
      now,
    );
    expect(t1).toMatchObject({
      'current-snapshot-id': 11,
      'last-sequence-number': 1,
      'last-column-id': 8,
      'last-partition-id': 999,
    });
    const t2 = applyUpdates(
      t1,
      [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 11 }],
      [snapshot(12, 2), main(12), { action: 'remove-snapshots', 'snapshot-ids': [11] }],
      now,
    );
    expect(t2.snapshots!.map((s) => s['snapshot-id'])).toEqual([12]);
    expect(t2['snapshot-log']).toEqual([{ 'timestamp-ms': now.getTime(), 'snapshot-id': 12 }]);
    expect(t2.refs).toEqual({ main: { type: 'branch', 'snapshot-id': 12 } });
    // The input is not changed.
    expect(t1.snapshots!.map((s) => s['snapshot-id'])).toEqual([11]);
  });

  it('fails each requirement that does not hold with a conflict', () => {
    const t1 = applyUpdates(undefined, [{ type: 'assert-create' }], [...create, snapshot(11, 1), main(11)], now);
    for (const req of [
      { type: 'assert-create' },
      { type: 'assert-table-uuid', uuid: '00000000-0000-4000-8000-000000000000' },
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null },
      { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': 7 },
      { type: 'assert-current-schema-id', 'current-schema-id': 1 },
      { type: 'assert-last-assigned-partition-id', 'last-assigned-partition-id': 1000 },
      { type: 'assert-default-spec-id', 'default-spec-id': 1 },
      { type: 'assert-default-sort-order-id', 'default-sort-order-id': 1 },
    ] as const)
      expect(() => applyUpdates(t1, [req], [], now), req.type).toThrow(IcebergCommitConflictError);
    // A snapshot built on an older version (its sequence number is taken) is a conflict too.
    expect(() => applyUpdates(t1, [], [snapshot(13, 1)], now)).toThrow(IcebergCommitConflictError);
    expect(() => applyUpdates(t1, [], [main(99)], now)).toThrow(
      expect.objectContaining({ code: 'iceberg.update_invalid' }),
    );
  });
});
