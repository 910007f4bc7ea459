// The AWS SDK loads only when something uses S3 (src/storage/s3-sdk.ts): a run
// to local files, `validate` and `--dry-run` of an S3 pipeline never import it.
// A module resolve hook (node:module register) in the CLI process reports every
// @aws-sdk/* import on stderr; the control case shows the hook sees them. The SDK is an optional
// peer dependency: a second hook makes it missing (as in a project that did not install it), and an
// S3 feature then fails naming itself and the install command (test/cli/package.test.ts does the
// same on a real install without it).
import { describe, expect, it } from 'vitest';
import { REPO, runCli, sandboxEnv, useSandboxWorkspace } from './cli-process.js';
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const HOOK = `export async function resolve(specifier, context, next) {
  if (specifier.startsWith('@aws-sdk/')) (await import('node:fs')).writeSync(2, 'IMPORTED ' + specifier + '\\n');
  return next(specifier, context);
}`;
const REGISTER = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOK)}`)});`;
const NODE_OPTIONS = `--import=data:text/javascript,${encodeURIComponent(REGISTER)}`;

const MISSING_HOOK = `export async function resolve(specifier, context, next) {
  if (!specifier.startsWith('@aws-sdk/')) return next(specifier, context);
  const error = new Error("Cannot find package '" + specifier + "' imported from " + context.parentURL);
  error.code = 'ERR_MODULE_NOT_FOUND';
  throw error;
}`;
const WITHOUT_SDK = `--import=data:text/javascript,${encodeURIComponent(
  `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(MISSING_HOOK)}`)});`,
)}`;

const sdkImports = (stderr: string) => [...stderr.matchAll(/^IMPORTED (\S+)$/gm)].map((m) => m[1]);

describe('the AWS SDK is loaded only for S3', () => {
  const shared = useSandboxWorkspace({ products: 300 });

  it('a run to local Parquet and JSONL files never imports it', async () => {
    const { code, stderr } = await runCli(['run', 'pipelines/demo.yml', '--quiet'], {
      cwd: shared.ws.dir,
      env: sandboxEnv(shared.sandbox, { NODE_OPTIONS }),
    });
    expect(code, stderr).toBe(0);
    expect(sdkImports(stderr)).toEqual([]);
  });

  it('validate and --dry-run of the S3 lake pipeline never import it', async () => {
    const env = sandboxEnv(shared.sandbox, { NODE_OPTIONS, LAKE_BUCKET: 'lake' });
    const validate = await runCli(['validate', 'pipelines/products-lake-s3.yml'], { cwd: shared.ws.dir, env });
    expect(validate.code, validate.stderr).toBe(0);
    const dryRun = await runCli(['run', 'pipelines/products-lake-s3.yml', '--dry-run'], { cwd: shared.ws.dir, env });
    expect(dryRun.code, dryRun.stderr).toBe(0);
    expect(sdkImports(validate.stderr + dryRun.stderr)).toEqual([]);
  });

  it('without the SDK, a table on s3:// fails before any request with dependency.missing.s3-table and the command to run', async () => {
    const { code, stdout, stderr } = await runCli(['run', 'pipelines/products-table.yml', '--log-format', 'pretty'], {
      cwd: shared.ws.dir,
      env: sandboxEnv(shared.sandbox, {
        NODE_OPTIONS: WITHOUT_SDK,
        TABLE_PATH: 's3://lake/products-table',
        TABLE_STATE: '../.state/no-sdk.json',
      }),
    });
    const output = stdout + stderr;
    expect(code, output).toBe(1);
    expect(output).toContain('error [dependency.missing.s3-table]: a table sink with an s3:// path needs the AWS SDK');
    expect(output).toContain('run `npm install @aws-sdk/client-s3 @aws-sdk/lib-storage` in your project');
    expect(output).toContain('0 requests');
  });

  it('control: the hook reports the SDK once S3 is used', async () => {
    const script = `import(${JSON.stringify(join(REPO, 'dist/src/storage/s3-sdk.js'))}).then((m) => m.loadS3Sdk('s3-sink'))`;
    const stderr = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ['-e', script], {
        env: { ...process.env, NODE_OPTIONS },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('error', reject);
      child.on('close', (c) => (c === 0 ? resolve(err) : reject(new Error(`exit ${c}: ${err}`))));
    });
    expect(sdkImports(stderr)).toEqual(expect.arrayContaining(['@aws-sdk/client-s3', '@aws-sdk/lib-storage']));
  });
});
