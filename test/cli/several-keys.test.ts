// Several API keys from the command line: CATALOG_API_KEY / CATALOG_API_SECRET as comma-separated
// lists, or a pipeline file's connection.credentials. A list mismatch is a usage error naming the
// counts; a key the service refuses fails the run naming its position; no key or secret value is
// ever printed. The dry-run plan shows the keys and estimates with their budgets together.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanEnv, jsonLines, runMain, useSandboxWorkspace } from './cli-process.js';

const KEYS = [
  { apiKey: 'cli-key-alpha', apiSecret: 'cli-secret-alpha' },
  { apiKey: 'cli-key-bravo', apiSecret: 'cli-secret-bravo' },
  { apiKey: 'cli-key-charlie', apiSecret: 'cli-secret-charlie' },
];
const VALUES = /cli-(key|secret)-/;

describe('several keys', () => {
  const shared = useSandboxWorkspace({
    products: 300,
    credentials: KEYS[0],
    extraCredentials: KEYS.slice(1),
    rateLimit: 0,
  });
  const pipeline = (name: string, connection = '') =>
    `name: ${name}\n${connection}source: { type: products.query, filter: { status: active }, pageSize: 10 }\nsinks: [{ type: jsonl, path: out/${name}.jsonl }]\n`;
  const envOf = (keys: string, secrets: string, extra: Record<string, string> = {}) =>
    cleanEnv({
      CATALOG_BASE_URL: shared.sandbox.url,
      CATALOG_API_KEY: keys,
      CATALOG_API_SECRET: secrets,
      CATALOG_RATE_LIMIT: '0',
      ...extra,
    });
  const list = (field: 'apiKey' | 'apiSecret', keys = KEYS) => keys.map((k) => k[field]).join(',');

  it('CATALOG_API_KEY and CATALOG_API_SECRET of different lengths: exit 2 naming both counts, no value', async () => {
    const file = join(shared.ws.dir, 'mismatch.yml');
    await writeFile(file, pipeline('mismatch'));
    const { code, stderr } = await runMain(
      ['run', file, '--log-format', 'pretty'],
      envOf(list('apiKey'), list('apiSecret', KEYS.slice(0, 2))),
    );
    expect(code).toBe(2);
    expect(stderr).toBe(
      'catalog-streams run: CATALOG_API_KEY lists 3 keys but CATALOG_API_SECRET lists 2 secrets: give one secret per key, comma-separated in the same order\n',
    );
    expect(stderr).not.toMatch(VALUES);
  });

  it('three keys from the environment: every product once, the requests spread evenly over the keys', async () => {
    const file = join(shared.ws.dir, 'env-keys.yml');
    await writeFile(file, pipeline('env-keys'));
    const before = shared.sandbox.stats.byCredential.map((c) => c.admitted);
    const { code, stderr } = await runMain(['run', file], envOf(list('apiKey'), list('apiSecret')));
    expect(code).toBe(0);
    expect(stderr).not.toMatch(VALUES);
    const started = jsonLines(stderr).find((l) => l.event === 'started')!;
    expect(started.keys).toBe(3);
    const used = shared.sandbox.stats.byCredential.map((c, i) => c.admitted - before[i]!);
    expect(Math.max(...used) - Math.min(...used)).toBeLessThanOrEqual(1);
    expect(Math.min(...used)).toBeGreaterThan(0);
    const ids = (await readFile(join(shared.ws.dir, 'out/env-keys.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { id: string }).id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBeGreaterThan(0);
  });

  it('a key the service refuses: exit 1 naming it by position and the documented outcome, no value', async () => {
    const file = join(shared.ws.dir, 'refused.yml');
    await writeFile(file, pipeline('refused'));
    const keys = [KEYS[0]!, { apiKey: 'cli-key-revoked', apiSecret: 'cli-secret-revoked' }, KEYS[2]!];
    const { code, stderr } = await runMain(['run', file], envOf(list('apiKey', keys), list('apiSecret', keys)));
    expect(code).toBe(1);
    expect(stderr).not.toMatch(VALUES);
    const failed = jsonLines(stderr).find((l) => l.event === 'failed')!;
    expect(failed.code).toBe('auth.unauthorized');
    expect(failed.message).toContain('rejected key 2 of 3 (401');
    expect(failed.message).toContain('check entry 2 of CATALOG_API_KEY and CATALOG_API_SECRET in the environment');
    expect(failed.message).toContain('a run fails when any of its keys is refused');
  });

  it("a file's connection.credentials: the dry run shows the keys and the estimate with their budgets together", async () => {
    const file = join(shared.ws.dir, 'block-keys.yml');
    const credentials = KEYS.map((_, i) => `{ apiKey: "\${K${i}}", apiSecret: "\${S${i}}" }`).join(', ');
    await writeFile(file, pipeline('block-keys', `connection: { rateLimit: 120, credentials: [${credentials}] }\n`));
    const env = cleanEnv({
      CATALOG_BASE_URL: shared.sandbox.url,
      ...Object.fromEntries(KEYS.flatMap((k, i) => [[`K${i}`, k.apiKey] as const, [`S${i}`, k.apiSecret] as const])),
    });
    const { code, stdout, stderr } = await runMain(['run', file, '--dry-run', '--log-format', 'pretty'], env);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/~\d+ requests?, ~\d+:\d\d at 3 keys × 120 requests\/min \(360\/min\)/);
    expect(stdout).not.toMatch(VALUES);

    const json = await runMain(['run', file, '--dry-run'], env);
    const plan = jsonLines(json.stderr).find((l) => l.event === 'plan')!;
    expect(plan.keys).toBe(3);
    expect(plan.rateLimit).toBe(120);
    expect(plan.estimatedSeconds).toBe(Math.round((plan.requests * 60) / 360));
  });

  it('a mistake inside connection.credentials is reported at its place, the value masked', async () => {
    const file = join(shared.ws.dir, 'typo.yml');
    await writeFile(
      file,
      pipeline(
        'typo',
        'connection: { credentials: [{ apiKey: "${K0}", apiSecret: "${S0}" }, { apiKey: 4242424242 }] }\n',
      ),
    );
    const env = cleanEnv({ CATALOG_BASE_URL: shared.sandbox.url, K0: KEYS[0]!.apiKey, S0: KEYS[0]!.apiSecret });
    const { code, stderr } = await runMain(['run', file, '--log-format', 'pretty'], env);
    expect(code).toBe(2);
    expect(stderr).toContain('connection.credentials[1].apiKey: expected a string, got ***');
    expect(stderr).toContain('connection.credentials[1].apiSecret');
    expect(stderr).not.toContain('4242424242');
    expect(stderr).not.toMatch(VALUES);
  });

  it('credentials beside apiKey in one connection block is a config error', async () => {
    const file = join(shared.ws.dir, 'both.yml');
    await writeFile(
      file,
      pipeline('both', 'connection: { apiKey: "${K0}", credentials: [{ apiKey: "${K1}", apiSecret: "${S1}" }] }\n'),
    );
    const env = cleanEnv({
      CATALOG_BASE_URL: shared.sandbox.url,
      K0: KEYS[0]!.apiKey,
      K1: KEYS[1]!.apiKey,
      S1: KEYS[1]!.apiSecret,
    });
    const { code, stderr } = await runMain(['run', file, '--log-format', 'pretty'], env);
    expect(code).toBe(2);
    expect(stderr).toBe(
      `catalog-streams run: ${file}: connection has both credentials and apiKey: list every key under credentials, or give apiKey and apiSecret alone\n`,
    );
  });
});
