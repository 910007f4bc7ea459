// The first line of an error's stack that is the caller's code: not Node's own (`node:`,
// internals) and not this package's, so an error thrown in a custom stage points at the user's
// module (`/srv/etl/enrich.mjs:12:9`) without the whole stack in a one-line log message.
import { fileURLToPath } from 'node:url';

/** This package's compiled `src/` (or `src/` under tsx/vitest): frames there are ours. */
const OWN = fileURLToPath(new URL('../', import.meta.url));

/** `file:line:column` of the first frame outside Node and this package, or undefined. */
export function userFrame(error: unknown): string | undefined {
  const stack = error instanceof Error && typeof error.stack === 'string' ? error.stack : '';
  for (const line of stack.split('\n').slice(1)) {
    const m = /\(?((?:file:\/\/)?\/[^()\s]*?):(\d+):(\d+)\)?\s*$/.exec(line.trim());
    if (!m) continue;
    const file = m[1]!.startsWith('file://') ? fileURLToPath(m[1]!) : m[1]!;
    if (file.startsWith(OWN) || file.includes('/node_modules/')) continue;
    return `${file}:${m[2]}:${m[3]}`;
  }
  return undefined;
}
