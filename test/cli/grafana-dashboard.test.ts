// The shipped Grafana dashboard (examples/grafana/catalog-streams.json) queries only metrics the
// run command exports (a renamed gauge would leave an empty panel nobody notices), and shows every
// one of them. The names come from the code's own registry, not from a list in this file.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runMetrics } from '../../src/cli/metrics.js';
import { REPO } from './cli-process.js';

const dashboard = JSON.parse(await readFile(join(REPO, 'examples/grafana/catalog-streams.json'), 'utf8')) as {
  panels: Array<{ title: string; datasource: { uid: string }; targets: Array<{ expr: string }> }>;
  templating: { list: Array<{ query: { query: string } }> };
};
const exported = runMetrics({ file: 'x.yml', summaries: [], pipelines: [], exitCode: 0, finishedAt: new Date() })
  .getMetricsAsArray()
  .map((m) => m.name);

const queries = [
  ...dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr)),
  ...dashboard.templating.list.map((v) => v.query.query),
];
const queried = new Set(queries.flatMap((q) => q.match(/\bcatalog_streams_\w+/g) ?? []));

describe('examples/grafana/catalog-streams.json', () => {
  it('reads the metric names from the code', () => {
    expect(exported.length).toBeGreaterThan(5);
    expect(exported.every((n) => n.startsWith('catalog_streams_'))).toBe(true);
  });

  it('queries only metrics the run command exports', () => {
    expect([...queried].filter((n) => !exported.includes(n))).toEqual([]);
  });

  it('shows every exported metric', () => {
    expect(exported.filter((n) => !queried.has(n))).toEqual([]);
  });

  it('filters every query by the $pipeline variable: each metric is labelled by pipeline', () => {
    for (const q of dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr)))
      expect(q).toMatch(/\bcatalog_streams_\w+\{pipeline=~"\$pipeline"\}/);
  });

  it('takes its Prometheus data source as an import input in every panel', () => {
    for (const p of dashboard.panels) expect(p.datasource.uid, p.title).toBe('${DS_PROMETHEUS}');
  });
});
