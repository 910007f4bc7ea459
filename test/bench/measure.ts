// What every bench scenario measures, and how a scenario runs in a child
// process of its own (so its peak RSS and CPU are its own, never the
// sandbox's or another scenario's).
//
// A scenario file exports its work and, when run as a script, reads one JSON
// argument, does the work under `measure()` and prints one JSON line (the
// last line of stdout): `runScenario()` in the orchestrator spawns it with
// `node --expose-gc` and parses that line.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Measurement {
  /** Records the scenario moved (read from the source, or converted). */
  records: number;
  wallSeconds: number;
  /** User + system CPU of the whole process (all threads: DuckDB's too) during the work. */
  cpuSeconds: number;
  /** Peak resident set size of the process over its whole life (process.resourceUsage().maxRSS). */
  peakRssMb: number;
  recordsPerSecond: number;
}

const MB = 1024 * 1024;

/** Runs `work` (which returns the record count and extra fields) and measures it. */
export async function measure<T extends { records: number }>(work: () => Promise<T>): Promise<Measurement & T> {
  globalThis.gc?.();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await work();
  const wallSeconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return {
    ...result,
    records: result.records,
    wallSeconds: round(wallSeconds),
    cpuSeconds: round((cpu.user + cpu.system) / 1e6),
    peakRssMb: Math.round((process.resourceUsage().maxRSS * 1024) / MB),
    recordsPerSecond: Math.round(result.records / wallSeconds),
  };
}

export function round(n: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** True when the module at `moduleUrl` is the process entry script. */
export function isMain(moduleUrl: string): boolean {
  return process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(moduleUrl);
}

/**
 * The entry of a scenario script: parses the JSON argument, runs `main`, prints
 * its result as the last stdout line; a failure prints the error and exits 1.
 */
export function scenarioMain<A, R>(moduleUrl: string, main: (args: A) => Promise<R>): void {
  if (!isMain(moduleUrl)) return;
  const raw = process.argv[2];
  main(JSON.parse(raw ?? '{}') as A).then(
    (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}

/**
 * `BENCH_CPU_PROF_DIR=folder`: every scenario process writes a `--cpu-prof` profile there (Node refuses
 * `--cpu-prof` in NODE_OPTIONS, so the flag has to be given to each child).
 */
function profileFlags(): string[] {
  const dir = process.env.BENCH_CPU_PROF_DIR;
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
}

/** Runs a compiled scenario script (`dist/test/bench/<file>.js`) in its own `node --expose-gc` process. */
export function runScenario<R>(file: string, args: unknown, nodeFlags: string[] = []): Promise<R> {
  const script = fileURLToPath(new URL(`./${file}.js`, import.meta.url));
  return new Promise((resolveResult, reject) => {
    const child = spawn(
      process.execPath,
      ['--expose-gc', ...profileFlags(), ...nodeFlags, script, JSON.stringify(args)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code !== 0) return reject(new Error(`bench scenario ${file} exited with ${signal ?? code}`));
      const last = out.trim().split('\n').at(-1) ?? '';
      try {
        resolveResult(JSON.parse(last) as R);
      } catch {
        reject(new Error(`bench scenario ${file} printed no result line: ${out.slice(-500)}`));
      }
    });
  });
}
