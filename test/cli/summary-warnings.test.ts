// Issue 37 (each warning once): the JSON log carried every warning twice, as its own `warn` line
// when it came and again in the summary line's `warnings` array. Now the summary line counts them
// by code (`warningCounts`) when they were written; at --log-level error, where no warn line is
// written, it lists their messages once. The summary file keeps the messages (a document of its own).
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonLines, runCli, sandboxEnv, useSandboxWorkspace } from './cli-process.js';

// Two paths no record has: two warnings of one code, and nothing else to warn about.
const PIPELINE = `name: warned
source: { type: brands.query, sorting: { id: ASC } }
transforms:
  - { type: drop, fields: [noSuchField, nor.this] }
sinks: [{ type: jsonl, path: out/brands.jsonl }]
`;

describe('warnings in the JSON log: each said once', { timeout: 120_000 }, () => {
  const shared = useSandboxWorkspace({ products: 50 });

  it('written as warn lines, the summary line counts them by code and does not repeat them', async () => {
    const file = join(shared.ws.dir, 'warned.yml');
    await writeFile(file, PIPELINE);
    const summaryFile = join(shared.ws.dir, 'summary.json');
    const r = await runCli(['run', file, '--summary-file', summaryFile], { env: sandboxEnv(shared.sandbox) });
    expect(r.code, r.stderr).toBe(0);
    const lines = jsonLines(r.stderr);
    const warned = lines.filter((l) => l.level === 'warn');
    expect(warned.map((l) => l.event)).toEqual(['transform.path_unseen', 'transform.path_unseen']);
    // Each message appears in one line of the log, its own (as JSON text, quotes escaped).
    for (const w of warned) expect(r.stderr.split(JSON.stringify(w.message)).length - 1, w.message).toBe(1);
    const summary = lines.find((l) => l.event === 'summary')!;
    expect(summary.warningCounts).toEqual({ 'transform.path_unseen': 2 });
    expect(summary).not.toHaveProperty('warnings');
    // The summary file, read without the log, keeps the messages.
    const written = JSON.parse(await readFile(summaryFile, 'utf8')) as { pipelines: Array<Record<string, unknown>> };
    expect(written.pipelines[0]!.warnings).toEqual(warned.map((l) => l.message));
  });

  it('at --log-level error no warn line is written: the summary line lists the messages, once', async () => {
    const file = join(shared.ws.dir, 'warned.yml');
    await writeFile(file, PIPELINE);
    const r = await runCli(['run', file, '--log-level', 'error'], { env: sandboxEnv(shared.sandbox) });
    expect(r.code, r.stderr).toBe(0);
    const lines = jsonLines(r.stderr);
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
    const summary = lines.find((l) => l.event === 'summary')!;
    expect(summary.warnings).toHaveLength(2);
    expect(summary.warnings[0]).toMatch(/noSuchField/);
    expect(summary.warningCounts).toEqual({ 'transform.path_unseen': 2 });
  });
});
