// Kill at every step on S3 (s3rver): the s3 sink writing Parquet, killed before each visible
// step in turn with a good run after each; what is checked is said at the top of
// kill-every-step.test.ts, the machinery is kill-every-step-support.ts.
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { workspace } from '../cli/cli-process.js';
import {
  ids,
  MAX_ROWS,
  S3_SINK_FOREIGN,
  SOURCE,
  killAtEveryStep,
  parquetIds,
  placeForeignS3,
  s3,
  s3Env,
  s3Storage,
  useKillFixtures,
} from './kill-every-step-support.js';

useKillFixtures({ s3: true });

describe('kill -9 at every storage step of an s3 sink, then a good run', () => {
  it(
    's3 sink writing Parquet (s3rver): the manifest lists a whole extract, and only it stays',
    { timeout: 600_000 },
    async () => {
      const ws = await workspace('catalog-streams-kill-s3-');
      try {
        await mkdir(join(ws.dir, 'scratch'));
        const storage = s3Storage('lake/flat/', join(ws.dir, 'scratch'));
        const killed = await killAtEveryStep({
          dir: ws.dir,
          pipeline: `name: kill-s3\n${SOURCE}\nsinks:\n  - { type: s3, format: parquet, bucket: ${s3.bucket}, key: "lake/flat/part-{part}.parquet", maxRows: ${MAX_ROWS} }\n`,
          env: s3Env(),
          untouched: await placeForeignS3('lake/flat/', S3_SINK_FOREIGN),
          async check(after) {
            const text = await storage.read('_manifest.json');
            if (text === undefined) {
              expect(after, 'a good run leaves a manifest').toBe('kill');
              return { committed: [] };
            }
            const manifest = JSON.parse(text) as { runId: string; rows: number; files: Array<{ key: string }> };
            const rels = manifest.files.map((f) => f.key.slice('lake/flat/'.length));
            const got = await parquetIds(storage, rels);
            expect(
              got,
              `missing ${ids.filter((i) => !got.includes(i)).join(',')}; files ${JSON.stringify(manifest.files)} rows ${manifest.rows} all ${(await storage.list()).join(' ')}`,
            ).toEqual(ids);
            expect(manifest.rows).toBe(ids.length);
            if (after === 'good')
              expect(await storage.list()).toEqual(['_manifest.json', ...rels, ...Object.keys(S3_SINK_FOREIGN)].sort());
            return { committed: [manifest.runId] };
          },
        });
        expect(killed).toBeGreaterThanOrEqual(4);
      } finally {
        await ws.remove();
        await rm(join(ws.dir, 'scratch'), { recursive: true, force: true });
      }
    },
  );
});
