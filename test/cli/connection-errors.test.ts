// Connection mistakes a user makes while setting up: a base URL without its
// scheme is a usage error (exit 2) naming where it was set; a refused
// credential names where the key and secret came from (the environment or the
// file's connection: block), so the user knows which one to fix.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanEnv, jsonLines, runMain, sandboxEnv, useSandboxWorkspace } from './cli-process.js';

const KEY = 'conn-key';
const SECRET = 'conn-secret-value';

describe('connection errors', () => {
  const shared = useSandboxWorkspace({ products: 100, credentials: { apiKey: KEY, apiSecret: SECRET } });
  const pipeline = (connection = '') =>
    `name: brands\n${connection}source: { type: brands.query }\nsinks: [{ type: jsonl, path: out/brands.jsonl }]\n`;

  it('CATALOG_BASE_URL without a scheme: exit 2 naming the variable and the fix, nothing sent', async () => {
    const file = join(shared.ws.dir, 'brands.yml');
    await writeFile(file, pipeline());
    const env = cleanEnv({ CATALOG_BASE_URL: '127.0.0.1:42911', CATALOG_API_KEY: KEY, CATALOG_API_SECRET: SECRET });
    const { code, stderr } = await runMain(['run', file, '--log-format', 'pretty'], env);
    expect(code).toBe(2);
    expect(stderr).toBe(
      'catalog-streams run: CATALOG_BASE_URL must be an http:// or https:// URL such as https://api.example.com, got "127.0.0.1:42911"; add the scheme: http://127.0.0.1:42911 or https://127.0.0.1:42911\n',
    );
    const json = await runMain(['run', file, '--dry-run'], env);
    expect(json.code).toBe(2);
    expect(jsonLines(json.stderr)).toEqual([
      expect.objectContaining({ level: 'error', code: 'config.connection', exitCode: 2, path: 'CATALOG_BASE_URL' }),
    ]);
  });

  it('connection.baseUrl without a scheme names the file, line, column and the field', async () => {
    const file = join(shared.ws.dir, 'no-scheme.yml');
    await writeFile(file, pipeline('connection: { baseUrl: "api.example.com" }\n'));
    const { code, stderr } = await runMain(
      ['run', file, '--log-format', 'pretty'],
      cleanEnv({ CATALOG_API_KEY: KEY, CATALOG_API_SECRET: SECRET }),
    );
    expect(code).toBe(2);
    expect(stderr).toBe(
      `catalog-streams run: ${file}:2:24: connection.baseUrl: must be an absolute URL such as https://api.example.com\n`,
    );
  });

  it('a refused key names where it came from: the environment, or the connection: block', async () => {
    const envFile = join(shared.ws.dir, 'env-creds.yml');
    await writeFile(envFile, pipeline());
    const fromEnv = await runMain(
      ['run', envFile, '--quiet'],
      sandboxEnv(shared.sandbox, { CATALOG_API_KEY: KEY, CATALOG_API_SECRET: 'wrong' }),
    );
    expect(fromEnv.code).toBe(1);
    expect(jsonLines(fromEnv.stderr).find((l) => l.event === 'failed')!.message).toContain(
      'check CATALOG_API_KEY and CATALOG_API_SECRET in the environment, and that they belong',
    );

    const blockFile = join(shared.ws.dir, 'block-creds.yml');
    await writeFile(blockFile, pipeline('connection: { apiKey: "${BRANDS_KEY}", apiSecret: "${BRANDS_SECRET}" }\n'));
    const env = sandboxEnv(shared.sandbox, {
      CATALOG_API_KEY: undefined,
      CATALOG_API_SECRET: undefined,
      BRANDS_KEY: KEY,
      BRANDS_SECRET: 'wrong',
    });
    delete env.CATALOG_API_KEY;
    delete env.CATALOG_API_SECRET;
    const fromBlock = await runMain(['run', blockFile, '--quiet'], env);
    expect(fromBlock.code).toBe(1);
    const message = jsonLines(fromBlock.stderr).find((l) => l.event === 'failed')!.message as string;
    expect(message).toContain(
      `check connection.apiKey in ${blockFile} and connection.apiSecret in ${blockFile}, and that they belong`,
    );
    expect(message).not.toContain('wrong');
  });
});
