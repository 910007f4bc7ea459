// `catalog-streams history <pipeline-file>`: the runs of a file's pipelines over time, from what the
// runs left behind: the history each run adds to (src/pipeline/run-history.ts); for a table sink,
// the versions its `_table.json` lists (their inserted/updated/deleted counts); for an s3 sink, the
// `_manifest.json` files still there (objects and rows per run). A version or a manifest and a
// history line of the same run id are one row; one older than the history (a table or lake built
// before runs kept one) is a row of its own with its own figures only.
import { CatalogStreamsError } from '../errors.js';
import { createRegistry } from '../pipeline/builtins.js';
import { Redactor } from '../pipeline/env.js';
import { loadPipelineFile, type LoadedPipeline } from '../pipeline/loader.js';
import {
  COMPACT_AFTER_RUNS,
  MAX_HISTORY_RUNS,
  readHistory,
  readS3Manifests,
  readTableVersions,
} from '../pipeline/run-history.js';
import { type Command, integerOption, parseOptions } from './command.js';
import type { CliIO } from './io.js';
import { installedOutputDir } from './package-info.js';
import { formatDuration } from './progress.js';

const NAME = 'history';
const DEFAULT_LAST = 20;

const HISTORY_USAGE = `Usage: catalog-streams history <pipeline-file> [--last N] [--json]
  --last N   the last N runs of each pipeline (default ${DEFAULT_LAST})
  --json     print the rows as a JSON array on stdout instead of a table

Each run adds a file of its own to its pipeline's history, beside the state file
(<state folder>/history/<pipeline>/) or, without a state, in the output folder
(.catalog-streams/history/<pipeline>/); every ${COMPACT_AFTER_RUNS} runs they are folded into <pipeline>.jsonl
(the last ${MAX_HISTORY_RUNS} runs). A table sink's versions come from its _table.json,
an s3 sink's objects and rows per run from its _manifest.json files (one a day with {date} in the
key, one a run with {run}, else the latest run's only).
`;

const options = { last: { type: 'string' }, json: { type: 'boolean' } } as const;

/** One run of one pipeline; null where the run left no such figure. */
export interface HistoryRow {
  pipeline: string;
  runId: string;
  startedAt: string;
  status: string;
  records: number | null;
  durationMs: number | null;
  requests: number | null;
  throttles: number | null;
  invalid: number | null;
  inserted: number | null;
  updated: number | null;
  deleted: number | null;
  unchanged: number | null;
  /** Data objects the run's s3 manifests list. */
  objects: number | null;
  /** Rows in those objects. */
  objectRows: number | null;
}

interface PipelineHistory {
  pipeline: string;
  history: string;
  tables: string[];
  manifests: string[];
  rows: HistoryRow[];
}

async function historyCommand(argv: string[], io: CliIO): Promise<number> {
  const { values: v, positionals } = parseOptions(NAME, argv, options, { exactly: 1, what: 'one pipeline file' });
  const last = integerOption(NAME, 'last', v.last, 1, 100_000) ?? DEFAULT_LAST;
  const pipelines = await loadPipelineFile(positionals[0]!, createRegistry(), {
    env: io.env,
    outputDir: (dir) => installedOutputDir(dir, process.cwd()),
  });
  const found: PipelineHistory[] = [];
  for (const p of pipelines) found.push(await pipelineHistory(p, io.env, last));
  // Names and locations made with a secret `${VAR}` are shown redacted, as a run's summary shows them.
  const redactor = new Redactor();
  for (const p of pipelines) redactor.absorb(p.redactor);
  const shown = redactor.redactValue(found);
  if (v.json) io.stdout.write(`${JSON.stringify(shown.flatMap((f) => f.rows))}\n`);
  else io.stdout.write(`${shown.map(formatHistory).join('\n\n')}\n`);
  return 0;
}

/** The last `last` runs of one pipeline, oldest first: its history joined with its table versions and s3 manifests. */
async function pipelineHistory(p: LoadedPipeline, env: NodeJS.ProcessEnv, last: number): Promise<PipelineHistory> {
  const [history, tables, manifests] = await Promise.all([
    readHistory(p, env),
    readTableVersions(p, env),
    readS3Manifests(p, env),
  ]).catch((err: unknown) => {
    if (err instanceof CatalogStreamsError) throw err;
    throw new CatalogStreamsError(
      'history.read_failed',
      p.redactor.redact(`${p.config.name}: could not read its run history: ${(err as Error).message}`),
      { cause: err },
    );
  });
  const rows = new Map<string, HistoryRow>();
  for (const e of history.entries) {
    rows.set(e.runId, {
      ...emptyRow(e.pipeline, e.runId, e.startedAt, e.status),
      records: e.read,
      durationMs: e.durationMs,
      requests: e.requests,
      throttles: e.throttles,
      invalid: e.invalid,
    });
  }
  // A version is listed, a manifest written, only once the run published: a row of its own is a success.
  const rowOf = (runId: string, startedAt: string) =>
    rows.get(runId) ?? emptyRow(p.config.name, runId, startedAt, 'succeeded');
  for (const version of tables.flatMap((t) => t.versions)) {
    const row = rowOf(version.runId, version.startedAt);
    // Two table sinks in one pipeline: their counts add up, as the written rows do.
    row.inserted = (row.inserted ?? 0) + version.counts.inserted;
    row.updated = (row.updated ?? 0) + version.counts.updated;
    row.deleted = (row.deleted ?? 0) + version.counts.deleted;
    row.unchanged = (row.unchanged ?? 0) + version.counts.unchanged;
    rows.set(version.runId, row);
  }
  for (const run of manifests.flatMap((m) => m.runs)) {
    const row = rowOf(run.runId, run.startedAt);
    // Two s3 sinks in one pipeline: their objects and rows add up.
    row.objects = (row.objects ?? 0) + run.objects;
    row.objectRows = (row.objectRows ?? 0) + run.rows;
    rows.set(run.runId, row);
  }
  const sorted = [...rows.values()].sort((a, b) => a.startedAt.localeCompare(b.startedAt));
  return {
    pipeline: p.config.name,
    history: history.location,
    tables: tables.map((t) => t.location),
    manifests: manifests.map((m) => m.location),
    rows: sorted.slice(-last),
  };
}

function emptyRow(pipeline: string, runId: string, startedAt: string, status: HistoryRow['status']): HistoryRow {
  return {
    pipeline,
    runId,
    startedAt,
    status,
    records: null,
    durationMs: null,
    requests: null,
    throttles: null,
    invalid: null,
    inserted: null,
    updated: null,
    deleted: null,
    unchanged: null,
    objects: null,
    objectRows: null,
  };
}

const fmt = new Intl.NumberFormat('en-US');
const SPARKS = '▁▂▃▄▅▆▇█';

/** One character per value, scaled between the values' min and max; a space for a missing one. */
export function sparkline(values: ReadonlyArray<number | null>): string {
  const known = values.filter((x): x is number => x !== null);
  const min = Math.min(...known);
  const max = Math.max(...known);
  return values
    .map((x) => {
      if (x === null) return ' ';
      // Equal values draw a flat middle line: no run stands out.
      if (max === min) return SPARKS[3];
      return SPARKS[Math.round(((x - min) / (max - min)) * (SPARKS.length - 1))];
    })
    .join('');
}

type Column = { title: string; value: (r: HistoryRow) => number | null; text?: (n: number) => string };

const NUMERIC: Column[] = [
  { title: 'records', value: (r) => r.records },
  { title: 'duration', value: (r) => r.durationMs, text: duration },
  { title: 'requests', value: (r) => r.requests },
  { title: '429s', value: (r) => r.throttles },
  { title: 'invalid', value: (r) => r.invalid },
  { title: 'inserted', value: (r) => r.inserted },
  { title: 'updated', value: (r) => r.updated },
  { title: 'deleted', value: (r) => r.deleted },
  { title: 'objects', value: (r) => r.objects },
  { title: 'object rows', value: (r) => r.objectRows },
];

const TABLE_COLUMNS = ['inserted', 'updated', 'deleted'];
const S3_COLUMNS = ['objects', 'object rows'];

/** Seconds with a decimal under a minute (a test or small run still shows its trend), else m:ss. */
function duration(ms: number): string {
  return ms < 60_000 ? `${(ms / 1000).toFixed(1)}s` : formatDuration(ms / 1000);
}

function formatHistory(h: PipelineHistory): string {
  const head = `${h.pipeline}: ${h.rows.length === 1 ? '1 run' : `${h.rows.length} runs`} (history ${h.history}${h.tables.map((t) => `, table ${t}`).join('')}${h.manifests.map((m) => `, s3 manifests ${m}`).join('')})`;
  if (h.rows.length === 0)
    return `${head}\n  no runs recorded yet: each 'catalog-streams run' of this pipeline adds one`;
  // Table columns only for a pipeline that has a table, s3 columns for one that has an s3 sink.
  const columns = NUMERIC.filter(
    (c) =>
      (h.tables.length > 0 || !TABLE_COLUMNS.includes(c.title)) &&
      (h.manifests.length > 0 || !S3_COLUMNS.includes(c.title)),
  );
  const cells = (r: HistoryRow) => [
    r.startedAt.slice(0, 16).replace('T', ' '),
    r.runId,
    r.status,
    ...columns.map((c) => {
      const n = c.value(r);
      return n === null ? '-' : (c.text ?? fmt.format)(n);
    }),
  ];
  const table = [['date (UTC)', 'run', 'status', ...columns.map((c) => c.title)], ...h.rows.map(cells)];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  // Text columns left-aligned, numbers right-aligned.
  const line = (row: string[]) =>
    row
      .map((cell, i) => (i < 3 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  const titleWidth = Math.max(...columns.map((c) => c.title.length));
  const trends = columns
    .filter((c) => h.rows.some((r) => c.value(r) !== null))
    .map((c) => {
      const values = h.rows.map(c.value);
      const known = values.filter((x): x is number => x !== null);
      const show = c.text ?? fmt.format;
      return `  ${c.title.padEnd(titleWidth)}  ${sparkline(values)}  min ${show(Math.min(...known))}, max ${show(Math.max(...known))}`;
    });
  return [head, ...table.map((row) => `  ${line(row)}`), '', ...trends].join('\n');
}

export const historyCommandDefinition: Command = {
  name: NAME,
  summary: 'show the runs of a pipeline file over time (records, duration, requests, 429s, table changes)',
  usage: HISTORY_USAGE,
  run: historyCommand,
};
