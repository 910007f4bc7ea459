// Field paths as users write them in stage options, parsed once when a stage is
// built and evaluated per record without re-parsing:
//   meta.createdAt                    a nested value
//   brands[].id                       every element of a list (yields a list)
//   organizations[type=supplier].name the elements whose `type` is `supplier` (a list)
//   photos[0].formats.large           one element by position
// Also a path tree for stages that rewrite records at several paths at once
// (drop, flatten-locales, normalize-codes): containers along the paths are
// copied, everything else is shared with the input record.
import { ConfigError } from '../errors.js';

export type PathStep =
  | { kind: 'key'; key: string }
  | { kind: 'each' }
  | { kind: 'index'; index: number }
  | { kind: 'where'; key: string; value: string };

export interface FieldPath {
  source: string;
  steps: PathStep[];
  /** Has a `[]` or `[key=value]` step: evaluates to a list. */
  multi: boolean;
}

const INDEX = /^\d+$/;

function pathError(source: string, message: string, optionPath?: string): ConfigError {
  return new ConfigError(
    `${optionPath ? `${optionPath}: ` : ''}invalid field path "${source}": ${message}`,
    optionPath ? { path: optionPath } : {},
    {
      code: 'config.field_path',
    },
  );
}

/** Parses `a.b[].c[type=x][0]`; `optionPath` (e.g. `fields[2]`) goes into the error message. */
export function parseFieldPath(source: string, optionPath?: string): FieldPath {
  const steps: PathStep[] = [];
  let i = 0;
  let expectKey = true;
  if (source.length === 0) throw pathError(source, 'it is empty', optionPath);
  while (i < source.length) {
    const c = source[i];
    if (c === '[') {
      if (steps.length === 0) throw pathError(source, 'a path starts with a field name', optionPath);
      const end = source.indexOf(']', i);
      if (end < 0) throw pathError(source, `"[" at ${i} is not closed`, optionPath);
      const inner = source.slice(i + 1, end);
      if (inner === '') steps.push({ kind: 'each' });
      else if (INDEX.test(inner)) steps.push({ kind: 'index', index: Number(inner) });
      else {
        const eq = inner.indexOf('=');
        if (eq <= 0) throw pathError(source, `"[${inner}]" must be [], [number] or [field=value]`, optionPath);
        steps.push({ kind: 'where', key: inner.slice(0, eq), value: inner.slice(eq + 1) });
      }
      i = end + 1;
      expectKey = false;
    } else if (c === '.') {
      if (expectKey) throw pathError(source, `empty field name at ${i}`, optionPath);
      i++;
      expectKey = true;
      if (i === source.length) throw pathError(source, 'it ends with "."', optionPath);
    } else if (c === ']') {
      throw pathError(source, `unexpected "]" at ${i}`, optionPath);
    } else {
      if (!expectKey) throw pathError(source, `expected "." or "[" at ${i}`, optionPath);
      let end = i;
      while (end < source.length && source[end] !== '.' && source[end] !== '[' && source[end] !== ']') end++;
      steps.push({ kind: 'key', key: source.slice(i, end) });
      i = end;
      expectKey = false;
    }
  }
  return { source, steps, multi: steps.some((s) => s.kind === 'each' || s.kind === 'where') };
}

function matches(element: unknown, key: string, value: string, asNumber: number): boolean {
  if (typeof element !== 'object' || element === null) return false;
  const v = (element as Record<string, unknown>)[key];
  return v === value || (typeof v === 'number' && v === asNumber) || (typeof v === 'boolean' && String(v) === value);
}

function collect(steps: readonly PathStep[], i: number, value: unknown, out: unknown[]): void {
  for (; i < steps.length; i++) {
    if (typeof value !== 'object' || value === null) return;
    const step = steps[i]!;
    if (step.kind === 'key') value = (value as Record<string, unknown>)[step.key];
    else if (step.kind === 'index') value = Array.isArray(value) ? value[step.index] : undefined;
    else {
      if (!Array.isArray(value)) return;
      if (step.kind === 'each') for (let j = 0; j < value.length; j++) collect(steps, i + 1, value[j], out);
      else {
        const asNumber = Number(step.value);
        for (let j = 0; j < value.length; j++)
          if (matches(value[j], step.key, step.value, asNumber)) collect(steps, i + 1, value[j], out);
      }
      return;
    }
  }
  if (value !== undefined) out.push(value);
}

export type Getter = (record: unknown) => unknown;

/**
 * A function reading `path` from a record: the value (undefined when missing)
 * for a plain path; a list of the values found (missing ones left out) when the
 * path has `[]` or `[key=value]`.
 */
export function compileGetter(path: string | FieldPath, optionPath?: string): Getter {
  const p = typeof path === 'string' ? parseFieldPath(path, optionPath) : path;
  const steps = p.steps;
  if (p.multi) {
    return (record) => {
      const out: unknown[] = [];
      collect(steps, 0, record, out);
      return out;
    };
  }
  const s0 = steps[0]!;
  if (steps.length === 1 && s0.kind === 'key') {
    const k = s0.key;
    return (record) => (record as Record<string, unknown>)[k];
  }
  const s1 = steps[1];
  if (steps.length === 2 && s0.kind === 'key' && s1?.kind === 'key') {
    const a = s0.key;
    const b = s1.key;
    return (record) => {
      const v = (record as Record<string, unknown>)[a];
      return typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[b] : undefined;
    };
  }
  return (record) => {
    let value: unknown = record;
    for (let i = 0; i < steps.length; i++) {
      if (typeof value !== 'object' || value === null) return undefined;
      const step = steps[i]!;
      value =
        step.kind === 'key'
          ? (value as Record<string, unknown>)[step.key]
          : Array.isArray(value)
            ? value[(step as { index: number }).index]
            : undefined;
    }
    return value;
  };
}

/** `photos[3].organizations[0].name` -> `photos[].organizations[].name` (indexes removed). */
export function genericPath(path: string): string {
  return path.replace(/\[\d+\]/g, '[]');
}

// ---------------------------------------------------------------------------
// Rewriting records at several paths at once.

/** What a rewrite does at one key of a container object. */
export interface PathEntry<L> {
  /** The key itself is a target (a leaf), with the stage's data for it. */
  leaf?: L;
  /** The key leads to more targets: into an object, or into each element of a list (`each`). */
  child?: { each: boolean; node: PathNode<L> };
}

export interface PathNode<L> {
  /** Keyed by field name; null prototype so record keys never hit Object.prototype. */
  entries: Record<string, PathEntry<L>>;
  /** Leaf keys of this node, for targets missing from a record. */
  leafKeys: string[];
  /** Every key of `entries`, in the order the paths named them. */
  keys: string[];
}

function newNode<L>(): PathNode<L> {
  return { entries: Object.create(null) as Record<string, PathEntry<L>>, leafKeys: [], keys: [] };
}

/**
 * A tree of paths made of field names and `[]` (no index or selector steps).
 * A path may end in `[]` when the leaf is a list (`ean[]`): the leaf is the list's key.
 */
export function buildPathTree<L>(targets: Iterable<readonly [FieldPath, L]>, optionPath?: string): PathNode<L> {
  const root = newNode<L>();
  for (const [path, leaf] of targets) {
    let node = root;
    const steps = path.steps.at(-1)?.kind === 'each' ? path.steps.slice(0, -1) : path.steps;
    for (let i = 0; i < steps.length; i++) {
      const step = steps[i]!;
      if (step.kind !== 'key') throw pathError(path.source, 'only field names and [] are allowed here', optionPath);
      let entry = node.entries[step.key];
      if (!entry) {
        entry = node.entries[step.key] = {};
        node.keys.push(step.key);
      }
      if (i === steps.length - 1) {
        if (entry.leaf === undefined) node.leafKeys.push(step.key);
        entry.leaf = leaf;
        break;
      }
      const each = steps[i + 1]?.kind === 'each';
      if (each) i++;
      if (entry.child && entry.child.each !== each)
        throw pathError(path.source, `"${step.key}" is used both as a list and as an object`, optionPath);
      entry.child ??= { each, node: newNode<L>() };
      node = entry.child.node;
    }
  }
  return root;
}

/** How a rewrite treats a leaf: writes `value`'s replacement(s) for `key` into `out` (or nothing, to drop it). */
export type LeafWriter<L> = (
  out: Record<string, unknown>,
  key: string,
  value: unknown,
  leaf: L,
  container: object,
) => void;

/**
 * A copy of `value` rewritten by `write` at every leaf of `node`. Objects on the
 * way to a leaf are copied (key order kept), lists are mapped, the rest is
 * shared. Leaves missing from an object are written too (with value undefined)
 * when `writeMissing` is set, so every record gets the same columns.
 */
export function rewriteAtPaths<L>(
  value: object,
  node: PathNode<L>,
  write: LeafWriter<L>,
  writeMissing: boolean,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const entries = node.entries;
  const src = value as Record<string, unknown>;
  let leavesSeen = 0;
  for (const key in src) {
    const v = src[key];
    const entry = entries[key];
    if (entry === undefined) {
      out[key] = v;
      continue;
    }
    if (entry.leaf !== undefined) {
      leavesSeen++;
      write(out, key, v, entry.leaf, value);
      continue;
    }
    const child = entry.child!;
    if (typeof v !== 'object' || v === null) out[key] = v;
    else if (!child.each) out[key] = Array.isArray(v) ? v : rewriteAtPaths(v, child.node, write, writeMissing);
    else if (!Array.isArray(v)) out[key] = v;
    else {
      const list = new Array<unknown>(v.length);
      for (let i = 0; i < v.length; i++) {
        const el: unknown = v[i];
        list[i] =
          typeof el === 'object' && el !== null && !Array.isArray(el)
            ? rewriteAtPaths(el, child.node, write, writeMissing)
            : el;
      }
      out[key] = list;
    }
  }
  if (writeMissing && leavesSeen < node.leafKeys.length) {
    for (const key of node.leafKeys) if (!(key in src)) write(out, key, undefined, entries[key]!.leaf!, value);
  }
  return out;
}

/**
 * `{...src}`: own enumerable string keys in order, then own enumerable symbols
 * (a record's origin). A loop over Object.keys: on records with varying key
 * sets (products: ~70 keys after flatten-locales) spread falls back to V8's
 * slow generic path and cost three times as much (19 vs 6 µs per product).
 */
export function shallowCopy(src: Record<string | symbol, unknown>): Record<string, unknown> {
  const out: Record<string | symbol, unknown> = {};
  const keys = Object.keys(src);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    // An own "__proto__" (JSON.parse makes one) must stay a plain property, as spread keeps it.
    if (key === '__proto__')
      Object.defineProperty(out, key, { value: src[key], writable: true, enumerable: true, configurable: true });
    else out[key] = src[key];
  }
  const symbols = Object.getOwnPropertySymbols(src);
  for (let i = 0; i < symbols.length; i++) {
    const symbol = symbols[i]!;
    if (Object.prototype.propertyIsEnumerable.call(src, symbol)) out[symbol] = src[symbol];
  }
  return out as Record<string, unknown>;
}

/** The new value of a leaf (`replaceAtPaths`); return `value` itself to leave it. */
export type LeafReplacer<L> = (value: unknown, leaf: L) => unknown;

/**
 * A copy of `value` with the leaves of `node` replaced by `replace` (keys are
 * neither added nor removed). Works through the paths, not through every key
 * of the record: a copy of each container on the way, then assignments.
 */
export function replaceAtPaths<L>(value: object, node: PathNode<L>, replace: LeafReplacer<L>): Record<string, unknown> {
  const src = value as Record<string, unknown>;
  const out = shallowCopy(src);
  const keys = node.keys;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const v = replacementOf(src[key], node.entries[key]!, replace);
    if (v !== UNCHANGED) out[key] = v;
  }
  return out;
}

const UNCHANGED: unique symbol = Symbol('unchanged');

/**
 * `replaceAtPaths` for a record its caller owns (`RecordTransform`'s `owned`): the new values of
 * `node`'s top-level keys, computed without touching `value`, and a function that assigns them to
 * `value` itself. The caller assigns only once it keeps the result, so a record it rejects halfway
 * (a bad code) goes to the dead letter as it came. Nested containers are still copied: they may
 * be shared with the source's record.
 */
export function replaceInPlace<L>(value: object, node: PathNode<L>, replace: LeafReplacer<L>): () => object {
  const src = value as Record<string, unknown>;
  const keys = node.keys;
  const values = new Array<unknown>(keys.length);
  for (let i = 0; i < keys.length; i++) values[i] = replacementOf(src[keys[i]!], node.entries[keys[i]!]!, replace);
  return () => {
    for (let i = 0; i < keys.length; i++) if (values[i] !== UNCHANGED) src[keys[i]!] = values[i];
    return src;
  };
}

/** The new value of one key of a container: `UNCHANGED`, a replaced leaf, or a rewritten copy. */
function replacementOf<L>(v: unknown, entry: PathEntry<L>, replace: LeafReplacer<L>): unknown {
  if (v === undefined) return UNCHANGED;
  if (entry.leaf !== undefined) return replace(v, entry.leaf);
  const child = entry.child!;
  if (typeof v !== 'object' || v === null) return UNCHANGED;
  if (!child.each) return Array.isArray(v) ? UNCHANGED : replaceAtPaths(v, child.node, replace);
  if (!Array.isArray(v)) return UNCHANGED;
  const list = new Array<unknown>(v.length);
  for (let j = 0; j < v.length; j++) {
    const el: unknown = v[j];
    list[j] =
      typeof el === 'object' && el !== null && !Array.isArray(el) ? replaceAtPaths(el, child.node, replace) : el;
  }
  return list;
}
