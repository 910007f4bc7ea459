// A record's table key: the value at the `key:` option's dotted path, a string, number or bigint;
// and the records of other ids one key replaced.
import { deserialize } from 'node:v8';
import { DataError } from '../../errors.js';
import type { RunEvents } from '../../events.js';
import { isPlainObject } from '../../values.js';
import type { Key } from './sorted-records.js';

/**
 * The fields of a `key:` option, each split at dots: `id` is one field, `region,id` two (a
 * composite key: a fan-out over regions, where product ids are per region).
 */
export function keyPaths(key: string): string[][] {
  return key.split(',').map((field) => field.trim().split('.'));
}

/**
 * The key of `record`: the value at the one path, or for several paths one string of their
 * values (JSON of the list, so `be`,`1` and `be,1` never meet), or undefined when a value is not a key.
 */
export function keyOf(record: Record<string, unknown>, paths: readonly (readonly string[])[]): unknown {
  if (paths.length === 1) return valueAt(record, paths[0]!);
  const values = paths.map((steps) => valueAt(record, steps));
  if (!values.every(isKey)) return undefined;
  return JSON.stringify(values.map((v) => (typeof v === 'bigint' ? v.toString() : v)));
}

function valueAt(record: Record<string, unknown>, steps: readonly string[]): unknown {
  let value: unknown = record;
  for (const step of steps) value = isPlainObject(value) ? value[step] : undefined;
  return value;
}

export function isKey(value: unknown): value is Key {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint';
}

/** The error of a record without a usable key; `which` names the record (`record #3`). */
export function keyError(which: string, keyPath: string, got: unknown): DataError {
  return new DataError(
    `table: ${which} has no usable key at "${keyPath}" (got ${got === undefined ? 'nothing' : JSON.stringify(got)}); every record needs a string or number key`,
    { code: 'table.key' },
  );
}

/** Counts the records another record of the same key replaced in the sort. */
export interface SharedKeys {
  /** The sort's callback (absent when keyed by `id`, where a key is one product). */
  onReplaced?: (earlier: Uint8Array, later: Uint8Array) => void;
  count(): number;
}

/**
 * Keyed by anything but `id`, two records of one key may be two products: one GTIN-14 is on
 * several products in the live catalog (pack-level GTIN-14s, duplicate listings). The snapshot
 * keeps the last, so each record of another id it replaced is counted and the first warned
 * about (`table.shared_key`): keyed by `id`, the default, every product keeps its row.
 */
export function sharedKeyCheck(keyPath: string, where: string, events: RunEvents): SharedKeys {
  let count = 0;
  if (keyPath === 'id') return { count: () => count };
  const onReplaced = (earlier: Uint8Array, later: Uint8Array) => {
    const [key, a] = deserialize(earlier) as [Key, Record<string, unknown>];
    const b = (deserialize(later) as [Key, Record<string, unknown>])[1];
    if (a.id === undefined || b.id === undefined || a.id === b.id) return;
    if (count++ > 0) return;
    events.emit('warning', {
      code: 'table.shared_key',
      message: `table ${where}: records ${JSON.stringify(a.id)} and ${JSON.stringify(b.id)} share the key ${keyPath} = ${JSON.stringify(key)}; the snapshot keeps only ${JSON.stringify(b.id)}. A code can belong to several products: key the table by id (the default) to keep every product. Further ones are counted in _table.json (sharedKeys)`,
    });
  };
  return { onReplaced, count: () => count };
}
