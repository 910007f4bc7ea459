// When a stateful run reads its source whole although it holds a cursor (incremental-window.ts):
// a sink's `fullReadEvery` (the media mirror's fullRelistDays) and the state's `lastFullRunAt`.
import { describe, expect, it } from 'vitest';
import { fullReadDue, fullReadEvery } from '../../src/pipeline/incremental-window.js';
import type { PipelineState } from '../../src/pipeline/state.js';

const DAY = 86_400_000;
const now = new Date('2026-06-10T02:00:00Z');
const state = (lastFullRunAt?: string): PipelineState => ({
  version: 1,
  pipeline: 'p',
  cursor: 1_780_000_000,
  updatedAt: '2026-06-09T02:00:00Z',
  ...(lastFullRunAt !== undefined ? { lastFullRunAt } : {}),
});
const sink = (every?: number) => ({ definition: { fullReadEvery: () => every }, options: {} }) as any;

describe('fullReadDue', () => {
  it('is due once the interval has passed since the last full run, not before', () => {
    expect(fullReadDue(state('2026-06-03T02:00:00Z'), 7 * DAY, now)).toBe(true);
    expect(fullReadDue(state('2026-06-03T02:00:01Z'), 7 * DAY, now)).toBe(false);
  });

  it('is due when the state records no full run (written before lastFullRunAt existed), never without an interval', () => {
    expect(fullReadDue(state(), 7 * DAY, now)).toBe(true);
    expect(fullReadDue(state('not a date'), 7 * DAY, now)).toBe(true);
    expect(fullReadDue(state(), undefined, now)).toBe(false);
  });
});

describe('fullReadEvery', () => {
  it('takes the shortest interval the sinks ask for; none when no sink asks', () => {
    expect(fullReadEvery({ sinks: [sink(7 * DAY), sink(undefined), sink(2 * DAY)] })).toBe(2 * DAY);
    expect(fullReadEvery({ sinks: [sink(undefined), { definition: {}, options: {} } as any] })).toBeUndefined();
  });
});
