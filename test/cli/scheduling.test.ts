// The scheduling examples of docs/nightly-runs.md, run as written: the cron line through
// `sh -c` with cron's bare environment, and the Kubernetes CronJob's container
// (command, args, env) against the sandbox and a real S3-compatible server.
// Only the host-specific parts are mapped: the install folders to this
// checkout, the hosts to loopback servers. Each writes its data and its cursor
// to the same durable place, publishes metrics, and the CLI itself receives
// SIGTERM (exit 143, the cursor unchanged).
import { spawn } from 'node:child_process';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunSummary } from '../../src/pipeline/runner.js';
import { startS3Server, S3RVER_CREDENTIALS, type S3TestServer } from '../helpers/s3-server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { CLI, REPO, jsonLines, listFiles, readJson, workspace } from './cli-process.js';

const doc = await readFile(join(REPO, 'docs/nightly-runs.md'), 'utf8');
const section = doc.slice(doc.indexOf('## Scheduling\n'), doc.indexOf('\n## ', doc.indexOf('## Scheduling\n') + 3));
const blocks = [...section.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, text: m[2]! }));

function exitOf(child: ReturnType<typeof spawn>): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
}

function gaugeValues(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const f of parsePrometheusTextFormat(text) as Array<{
    name: string;
    metrics: Array<{ value: string; labels?: Record<string, string> }>;
  }>) {
    for (const m of f.metrics) out[`${f.name}${m.labels?.pipeline ? `{${m.labels.pipeline}}` : ''}`] = Number(m.value);
  }
  return out;
}

describe('the scheduling examples of docs/nightly-runs.md', () => {
  it('has exactly the cron and Kubernetes examples this file runs, neither through npx', () => {
    expect(blocks.map((b) => b.lang)).toEqual(['cron', 'yaml']);
    for (const b of blocks) expect(b.text).not.toMatch(/\bnpx\b|\bnpm run\b/);
  });

  describe('cron', () => {
    let sandbox: TestSandbox;
    let ws: Awaited<ReturnType<typeof workspace>>;
    let command: string;
    const cronEnv = () => ({ PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, HOME: ws.dir, SHELL: '/bin/sh' });

    beforeAll(async () => {
      [sandbox, ws] = await Promise.all([startTestSandbox({ products: 1500 }), workspace()]);
      const line = blocks[0]!.text.split('\n').find((l) => l.trim() !== '' && !l.startsWith('#'))!;
      // Five schedule fields, then the command cron hands to sh -c.
      const schedule = line.trim().split(/\s+/).slice(0, 5).join(' ');
      expect(schedule).toBe('15 2 * * *');
      command = line
        .trim()
        .replace(/^(\S+\s+){5}/, '')
        .replaceAll('/var/lib/node_exporter/textfile', join(ws.dir, 'textfile'))
        .replaceAll('/srv/catalog', ws.dir);
      // The folder as the README describes it: the package's bin, catalog.env, logs/.
      await mkdir(join(ws.dir, 'node_modules/.bin'), { recursive: true });
      await writeFile(
        join(ws.dir, 'node_modules/.bin/catalog-streams'),
        `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} "$@"\n`,
      );
      await chmod(join(ws.dir, 'node_modules/.bin/catalog-streams'), 0o755);
      await mkdir(join(ws.dir, 'logs'));
      await mkdir(join(ws.dir, 'textfile'));
    });
    afterAll(async () => {
      await sandbox?.close();
      await ws?.remove();
    });

    const env = async (rateLimit: string) =>
      writeFile(
        join(ws.dir, 'catalog.env'),
        `export CATALOG_BASE_URL=${sandbox.url} CATALOG_API_KEY=${sandbox.credentials.apiKey} CATALOG_API_SECRET=${sandbox.credentials.apiSecret} CATALOG_RATE_LIMIT=${rateLimit}\n`,
      );

    it('runs the nightly extract: data and cursor on the same disk, the log, the summary and the metrics', async () => {
      await env('0');
      const result = await exitOf(spawn('/bin/sh', ['-c', command], { env: cronEnv(), stdio: 'ignore' }));
      const log = await readFile(join(ws.dir, 'logs/nightly.log'), 'utf8');
      expect(result.code, log).toBe(0);
      expect(jsonLines(log).at(-1)).toMatchObject({ event: 'summary', status: 'succeeded' });
      const { exitCode, pipelines } = await readJson<{ exitCode: number; pipelines: RunSummary[] }>(
        join(ws.dir, 'logs/nightly-summary.json'),
      );
      expect(exitCode).toBe(0);
      expect(pipelines[0]!.outputs.filter((o) => o.sink === 'parquet').map((o) => o.location)).toEqual([
        expect.stringMatching(new RegExp(`^${ws.dir}/out/products-nightly/dt=`)),
      ]);
      expect(pipelines[0]!.cursor).toMatchObject({
        stored: true,
        location: join(ws.dir, '.state/products-nightly.json'),
      });
      const metrics = gaugeValues(await readFile(join(ws.dir, 'textfile/catalog_nightly.prom'), 'utf8'));
      expect(metrics['catalog_streams_exit_code{products-nightly}']).toBe(0);
      expect(metrics['catalog_streams_last_success_timestamp_seconds{products-nightly}']).toBe(
        Date.parse(pipelines[0]!.finishedAt) / 1000,
      );
    });

    it('SIGTERM reaches the CLI through the cron line (exec): exit 143, the cursor unchanged', async () => {
      const cursor = await readFile(join(ws.dir, '.state/products-nightly.json'), 'utf8');
      // Paced at 2 requests/s and a full refresh: a run long enough to stop in the middle.
      await env('120');
      const child = spawn(
        '/bin/sh',
        [
          '-c',
          command.replace(' run pipelines/products-nightly.yml', ' run pipelines/products-nightly.yml --full-refresh'),
        ],
        { env: cronEnv(), stdio: 'ignore' },
      );
      const done = exitOf(child);
      const logFile = join(ws.dir, 'logs/nightly.log');
      // The log is appended to: wait for this run's own `started` line.
      const startedLines = async () =>
        ((await readFile(logFile, 'utf8').catch(() => '')).match(/"event":"started"/g) ?? []).length;
      const before = await startedLines();
      for (let i = 0; i < 200 && (await startedLines()) === before; i++) await sleep(50);
      await sleep(800);
      child.kill('SIGTERM');
      const result = await done;
      expect(result, await readFile(logFile, 'utf8')).toEqual({ code: 143, signal: null });
      expect(await readFile(join(ws.dir, '.state/products-nightly.json'), 'utf8')).toBe(cursor);
    });
  });

  describe('Kubernetes CronJob', () => {
    let sandbox: TestSandbox;
    let s3: S3TestServer;
    let pod: Awaited<ReturnType<typeof workspace>>;
    let gateway: ReturnType<typeof createServer>;
    const pushes: string[] = [];
    beforeAll(async () => {
      [sandbox, s3, pod] = await Promise.all([
        startTestSandbox({ products: 1500 }),
        startS3Server({ bucket: 'my-lake' }),
        workspace('catalog-streams-pod-'),
      ]);
      gateway = createServer((req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          pushes.push(body);
          res.writeHead(200).end();
        });
      });
      await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    });
    afterAll(async () => {
      await Promise.all([
        sandbox?.close(),
        s3?.stop(),
        pod?.remove(),
        new Promise((resolve) => gateway?.close(resolve)),
      ]);
    });

    it('the container as written: data, dead letters and the cursor on S3, nothing on the pod, metrics pushed; the next run is incremental', async () => {
      const cronJob = parseYaml(blocks[1]!.text) as any;
      expect(cronJob.kind).toBe('CronJob');
      const container = cronJob.spec.jobTemplate.spec.template.spec.containers[0];
      expect(container.command).toEqual(['/app/node_modules/.bin/catalog-streams']);
      const gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
      const args = (container.args as string[]).map((a) =>
        a
          .replace('/app/node_modules/catalog-streams/', `${REPO}/`)
          .replace('http://pushgateway.monitoring:9091', gatewayUrl),
      );
      const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: pod.dir };
      for (const e of container.env as Array<{
        name: string;
        value?: string;
        valueFrom?: { secretKeyRef: { key: string } };
      }>) {
        env[e.name] =
          e.value ??
          (e.valueFrom!.secretKeyRef.key === 'key' ? sandbox.credentials.apiKey : sandbox.credentials.apiSecret);
      }
      // The cluster's parts: the API host, and the pod's AWS identity pointing at s3rver.
      Object.assign(env, {
        CATALOG_BASE_URL: sandbox.url,
        CATALOG_RATE_LIMIT: '0',
        S3_ENDPOINT: s3.endpoint,
        AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      });

      const run = async () => {
        const child = spawn(process.execPath, [CLI, ...args], {
          cwd: pod.dir,
          env,
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
        const { code } = await exitOf(child);
        expect(code, stderr).toBe(0);
        return jsonLines(stderr).find((l) => l.event === 'summary')! as unknown as RunSummary;
      };
      const before = await listFiles(pod.dir);
      const first = await run();
      expect(first.records.read).toBeGreaterThan(0);
      const keys = async () =>
        ((await s3.client.send(new ListObjectsV2Command({ Bucket: 'my-lake' }))).Contents ?? [])
          .map((c) => c.Key!)
          .sort();
      const afterFirst = await keys();
      expect(
        afterFirst.filter((k) =>
          /^catalog\/products-nightly\/dt=\d{4}-\d\d-\d\d\/run=[^/]+\/part-00000\.parquet$/.test(k),
        ),
      ).toHaveLength(1);
      expect(afterFirst.filter((k) => k.endsWith('/_manifest.json')).length).toBeGreaterThanOrEqual(1);
      expect(afterFirst).toContain('catalog/state/products-nightly-s3.json');
      const state = JSON.parse(
        await (
          await s3.client.send(
            new GetObjectCommand({ Bucket: 'my-lake', Key: 'catalog/state/products-nightly-s3.json' }),
          )
        ).Body!.transformToString(),
      ) as { cursor: number };

      const second = await run();
      expect(JSON.stringify(second.sourceFilter)).toContain(`"updatedSince":{"from":${state.cursor},"until":`);
      expect(second.records.read).toBeLessThanOrEqual(first.records.read);
      // Nothing on the pod's disk.
      expect(await listFiles(pod.dir)).toEqual(before);
      expect(pushes).toHaveLength(2);
      expect(gaugeValues(pushes[1]!)).toMatchObject({
        'catalog_streams_exit_code{products-nightly-s3}': 0,
        'catalog_streams_last_run_succeeded{products-nightly-s3}': 1,
      });
    });
  });
});
