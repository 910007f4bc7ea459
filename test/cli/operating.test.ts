// Operating a scheduled run (issue 37, items 13 and 14), through the built CLI against a sandbox
// whose API secret holds a comma:
// - two pipeline files writing their metrics into one textfile folder define no series twice (every
//   metric, the exit code included, is labelled by pipeline); one --metrics-file shared by two
//   pipeline files, or one not named *.prom, is said in a warning;
// - `history` shows a failed run's error code (table and --json);
// - that secret in CATALOG_API_SECRET is refused (exit 2) with a message saying the variable is a
//   comma-separated list and where such a secret goes; given there (connection.credentials), it runs.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { jsonLines, runCli, sandboxEnv, useSandboxWorkspace } from './cli-process.js';

const KEY = 'operating-key';
const SECRET = 'with,comma-secret';

interface Family {
  name: string;
  metrics: Array<{ labels?: Record<string, string> }>;
}

/** Every series of a metrics text, as `name{labels as JSON}`. */
function seriesOf(text: string): string[] {
  return (parsePrometheusTextFormat(text) as Family[]).flatMap((f) =>
    f.metrics.map((m) => `${f.name}${JSON.stringify(m.labels ?? {})}`),
  );
}

const pipelineFile = (name: string, connection = '') =>
  `name: ${name}\n${connection}source: { type: brands.query }\nsinks: [{ type: jsonl, path: out/${name}.jsonl }]\n`;

describe('operating a scheduled run', () => {
  const shared = useSandboxWorkspace({ products: 20, credentials: { apiKey: KEY, apiSecret: SECRET } });
  // The secret given whole, in a variable of its own, through connection.credentials.
  const credentials = 'connection: { credentials: [{apiKey: "${CATALOG_API_KEY}", apiSecret: "${MY_SECRET}"}] }\n';
  const env = (extra: Record<string, string | undefined> = {}) =>
    sandboxEnv(shared.sandbox, { CATALOG_API_SECRET: undefined, MY_SECRET: SECRET, ...extra });
  const write = (file: string, text: string) => writeFile(join(shared.ws.dir, file), text);
  const run = (args: string[], e = env()) => runCli(['run', ...args], { cwd: shared.ws.dir, env: e });

  it('a comma in CATALOG_API_SECRET: exit 2 saying it is a list and to use connection.credentials', async () => {
    await write('plain.yml', pipelineFile('plain'));
    const refused = await run(['plain.yml'], sandboxEnv(shared.sandbox));
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain('CATALOG_API_KEY lists 1 key but CATALOG_API_SECRET lists 2 secrets');
    expect(refused.stderr).toContain('CATALOG_API_SECRET is a comma-separated list (one secret per key)');
    expect(refused.stderr).toContain('connection.credentials');
    expect(refused.stderr).not.toContain(SECRET);

    await write('whole.yml', pipelineFile('whole', credentials));
    const ok = await run(['whole.yml', '--quiet']);
    expect(ok.code, ok.stderr).toBe(0);
  });

  it('two pipeline files, one textfile folder: no series defined twice; a shared or non-.prom file warns', async () => {
    await write('first.yml', pipelineFile('first', credentials));
    await write('second.yml', pipelineFile('second', credentials));
    const firstProm = join(shared.ws.dir, 'textfile/first.prom');
    const secondProm = join(shared.ws.dir, 'textfile/second.prom');
    expect((await run(['first.yml', '--metrics-file', firstProm, '--quiet'])).code).toBe(0);
    expect((await run(['second.yml', '--metrics-file', secondProm, '--quiet'])).code).toBe(0);
    const first = seriesOf(await readFile(firstProm, 'utf8'));
    const second = seriesOf(await readFile(secondProm, 'utf8'));
    expect(first).toContain('catalog_streams_exit_code{"pipeline":"first"}');
    expect(second).toContain('catalog_streams_exit_code{"pipeline":"second"}');
    // What node_exporter's textfile collector refuses: one series in two files.
    expect(first.filter((s) => second.includes(s))).toEqual([]);
    for (const s of [...first, ...second]) expect(s).toMatch(/"pipeline":"(first|second)"/);

    // The second file pointed at the first one's metrics file: said, with the fix.
    const sharing = await run(['second.yml', '--metrics-file', firstProm]);
    expect(sharing.code, sharing.stderr).toBe(0);
    expect(jsonLines(sharing.stderr).filter((l) => l.event === 'metrics.file_shared')).toEqual([
      expect.objectContaining({
        level: 'warn',
        message: expect.stringContaining('held the metrics of pipelines this file does not have (first)'),
      }),
    ]);
    const again = await run(['second.yml', '--metrics-file', firstProm]);
    expect(jsonLines(again.stderr).some((l) => l.event === 'metrics.file_shared')).toBe(false);

    const txt = await run(['first.yml', '--metrics-file', join(shared.ws.dir, 'textfile/first.txt')]);
    expect(jsonLines(txt.stderr).filter((l) => l.event === 'metrics.file_name')).toEqual([
      expect.objectContaining({ level: 'warn', message: expect.stringContaining('does not end in .prom') }),
    ]);
  });

  it("history shows a failed run's error code", async () => {
    await write('failing.yml', pipelineFile('failing', credentials));
    expect((await run(['failing.yml', '--quiet'])).code).toBe(0);
    const failed = await run(['failing.yml', '--quiet'], env({ MY_SECRET: 'wrong-secret' }));
    expect(failed.code, failed.stderr).toBe(1);

    const history = (...flags: string[]) =>
      runCli(['history', 'failing.yml', ...flags], { cwd: shared.ws.dir, env: env() });
    const json = await history('--json');
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout).map((r: { status: string; error: string | null }) => [r.status, r.error])).toEqual([
      ['succeeded', null],
      ['failed', 'auth.unauthorized'],
    ]);
    const lines = (await history()).stdout.split('\n');
    expect(
      lines[1]!
        .trim()
        .split(/\s{2,}/)
        .slice(0, 4),
    ).toEqual(['date (UTC)', 'run', 'status', 'error']);
    expect(lines[3]).toMatch(/ failed +auth\.unauthorized /);
    expect(lines[2]).toMatch(/ succeeded  +\d/);
  });
});
