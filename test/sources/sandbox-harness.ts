// The test sandbox (test/helpers/sandbox.ts) with a CatalogClient pointed at
// it and every run event recorded: what the source tests share.
import { CatalogClient, type CatalogClientOptions } from '../../src/client/index.js';
import { RunEvents } from '../../src/events.js';
import { PRODUCT_STATUSES, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.js';
import { startTestSandbox } from '../helpers/sandbox.js';

export interface SandboxHarness {
  sandbox: Sandbox;
  client: CatalogClient;
  events: RunEvents;
  seen: { name: string; payload: any }[];
  /** A further client on the same sandbox (same events). */
  newClient(options?: Partial<CatalogClientOptions>): CatalogClient;
  close(): Promise<void>;
}

export async function sandboxHarness(
  options: SandboxOptions = {},
  clientOptions: Partial<CatalogClientOptions> = {},
): Promise<SandboxHarness> {
  const sandbox = await startTestSandbox(options);
  const events = new RunEvents();
  const seen: { name: string; payload: any }[] = [];
  for (const name of ['request', 'retry', 'throttle', 'total', 'page', 'info', 'warning'] as const)
    events.on(name, (payload: unknown) => seen.push({ name, payload }));
  const clients: CatalogClient[] = [];
  const newClient = (extra: Partial<CatalogClientOptions> = {}) => {
    const c = new CatalogClient({
      baseUrl: sandbox.url,
      ...sandbox.credentials,
      rateLimit: 0,
      events,
      retry: { minTimeout: 2, maxTimeout: 20 },
      ...clientOptions,
      ...extra,
    });
    clients.push(c);
    return c;
  };
  const client = newClient();
  return {
    sandbox,
    client,
    events,
    seen,
    newClient,
    close: async () => {
      await Promise.all(clients.map((c) => c.close()));
      await sandbox.close();
    },
  };
}

/** Ids of the sandbox's products with one of `statuses`, in id order (straight from the dataset). */
export function productIdsWithStatus(sandbox: Sandbox, ...statuses: (typeof PRODUCT_STATUSES)[number][]): string[] {
  const ds = sandbox.dataset;
  const wanted = new Set(statuses.map((s) => PRODUCT_STATUSES.indexOf(s)));
  const out: string[] = [];
  for (let i = 0; i < ds.productCount; i++) if (wanted.has(ds.status[i]!)) out.push(ds.productId(i));
  return out;
}

export function allProductIds(sandbox: Sandbox): string[] {
  return Array.from({ length: sandbox.dataset.productCount }, (_, i) => sandbox.dataset.productId(i));
}

/** Fails with the first difference, not a 10,000-line diff. */
export function expectSameSequence(actual: unknown[], expected: unknown[]): void {
  if (actual.length !== expected.length) throw new Error(`expected ${expected.length} records, got ${actual.length}`);
  for (let i = 0; i < expected.length; i++) {
    if (actual[i] !== expected[i])
      throw new Error(`record ${i}: expected ${String(expected[i])}, got ${String(actual[i])}`);
  }
}

/**
 * What a products.query or media.query source delivered (createdat-query.ts): exactly the expected
 * ids, each once, in createdAt order (ties in whatever order the service gave them).
 */
export function expectCreatedAtRead(
  records: { id?: unknown; meta?: { createdAt?: unknown } }[],
  expected: unknown[],
): void {
  const createdAt = records.map((r) => Number(r.meta?.createdAt));
  const back = createdAt.findIndex((t, i) => i > 0 && t < createdAt[i - 1]!);
  if (back >= 0) throw new Error(`record ${back} has createdAt ${createdAt[back]}, before the one delivered before it`);
  const sort = (ids: unknown[]) => ids.map(String).sort();
  expectSameSequence(sort(records.map((r) => r.id)), sort(expected));
}
