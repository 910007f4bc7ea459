// The Dremel shredding of a row group, compiled once per file from its columns.
//
// hyparquet-writer shreds a nested column by walking every row once per leaf column under it
// (its encodeNestedValues): a product row with 262 leaves was walked ~260 times, each time
// through generic code that re-reads the schema path at every level. The columns are fixed
// before the first record (the lake contract), so the walk can be compiled instead: one
// function per file, made with `new Function` from the columns, that visits each row once and
// appends every leaf's value, definition level and repetition level to that leaf's arrays.
// Generated code was chosen over a tree of closures because each branch is then its own
// monomorphic site with the levels as constants (measured in test/bench/shredder.ts).
//
// The levels are exactly the ones encodeNestedValues computes for the schema parquetSchema()
// writes (every node OPTIONAL, standard 3-level LISTs), so the pages and the file are the same
// bytes: a null or missing value stops at the definition level of its parent; an empty list
// is defined to the list; a STRUCT adds a level of its own; a list element after the first
// repeats at its list's repetition level. Leaves outside any list get no repetition levels
// (hyparquet-writer gives a flat column none either, and for a STRUCT's members all-zero
// levels that write the same page).
import type { SchemaElement } from 'hyparquet-writer';
import type { ParquetColumn, ParquetType } from './parquet-encoder.js';

/** One leaf column's schema and the values and levels of the row group being filled. */
export interface ShreddedLeaf {
  /** The top-level column this leaf belongs to. */
  readonly column: number;
  /** Schema elements from the root to the leaf (what hyparquet-writer's column encoder reads). */
  readonly schemaPath: SchemaElement[];
  readonly element: SchemaElement;
  readonly maxDefinitionLevel: number;
  readonly maxRepetitionLevel: number;
  readonly values: unknown[];
  readonly definitionLevels: number[];
  /** Empty for a leaf outside lists. */
  readonly repetitionLevels: number[];
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
   * generated walk (the encoder fills their one leaf itself: JSON text kept as UTF-8 bytes).
   */
  constructor(columns: readonly ParquetColumn[], schema: SchemaElement[], skip: ReadonlySet<number> = new Set()) {
    this.#schema = schema;
    const root = schema[0]!;
    const nodes = columns.map((column, c) => this.#node(column.type, [root], 0, c));
    this.shred = compile(
      nodes.map((node, c) => (skip.has(c) ? undefined : node)),
      this.leaves,
    );
  }

  /** Empties every leaf for the next row group (the arrays are reused, their length reset). */
  reset(): void {
    for (const leaf of this.leaves) {
      leaf.values.length = 0;
      leaf.definitionLevels.length = 0;
      leaf.repetitionLevels.length = 0;
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
    });
    return { kind: 'leaf', leaf: this.leaves.length - 1 };
  }
}

/** The generated walk: one block per column, the leaves' arrays bound as locals of a closure. */
function compile(nodes: ReadonlyArray<Node | undefined>, leaves: readonly ShreddedLeaf[]): ShredRow {
  let names = 0;
  const fresh = (prefix: string) => `${prefix}${names++}`;
  const repeated = (k: number) => leaves[k]!.maxRepetitionLevel > 0;

  const push = (k: number, value: string, def: number, rep: string): string =>
    `v${k}.push(${value}); d${k}.push(${def});${repeated(k) ? ` r${k}.push(${rep});` : ''}\n`;
  const nulls = (node: Node, def: number, rep: string): string =>
    leavesOf(node)
      .map((k) => push(k, 'null', def, rep))
      .join('');

  const visit = (node: Node, expr: string, def: number, rep: string): string => {
    const x = fresh('x');
    let out = `const ${x} = ${expr};\n`;
    if (node.kind === 'leaf') {
      out += `if (${x} == null) { ${push(node.leaf, 'null', def, rep)}} else { ${push(node.leaf, x, def + 1, rep)}}\n`;
    } else if (node.kind === 'struct') {
      out += `if (${x} == null) {\n${nulls(node, def, rep)}} else {\n`;
      for (const m of node.members) out += `{\n${visit(m.node, `${x}[${JSON.stringify(m.name)}]`, def + 1, rep)}}\n`;
      out += '}\n';
    } else {
      const i = fresh('i');
      const r = fresh('r');
      out +=
        `if (${x} == null) {\n${nulls(node, def, rep)}} ` +
        `else if (${x}.length === 0) {\n${nulls(node.element, def + 1, rep)}} ` +
        `else for (let ${i} = 0; ${i} < ${x}.length; ${i}++) {\n` +
        `const ${r} = ${i} === 0 ? ${rep} : ${node.repetitionLevel};\n` +
        `${visit(node.element, `${x}[${i}]`, def + 2, r)}}\n`;
    }
    return out;
  };

  let body = '';
  nodes.forEach((node, c) => {
    if (node) body += `{\n${visit(node, `row[${c}]`, 0, '0')}}\n`;
  });
  const used = new Set(nodes.flatMap((node) => (node ? leavesOf(node) : [])));
  const locals = [...used]
    .map((k) => `const v${k} = L[${k}].values, d${k} = L[${k}].definitionLevels, r${k} = L[${k}].repetitionLevels;`)
    .join('\n');
  // Source made from our own column schema only (names are JSON-quoted): no record text reaches it.
  const make = new Function('L', `'use strict';\n${locals}\nreturn function shredRow(row) {\n${body}};`) as (
    leaves: readonly ShreddedLeaf[],
  ) => ShredRow;
  return make(leaves);
}
