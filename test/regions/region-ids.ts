// The ids a fan-out over products with status active/inactive must publish, per region: read from
// each region's own sandbox (its stream endpoint), not from the code under test.
import type { TestSandbox } from '../helpers/sandbox.js';

export async function listedIds(sandboxes: Record<string, TestSandbox>): Promise<Record<string, string[]>> {
  const ids: Record<string, string[]> = {};
  for (const [region, sb] of Object.entries(sandboxes)) {
    const { lines } = await sb.stream('/v4/products/stream', { filter: { createdAt: 0 }, sorting: { id: 'ASC' } });
    const listed = lines.map((l) => l.result).filter((p) => ['active', 'inactive'].includes(p.status));
    ids[region] = listed.map((p) => p.id as string).sort();
  }
  return ids;
}
