// Loads a pipeline file (YAML or JSON), interpolates `${VAR}`, and validates
// everything that can be checked without the network: the file's shape, every
// stage's options against its registered schema (filters against the source
// endpoint), and incremental state against the source. Every error names the
// file, line and column, and the path (`transforms[1].locales[0]`).
//
// A YAML file may hold several pipelines as documents separated by `---`; they
// run together in one run, sharing one client and so one request budget.
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { isMap, isPair, isScalar, isSeq, LineCounter, parseAllDocuments, visit, type Node, type Document } from 'yaml';
import { ConfigError } from '../errors.js';
import { CREDENTIAL_VARIABLES, Redactor, interpolate } from './env.js';
import { planPipeline, type PipelinePlan } from './plan.js';
import { explainIssues, joinPath, showValue, type LocatedIssue } from '../core/issues.js';
import { PipelineFile } from './pipeline-file.js';
import type { StageRegistry } from '../core/registry.js';

export interface LoadedPipeline {
  /** Absolute path of the file, or `<inline>`. */
  file: string;
  /** Relative paths in stage options resolve against this folder. */
  baseDir: string;
  /** Where relative outputs (sinks, dead letters, state) go when not `baseDir` (a shipped file of an installed package). */
  outputDir?: string;
  /** The file's content as parsed (with `${VAR}` replaced); `plan` is what a run is built from. */
  config: PipelineFile;
  /** Every stage parsed once, the schema chain, the outputs: what `run` and `--dry-run` use (plan.ts). */
  plan: PipelinePlan;
  /** Environment variables the file referenced. */
  variables: string[];
  redactor: Redactor;
}

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  /** Where relative outputs of a file in `fileDir` go when not beside it (the CLI: a shipped file of an installed package). */
  outputDir?(fileDir: string): string | undefined;
}

// Bounds that keep a hostile or broken file from exhausting the loader; real pipeline files are a
// few KB, a few levels deep, and use an alias or two.
/** Largest pipeline file read. */
export const MAX_PIPELINE_FILE_BYTES = 1024 * 1024;
/** Deepest nesting of mappings and lists. */
export const MAX_PIPELINE_DEPTH = 64;
/** Alias expansions per document (the yaml package's resource-exhaustion check). */
export const MAX_ALIAS_COUNT = 100;

export async function loadPipelineFile(
  file: string,
  registry: StageRegistry,
  opts: LoadOptions = {},
): Promise<LoadedPipeline[]> {
  const abs = path.resolve(file);
  let text: string;
  try {
    const { size } = await stat(abs);
    if (size > MAX_PIPELINE_FILE_BYTES) throw tooLarge(file, abs, size);
    text = await readFile(abs, 'utf8');
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(
      `${file}: cannot read the pipeline file (${code === 'ENOENT' ? 'no such file' : (code ?? String(err))})`,
      { file },
      {
        code: 'config.not_found',
        cause: err,
      },
    );
  }
  return parsePipelines(text, registry, { ...opts, file: abs, displayName: file });
}

function tooLarge(shown: string, file: string, bytes: number): ConfigError {
  const mib = (n: number) => `${(n / (1024 * 1024)).toFixed(1)} MiB`;
  return new ConfigError(
    `${shown}: the file is ${mib(bytes)}; a pipeline file may be at most ${MAX_PIPELINE_FILE_BYTES / (1024 * 1024)} MiB (long lists of codes belong in several pipelines or in code)`,
    { file },
    { code: 'config.too_large' },
  );
}

/** Parses and validates every pipeline (YAML document) in `text`. */
export function parsePipelines(
  text: string,
  registry: StageRegistry,
  opts: LoadOptions & { file?: string; displayName?: string } = {},
): LoadedPipeline[] {
  const file = opts.file ?? '<inline>';
  const shown = opts.displayName ?? file;
  if (Buffer.byteLength(text) > MAX_PIPELINE_FILE_BYTES) throw tooLarge(shown, file, Buffer.byteLength(text));
  const lineCounter = new LineCounter();
  const parsed = parseAllDocuments(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  // A document with nothing in it (a trailing `---`, a comment-only part) holds no pipeline.
  const docs = (Array.isArray(parsed) ? parsed : []).filter(
    (doc) =>
      doc.errors.length > 0 || !(doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null)),
  );
  if (docs.length === 0)
    throw new ConfigError(`${shown}: the file holds no pipeline (it is empty)`, { file }, { code: 'config.invalid' });
  const env = opts.env ?? process.env;
  const json = /\.json$/i.test(file);
  // Every problem of the file is reported at once (up to MAX_REPORTED): a document stops at its first
  // problem that leaves nothing to check further (bad YAML, a bad shape), other checks go on.
  const issues: ConfigError[] = [];
  const loaded: (LoadedPipeline | undefined)[] = docs.map((doc) => {
    const found = issues.length;
    const locate = locator(lineCounter, shown, file, issues);
    try {
      const p = parseDocumentPipeline(doc, {
        registry,
        lineCounter,
        env,
        file,
        shown,
        json,
        text,
        locate,
        outputDir: opts.outputDir,
      });
      return issues.length === found ? p : undefined;
    } catch (err) {
      if (err instanceof StopDocument) return undefined;
      throw err;
    }
  });
  const seen = new Map<string, number>();
  loaded.forEach((p, i) => {
    if (!p) return;
    const first = seen.get(p.config.name);
    if (first !== undefined) {
      locator(lineCounter, shown, file, issues).note(
        `pipelines ${first + 1} and ${i + 1} of the file are both named "${p.config.name}"; names must be unique (they name state and outputs)`,
        offsetOf(docs[i]!, ['name'], false),
        'name',
      );
    }
    seen.set(p.config.name, i);
  });
  if (issues.length > 0) throw issues.length === 1 ? issues[0]! : new PipelineFileErrors(issues);
  return loaded as LoadedPipeline[];
}

/** Past this many, the rest of a file's problems are counted, not listed. */
export const MAX_REPORTED = 20;

/** Several problems of one pipeline file; `issues` holds each (file, line, column, path), the message lists them. */
export class PipelineFileErrors extends ConfigError {
  readonly issues: ConfigError[];

  constructor(issues: ConfigError[]) {
    const shown = issues.slice(0, MAX_REPORTED);
    const more = issues.length - shown.length;
    super(
      `${issues.length} problems:\n${shown.map((i) => `  ${i.message}`).join('\n')}${more > 0 ? `\n  … and ${more} more` : ''}`,
      issues[0]!.location,
      { code: issues[0]!.code },
    );
    this.issues = shown;
  }
}

/** Ends the checks of one document after a problem that leaves nothing further to check. */
class StopDocument extends Error {}

/** Records a ConfigError at a source offset (`file:line:column: path: message`), then stops the document. */
type Fail = ((message: string, offset: number | undefined, at: string | undefined, code?: string) => never) & {
  /** Records the problem and lets the checks go on. */
  note(message: string, offset: number | undefined, at: string | undefined, code?: string): void;
};

function locator(lineCounter: LineCounter, shown: string, file: string, issues: ConfigError[]): Fail {
  const note = (message: string, offset: number | undefined, at: string | undefined, code = 'config.invalid') => {
    const pos = offset === undefined ? undefined : lineCounter.linePos(offset);
    const where = pos ? `${shown}:${pos.line}:${pos.col}` : shown;
    issues.push(
      new ConfigError(
        `${where}: ${at ? `${at}: ` : ''}${message}`,
        { file, line: pos?.line, column: pos?.col, path: at },
        { code },
      ),
    );
  };
  const fail = ((message, offset, at, code) => {
    note(message, offset, at, code);
    throw new StopDocument();
  }) as Fail;
  fail.note = note;
  return fail;
}

interface DocumentContext {
  registry: StageRegistry;
  outputDir: LoadOptions['outputDir'];
  lineCounter: LineCounter;
  env: NodeJS.ProcessEnv;
  file: string;
  shown: string;
  /** JSON cannot write `${VAR}` unquoted, so there a whole quoted reference takes its value's type. */
  json: boolean;
  text: string;
  locate: Fail;
}

function parseDocumentPipeline(doc: Document, context: DocumentContext): LoadedPipeline {
  const { registry, lineCounter, env, file, json, locate: fail, outputDir: outputDirOf } = context;
  checkDocumentShape(doc, context);
  const variables = interpolateDocument(doc, env, json, (name, node) =>
    fail(
      `environment variable ${name} is not set and has no default (write \${${name}:-default} to give one)`,
      node.range?.[0],
      pathOf(doc, node),
      'config.missing_env',
    ),
  );
  const redactor = new Redactor();
  redactor.addFromEnv([...variables, ...CREDENTIAL_VARIABLES], env);
  const raw = documentValue(doc, fail);
  // Credentials written in the file are secrets whatever their type (a number is still a secret).
  const connection = (raw as { connection?: Record<string, unknown> } | null)?.connection;
  if (connection !== null && typeof connection === 'object') {
    redactor.add(connection.apiKey);
    redactor.add(connection.apiSecret);
    if (Array.isArray(connection.credentials))
      for (const c of connection.credentials as unknown[])
        if (c !== null && typeof c === 'object') {
          redactor.add((c as Record<string, unknown>).apiKey);
          redactor.add((c as Record<string, unknown>).apiSecret);
        }
  }
  const note = issueNoter(doc, raw, redactor, fail);
  const parsed = PipelineFile.safeParse(raw);
  if (!parsed.success) {
    const explained = explainIssues(parsed.error, PipelineFile, raw);
    // `sink:` for `sinks:` is one mistake: its did-you-mean says it, "sinks: required" would repeat it.
    const meant = new Set(
      explained.filter((i) => i.kind === 'unknown-key').map((i) => /did you mean "([^"]+)"/.exec(i.message)?.[1]),
    );
    const distinct = explained.filter(
      (i) => !(i.path.length === 1 && meant.has(String(i.path[0])) && i.message.startsWith('required')),
    );
    for (const issue of distinct.slice(0, MAX_REPORTED)) note(issue, []);
    throw new StopDocument();
  }
  const config = parsed.data!;
  const baseDir = file === '<inline>' ? process.cwd() : path.dirname(file);
  const outputDir = outputDirOf?.(baseDir);
  const planned = planPipeline(config, registry, {
    file,
    baseDir,
    outputDir,
    position: (at) => {
      const offset = offsetOf(doc, at, false);
      const pos = offset === undefined ? undefined : lineCounter.linePos(offset);
      return { file, line: pos?.line, column: pos?.col };
    },
  });
  for (const { issue, at, code } of planned.problems) note(issue, at, code);
  if (!planned.plan) throw new StopDocument();
  return { file, baseDir, ...(outputDir ? { outputDir } : {}), config, plan: planned.plan, variables, redactor };
}

/** Stops the document at a syntax error, a document that is not a mapping, or one nested too deep. */
function checkDocumentShape(doc: Document, { text, locate: fail }: DocumentContext): void {
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    // The parser recurses per level: a stack overflow is a file nested far too deep.
    if (/call stack/i.test(e.message)) fail(tooDeep(), e.pos[0], undefined, 'config.too_deep');
    fail(
      `not valid YAML/JSON: ${e.message.split('\n')[0]}${flowHint(text, e.pos[0])}`,
      e.pos[0],
      undefined,
      'config.syntax',
    );
  }
  if (!isMap(doc.contents))
    fail('a pipeline must be a mapping with name, source and sinks', doc.contents?.range?.[0] ?? 0, undefined);
  const deep = firstNodeTooDeep(doc.contents);
  if (deep) fail(tooDeep(), deep.range?.[0], undefined, 'config.too_deep');
}

/** The document as plain data, aliases expanded within MAX_ALIAS_COUNT. */
function documentValue(doc: Document, fail: Fail): unknown {
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) as unknown;
  } catch (err) {
    // The yaml package refuses aliases that expand too much (an "alias bomb") or that come before their anchor.
    const message = err instanceof Error ? err.message : String(err);
    const alias = firstAlias(doc);
    if (/alias count/i.test(message)) {
      fail(
        `aliases (*name) expand to too much data: a pipeline file may expand at most ${MAX_ALIAS_COUNT} aliases; write the repeated parts out instead of aliasing aliases`,
        alias?.range?.[0],
        undefined,
        'config.aliases',
      );
    }
    return fail(
      `${message}; define an anchor (&name) before its alias (*name)`,
      alias?.range?.[0],
      undefined,
      'config.aliases',
    );
  }
}

const SECRET_PATH = /^connection\.(apiKey|apiSecret|credentials\[\d+\]\.(apiKey|apiSecret))$/;

/** Records an issue at its place in the document; the value a message shows (`got ...`) is masked when it is a secret, however short. */
function issueNoter(doc: Document, raw: unknown, redactor: Redactor, fail: Fail) {
  return (issue: LocatedIssue, prefix: (string | number)[], code: string = issueCode(issue)): void => {
    const full = [...prefix, ...issue.path];
    const at = joinPath('', full);
    const value = valueAt(raw, full);
    const shown =
      (typeof value === 'string' || typeof value === 'number') && (redactor.isSecret(value) || SECRET_PATH.test(at))
        ? showValue(value)
        : undefined;
    const message = shown
      ? issue.message.split(shown).join(typeof value === 'string' ? '"***"' : '***')
      : issue.message;
    fail.note(redactor.redact(message), offsetOf(doc, full, issue.kind === 'unknown-key'), at || undefined, code);
  };
}

function tooDeep(): string {
  return `mappings and lists are nested deeper than ${MAX_PIPELINE_DEPTH} levels; a pipeline needs a few: flatten the structure (a filter's and/or lists rarely need more than three)`;
}

/** The first mapping or list deeper than MAX_PIPELINE_DEPTH, walked without recursion (the tree may be very deep). */
function firstNodeTooDeep(root: unknown): Node | undefined {
  const stack: Array<[unknown, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (!isMap(node) && !isSeq(node)) continue;
    if (depth > MAX_PIPELINE_DEPTH) return node;
    for (const item of node.items as unknown[]) {
      if (isPair(item)) {
        stack.push([item.key, depth + 1], [item.value, depth + 1]);
      } else stack.push([item, depth + 1]);
    }
  }
  return undefined;
}

function firstAlias(doc: Document): Node | undefined {
  let found: Node | undefined;
  visit(doc, {
    Alias(_key, node) {
      found = node;
      return visit.BREAK;
    },
  });
  return found;
}

function valueAt(input: unknown, at: readonly (string | number)[]): unknown {
  let v = input;
  for (const key of at) {
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, key)) return undefined;
    v = (v as Record<string | number, unknown>)[key];
  }
  return v;
}

/** `{`, `}`, `[`, `]` and `,` end a plain value inside `{...}` or `[...]`: an unquoted ${VAR} there breaks the YAML. */
function flowHint(text: string, offset: number): string {
  const lineStart = text.lastIndexOf('\n', Math.max(0, offset - 1)) + 1;
  const prevStart = text.lastIndexOf('\n', Math.max(0, lineStart - 2)) + 1;
  const lineEnd = text.indexOf('\n', offset);
  // Bounded: the pattern below is quadratic over a long line of brackets.
  const around = text.slice(
    Math.max(prevStart, offset - 2000),
    lineEnd === -1 ? Math.min(text.length, offset + 2000) : Math.min(lineEnd, offset + 2000),
  );
  if (!around.includes('${')) return '';
  return /[{[][^\n]*\$\{/.test(around)
    ? ' (inside { } or [ ], quote a ${VAR} reference: "${VAR}", or write the mapping in block style)'
    : '';
}

function issueCode(issue: LocatedIssue): string {
  if (issue.path.length === 1 && issue.path[0] === 'type') return 'config.unknown_type';
  return issue.kind === 'unknown-key' ? 'config.unknown_key' : 'config.invalid';
}

/**
 * Replaces `${VAR}` in every string scalar. A plain (unquoted) scalar that is
 * one whole `${VAR}` takes the YAML type of its value: `rateLimit: ${RATE:-600}`
 * is the number 600; quote it ("${RATE}") to keep a string.
 */
function interpolateDocument(
  doc: Document,
  env: NodeJS.ProcessEnv,
  json: boolean,
  onMissing: (name: string, node: Node) => never,
): string[] {
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
