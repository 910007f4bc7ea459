// The lossless property (ARCHITECTURE.md, Lossless; issue 11): every leaf value of an input record is found in the
// output records of the same id, under its own name or the name a transform gave it, unless a
// stage's documented purpose removes it (drop, pick, unrequested locales of flatten-locales (a fallback column keeps the locale it took),
// select-media-format with keepOriginal: false, the parent fields explode does not carry).
// Dead-lettered records are not lost: pass them and they are left out of the check.
//
// A leaf is found when an output record of the same id holds the same value (digit codes compare
// without leading zeros: normalize-codes pads them) at a path that names the same things: the
// same array positions, and every key of the input path among the output path's name tokens
// (`brands[0].name.en` -> `brands[0].name_en`; `meta.createdAt` -> `meta_createdAt`), after
// mapping renames; a locale key need not appear (a fallback column drops it). Columns that copy a
// value from elsewhere (extract, select-media-format's url columns) match any path of that value.
import { localizedFieldPaths, resourceSchemas } from '../../src/catalog/index.js';
import { snakeCase } from '../../src/sinks/shared/column-names.js';

export interface TransformSpec {
  type: string;
  [option: string]: unknown;
}

export interface LostLeaf {
  id: string;
  path: string;
  value: unknown;
}

export interface LosslessOptions {
  /** Records written to a dead-letter output (the dead letters' `record`, or the records themselves). */
  deadLettered?: readonly object[];
  /** The resource of the input (default product): gives flatten-locales its default fields. */
  resource?: keyof typeof resourceSchemas;
  /** The id of an input or output record (default its `id`; explode rows: their parent id column). */
  idOf?: (record: Record<string, unknown>, side: 'input' | 'output') => unknown;
}

type Step = string | number;
interface Leaf {
  steps: Step[];
  value: unknown;
}

const LOCALE = /^[a-z]{2}$/;
/** `{value, unit}` of a temperature scale: the resource's measures. */
const MEASURE_PART = /^conservation(Min|Max)\.(celsius|fahrenheit|kelvin)\.(value|unit)$/;
const SCALE_UNITS: Record<string, string> = { celsius: '°C', fahrenheit: '°F', kelvin: 'K' };
const DIGITS = /^\d+$/;

function leaves(value: unknown, steps: Step[] = [], out: Leaf[] = []): Leaf[] {
  if (Array.isArray(value)) value.forEach((v, i) => leaves(v, [...steps, i], out));
  else if (typeof value === 'object' && value !== null) {
    // `_extra` keys are paths (`brands[0]`, `eanGtin13`): their steps are the value's own.
    const extra = steps.length === 1 && steps[0] === '_extra';
    for (const [k, v] of Object.entries(value)) leaves(v, extra ? [...steps, ...pathSteps(k)] : [...steps, k], out);
  } else if (value !== undefined && value !== null) out.push({ steps, value });
  return out;
}

/** `brands[0].logo` as steps: `brands`, 0, `logo`. */
function pathSteps(path: string): Step[] {
  return [...path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)].map((m) => (m[2] !== undefined ? Number(m[2]) : m[1]!));
}

/** Equal values compare equal; digit codes compare without their leading zeros; a flag's text as the flag. */
function canonical(value: unknown): string {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return `d:${value}`;
  // A BOOLEAN column holds the service's "true"/"false" text (catalog/primitives.ts, BooleanText).
  if (value === true || value === 'true' || value === false || value === 'false') return `b:${String(value)}`;
  if (typeof value === 'string' && DIGITS.test(value)) return `d:${value.replace(/^0+(?=\d)/, '')}`;
  return `${typeof value}:${String(value)}`;
}

/** The value at `steps` inside `value` (undefined where the path does not exist). */
function at(value: unknown, steps: readonly Step[]): unknown {
  let v = value;
  for (const s of steps) v = v === null || typeof v !== 'object' ? undefined : (v as Record<Step, unknown>)[s];
  return v;
}

const show = (steps: readonly Step[]) =>
  steps.map((s, i) => (typeof s === 'number' ? `[${s}]` : i ? `.${s}` : s)).join('');

/** Paths as `[]`-generic strings: `brands[].name`. */
const generic = (steps: readonly Step[]) =>
  steps.map((s, i) => (typeof s === 'number' ? '[]' : i ? `.${s}` : s)).join('');

/** `a.b` is `prefix` or under it (`[]` marks a list step; drop/pick paths are written so). */
function under(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[]`);
}

interface Plan {
  /** Input leaf paths (generic) removed by a stage's purpose. */
  removed(genericPath: string, steps: readonly Step[], record: unknown): boolean;
  /** rename targets -> source names. */
  renamedFrom: Map<string, string>;
  /** Output top-level keys that copy values from elsewhere (match any input path). */
  copies: Set<string>;
  /** The exploded list (its key and index are consumed), if any. */
  exploded: string | undefined;
  /** explode without keepEmpty: a record whose list is empty or missing gives no row, by design. */
  explodeDropsEmpty: boolean;
  /** The resource's localized fields (`brands[].name`): their locale keys need not appear in output names. */
  localized: ReadonlySet<string>;
}

function planOf(transforms: readonly TransformSpec[], resource: keyof typeof resourceSchemas): Plan {
  const removals: Array<(path: string, steps: readonly Step[], record: unknown) => boolean> = [];
  const renamedFrom = new Map<string, string>();
  const copies = new Set<string>();
  let exploded: string | undefined;
  let explodeDropsEmpty = false;
  for (const t of transforms) {
    switch (t.type) {
      case 'drop': {
        const fields = t.fields as string[];
        removals.push((p) => fields.some((f) => under(p, f)));
        break;
      }
      case 'pick': {
        const fields = t.fields as string[];
        removals.push((p) => !fields.some((f) => under(p, f)));
        break;
      }
      case 'flatten-locales': {
        if (t.keepOriginal) break;
        const fields = (t.fields as string[] | undefined) ?? localizedFieldPaths(resourceSchemas[resource]);
        const locales = new Set((t.locales as string[] | undefined) ?? []);
        const fallback = (t.fallback as string[] | undefined) ?? [];
        removals.push((p, steps, record) => {
          const last = steps.at(-1);
          if (typeof last !== 'string' || !LOCALE.test(last)) return false;
          const parent = p.slice(0, p.length - last.length - 1);
          if (!fields.includes(parent)) return false;
          if (locales.has(last)) return false;
          // the fallback column keeps only the first locale of its chain that has text
          const texts = at(record, steps.slice(0, -1)) as Record<string, unknown> | undefined;
          const chosen = fallback.find((l) => typeof texts?.[l] === 'string' && texts[l] !== '');
          return last !== chosen;
        });
        break;
      }
      case 'select-media-format': {
        const prefixes = [(t.photosColumn as string) ?? 'photo', (t.frontalsColumn as string) ?? 'frontal'];
        for (const p of prefixes) for (const s of ['_url', '_urls', '_format', '_formats']) copies.add(`${p}${s}`);
        copies.add('url');
        copies.add('format');
        if (t.keepOriginal === false) {
          const from = (t.from as string[] | undefined) ?? ['photos', 'frontals'];
          removals.push((p) => from.some((f) => under(p, f)) || under(p, 'formats'));
        }
        break;
      }
      case 'extract':
        for (const column of Object.keys(t.columns as object)) copies.add(column);
        break;
      case 'rename':
        for (const [from, to] of Object.entries(t.fields as Record<string, string>))
          renamedFrom.set(to, renamedFrom.get(from) ?? from);
        break;
      case 'explode': {
        exploded = t.field as string;
        explodeDropsEmpty = t.keepEmpty !== true;
        const parentIdPath = (t.parentId as string | undefined) ?? 'id';
        const idColumn =
          (t.parentIdColumn as string | undefined) ??
          `${resource.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())}Id`;
        renamedFrom.set(idColumn, parentIdPath.split('.').at(-1)!);
        const carry = (t.carry as Record<string, string> | undefined) ?? {};
        for (const [column, source] of Object.entries(carry)) renamedFrom.set(column, source.split('.').at(-1)!);
        const carried = Object.values(carry);
        const parentId = (t.parentId as string | undefined) ?? 'id';
        const field = exploded;
        removals.push((p) => !under(p, field) && p !== parentId && !carried.some((c) => under(p, c)));
        break;
      }
      default:
        break;
    }
  }
  const localized = new Set(localizedFieldPaths(resourceSchemas[resource]));
  return {
    removed: (p, s, record) => removals.some((r) => r(p, s, record)),
    renamedFrom,
    copies,
    exploded,
    explodeDropsEmpty,
    localized,
  };
}

/** Name tokens of an output path, with renamed top-level keys mapped back to their sources. */
function tokensOf(steps: readonly Step[], plan: Plan): Set<string> {
  const out = new Set<string>();
  steps.forEach((s, i) => {
    if (typeof s === 'number') return;
    const names = i === 0 && plan.renamedFrom.has(s) ? [s, plan.renamedFrom.get(s)!] : [s];
    for (const name of names) {
      out.add(name);
      for (const t of name.split(/[^A-Za-z0-9]+/)) if (t) out.add(t);
    }
  });
  return out;
}

/**
 * Where a code the live service sends in a list is written (docs/lake-contract.md): the first in
 * the code's own column (`eanGtin13`), each in the list column beside it (`eanGtin13List[i]`).
 */
function codeListColumns(leaf: Leaf): Leaf[] {
  const [field, index] = leaf.steps;
  if (
    leaf.steps.length !== 2 ||
    typeof field !== 'string' ||
    !/^eanGtin1[34]$/.test(field) ||
    typeof index !== 'number'
  )
    return [];
  const list = { steps: [`${field}List`, index], value: leaf.value };
  return index === 0 ? [{ steps: [field], value: leaf.value }, list] : [list];
}

const indexesOf = (steps: readonly Step[]) => steps.filter((s): s is number => typeof s === 'number').join(',');

/**
 * The leaf paths of `inputs` not found in `outputs` (see the file comment), as
 * `{id, path: 'brands[0].name.en', value}`; empty when the run lost nothing.
 */
export function lostLeaves(
  inputs: readonly object[],
  outputs: readonly object[],
  transforms: readonly TransformSpec[],
  options: LosslessOptions = {},
): LostLeaf[] {
  const plan = planOf(transforms, options.resource ?? 'product');
  const idOf = options.idOf ?? ((r: Record<string, unknown>) => r.id);
  const dead = new Set(
    (options.deadLettered ?? []).map((l) => {
      const r = (l as { record?: unknown }).record ?? l;
      return String(idOf(r as Record<string, unknown>, 'input'));
    }),
  );
  // output leaves by record id, then by canonical value
  const byId = new Map<string, Map<string, Leaf[]>>();
  for (const o of outputs) {
    const id = String(idOf(o as Record<string, unknown>, 'output'));
    let values = byId.get(id);
    if (!values) byId.set(id, (values = new Map()));
    for (const leaf of leaves(o)) {
      const key = canonical(leaf.value);
      const list = values.get(key);
      if (list) list.push(leaf);
      else values.set(key, [leaf]);
    }
  }
  const lost: LostLeaf[] = [];
  for (const input of inputs) {
    const id = String(idOf(input as Record<string, unknown>, 'input'));
    if (dead.has(id)) continue;
    if (plan.exploded !== undefined && plan.explodeDropsEmpty) {
      const list = (input as Record<string, unknown>)[plan.exploded];
      if (!Array.isArray(list) || list.length === 0) continue;
    }
    const values = byId.get(id);
    for (const leaf of leaves(input)) {
      const path = generic(leaf.steps);
      if (plan.removed(path, leaf.steps, input)) continue;
      // A measure column holds the number of `{value, unit}` in its own unit (catalog/primitives.ts,
      // measure): the unit is the column's, and the value is found under the measure's name.
      if (MEASURE_PART.test(path)) {
        if (path.endsWith('.unit') && leaf.value === SCALE_UNITS[String(leaf.steps.at(-2))]) continue;
        const measure = { steps: leaf.steps.slice(0, -1), value: leaf.value };
        if (values && found(measure, values.get(canonical(leaf.value)) ?? [], plan)) continue;
      }
      const candidates = values?.get(canonical(leaf.value)) ?? [];
      if (!values || ![leaf, ...codeListColumns(leaf)].some((l) => found(l, candidates, plan)))
        lost.push({ id, path: show(leaf.steps), value: leaf.value });
    }
  }
  return lost;
}

/**
 * An output leaf's array positions and name tokens, worked out once: a value shared by many leaves
 * of a record (`true`, `0`, a locale code) is a candidate for each of them.
 */
interface Shape {
  indexes: string;
  tokens: Set<string>;
}
const shapes = new WeakMap<Plan, WeakMap<Leaf, Shape>>();

function shapeOf(leaf: Leaf, plan: Plan): Shape {
  let byLeaf = shapes.get(plan);
  if (!byLeaf) shapes.set(plan, (byLeaf = new WeakMap()));
  let shape = byLeaf.get(leaf);
  if (!shape) byLeaf.set(leaf, (shape = { indexes: indexesOf(leaf.steps), tokens: tokensOf(leaf.steps, plan) }));
  return shape;
}

function found(leaf: Leaf, candidates: readonly Leaf[], plan: Plan): boolean {
  if (candidates.length === 0) return false;
  let steps = leaf.steps;
  // explode: the list and the element's index are consumed by the row
  if (plan.exploded !== undefined && steps[0] === plan.exploded && typeof steps[1] === 'number') steps = steps.slice(2);
  const last = steps.at(-1);
  const localeKey =
    typeof last === 'string' && LOCALE.test(last) && plan.localized.has(generic(leaf.steps.slice(0, -1)));
  const required = steps.filter((s, i): s is string => typeof s === 'string' && !(localeKey && i === steps.length - 1));
  // A column named in snake_case (columnNames) names `updatedAt` as `updated_at`: each key, or all
  // of its snake_case parts, among the output path's tokens.
  const keys = required.map((k) => ({
    k,
    parts: snakeCase(k)
      .split('_')
      .filter((t) => t !== ''),
  }));
  const indexes = indexesOf(steps);
  return candidates.some((c) => {
    const top = c.steps[0];
    if (typeof top === 'string' && plan.copies.has(top)) return true;
    const { indexes: at, tokens } = shapeOf(c, plan);
    if (at !== indexes) return false;
    return keys.every(({ k, parts }) => tokens.has(k) || parts.every((t) => tokens.has(t)));
  });
}
