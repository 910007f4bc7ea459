// --metrics-file (Prometheus text format for node_exporter's textfile
// collector, written atomically) and --pushgateway, read back with an
// independent Prometheus text parser: per pipeline the last success time,
// records read / written per sink / invalid, requests, retries, 429s, duration;
// the exit code of the run. A failed run keeps the previous last success.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunSummary } from '../../src/pipeline/runner.js';
import { REPO, jsonLines, readJson, runCli, sandboxEnv, useSandboxWorkspace } from './cli-process.js';

/** The pipeline names of a shipped file, in order (the file decides how many there are). */
const namesOf = (text: string) => [...text.matchAll(/^name: (\S+)$/gm)].map((m) => m[1]!);
const REFERENCE = namesOf(readFileSync(join(REPO, 'pipelines/reference-data.yml'), 'utf8'));

interface Family {
  name: string;
  help: string;
  type: string;
  metrics: Array<{ value: string; labels?: Record<string, string> }>;
}

/** `{ metric name: { label set as JSON: value } }` from the text format. */
function parse(text: string): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const f of parsePrometheusTextFormat(text) as Family[]) {
    expect(f.type, f.name).toBe('GAUGE');
    expect(f.help.length, f.name).toBeGreaterThan(10);
    out[f.name] = Object.fromEntries(f.metrics.map((m) => [JSON.stringify(m.labels ?? {}), Number(m.value)]));
  }
  return out;
}

const p = (pipeline: string, extra: Record<string, string> = {}) => JSON.stringify({ pipeline, ...extra });
/** The exit code series: one per pipeline of the file, each with the file's exit code. */
const exitCodes = (code: number) => Object.fromEntries(REFERENCE.map((n) => [p(n), code]));
const KEY = 'metrics-key';
const SECRET = 'metrics-secret-value';

describe('run metrics', () => {
  const shared = useSandboxWorkspace({ products: 300, credentials: { apiKey: KEY, apiSecret: SECRET } });
  const env = (secret = SECRET) => sandboxEnv(shared.sandbox, { CATALOG_API_KEY: KEY, CATALOG_API_SECRET: secret });

  it('--metrics-file: the metrics of a successful run, then a failed one keeps the last success', async () => {
    const file = join(shared.ws.dir, 'textfile/catalog-streams.prom');
    const ok = await runCli(
      ['run', 'pipelines/reference-data.yml', '--metrics-file', file, '--summary-file', 'summary.json', '--quiet'],
      { cwd: shared.ws.dir, env: env() },
    );
    expect(ok.code, ok.stderr).toBe(0);
    const { pipelines: summaries } = await readJson<{ pipelines: RunSummary[] }>(join(shared.ws.dir, 'summary.json'));
    const first = parse(await readFile(file, 'utf8'));
    expect(first.catalog_streams_exit_code).toEqual(exitCodes(0));
    expect(Object.keys(first.catalog_streams_last_success_timestamp_seconds!).sort()).toEqual(
      REFERENCE.map((n) => p(n)).sort(),
    );
    for (const s of summaries) {
      expect(first.catalog_streams_last_success_timestamp_seconds![p(s.pipeline)]).toBe(
        Date.parse(s.finishedAt) / 1000,
      );
      expect(first.catalog_streams_last_run_succeeded![p(s.pipeline)]).toBe(1);
      expect(first.catalog_streams_last_run_records_read![p(s.pipeline)]).toBe(s.records.read);
      expect(first.catalog_streams_last_run_records_written![p(s.pipeline, { sink: 'parquet' })]).toBe(
        s.records.written.parquet,
      );
      expect(first.catalog_streams_last_run_records_invalid![p(s.pipeline)]).toBe(s.records.invalid);
      expect(first.catalog_streams_last_run_requests![p(s.pipeline)]).toBe(s.requests);
      expect(first.catalog_streams_last_run_retries![p(s.pipeline)]).toBe(0);
      expect(first.catalog_streams_last_run_throttled_requests![p(s.pipeline)]).toBe(0);
      expect(first.catalog_streams_last_run_duration_seconds![p(s.pipeline)]).toBe(s.durationMs / 1000);
    }
    expect(summaries.every((s) => s.records.read > 0)).toBe(true);
    // Every metric is in the table of docs/nightly-runs.md.
    const doc = await readFile(join(REPO, 'docs/nightly-runs.md'), 'utf8');
    for (const name of Object.keys(first))
      expect(doc).toContain(
        name.replace(/^catalog_streams_last_run_(?!timestamp|succeeded|duration|records_read|records_written)/, '..._'),
      );

    const failed = await runCli(['run', 'pipelines/reference-data.yml', '--metrics-file', file, '--quiet'], {
      cwd: shared.ws.dir,
      env: env('wrong-secret'),
    });
    expect(failed.code, failed.stderr).toBe(1);
    const second = parse(await readFile(file, 'utf8'));
    expect(second.catalog_streams_exit_code).toEqual(exitCodes(1));
    for (const s of summaries) {
      expect(second.catalog_streams_last_run_succeeded![p(s.pipeline)]).toBe(0);
      // What an alert compares with now: still the success of the first run.
      expect(second.catalog_streams_last_success_timestamp_seconds![p(s.pipeline)]).toBe(
        Date.parse(s.finishedAt) / 1000,
      );
      expect(second.catalog_streams_last_run_timestamp_seconds![p(s.pipeline)]).toBeGreaterThan(
        Date.parse(s.finishedAt) / 1000,
      );
    }
    // Written by rename: no temp file beside it.
    expect(await readdir(join(shared.ws.dir, 'textfile'))).toEqual(['catalog-streams.prom']);
    expect(await readFile(file, 'utf8')).not.toContain('wrong-secret');
  });

  describe('--pushgateway', () => {
    let server: ReturnType<typeof createServer>;
    let url: string;
    let status = 200;
    const pushes: Array<{ method: string; url: string; body: string }> = [];
    beforeAll(async () => {
      server = createServer((req: IncomingMessage, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          pushes.push({ method: req.method!, url: req.url!, body });
          res.writeHead(status).end(status === 200 ? '' : 'no room');
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it('POSTs the metrics to /metrics/job/catalog-streams/pipeline_file/<file>', async () => {
      const { code, stderr } = await runCli(['run', 'pipelines/reference-data.yml', '--pushgateway', url, '--quiet'], {
        cwd: shared.ws.dir,
        env: env(),
      });
      expect(code, stderr).toBe(0);
      expect(pushes).toHaveLength(1);
      expect(pushes[0]).toMatchObject({
        method: 'POST',
        url: '/metrics/job/catalog-streams/pipeline_file/reference-data.yml',
      });
      const pushed = parse(pushes[0]!.body);
      expect(pushed.catalog_streams_exit_code).toEqual(exitCodes(0));
      expect(Object.keys(pushed.catalog_streams_last_success_timestamp_seconds!)).toHaveLength(REFERENCE.length);
    });

    it('a Pushgateway that refuses: one error line naming it; the run keeps its exit code', async () => {
      status = 500;
      const { code, stderr } = await runCli(['run', 'pipelines/reference-data.yml', '--pushgateway', url, '--quiet'], {
        cwd: shared.ws.dir,
        env: env(),
      });
      status = 200;
      expect(code, stderr).toBe(0);
      const errors = jsonLines(stderr).filter((l) => l.level === 'error');
      expect(errors).toEqual([
        expect.objectContaining({
          event: 'metrics.failed',
          message: expect.stringContaining(
            `--pushgateway: pushing metrics to the Pushgateway at ${new URL(url).host} failed: push failed with status 500`,
          ),
        }),
      ]);
    });
  });
});
