// Loads a pipeline file (YAML or JSON), interpolates `${VAR}`, and validates
// everything that can be checked without the network: the file's shape, every
// stage's options against its registered schema (filters against the source
// endpoint), and incremental state against the source. Every error names the
// file, line and column, and the path (`transforms[1].locales[0]`).
//
// A YAML file may hold several pipelines as documents separated by `---`; they
// run together in one run, sharing one client and so one request budget.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { isMap, isPair, isScalar, isSeq, LineCounter, parseAllDocuments, visit, type Node, type Document } from 'yaml';
import { getEndpoint } from '../catalog/endpoints/index.js';
import { ConfigError } from '../errors.js';
import { Redactor, interpolate } from './env.js';
import { explainIssues, joinPath, type LocatedIssue } from './issues.js';
import { PipelineFile } from './pipeline-file.js';
import type { StageRegistry } from './registry.js';
import type { StageKind } from './stage.js';

export interface LoadedPipeline {
  /** Absolute path of the file, or `<inline>`. */
  file: string;
  /** Relative paths in stage options resolve against this folder. */
  baseDir: string;
  config: PipelineFile;
  /** Environment variables the file referenced. */
  variables: string[];
  redactor: Redactor;
}

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
}

export async function loadPipelineFile(file: string, registry: StageRegistry, opts: LoadOptions = {}): Promise<LoadedPipeline[]> {
  const abs = path.resolve(file);
  let text: string;
  try {
    text = await readFile(abs, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(`${file}: cannot read the pipeline file (${code === 'ENOENT' ? 'no such file' : code ?? String(err)})`, { file }, {
      code: 'config.not_found',
      cause: err,
    });
  }
  return parsePipelines(text, registry, { ...opts, file: abs, displayName: file });
}

/** Parses and validates every pipeline (YAML document) in `text`. */
export function parsePipelines(
  text: string,
  registry: StageRegistry,
  opts: LoadOptions & { file?: string; displayName?: string } = {},
): LoadedPipeline[] {
  const file = opts.file ?? '<inline>';
  const shown = opts.displayName ?? file;
  const lineCounter = new LineCounter();
  const parsed = parseAllDocuments(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  // A document with nothing in it (a trailing `---`, a comment-only part) holds no pipeline.
  const docs = (Array.isArray(parsed) ? parsed : []).filter(
    (doc) => doc.errors.length > 0 || !(doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null)),
  );
  if (docs.length === 0) throw new ConfigError(`${shown}: the file holds no pipeline (it is empty)`, { file }, { code: 'config.invalid' });
  const env = opts.env ?? process.env;
  const json = /\.json$/i.test(file);
  const loaded = docs.map((doc) => parseDocumentPipeline(doc, { registry, env, file, shown, json, text, locate: locator(lineCounter, shown, file) }));
  const seen = new Map<string, number>();
  loaded.forEach((p, i) => {
    const first = seen.get(p.config.name);
    if (first !== undefined) {
      locator(lineCounter, shown, file)(
        `pipelines ${first + 1} and ${i + 1} of the file are both named "${p.config.name}"; names must be unique (they name state and outputs)`,
        offsetOf(docs[i]!, ['name'], false),
        'name',
      );
    }
    seen.set(p.config.name, i);
  });
  return loaded;
}

/** Throws a ConfigError at a source offset: `file:line:column: path: message`. */
type Fail = (message: string, offset: number | undefined, at: string | undefined, code?: string) => never;

function locator(lineCounter: LineCounter, shown: string, file: string): Fail {
  return (message, offset, at, code = 'config.invalid') => {
    const pos = offset === undefined ? undefined : lineCounter.linePos(offset);
    const where = pos ? `${shown}:${pos.line}:${pos.col}` : shown;
    throw new ConfigError(`${where}: ${at ? `${at}: ` : ''}${message}`, { file, line: pos?.line, column: pos?.col, path: at }, { code });
  };
}

interface DocumentContext {
  registry: StageRegistry;
  env: NodeJS.ProcessEnv;
  file: string;
  shown: string;
  /** JSON cannot write `${VAR}` unquoted, so there a whole quoted reference takes its value's type. */
  json: boolean;
  text: string;
  locate: Fail;
}

function parseDocumentPipeline(doc: Document, { registry, env, file, json, text, locate: fail }: DocumentContext): LoadedPipeline {
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    fail(`not valid YAML/JSON: ${e.message.split('\n')[0]}${flowHint(text, e.pos[0])}`, e.pos[0], undefined, 'config.syntax');
  }
  if (!isMap(doc.contents)) fail('a pipeline must be a mapping with name, source and sinks', doc.contents?.range?.[0] ?? 0, undefined);

  const variables = interpolateDocument(doc, env, json, (name, node) =>
    fail(`environment variable ${name} is not set and has no default (write \${${name}:-default} to give one)`, node.range?.[0], pathOf(doc, node), 'config.missing_env'),
  );
  const redactor = new Redactor();
  redactor.addFromEnv(variables, env);

  const raw = doc.toJS() as unknown;
  const parsed = PipelineFile.safeParse(raw);
  if (!parsed.success) report(explainIssues(parsed.error, PipelineFile, raw)[0]!, []);
  const config = parsed.data!;
  redactor.add(config.connection?.apiKey);
  redactor.add(config.connection?.apiSecret);
  const baseDir = file === '<inline>' ? process.cwd() : path.dirname(file);

  const checkStage = (kind: StageKind, spec: { type: string; [k: string]: unknown }, at: (string | number)[]) => {
    const checked = registry.check(kind, spec);
    if (!checked.ok) report(checked.issues[0]!, at);
    const [problem] = checked.definition.preflight?.(checked.options, { baseDir }) ?? [];
    if (problem) report(problem, at);
    // A stage option holding a sink spec (`deadLetter`, or any {type} naming a sink) is checked as a sink.
    for (const [key, value] of Object.entries(spec)) {
      if (key !== 'type' && isStageSpec(value) && (key === 'deadLetter' || registry.get(value.type)?.kind === 'sink')) checkStage('sink', value, [...at, key]);
    }
  };
  checkStage('source', config.source, ['source']);
  config.transforms.forEach((t, i) => checkStage('transform', t, ['transforms', i]));
  config.sinks.forEach((s, i) => checkStage('sink', s, ['sinks', i]));

  if (config.state) {
    const endpoint = getEndpoint(config.source.type);
    if (!endpoint?.incremental) {
      const sources = registry
        .list('source')
        .filter((d) => getEndpoint(d.type)?.incremental)
        .map((d) => d.type);
      report(
        {
          path: [],
          message: `incremental state needs a source with an updatedSince filter (${sources.join(', ')}); "${config.source.type}" has none: reference data is small, extract it whole and remove \`state:\``,
          kind: 'unknown-key',
        },
        ['state'],
        'config.state',
      );
    }
  }

  // An incremental run's output holds only that run's changes: under a name without {run} each night's run would
  // replace the previous nights' data (a {date} alone still loses a same-day rerun's predecessor). Dead-letter sinks
  // are held to the same rule: their earlier rejects would be replaced the same way.
  if (config.state) {
    const checkRunName = (spec: { type: string; [k: string]: unknown }, at: (string | number)[]) => {
      for (const field of ['path', 'key'] as const) {
        const template = spec[field];
        if (typeof template === 'string' && !template.includes('{run}')) {
          const ext = /(\.[a-z0-9.]+)$/i.exec(template)?.[1] ?? '';
          const suggestion = ext ? `${template.slice(0, -ext.length)}-{run}${ext}` : `${template}-{run}`;
          report(
            {
              path: [field],
              message:
                `the pipeline has \`state:\` (each run extracts only the changes since the last one) but ${field} ` +
                `"${template}" has no {run}: every run would replace the earlier runs' data; add {run} to the ${field}, ` +
                `e.g. "${suggestion}", so each incremental run adds a file`,
              kind: 'value',
            },
            at,
            'config.state_fixed_output',
          );
        }
      }
      for (const [key, value] of Object.entries(spec)) {
        if (key !== 'type' && isStageSpec(value) && (key === 'deadLetter' || registry.get(value.type)?.kind === 'sink')) {
          checkRunName(value, [...at, key]);
        }
      }
    };
    config.transforms.forEach((t, i) => checkRunName(t, ['transforms', i]));
    config.sinks.forEach((s, i) => checkRunName(s, ['sinks', i]));
  }

  return { file, baseDir, config, variables, redactor };

  function report(issue: LocatedIssue, prefix: (string | number)[], code = issueCode(issue)): never {
    const full = [...prefix, ...issue.path];
    const at = joinPath('', full);
    return fail(redactor.redact(issue.message), offsetOf(doc, full, issue.kind === 'unknown-key'), at || undefined, code);
  }
}

/** `{`, `}`, `[`, `]` and `,` end a plain value inside `{...}` or `[...]`: an unquoted ${VAR} there breaks the YAML. */
function flowHint(text: string, offset: number): string {
  const lineStart = text.lastIndexOf('\n', Math.max(0, offset - 1)) + 1;
  const prevStart = text.lastIndexOf('\n', Math.max(0, lineStart - 2)) + 1;
  const around = text.slice(prevStart, text.indexOf('\n', offset) === -1 ? undefined : text.indexOf('\n', offset));
  return /[{[][^\n]*\$\{/.test(around) ? ' (inside { } or [ ], quote a ${VAR} reference: "${VAR}", or write the mapping in block style)' : '';
}

function issueCode(issue: LocatedIssue): string {
  if (issue.path.length === 1 && issue.path[0] === 'type') return 'config.unknown_type';
  return issue.kind === 'unknown-key' ? 'config.unknown_key' : 'config.invalid';
}

function isStageSpec(v: unknown): v is { type: string; [k: string]: unknown } {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && typeof (v as { type?: unknown }).type === 'string';
}

/**
 * Replaces `${VAR}` in every string scalar. A plain (unquoted) scalar that is
 * one whole `${VAR}` takes the YAML type of its value: `rateLimit: ${RATE:-600}`
 * is the number 600; quote it ("${RATE}") to keep a string.
 */
function interpolateDocument(doc: Document, env: NodeJS.ProcessEnv, json: boolean, onMissing: (name: string, node: Node) => never): string[] {
  const used = new Set<string>();
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value !== 'string' || !node.value.includes('${')) return;
      const r = interpolate(node.value, env);
      r.variables.forEach((v) => used.add(v));
      if (r.missing) onMissing(r.missing, node);
      const typed = node.type === 'PLAIN' || (json && node.type === 'QUOTE_DOUBLE');
      if (r.whole && typed && /^(-?\d+(\.\d+)?|true|false|null)$/.test(r.value)) node.value = JSON.parse(r.value);
      else node.value = r.value;
    },
  });
  return [...used];
}

/**
 * Source offset of what `path` names: the value there (or the key itself, for
 * a key that is not allowed); for a path that leads nowhere (a required key
 * missing), the deepest mapping or list on the way.
 */
function offsetOf(doc: Document, path: (string | number)[], atKey: boolean): number | undefined {
  let node: unknown = doc.contents;
  let offset = (node as Node | null)?.range?.[0];
  for (let i = 0; i < path.length; i++) {
    const step = path[i]!;
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(step));
      if (!pair) break;
      const keyOffset = (pair.key as Node).range?.[0];
      if (atKey && i === path.length - 1) return keyOffset ?? offset;
      node = pair.value;
      offset = (node as Node | null)?.range?.[0] ?? keyOffset ?? offset;
    } else if (isSeq(node) && typeof step === 'number' && step < node.items.length) {
      node = node.items[step];
      offset = (node as Node | undefined)?.range?.[0] ?? offset;
    } else break;
  }
  return offset;
}

/** The path of a node in the document, for messages about a scalar (missing env variable). */
function pathOf(doc: Document, target: Node): string {
  const walk = (node: unknown, at: (string | number)[]): (string | number)[] | undefined => {
    if (node === target) return at;
    if (isMap(node)) {
      for (const p of node.items) {
        if (!isPair(p)) continue;
        const key = isScalar(p.key) ? String(p.key.value) : '?';
        const r = walk(p.value, [...at, key]);
        if (r) return r;
      }
    } else if (isSeq(node)) {
      for (let i = 0; i < node.items.length; i++) {
        const r = walk(node.items[i], [...at, i]);
        if (r) return r;
      }
    }
    return undefined;
  };
  return joinPath('', walk(doc.contents, []) ?? []);
}
