// Reads what an error response says. ARCHITECTURE.md, API rules: bodies are usually
// `{"error":{"status","code","message"}}` (422 adds `violations`), but the
// client trusts the HTTP status first and must cope with any body or none:
// HTML from a proxy, plain text, an empty body, a truncated one.
import { type ApiErrorBody, truncate } from './errors.js';

const MAX_MESSAGE = 300;

export function parseErrorBody(text: string): ApiErrorBody {
  const trimmed = text.trim();
  if (!trimmed) return {};
  let json: unknown;
  try {
    json = JSON.parse(trimmed);
  } catch {
    // Not JSON: keep the start of it as the message (a proxy page, plain text), tags removed.
    const plain = trimmed
      .replace(/<[^>]*>/g, ' ')
      .replace(/\s+/g, ' ')
      .trim();
    return plain ? { apiMessage: truncate(plain, MAX_MESSAGE) } : {};
  }
  return fromJson(json);
}

/** The error object of an error body or of an NDJSON `{"error": ...}` line. */
export function fromJson(json: unknown): ApiErrorBody & { status?: number } {
  if (!json || typeof json !== 'object') return { apiMessage: truncate(String(json), MAX_MESSAGE) };
  const root = json as Record<string, unknown>;
  const err = root.error ?? root;
  if (typeof err === 'string') return { apiMessage: truncate(err, MAX_MESSAGE) };
  if (!err || typeof err !== 'object') return {};
  const e = err as Record<string, unknown>;
  const out: ApiErrorBody & { status?: number } = {};
  if (typeof e.code === 'string' || typeof e.code === 'number') out.apiCode = String(e.code);
  if (typeof e.message === 'string') out.apiMessage = truncate(e.message, MAX_MESSAGE);
  if (typeof e.status === 'number') out.status = e.status;
  const violations = e.violations ?? root.violations;
  if (Array.isArray(violations)) out.violations = violations;
  return out;
}
