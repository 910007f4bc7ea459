// The sandbox as a separate process for benches: `catalog-streams sandbox`
// (the built CLI) on a free port, so the process being measured holds no
// sandbox (its dataset, its JSON building) in its RSS or CPU. The first stdout
// line gives the URL and credentials; admin routes give stats and faults.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import type { SandboxFaults, SandboxStats } from '../../src/sandbox/index.js';

export interface SandboxProcessOptions {
  products: number;
  /** Requests per minute (0: off, the default here), or per `rateWindowMs` when given. */
  rateLimit?: number;
  /** Length of the rolling rate-limit window, ms (`--rate-window-ms`; default 60 000). */
  rateWindowMs?: number;
  /** products/query reports its real total (no 10000 cap). */
  trueTotal?: boolean;
  seed?: number;
  /** Keys the sandbox accepts, each with its own rateLimit budget (`--keys`; default 1). */
  keys?: number;
}

export interface SandboxConnection {
  baseUrl: string;
  /** With several keys, a comma-separated list (what CATALOG_API_KEY takes). */
  apiKey: string;
  apiSecret: string;
}

export interface SandboxProcess extends SandboxConnection {
  pid: number;
  /** `Bearer <admin secret>`: the admin routes take it, never an API key. */
  adminAuthorization: string;
  /** Seconds from spawn to the first line (dataset generated, listening). */
  startupSeconds: number;
  stats(): Promise<SandboxStats & { memory: { rss: number } }>;
  setFaults(faults: SandboxFaults): Promise<void>;
  /** CPU seconds (user + system) the sandbox process used so far (Linux /proc), undefined elsewhere. */
  cpuSeconds(): Promise<number | undefined>;
  /** Peak RSS of the sandbox process in MB (Linux /proc), undefined elsewhere. */
  peakRssMb(): Promise<number | undefined>;
  stop(): Promise<void>;
}

/** USER_HZ of /proc/<pid>/stat: 100 on Linux. */
const CLOCK_TICKS = 100;

export async function startSandboxProcess(options: SandboxProcessOptions): Promise<SandboxProcess> {
  const main = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
  const args = [
    main,
    'sandbox',
    '--port',
    '0',
    '--products',
    String(options.products),
    '--rate-limit',
    String(options.rateLimit ?? 0),
  ];
  if (options.rateWindowMs !== undefined) args.push('--rate-window-ms', String(options.rateWindowMs));
  if (options.trueTotal) args.push('--true-total');
  if (options.seed !== undefined) args.push('--seed', String(options.seed));
  if (options.keys !== undefined) args.push('--keys', String(options.keys));
  const started = performance.now();
  // The admin secret through the environment, where the process list does not show it.
  const adminSecret = randomBytes(18).toString('base64url');
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, CATALOG_SANDBOX_ADMIN_SECRET: adminSecret },
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the sandbox exited (${code}) before listening: ${stderr}`)));
  });
  const [, baseUrl, apiKey, apiSecret] =
    /listening on (\S+) \(CATALOG_API_KEY=(\S+) CATALOG_API_SECRET=(\S+),/.exec(line) ?? [];
  if (!baseUrl || !apiKey || !apiSecret) {
    child.kill('SIGTERM');
    throw new Error(`unexpected first line from the sandbox: ${line}`);
  }
  const startupSeconds = (performance.now() - started) / 1000;
  const authorization = `Bearer ${adminSecret}`;
  const admin = async (path: string, body?: unknown) => {
    const res = await request(`${baseUrl}/_sandbox/${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`/_sandbox/${path} answered ${res.statusCode}: ${text}`);
    return JSON.parse(text) as unknown;
  };
  return {
    baseUrl,
    apiKey,
    apiSecret,
    pid: child.pid!,
    adminAuthorization: authorization,
    startupSeconds: Math.round(startupSeconds * 100) / 100,
    stats: async () => (await admin('stats')) as SandboxStats & { memory: { rss: number } },
    setFaults: async (faults) => void (await admin('faults', faults)),
    async cpuSeconds() {
      try {
        // Fields 14 and 15 of /proc/<pid>/stat (after the command's closing parenthesis): utime, stime in ticks.
        const stat = await readFile(`/proc/${child.pid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
      } catch {
        return undefined;
      }
    },
    async peakRssMb() {
      try {
        const hwm = /VmHWM:\s+(\d+) kB/.exec(await readFile(`/proc/${child.pid}/status`, 'utf8'));
        return hwm ? Math.round(Number(hwm[1]) / 1024) : undefined;
      } catch {
        return undefined;
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The connection part of a sandbox process (what a scenario child needs). */
export function connectionOf(sandbox: SandboxConnection): SandboxConnection {
  return { baseUrl: sandbox.baseUrl, apiKey: sandbox.apiKey, apiSecret: sandbox.apiSecret };
}

/** Requests answered per endpoint and status, summed over the statuses given (all when none). */
export function answered(stats: SandboxStats, endpoint: string, statuses?: number[]): number {
  const by = stats.byEndpoint[endpoint] ?? {};
  return Object.entries(by).reduce(
    (n, [status, count]) => (!statuses || statuses.includes(Number(status)) ? n + count : n),
    0,
  );
}
