// Field paths a drop, pick or rename stage names that no record of the run had (issue 37): such a
// stage does nothing and says nothing, as `drop: [seoName]` after flatten-locales (which had made
// it seoName_en...). Each path is looked up until a record has it, then never again, so a stage
// whose paths all match costs one lookup per path; at the end a path never seen is one warning,
// naming the nearest field name that was seen where the path pointed.
import { closestName } from '../closest-name.js';
import type { PathStep } from '../core/field-path.js';
import type { RunEvents } from '../events.js';
import { isPlainObject } from '../values.js';

/** Names seen beside an unseen path are collected from this many records (a bound on the work). */
const NAME_SAMPLE_RECORDS = 1000;

interface Watched {
  /** As written in the options (`fields[0] "seoName"`). */
  label: string;
  source: string;
  steps: readonly PathStep[];
  seen: boolean;
  /** Keys of the object the path's last key is looked up in. */
  names: Set<string>;
}

export class UnseenPaths {
  readonly #stage: string;
  readonly #watched: Watched[];
  #unseen: number;
  #records = 0;

  constructor(stage: string, paths: ReadonlyArray<{ label: string; source: string; steps: readonly PathStep[] }>) {
    this.#stage = stage;
    this.#watched = paths.map((p) => ({ ...p, seen: false, names: new Set<string>() }));
    this.#unseen = this.#watched.length;
  }

  /** Looks the unseen paths up in one record. */
  look(record: object): void {
    if (this.#unseen === 0) return;
    const sample = this.#records++ < NAME_SAMPLE_RECORDS;
    for (const w of this.#watched) {
      if (w.seen) continue;
      if (present(record, w.steps, 0, sample ? w.names : undefined)) {
        w.seen = true;
        this.#unseen--;
      }
    }
  }

  /** One warning per path no record had; nothing when no record came at all (nothing to judge by). */
  report(events: RunEvents): void {
    if (this.#records === 0) return;
    for (const w of this.#watched) {
      if (w.seen) continue;
      const near = nearest(w, [...w.names]);
      events.emit('warning', {
        code: 'transform.path_unseen',
        message:
          `${this.#stage}: ${w.label} "${w.source}" was in none of the run's ${this.#records} records, so it changed nothing` +
          (near ? `; nearest field seen: ${near}` : '') +
          ' (write the path as the records reach this stage; a stage before it may rename fields)',
      });
    }
  }
}

/** True when the record has a value (even null) at the path; collects the keys beside the last step. */
function present(value: unknown, steps: readonly PathStep[], at: number, names: Set<string> | undefined): boolean {
  if (at === steps.length) return true;
  const step = steps[at]!;
  if (step.kind === 'key') {
    if (!isPlainObject(value)) return false;
    if (names && at === steps.length - 1) for (const k in value) names.add(k);
    return Object.hasOwn(value, step.key) && present(value[step.key], steps, at + 1, names);
  }
  if (!Array.isArray(value)) return false;
  if (step.kind === 'index') return step.index < value.length && present(value[step.index], steps, at + 1, names);
  let found = false;
  for (const e of value) {
    if (step.kind === 'where' && !(isPlainObject(e) && String(e[step.key]) === step.value)) continue;
    if (present(e, steps, at + 1, names)) found = true;
    if (found && !names) return true;
  }
  return found;
}

/** `"seoName_en"`, or the names that extend the path's last key (`seoName_en, seoName_nl`). */
function nearest(w: Watched, names: string[]): string | undefined {
  const last = w.steps.at(-1);
  if (last?.kind !== 'key') return undefined;
  const close = closestName(last.key, names);
  if (close !== undefined) return `"${close}"`;
  const extended = names.filter((n) => n.startsWith(last.key)).slice(0, 3);
  return extended.length ? extended.map((n) => `"${n}"`).join(', ') : undefined;
}
