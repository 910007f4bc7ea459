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
  const docs = parseAllDocuments(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const list = Array.isArray(docs) ? docs : [];
  if (list.length === 0) throw new ConfigError(`${shown}: the file holds no pipeline (it is empty)`, { file }, { code: 'config.invalid' });
  const loaded = list.map((doc) => parseDocumentPipeline(doc, lineCounter, registry, { ...opts, file, shown }));
  const seen = new Map<string, number>();
  loaded.forEach((p, i) => {
    if (seen.has(p.config.name)) {
      throw new ConfigError(`${shown}: pipelines ${seen.get(p.config.name)! + 1} and ${i + 1} are both named "${p.config.name}"; names must be unique (they name state and outputs)`, { file, path: 'name' });
    }
    seen.set(p.config.name, i);
  });
  return loaded;
}

function parseDocumentPipeline(
  doc: Document,
  lineCounter: LineCounter,
  registry: StageRegistry,
  opts: LoadOptions & { file: string; shown: string },
): LoadedPipeline {
  const env = opts.env ?? process.env;
  const { file, shown } = opts;
  const fail = (message: string, offset: number | undefined, at: string | undefined, code = 'config.invalid'): never => {
    const pos = offset === undefined ? undefined : lineCounter.linePos(offset);
    const where = pos ? `${shown}:${pos.line}:${pos.col}` : shown;
    throw new ConfigError(`${where}: ${at ? `${at}: ` : ''}${message}`, { file, line: pos?.line, column: pos?.col, path: at }, { code });
  };

  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    fail(`not valid YAML/JSON: ${e.message.split('\n')[0]}`, e.pos[0], undefined, 'config.syntax');
  }
  if (!isMap(doc.contents)) fail('a pipeline file must be a mapping with name, source and sinks', 0, undefined);

  const variables = interpolateDocument(doc, env, (name, node) =>
    fail(`environment variable ${name} is not set and has no default (write \${${name}:-default} to give one)`, node.range?.[0], pathOf(doc, node), 'config.missing_env'),
  );
  const redactor = new Redactor();
  redactor.addFromEnv(variables, env);

  const raw = doc.toJS() as unknown;
  const parsed = PipelineFile.safeParse(raw);
  if (!parsed.success) {
    const [first] = explainIssues(parsed.error, PipelineFile);
    report(first!, []);
  }
  const config = parsed.data!;
  redactor.add(config.connection?.apiKey);
  redactor.add(config.connection?.apiSecret);

  const checkStage = (kind: StageKind, spec: { type: string; [k: string]: unknown }, at: (string | number)[]) => {
    const checked = registry.check(kind, spec);
    if (!checked.ok) report(checked.issues[0]!, at);
    // A stage option holding a sink spec (a dead-letter sink) is checked as a sink.
    for (const [key, value] of Object.entries(spec)) {
      if (key !== 'type' && isStageSpec(value) && registry.get(value.type)?.kind === 'sink') checkStage('sink', value, [...at, key]);
    }
  };
  checkStage('source', config.source, ['source']);
  config.transforms.forEach((t, i) => checkStage('transform', t, ['transforms', i]));
  config.sinks.forEach((s, i) => checkStage('sink', s, ['sinks', i]));

  if (config.state) {
    const endpoint = getEndpoint(config.source.type);
    if (!endpoint?.incremental) {
      report(
        {
          path: [],
          message: `incremental state needs a source with an updatedSince filter (products.query, products.stream, media.stream, updates.query); "${config.source.type}" has none: reference data is small, extract it whole and remove \`state:\``,
        },
        ['state'],
      );
    }
  }

  return { file, baseDir: opts.file ? path.dirname(file) : process.cwd(), config, variables, redactor };

  function report(issue: LocatedIssue, prefix: (string | number)[]): never {
    const full = [...prefix, ...issue.path];
    const at = joinPath('', full);
    return fail(redactor.redact(issue.message), offsetOf(doc, full), at || undefined, issue.path.at(-1) === 'type' ? 'config.unknown_type' : 'config.invalid');
  }
}

function isStageSpec(v: unknown): v is { type: string; [k: string]: unknown } {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && typeof (v as { type?: unknown }).type === 'string';
}

/** Replaces `${VAR}` in every string scalar; a whole plain `${VAR}` takes the YAML type of its value (numbers stay numbers). */
function interpolateDocument(doc: Document, env: NodeJS.ProcessEnv, onMissing: (name: string, node: Node) => never): string[] {
  const used = new Set<string>();
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value !== 'string' || !node.value.includes('${')) return;
      const r = interpolate(node.value, env);
      r.variables.forEach((v) => used.add(v));
      if (r.missing) onMissing(r.missing, node);
      if (r.whole && node.type === 'PLAIN' && /^(-?\d+(\.\d+)?|true|false|null)$/.test(r.value)) node.value = JSON.parse(r.value);
      else node.value = r.value;
    },
  });
  return [...used];
}

/** Source offset of the deepest node along `path`; for a key that is the last step, the key itself. */
function offsetOf(doc: Document, path: (string | number)[]): number | undefined {
  let node: unknown = doc.contents;
  let offset = (node as Node | null)?.range?.[0];
  for (const step of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && p.key.value === step);
      if (!pair) break;
      offset = (pair.key as Node).range?.[0] ?? offset;
      node = pair.value;
      // Point at the value of a scalar entry unless it is the last step's key that is wrong.
      if (isScalar(node) && step !== path.at(-1)) offset = node.range?.[0] ?? offset;
    } else if (isSeq(node) && typeof step === 'number') {
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
