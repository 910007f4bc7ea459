// The shapes the live service sends (fixtures/live/live-shapes.json, copied from the shared samples):
// the product the issue starts from, and copies of it with other ids, for tests at every level.
import { readFileSync } from 'node:fs';

export interface LiveShapes {
  product_au: Record<string, any>;
  frontal_be: Record<string, any>;
  description_be: Record<string, any>;
  regional_fields: { be: Record<string, any>; fr: Record<string, any>; au: Record<string, any> };
}

export function liveShapes(): LiveShapes {
  return JSON.parse(
    readFileSync(new URL('../../fixtures/live/live-shapes.json', import.meta.url), 'utf8'),
  ) as LiveShapes;
}

/** The observed Australian product (a fresh copy). */
export function liveProduct(): Record<string, any> {
  return liveShapes().product_au;
}

/** `count` live-shaped products with ids M0000000000, M0000000001, ... in id order (JSON text of each). */
export function liveProductJson(count: number): string[] {
  const base = liveProduct();
  return Array.from({ length: count }, (_, i) => JSON.stringify({ ...base, id: `M${String(i).padStart(10, '0')}` }));
}
