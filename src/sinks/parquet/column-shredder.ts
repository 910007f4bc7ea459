// The Dremel shredding of a row group, compiled once per file from its columns.
//
// hyparquet-writer shreds a nested column by walking every row once per leaf column under it
// (its encodeNestedValues): a product row with 262 leaves was walked ~260 times, each time
// through generic code that re-reads the schema path at every level. The columns are fixed
// before the first record (the lake contract), so the walk can be compiled instead: a function
// made once per file from the columns, that visits each row once and appends every leaf's value,
// definition level and repetition level to that leaf's arrays.
// The walk is a tree of closures, one per schema node. Source generated with `new Function` was
// measured too (git history, docs/performance.md): faster once V8 has optimized it (about 10
// against 20 µs per product row) but every file's new function starts cold, and its first few
// thousand rows cost 100-200 µs each; rotated parts and the table's files start often. Closures
// reach their speed within a few rows, so they are the only walk.
//
// The levels are exactly the ones encodeNestedValues computes for the schema parquetSchema()
// writes (every node OPTIONAL, standard 3-level LISTs), so the pages and the file are the same
// bytes: a null or missing value stops at the definition level of its parent; an empty list
// is defined to the list; a STRUCT adds a level of its own; a list element after the first
// repeats at its list's repetition level. Leaves outside any list get no repetition levels
// (hyparquet-writer gives a flat column none either, and for a STRUCT's members all-zero
// levels that write the same page).
import type { SchemaElement } from 'hyparquet-writer';
import type { ParquetColumn, ParquetType } from './parquet-types.js';

/** One leaf column's schema and the values and levels of the row group being filled. */
export interface ShreddedLeaf {
  /** The top-level column this leaf belongs to. */
  readonly column: number;
  /** Schema elements from the root to the leaf (what hyparquet-writer's column encoder reads). */
  readonly schemaPath: SchemaElement[];
  readonly element: SchemaElement;
  readonly maxDefinitionLevel: number;
  readonly maxRepetitionLevel: number;
  /**
   * Values and levels of the row group, filled by index up to `count`: the arrays keep their
   * size from one row group to the next instead of growing again from empty (their regrowth,
   * 268 leaves x 3 arrays per row group, was most of what the walk cost).
   */
  readonly values: unknown[];
  readonly definitionLevels: number[];
  /** Unused for a leaf outside lists. */
  readonly repetitionLevels: number[];
  count: number;
}

/** A leaf's values and levels of the row group, as hyparquet-writer's column writer takes them. */
export function leafPageData(leaf: ShreddedLeaf): {
  values: unknown[];
  definitionLevels: number[];
  repetitionLevels: number[];
  maxDefinitionLevel: number;
} {
  const n = leaf.count;
  return {
    values: leaf.values.slice(0, n),
    definitionLevels: leaf.definitionLevels.slice(0, n),
    repetitionLevels: leaf.maxRepetitionLevel > 0 ? leaf.repetitionLevels.slice(0, n) : [],
    maxDefinitionLevel: leaf.maxDefinitionLevel,
  };
}

type Node =
  | { kind: 'leaf'; leaf: number }
  | { kind: 'struct'; members: Array<{ name: string; node: Node }>; leaves: number[] }
  | { kind: 'list'; element: Node; repetitionLevel: number; leaves: number[] };

function leavesOf(node: Node): number[] {
  return node.kind === 'leaf' ? [node.leaf] : node.leaves;
}

/** Appends one row's values of every shredded column to their leaves. */
export type ShredRow = (values: readonly unknown[]) => void;

export class ColumnShredder {
  /** Every leaf of the schema, in schema (file) order. */
  readonly leaves: ShreddedLeaf[] = [];
  readonly shred: ShredRow;
  readonly #schema: SchemaElement[];
  #at = 1;

  /**
   * `schema`: parquetSchema(columns). Columns whose index is in `skip` are left out of the
   * walk (the encoder fills their one leaf itself: JSON text kept as UTF-8 bytes).
   */
  constructor(columns: readonly ParquetColumn[], schema: SchemaElement[], skip: ReadonlySet<number> = new Set()) {
    this.#schema = schema;
    const root = schema[0]!;
    const nodes = columns.map((column, c) => this.#node(column.type, [root], 0, c));
    const shredded = nodes.map((node, c) => (skip.has(c) ? undefined : node));
    this.shred = closures(shredded, this.leaves);
  }

  /** Empties every leaf for the next row group (the arrays are reused; values dropped so they can be collected). */
  reset(): void {
    for (const leaf of this.leaves) {
      leaf.values.fill(null, 0, leaf.count);
      leaf.count = 0;
    }
  }

  #node(type: ParquetType, parents: SchemaElement[], repetition: number, column: number): Node {
    const element = this.#schema[this.#at++]!;
    const path = [...parents, element];
    if (type.kind === 'list') {
      const repeated = this.#schema[this.#at++]!;
      const node = this.#node(type.element, [...path, repeated], repetition + 1, column);
      return { kind: 'list', element: node, repetitionLevel: repetition + 1, leaves: leavesOf(node) };
    }
    if (type.kind === 'struct') {
      const members = type.fields.map((f) => ({ name: f.name, node: this.#node(f.type, path, repetition, column) }));
      return { kind: 'struct', members, leaves: members.flatMap((m) => leavesOf(m.node)) };
    }
    this.leaves.push({
      column,
      schemaPath: path,
      element,
      maxDefinitionLevel: path.filter((e, i) => i > 0 && e.repetition_type !== 'REQUIRED').length,
      maxRepetitionLevel: repetition,
      values: [],
      definitionLevels: [],
      repetitionLevels: [],
      count: 0,
    });
    return { kind: 'leaf', leaf: this.leaves.length - 1 };
  }
}

type Visit = (value: unknown, def: number, rep: number) => void;
type Nulls = (def: number, rep: number) => void;

/** The walk as a tree of closures, one per schema node, levels passed down at run time. */
function closures(nodes: ReadonlyArray<Node | undefined>, leaves: readonly ShreddedLeaf[]): ShredRow {
  const nullsOf = (node: Node): Nulls => {
    const targets = leavesOf(node).map((k) => leaves[k]!);
    return (def, rep) => {
      for (const leaf of targets) {
        const n = leaf.count++;
        leaf.values[n] = null;
        leaf.definitionLevels[n] = def;
        if (leaf.maxRepetitionLevel > 0) leaf.repetitionLevels[n] = rep;
      }
    };
  };
  const make = (node: Node): Visit => {
    if (node.kind === 'leaf') {
      const leaf = leaves[node.leaf]!;
      const { values, definitionLevels, repetitionLevels, maxRepetitionLevel } = leaf;
      if (maxRepetitionLevel === 0)
        return (x, def) => {
          const n = leaf.count++;
          values[n] = x ?? null;
          definitionLevels[n] = x == null ? def : def + 1;
        };
      return (x, def, rep) => {
        const n = leaf.count++;
        values[n] = x ?? null;
        definitionLevels[n] = x == null ? def : def + 1;
        repetitionLevels[n] = rep;
      };
    }
    const nulls = nullsOf(node);
    if (node.kind === 'struct') {
      const names = node.members.map((m) => m.name);
      const visits = node.members.map((m) => make(m.node));
      return (x, def, rep) => {
        if (x == null) return nulls(def, rep);
        const struct = x as Record<string, unknown>;
        for (let i = 0; i < visits.length; i++) visits[i]!(struct[names[i]!], def + 1, rep);
      };
    }
    const element = make(node.element);
    const elementNulls = nullsOf(node.element);
    const repeat = node.repetitionLevel;
    return (x, def, rep) => {
      if (x == null) return nulls(def, rep);
      const list = x as unknown[];
      if (list.length === 0) return elementNulls(def + 1, rep);
      for (let i = 0; i < list.length; i++) element(list[i], def + 2, i === 0 ? rep : repeat);
    };
  };
  const visits = nodes.flatMap((node, c) => (node ? [{ c, visit: make(node) }] : []));
  return (row) => {
    for (let i = 0; i < visits.length; i++) {
      const { c, visit } = visits[i]!;
      visit(row[c], 0, 0);
    }
  };
}
