// The Dockerfile and scripts/docker-build.sh, its one build-and-run script. There is no Docker
// engine where this suite runs (nor, often, in CI), so the suite runs the script's --local mode:
// the Dockerfile's stages step for step in a temp folder (pack, the project on the tarball and its
// lockfile, `npm ci --omit=dev` into a fresh folder), then the Dockerfile's ENTRYPOINT from an
// empty data folder, as uid 1000 when the suite runs as root. With an engine the script builds and
// runs the image itself (`scripts/docker-build.sh`); that path is not run here.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPO, cleanEnv } from '../cli/cli-process.js';
import { shellPath } from '../helpers/packed-project.js';
import { fencedBlocks } from './doc-blocks.js';

describe('the Dockerfile', () => {
  let dockerfile: string;
  beforeAll(async () => {
    dockerfile = await readFile(join(REPO, 'Dockerfile'), 'utf8');
  });

  it('is multi-stage, installs production dependencies with npm ci, runs as a non-root user, the CLI as entrypoint', () => {
    const froms = dockerfile.match(/^FROM /gm) ?? [];
    expect(froms.length).toBeGreaterThanOrEqual(2);
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(runtime).toMatch(/^RUN npm ci --omit=dev /m);
    expect(runtime).toMatch(/^USER node$/m);
    expect(runtime).not.toMatch(/^COPY (?!--from=)/m);
    expect(runtime).toMatch(/^ENTRYPOINT \["\/app\/node_modules\/\.bin\/catalog-streams"\]$/m);
  });

  it('the Kubernetes CronJob runs the image as built: its entrypoint and a pipeline the image ships', async () => {
    const nightly = await readFile(join(REPO, 'docs/nightly-runs.md'), 'utf8');
    const entrypoint = /^ENTRYPOINT \["([^"]+)"\]$/m.exec(dockerfile)![1]!;
    const cronJobs = fencedBlocks({ file: 'docs/nightly-runs.md', text: nightly })
      .filter((b) => b.lang === 'yaml')
      .flatMap((b) => parseAllDocuments(b.body).map((d) => d.toJS() as any))
      .filter((m) => m?.kind === 'CronJob');
    expect(cronJobs.length).toBeGreaterThan(0);
    for (const job of cronJobs) {
      const [container] = job.spec.jobTemplate.spec.template.spec.containers;
      expect(container.command).toEqual([entrypoint]);
      const pipeline = (container.args as string[]).find((a) => a.endsWith('.yml'))!;
      expect(pipeline).toMatch(/^\/app\/node_modules\/catalog-streams\/pipelines\/[\w-]+\.yml$/);
      expect((await readFile(join(REPO, 'pipelines', pipeline.split('/').at(-1)!), 'utf8')).length).toBeGreaterThan(0);
    }
  });

  it('scripts/docker-build.sh --local performs its stages and runs a shipped pipeline as the image would', async () => {
    const child = spawn('bash', [join(REPO, 'scripts/docker-build.sh'), '--local', '--skip-build'], {
      cwd: REPO,
      env: cleanEnv({ PATH: shellPath() }),
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code, output).toBe(0);
    expect(output).toContain('== 3. runtime: npm ci --omit=dev');
    expect(output).toMatch(/^\d+\.\d+\.\d+$/m);
    expect(output).toMatch(/"event":"summary","pipeline":"demo-products",[^\n]*"status":"succeeded"/);
    // What the run wrote is in the data folder: outputs and the run history, nothing elsewhere.
    const files = output.slice(output.indexOf('== the data folder after the run:')).split('\n').slice(1, -2);
    expect(files).toEqual(
      expect.arrayContaining([
        './out/demo/media.jsonl.gz',
        expect.stringMatching(/^\.\/out\/demo\/products\/dt=[\d-]+\/products\.parquet$/),
        expect.stringMatching(/^\.\/\.catalog-streams\/history\/demo-products\/[\w-]+\.json$/),
      ]),
    );
    expect(output).toMatch(/docker-build: ok \(the Dockerfile's stages, run locally\)\n$/);
  }, 240_000);
});
