// The layers of src/ (ARCHITECTURE.md "Layers"), lowest first. A file may import its own layer
// and the layers below it, never one above, and no import circle is allowed (type-only imports
// count: a circle of types is still a circle to a reader). Run by `npm run lint:deps`.
//   base      src/*.ts (errors, events, values, closest-name, redactor), src/generated/ (option JSDoc types)
//   storage   src/storage/   local files written atomically
//   catalog   src/catalog/   the API as code
//   client    src/client/    HTTP, pacing, retries
//   core      src/core/      stage contract, registry, option parsing, record origin and schema
//   stages    src/sources/, src/transforms/, src/sinks/ (each independent of the other two)
//   pipeline  src/pipeline/  loader, runner, tee, state, the built-in registry
//   top       src/cli/, src/index.ts; src/sandbox/ is a test server beside the stack (base + catalog only)
const STAGES = '^src/(sources|transforms|sinks)/';
const ABOVE_CORE = '^src/(sources|transforms|sinks|pipeline|cli|sandbox)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Import circles hide which module is the lower one.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'base-is-bottom',
      severity: 'error',
      comment: 'src/*.ts helpers are below every folder.',
      from: { path: '^src/[^/]+\\.ts$', pathNot: '^src/index\\.ts$' },
      to: { path: '^src/[^/]+/' },
    },
    {
      name: 'storage-above-base',
      severity: 'error',
      comment: 'Storage writes bytes where it is told; it knows nothing of the API, stages or runs.',
      from: { path: '^src/storage/' },
      to: { path: '^src/(catalog|client|core|sources|transforms|sinks|pipeline|cli|sandbox)/' },
    },
    {
      name: 'catalog-below-client',
      severity: 'error',
      from: { path: '^src/catalog/' },
      to: { path: '^src/(client|core|sources|transforms|sinks|pipeline|cli|sandbox)/' },
    },
    {
      name: 'client-below-core',
      severity: 'error',
      from: { path: '^src/client/' },
      to: { path: '^src/(core|sources|transforms|sinks|pipeline|cli|sandbox)/' },
    },
    {
      name: 'core-below-stages',
      severity: 'error',
      comment: 'The stage contract knows no stage.',
      from: { path: '^src/core/' },
      to: { path: ABOVE_CORE },
    },
    {
      name: 'stages-independent',
      severity: 'error',
      comment:
        'A source, transform or sink gets what it needs from core or from the StageContext, not from another stage folder or the pipeline.',
      from: { path: STAGES },
      to: { path: '^src/(sources|transforms|sinks|pipeline|cli|sandbox)/', pathNot: '^src/$1/' },
    },
    {
      name: 'pipeline-below-cli',
      severity: 'error',
      from: { path: '^src/pipeline/' },
      to: { path: '^src/(cli|sandbox)/' },
    },
    {
      name: 'sandbox-beside',
      severity: 'error',
      comment: 'The sandbox imitates the API from its declaration only.',
      from: { path: '^src/sandbox/' },
      to: { path: '^src/(storage|client|core|sources|transforms|sinks|pipeline|cli)/' },
    },
    {
      name: 'generated-is-bottom',
      severity: 'error',
      comment: 'src/generated/ (npm run docs) holds types only and imports nothing of src/.',
      from: { path: '^src/generated/' },
      to: { path: '^src/', pathNot: '^src/generated/' },
    },
    {
      name: 'sinks-shared-is-neutral',
      severity: 'error',
      comment:
        'sinks/shared/ is what every format and destination uses (column types, JSON text, publication); it imports no sibling sink folder, so no format leaks into another (ARCHITECTURE.md "Sinks").',
      from: { path: '^src/sinks/shared/' },
      to: { path: '^src/sinks/', pathNot: '^src/sinks/shared/' },
    },
    {
      name: 'formats-independent',
      severity: 'error',
      comment:
        'An output format (parquet, csv, jsonl) shares code through sinks/shared/, never by importing another format.',
      from: { path: '^src/sinks/(parquet|csv|jsonl)/' },
      to: { path: '^src/sinks/(parquet|csv|jsonl)/', pathNot: '^src/sinks/$1/' },
    },
    { name: 'nothing-imports-the-entry', severity: 'error', from: { path: '^src/' }, to: { path: '^src/index\\.ts$' } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['es6'],
  },
};
