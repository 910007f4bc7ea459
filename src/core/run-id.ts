// Run identifiers: sortable by start time to the second (two runs started in the same second
// order by their random suffix: history orders by startedAt, which has milliseconds), unique
// enough for concurrent runs.
import { randomBytes } from 'node:crypto';

/** `20260102T030405Z-a1b2c3` */
export function newRunId(at: Date = new Date()): string {
  const stamp = at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}
