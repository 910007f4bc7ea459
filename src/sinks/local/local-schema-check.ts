// Whether a local file sink's columns changed since the previous run of the same dataset published
// (issue 37 item 10), said as the s3 sink says it from its manifests (shared/schema-change.ts:
// `sink.schema_changed`, the summary's schemaChanges). A local dataset has no manifest: the
// previous columns are read from the previous output itself, through its format
// (`RecordEncoding.readPublishedSchema`: a Parquet footer's `catalog-streams.schema`, a CSV
// header line; JSON Lines records none and is not compared). Which file:
// - the one this run replaces (a fixed path, or a partition file of a dataset without {run}),
//   read right before this run's rename takes its place;
// - else (a {run} or {date} template, a partition this run writes for the first time) the newest
//   earlier file of the dataset (latest modification time), found by walking the dataset's root
//   (the folder above its first {run} or {date}) for names the template renders on any day and run.
// Only regular files are read (no link, no FIFO), with a size limit; a file another tool wrote, an
// unreadable or damaged one means no comparison, never a failure: this is a report, not a step of
// the publication.
import { lstat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { StageContext } from '../../core/stage.js';
import { LocalObjectStore } from '../../storage/object-store.js';
import { escapePathValue, escapeRegExp, RUN_ID_PATTERN, type PathTemplate } from '../shared/path-template.js';
import type { RecordEncoding } from '../shared/record-sink.js';
import { runKeyedRoot } from '../shared/run-keyed-dataset.js';
import { reportSchemaChange, schemaChange } from '../shared/schema-change.js';
import { templateCheckedFrom } from './local-dataset.js';

export interface LocalSchemaCheckSetup {
  sinkType: string;
  ctx: StageContext;
  template: PathTemplate;
  format: RecordEncoding<unknown>;
}

/** The previous output's columns, read before the renames; compared with this run's after the commit. */
export class LocalSchemaCheck {
  readonly #setup: LocalSchemaCheckSetup;
  #previous: unknown;

  constructor(setup: LocalSchemaCheckSetup) {
    this.#setup = setup;
  }

  /** Right before the renames (`written`: this run's final paths), while a replaced file is still there. */
  async readPrevious(written: ReadonlySet<string>): Promise<void> {
    const { format, template, ctx } = this.#setup;
    // Records written as they come (JSON Lines, also behind a code-API sink's deferred encoding): no columns.
    if (format.describeSchema() === null) return;
    try {
      const file = await earlierOutput(template, ctx, written);
      this.#previous = file === undefined ? undefined : await format.readPublishedSchema?.(file);
    } catch {
      // A report, not a step of the publication: whatever could not be read means no comparison.
      this.#previous = undefined;
    }
  }

  /** After the commit: a `sink.schema_changed` event when this run's columns differ from the previous output's. */
  report(): void {
    const { format, template, ctx, sinkType } = this.#setup;
    const changed = schemaChange(this.#previous, format.describeSchema());
    // A fixed path names the file; a dataset is named by its template (`out/run={run}/part-{part}.parquet`).
    const location = resolve(ctx.baseDir, template.isDynamic ? template.source : template.render([], 0));
    if (changed) reportSchemaChange(ctx.events, sinkType, location, changed);
  }
}

/** The file this run replaces (the newest, when it replaces several), else the newest earlier file of the dataset. */
async function earlierOutput(
  template: PathTemplate,
  ctx: StageContext,
  written: ReadonlySet<string>,
): Promise<string | undefined> {
  const replaced = await newest([...written]);
  if (replaced !== undefined) return replaced;
  const rootRel = runKeyedRoot(template.source, ctx.run, 'path');
  const store = new LocalObjectStore(resolve(ctx.baseDir, rootRel), {
    checkedFrom: templateCheckedFrom(template.source, ctx.baseDir),
  });
  const pattern = anyRunPattern(template.source, ctx.run.name);
  // The template's segments below the root: placeholders never render a `/`.
  const depth = template.source.split('/').length - (rootRel.split('/').length - 1);
  const candidates: string[] = [];
  for await (const { rel } of store.list('', depth)) {
    // Hidden names are temp files and records, never outputs.
    if (!rel.split('/').at(-1)!.startsWith('.') && pattern.test(`${rootRel}${rel}`))
      candidates.push(store.location(rel));
  }
  return newest(candidates.filter((file) => !written.has(file)));
}

/** The regular file (not a link) of `files` modified last; undefined when none is one. */
async function newest(files: readonly string[]): Promise<string | undefined> {
  let best: { file: string; at: number } | undefined;
  for (const file of files) {
    const info = await lstat(file).catch(() => undefined);
    if (info?.isFile() && (best === undefined || info.mtimeMs > best.at)) best = { file, at: info.mtimeMs };
  }
  return best?.file;
}

/**
 * Every path the template `source` renders in any run of the pipeline `name`: as the template's own
 * pattern (shared/path-template.ts), but for any date and run id, so earlier days' files match too.
 */
function anyRunPattern(source: string, name: string): RegExp {
  const pattern = source
    .split(/(\{[^}]*\})/)
    .map((part, i) => {
      if (i % 2 === 0) return escapeRegExp(part);
      const placeholder = part.slice(1, -1).trim();
      if (placeholder === 'name') return escapeRegExp(escapePathValue(name));
      if (placeholder === 'run') return RUN_ID_PATTERN;
      if (placeholder === 'date') return '\\d{4}-\\d{2}-\\d{2}';
      if (placeholder === 'part') return '(?:\\d{5}|[1-9]\\d{5,})';
      // A `key={field}` partition value (escaped: never a `/`).
      return '[^/\\\\]*';
    })
    .join('');
  return new RegExp(`^${pattern}$`);
}
