// A dataset with {run} in its path or key adds each run's files beside the earlier runs': nothing
// supersedes a killed run's parts, so a glob reader would count them for ever. Its write journal
// lets the next run remove them, locally and on S3 (the shipped nightly-S3 shape), and nothing
// else: files and objects of others under the same root (a README, another tool's part in a run=
// folder, an object named like ours without our metadata) stay byte for byte.
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3RVER_CREDENTIALS, startS3Server, type S3TestServer } from '../helpers/s3-server.js';
import { faultFixture, jsonLines, runCli, sandboxEnv, summaryRunId } from './support.js';

const LOCAL = `name: local-runs
source: { type: products.query, filter: { status: [active, inactive, replaced] } }
sinks:
  - { type: jsonl, path: "out/dt={date}/run={run}/part-{part}.jsonl", maxRows: 40 }
`;

const S3 = `name: nightly
source: { type: products.query, filter: { status: [active, inactive, replaced] } }
sinks:
  - type: s3
    format: jsonl
    bucket: lake
    key: "catalog/{name}/dt={date}/run={run}/part-{part}.jsonl"
    maxRows: 40
`;

async function tree(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const rel = `${prefix}${entry.name}`;
    if (entry.isDirectory()) out.push(...(await tree(join(dir, entry.name), `${rel}/`)));
    else out.push(rel);
  }
  return out.sort();
}

const runFolders = (files: string[]) => [...new Set(files.map((f) => /run=([^/]+)\//.exec(f)?.[1]).filter(Boolean))];

describe('a {run} dataset: a killed run leaves nothing after the next good run', () => {
  const local = faultFixture('local-runs', LOCAL, { products: 160, seed: 7 });

  it('locally: the parts a killed run renamed go, foreign files stay', async () => {
    const foreign = {
      'out/README.md': 'the lake folder, by the data team\n',
      'out/dt=2020-01-01/run=spark-job/part-00000.jsonl': '{"id":"from another tool"}\n',
    };
    for (const [rel, body] of Object.entries(foreign)) await local.ws.write(rel, body);
    const env = sandboxEnv(local.sandbox);
    const killed = await runCli(['run', local.ws.file], {
      cwd: local.ws.dir,
      env: { ...env, CATALOG_STREAMS_TEST_KILL_AT_STEP: 'rename:/run=:2' },
    });
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    const afterKill = await tree(local.ws.path("out"));
    const killedRun = runFolders(afterKill).find((r) => r !== 'spark-job')!;
    expect(
      afterKill.filter((f) => f.includes(`run=${killedRun}/part-`)),
      'the kill left renamed parts',
    ).not.toEqual([]);

    const good = await runCli(['run', local.ws.file], { cwd: local.ws.dir, env });
    expect(good.code, good.stderr).toBe(0);
    const runId = summaryRunId(good.stderr);
    const after = await tree(local.ws.path('out'));
    expect(
      after.filter((f) => f.includes(killedRun)),
      "the killed run's parts",
    ).toEqual([]);
    expect(runFolders(after).sort()).toEqual([runId, 'spark-job'].sort());
    expect(after.filter((f) => f.includes(`run=${runId}/`))).toHaveLength(4);
    expect(
      after.some((f) => f.includes('_journal') || f.includes('.lock')),
      after.join('\n'),
    ).toBe(false);
    for (const [rel, body] of Object.entries(foreign)) expect(await readFile(local.ws.path(rel), 'utf8')).toBe(body);
    expect(jsonLines(good.stderr).some((l) => l.code === 'stale_temp_removed')).toBe(true);
  });
});

describe('a {run} dataset on S3 (the nightly-S3 shape)', () => {
  const f = faultFixture('nightly', S3, { products: 160, seed: 9 });
  let s3: S3TestServer;
  beforeAll(async () => {
    s3 = await startS3Server({ bucket: 'lake' });
  });
  afterAll(() => s3?.stop());

  const env = () =>
    sandboxEnv(f.sandbox, {
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      S3_ENDPOINT: s3.endpoint,
    });
  const keys = async () =>
    ((await s3.client.send(new ListObjectsV2Command({ Bucket: 'lake' }))).Contents ?? []).map((c) => c.Key!).sort();
  const body = async (Key: string) =>
    Buffer.from(
      await (await s3.client.send(new GetObjectCommand({ Bucket: 'lake', Key }))).Body!.transformToByteArray(),
    ).toString('utf8');

  it('parts uploaded before a kill, with no manifest, go at the next good run; foreign objects stay', async () => {
    const foreign = {
      'catalog/nightly/README.md': 'ours, not the toolkit’s\n',
      // Named exactly like a part of ours, in a run folder, without our metadata.
      'catalog/nightly/dt=2020-01-01/run=20200101T000000Z-aaaaaa/part-00000.jsonl': '{"id":"planted"}\n',
    };
    for (const [Key, Body] of Object.entries(foreign))
      await s3.client.send(new PutObjectCommand({ Bucket: 'lake', Key, Body }));
    const killed = await runCli(['run', f.ws.file], {
      cwd: f.ws.dir,
      env: { ...env(), CATALOG_STREAMS_TEST_KILL_AT_STEP: 'complete-upload:/run=:3' },
    });
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    const afterKill = await keys();
    const killedRun = runFolders(afterKill).find((r) => !r!.startsWith('2020'))!;
    expect(afterKill.filter((k) => k.includes(`run=${killedRun}/part-`))).toHaveLength(2);
    expect(afterKill.some((k) => k.includes(`run=${killedRun}/_manifest.json`))).toBe(false);

    const runs: string[] = [];
    for (let i = 0; i < 2; i++) {
      const good = await runCli(['run', f.ws.file], { cwd: f.ws.dir, env: env() });
      expect(good.code, good.stderr).toBe(0);
      runs.push(summaryRunId(good.stderr));
    }
    const after = await keys();
    expect(
      after.filter((k) => k.includes(killedRun)),
      "the killed run's objects",
    ).toEqual([]);
    for (const runId of runs) {
      expect(after.filter((k) => k.includes(`run=${runId}/part-`))).toHaveLength(4);
      expect(after).toContain(after.find((k) => k.endsWith(`run=${runId}/_manifest.json`)));
    }
    expect(after.filter((k) => k.includes('_journal/') || k.includes('.lock'))).toEqual([]);
    for (const [Key, text] of Object.entries(foreign)) expect(await body(Key)).toBe(text);
  });
});
