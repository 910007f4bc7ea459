// A short, readable description of a request body for error messages and
// events: `filter {status: active, id: [2500 values]} page 3`. Long code lists
// are summarised by their length so a message stays one line. Only the body is
// described: it never holds credentials (those travel in a header).
import { truncate } from './errors.js';

const MAX_LIST_SHOWN = 5;
const MAX_SUMMARY = 200;

export function describeRequest(body: unknown): string {
  if (!body || typeof body !== 'object') return '';
  const b = body as { filter?: unknown; sorting?: unknown; page?: { no?: unknown; size?: unknown } };
  const parts: string[] = [];
  if (b.filter !== undefined) parts.push(`filter ${compact(b.filter)}`);
  if (b.sorting !== undefined) parts.push(`sorting ${compact(b.sorting)}`);
  if (b.page && typeof b.page === 'object') parts.push(`page ${String(b.page.no)}`);
  return truncate(parts.join(' '), MAX_SUMMARY);
}

/** JSON-like, without quotes around plain words, with long lists counted. */
export function compact(v: unknown): string {
  if (Array.isArray(v)) {
    return v.length > MAX_LIST_SHOWN ? `[${v.length} values]` : `[${v.map(compact).join(', ')}]`;
  }
  if (v && typeof v === 'object') {
    return `{${Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${k}: ${compact(x)}`)
      .join(', ')}}`;
  }
  if (typeof v === 'string') return /^[\w.:@-]*$/.test(v) && v !== '' ? v : JSON.stringify(v);
  return String(v);
}
