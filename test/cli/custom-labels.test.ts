// Two `custom` stages of one module logged under one label, `custom(<module>)`, so a user could
// not tell whose counts a transform.stats line gave. A named export is part of the label:
// `custom(<module>#<export>)`; the default export keeps `custom(<module>)`.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonLines, runCli, sandboxEnv, useSandboxWorkspace } from './cli-process.js';

describe('custom stage labels', { timeout: 120_000 }, () => {
  const shared = useSandboxWorkspace({ products: 50 });

  it('each custom stage logs under its module and export', async () => {
    await writeFile(
      join(shared.ws.dir, 'steps.mjs'),
      `export default (r) => r;
export const enrich = (r) => ({ ...r, enriched: true });
export const keepSome = (r) => r.id !== undefined;
`,
    );
    const file = join(shared.ws.dir, 'labels.yml');
    await writeFile(
      file,
      `name: labels
source: { type: brands.query }
transforms:
  - { type: custom, module: ./steps.mjs, export: keepSome, kind: filter }
  - { type: custom, module: ./steps.mjs, export: enrich }
  - { type: custom, module: ./steps.mjs }
sinks: [{ type: jsonl, path: out/labels.jsonl }]
`,
    );
    // A transform's counts are debug lines since issue 37 (nothing on a clean run but the result).
    const r = await runCli(['run', file, '--log-level', 'debug'], { env: sandboxEnv(shared.sandbox) });
    expect(r.code, r.stderr).toBe(0);
    const stages = jsonLines(r.stderr)
      .filter((l) => l.event === 'transform.stats')
      .map((l) => l.stage as string);
    expect(stages).toEqual(['custom(./steps.mjs#keepSome)', 'custom(./steps.mjs#enrich)', 'custom(./steps.mjs)']);
  });
});
