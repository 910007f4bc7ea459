// The pipeline-file loader: positions (file:line:column of the value, or of the
// key for an unknown key), paths, did-you-mean, `${VAR}` interpolation with
// defaults, escapes and typed whole values, several pipelines per file, JSON
// files, and secrets that never come back in a message.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { Redactor, interpolate } from '../../src/pipeline/env.js';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { loadPipelineFile, parsePipelines } from '../../src/pipeline/loader.js';

/** The sink types as the registry lists them in messages (a new sink changes no expectation here). */
const KNOWN_SINKS = createRegistry().types('sink').join(', ');

const registry = createRegistry();

function load(text: string, env: NodeJS.ProcessEnv = {}, displayName = 'p.yml') {
  return parsePipelines(text, registry, { env, file: join(tmpdir(), displayName), displayName });
}

function errorOf(text: string, env: NodeJS.ProcessEnv = {}, displayName = 'p.yml'): ConfigError {
  try {
    load(text, env, displayName);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

const products = (rest = '') => `name: p
source:
  type: products.query
  filter: { status: active }
${rest}sinks:
  - { type: jsonl, path: out/p.jsonl }
`;

describe('interpolate', () => {
  it('replaces ${VAR} and ${VAR:-default}, lists the variables, names the first missing one', () => {
    expect(interpolate('a-${X}-${Y:-dflt}-${Z:-}', { X: '1' })).toEqual({
      value: 'a-1-dflt-',
      variables: ['X', 'Y', 'Z'],
      missing: undefined,
      whole: false,
    });
    expect(interpolate('${A}/${B}', {})).toMatchObject({ missing: 'A', variables: ['A', 'B'] });
    // An empty variable counts as unset (as in the shell's :-).
    expect(interpolate('${E:-x}', { E: '' }).value).toBe('x');
    expect(interpolate('${E}', { E: '' }).missing).toBe('E');
  });

  it('keeps $${...} as a literal ${...} and does not read it', () => {
    expect(interpolate('cost $${PRICE} and ${X}', { X: 'x', PRICE: 'no' })).toEqual({
      value: 'cost ${PRICE} and x',
      variables: ['X'],
      missing: undefined,
      whole: false,
    });
    expect(interpolate('$${UNSET}', {})).toMatchObject({ value: '${UNSET}', missing: undefined, whole: false });
  });

  it('says when the whole string is one reference', () => {
    expect(interpolate('${RATE:-600}', {}).whole).toBe(true);
    expect(interpolate(' ${RATE}', { RATE: '1' }).whole).toBe(false);
  });
});

describe('Redactor', () => {
  it('redacts values of secret-looking variables and added credentials, short ones as whole tokens, not ordinary values', () => {
    const r = new Redactor();
    r.addFromEnv(['MY_API_KEY', 'DB_PASSWORD', 'REGION', 'X_TOKEN'], {
      MY_API_KEY: 'k-123456',
      DB_PASSWORD: 'hunter22',
      REGION: 'eu-west-1',
      X_TOKEN: 'abc',
    });
    r.add('s3cr3t-value');
    expect(r.redact('k-123456 hunter22 eu-west-1 abc s3cr3t-value abcd xabc')).toBe(
      '*** *** eu-west-1 *** *** abcd xabc',
    );
    const other = new Redactor();
    other.absorb(r);
    expect(other.redact('x s3cr3t-value')).toBe('x ***');
  });
});

describe('loading pipeline files', () => {
  it('applies defaults and resolves the base folder to the file', () => {
    const [p] = load(products());
    expect(p!.config).toMatchObject({ name: 'p', transforms: [], sinks: [{ type: 'jsonl', path: 'out/p.jsonl' }] });
    expect(p!.baseDir).toBe(tmpdir());
  });

  it('interpolates anywhere; a whole unquoted ${VAR} keeps its YAML type, a quoted one stays a string', () => {
    const [p] = load(
      `name: \${NAME:-nightly}
connection:
  baseUrl: \${BASE}/api
  rateLimit: \${RATE:-600}
  concurrency: \${CONC}
source:
  type: products.query
  filter: { status: "\${STATUS:-active}" }
  pageSize: \${PAGE:-100}
sinks:
  - type: jsonl
    path: "out/\${NAME:-nightly}-$\${literal}.jsonl"
    gzip: \${GZIP:-false}
`,
      { BASE: 'https://api.example.com', CONC: '4' },
    );
    expect(p!.config.name).toBe('nightly');
    expect(p!.config.connection).toEqual({ baseUrl: 'https://api.example.com/api', rateLimit: 600, concurrency: 4 });
    expect(p!.config.source).toEqual({ type: 'products.query', filter: { status: 'active' }, pageSize: 100 });
    expect(p!.config.sinks[0]).toEqual({ type: 'jsonl', path: 'out/nightly-${literal}.jsonl', gzip: false });
    expect(p!.variables.sort()).toEqual(['BASE', 'CONC', 'GZIP', 'NAME', 'PAGE', 'RATE', 'STATUS']);
  });

  it('a quoted whole reference is a string, so a number option says what it got', () => {
    expect(errorOf(products('connection: { rateLimit: "${RATE:-600}" }\n')).message).toBe(
      'p.yml:5:26: connection.rateLimit: expected a number, got "600"',
    );
  });

  it('JSON files: a whole "${VAR}" takes the type of its value (JSON cannot write it unquoted)', () => {
    const [p] = load(
      JSON.stringify(
        {
          name: 'j',
          connection: { rateLimit: '${RATE:-600}' },
          source: { type: 'brands.query' },
          sinks: [{ type: 'jsonl', path: 'out/${NAME:-b}.jsonl' }],
        },
        null,
        2,
      ),
      {},
      'p.json',
    );
    expect(p!.config.connection?.rateLimit).toBe(600);
    expect(p!.config.sinks[0]!.path).toBe('out/b.jsonl');
  });

  it('a missing variable without a default is an error naming it, at the value', () => {
    const err = errorOf(products('connection:\n  apiSecret: prefix-${NOT_SET_ANYWHERE}\n'));
    expect(err.message).toBe(
      'p.yml:6:14: connection.apiSecret: environment variable NOT_SET_ANYWHERE is not set and has no default (write ${NOT_SET_ANYWHERE:-default} to give one)',
    );
    expect(err.code).toBe('config.missing_env');
    expect(err.location).toMatchObject({ line: 6, column: 14, path: 'connection.apiSecret' });
  });

  it.each([
    // a value: the position of the value
    [
      products('transforms:\n  - { type: pick, fields: [id, 3] }\n'),
      'p.yml:6:32: transforms[0].fields[1]: expected a string, got 3',
    ],
    [
      products('transforms:\n  - type: flatten-locales\n    locales: [en]\n    keepOrignal: true\n'),
      'p.yml:8:5: transforms[0].keepOrignal: unknown key "keepOrignal"; did you mean "keepOriginal"? (allowed: resource, locales, fallback, fields, columns, fallbackColumn, fallbackLocaleColumn, keepOriginal)',
    ],
    // a dead-letter sink inside a transform is checked as a sink
    [
      products(
        'transforms:\n  - { type: validate, onInvalid: dead-letter, deadLetter: { type: jsnl, path: x.jsonl } }\n',
      ),
      `p.yml:6:67: transforms[0].deadLetter.type: unknown sink type "jsnl"; did you mean "jsonl"? (known: ${KNOWN_SINKS})`,
    ],
    // a stage of another kind in the wrong list
    [
      products('transforms:\n  - { type: parquet, path: x.parquet }\n'),
      `p.yml:6:13: transforms[0].type: "parquet" is a sink, not a transform (transform types: ${createRegistry().types('transform').join(', ')})`,
    ],
    // a filter the endpoint lacks
    [
      'name: b\nsource: { type: products.query, filter: { and: [{ statsu: active }] } }\nsinks: [{ type: jsonl, path: b.jsonl }]\n',
      expect.stringMatching(
        /^p\.yml:2:51: source\.filter\.and\[0\]\.statsu: unknown filter "statsu"; did you mean "status"\? this endpoint's filters are: id, status, /,
      ),
    ],
    // an unquoted \${VAR} inside { } is not YAML: the message says what to do
    [
      products('connection: { rateLimit: ${RATE:-600} }\n'),
      expect.stringMatching(
        /^p\.yml:5:.*not valid YAML\/JSON: .*\(inside \{ \} or \[ \], quote a \$\{VAR\} reference: "\$\{VAR\}", or write the mapping in block style\)$/,
      ),
    ],
    // a name that would not make a file name
    [
      'name: "my pipeline"\nsource: { type: brands.query }\nsinks: [{ type: jsonl, path: b.jsonl }]\n',
      'p.yml:1:7: name: must be a simple name (letters, digits, . _ -): it names state and output files',
    ],
    // an enum
    [
      products('state: { path: s.json, overlapSeconds: -1 }\n'),
      expect.stringMatching(/^p\.yml:5:40: state\.overlapSeconds: /),
    ],
    ['- a\n- b\n', 'p.yml:1:1: a pipeline must be a mapping with name, source and sinks'],
    ['name: a\nname: b\n', expect.stringMatching(/^p\.yml:2:1: not valid YAML\/JSON: Map keys must be unique/)],
  ])('points at the spot: %#', (text, message) => {
    expect(errorOf(text).message).toEqual(message);
  });

  it('the error for an unknown type carries its code and location', () => {
    const err = errorOf(products('transforms:\n  - { type: flaten-locales }\n'));
    expect(err.code).toBe('config.unknown_type');
    expect(err.exitCode).toBe(2);
    expect(err.location).toEqual({ file: join(tmpdir(), 'p.yml'), line: 6, column: 13, path: 'transforms[0].type' });
  });

  it('several pipelines per file, separated by ---; empty documents are ignored', () => {
    const pipelines = load(
      `name: a\nsource: { type: brands.query }\nsinks: [{ type: jsonl, path: a.jsonl }]\n---\n# only a comment\n---\nname: b\nsource: { type: organizations.query }\nsinks: [{ type: jsonl, path: b.jsonl }]\n---\n`,
    );
    expect(pipelines.map((p) => p.config.name)).toEqual(['a', 'b']);
    expect(() => load('# nothing\n')).toThrow('p.yml: the file holds no pipeline (it is empty)');
  });

  it('an error in the second document points into the second document', () => {
    expect(
      errorOf(
        'name: a\nsource: { type: brands.query }\nsinks: [{ type: jsonl, path: a.jsonl }]\n---\nname: b\nsource: { type: brand.query }\nsinks: [{ type: jsonl, path: b.jsonl }]\n',
      ).message,
    ).toMatch(/^p\.yml:6:17: source\.type: unknown source type "brand\.query"; did you mean "brands\.query"\?/);
  });

  it('state only for sources with updatedSince; accepted for products, media and news', () => {
    for (const type of ['products.query', 'products.stream', 'media.stream', 'updates.query']) {
      const filter = type.startsWith('products') ? '\n  filter: { status: active }' : '';
      expect(
        load(
          `name: s\nsource:\n  type: ${type}${filter}\nsinks: [{ type: jsonl, path: "s-{run}.jsonl" }]\nstate: { path: s.json }\n`,
        )[0]!.config.state,
      ).toEqual({ path: 's.json', overlapSeconds: 300 });
    }
    for (const type of ['brands.query', 'catalog-categories.query', 'corrections.query']) {
      expect(
        errorOf(
          `name: s\nsource: { type: ${type} }\nsinks: [{ type: jsonl, path: "s-{run}.jsonl" }]\nstate: { path: s.json }\n`,
        ).code,
      ).toBe('config.state');
    }
  });

  it('a secret from the environment never comes back in a message', () => {
    const secret = 'sup3r-s3cret-Zq9';
    const err = errorOf(
      products('connection: { apiSecret: "${CATALOG_API_SECRET}", rateLimit: "${CATALOG_API_SECRET}" }\n'),
      { CATALOG_API_SECRET: secret },
    );
    expect(err.message).toBe('p.yml:5:62: connection.rateLimit: expected a number, got "***"');
    expect(err.message).not.toContain(secret);
  });

  describe('from a file', () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'loader-'));
    });
    afterAll(() => rm(dir, { recursive: true, force: true }));

    it('names the file as given, and resolves paths against its folder', async () => {
      await writeFile(join(dir, 'ok.yml'), products());
      const [p] = await loadPipelineFile(join(dir, 'ok.yml'), registry);
      expect(p!.file).toBe(join(dir, 'ok.yml'));
      expect(p!.baseDir).toBe(dir);
      await expect(loadPipelineFile(join(dir, 'absent.yml'), registry)).rejects.toThrow(
        `${join(dir, 'absent.yml')}: cannot read the pipeline file (no such file)`,
      );
    });

    it('custom: the module must exist, relative to the pipeline file', async () => {
      await writeFile(join(dir, 'fn.mjs'), 'export default (r) => r;\n');
      await writeFile(join(dir, 'custom.yml'), products('transforms:\n  - { type: custom, module: ./fn.mjs }\n'));
      expect((await loadPipelineFile(join(dir, 'custom.yml'), registry))[0]!.config.transforms).toEqual([
        { type: 'custom', module: './fn.mjs' },
      ]);
      await writeFile(join(dir, 'custom.yml'), products('transforms:\n  - { type: custom, module: ./fm.mjs }\n'));
      await expect(loadPipelineFile(join(dir, 'custom.yml'), registry)).rejects.toThrow(
        `custom.yml:6:29: transforms[0].module: module "./fm.mjs" does not exist (looked for ${join(dir, 'fm.mjs')}`,
      );
    });
  });
});
