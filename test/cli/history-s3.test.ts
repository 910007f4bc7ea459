// `catalog-streams history` of pipelines that write to S3 (s3rver, as in lake-s3.test.ts): the
// history itself lives on S3 beside an s3:// state, and each row shows the objects and rows the
// run's `_manifest.json` lists. A key template with {run} keeps every run's manifest; one with
// only {date} keeps the day's last run's, so an earlier run of the day shows no objects ('-').
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HistoryRow } from '../../src/cli/history-command.js';
import type { RunSummary } from '../../src/pipeline/runner.js';
import type { S3Manifest } from '../../src/sinks/index.js';
import { startS3Server, S3RVER_CREDENTIALS, type S3TestServer } from '../helpers/s3-server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { readJson, runCli, sandboxEnv, workspace } from './cli-process.js';

describe('history of S3 pipelines (s3rver)', () => {
  let s3: S3TestServer;
  let sandbox: TestSandbox;
  let ws: Awaited<ReturnType<typeof workspace>>;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    [s3, sandbox, ws] = await Promise.all([
      startS3Server({ bucket: 'lake' }),
      startTestSandbox({ products: 700 }),
      workspace(),
    ]);
    env = sandboxEnv(sandbox, {
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      S3_ENDPOINT: s3.endpoint,
      LAKE_BUCKET: 'lake',
      LAKE_PREFIX: 'catalog',
      LAKE_PART_ROWS: '250',
    });
  });
  afterAll(async () => {
    await Promise.all([s3?.stop(), sandbox?.close(), ws?.remove()]);
  });

  const keys = async () =>
    ((await s3.client.send(new ListObjectsV2Command({ Bucket: 'lake' }))).Contents ?? []).map((c) => c.Key!).sort();
  const getJson = async <T>(key: string) =>
    JSON.parse(
      await (await s3.client.send(new GetObjectCommand({ Bucket: 'lake', Key: key }))).Body!.transformToString(),
    ) as T;
  const run = async (file: string, n: number): Promise<RunSummary> => {
    const summaryFile = join(ws.dir, `summary-${n}.json`);
    const r = await runCli(['run', file, '--quiet', '--summary-file', summaryFile], { cwd: ws.dir, env });
    expect(r.code, r.stderr).toBe(0);
    return (await readJson<{ pipelines: RunSummary[] }>(summaryFile)).pipelines[0]!;
  };
  const history = async (file: string): Promise<HistoryRow[]> => {
    const r = await runCli(['history', file, '--json'], { cwd: ws.dir, env });
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as HistoryRow[];
  };

  it("shows each run's objects and rows from its manifest, with the history kept on S3 beside the state", async () => {
    const file = 'pipelines/products-nightly-s3.yml';
    const first = await run(file, 1);
    sandbox.touch(['P0000007', 'P0000150', 'P0000600'], Math.floor(Date.now() / 1000) - 1);
    const second = await run(file, 2);
    expect(second.records.read).toBeLessThan(first.records.read);

    const all = await keys();
    // The history is on S3 (a file per run), nothing of it on local disk. Two runs in the same
    // second list in the order of their ids' random suffixes, so compare the sorted keys.
    expect(all.filter((k) => k.startsWith('catalog/state/history/'))).toEqual(
      [first, second].map((s) => `catalog/state/history/products-nightly-s3/${s.runId}.json`).sort(),
    );
    const rows = await history(file);
    expect(rows.map((r) => r.runId)).toEqual([first.runId, second.runId]);
    for (const [i, s] of [first, second].entries()) {
      const key = all.find(
        (k) => k.endsWith(`/run=${s.runId}/_manifest.json`) && k.startsWith('catalog/products-nightly/'),
      )!;
      const manifest = await getJson<S3Manifest>(key);
      expect(manifest.runId).toBe(s.runId);
      expect(rows[i]).toMatchObject({
        records: s.records.read,
        objects: manifest.files.length,
        objectRows: manifest.rows,
      });
    }
    // 250 rows a part: the full run wrote several objects, the incremental one a single one.
    expect(rows[0]!.objects).toBeGreaterThan(1);
    expect(rows[1]).toMatchObject({ objects: 1, objectRows: second.records.read - second.records.invalid });

    const text = await runCli(['history', file], { cwd: ws.dir, env });
    const lines = text.stdout.split('\n');
    expect(lines[0]).toBe(
      'products-nightly-s3: 2 runs (history s3://lake/catalog/state/history/products-nightly-s3.jsonl, s3 manifests s3://lake/catalog/products-nightly/)',
    );
    expect(lines[1]!.trim().split(/\s{2,}/)).toEqual([
      'date (UTC)',
      'run',
      'status',
      'records',
      'duration',
      'requests',
      '429s',
      'invalid',
      'objects',
      'object rows',
    ]);
    expect(text.stdout).toMatch(/^ {2}objects +[▁-█]{2} {2}min 1, max /m);
  });

  it("shows objects only for the day's last run when the key has {date} but no {run}", async () => {
    const file = 'pipelines/products-lake-s3.yml';
    const first = await run(file, 11);
    const second = await run(file, 12);
    const rows = await history(file);
    expect(rows.map((r) => r.runId)).toEqual([first.runId, second.runId]);
    const date = second.startedAt.slice(0, 10);
    const manifest = await getJson<S3Manifest>(`catalog/products/dt=${date}/_manifest.json`);
    expect(manifest.runId).toBe(second.runId);
    // The second run's manifest replaced the first's: the first run's objects are gone with it
    // (unless the runs straddled midnight UTC: then each day keeps its own manifest).
    if (first.startedAt.slice(0, 10) === date)
      expect(rows[0]).toMatchObject({ runId: first.runId, objects: null, objectRows: null });
    else expect(rows[0]!.objects).toBeGreaterThan(0);
    expect(rows[1]).toMatchObject({ runId: second.runId, objects: manifest.files.length, objectRows: manifest.rows });
    // The dead-letter sink writes manifests too, under rejected/: they are not this sink's.
    expect(rows[1]!.objectRows).toBe(second.records.read - second.records.invalid);
  });
});
