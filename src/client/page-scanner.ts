// A page body split into its records without parsing them: the paged source
// parses each record only when it emits it.
//
// Why: `JSON.parse` of a whole page (250 products, ~1.5 MB) made one large
// string (allocated in V8's large-object space, freed only by full GCs) and
// 250 records at once that then waited tens of milliseconds for their turn,
// long enough to be promoted to the old generation. In the bench's full chain
// that garbage set the process's peak RSS (~100 MB of dead page strings at the
// peak) and a good share of its GC time. Kept as bytes (a Buffer, outside the
// JS heap) and parsed record by record, a page's records live only while they
// go through the chain and die young.
//
// The scan finds the structure only: the top-level object, its `results`
// array, and where each element begins and ends (strings, nesting). It does
// not validate tokens: JSON.parse does, on the skeleton (the body with the
// array emptied: meta and every other key) at once, and on each record when it
// is parsed. Pieces that all parse, joined by the separators the scan checked,
// are a valid document; a body the scan does not understand returns undefined
// and the caller parses it whole (and reports its error as before).

export interface ScannedPage {
  /** The body with `results` emptied (`{"meta":{...},"results":[]}`), for JSON.parse. */
  skeleton: string;
  /** Byte offsets of each element of `results`: [start, end). */
  starts: number[];
  ends: number[];
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

function isSpace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(b: Uint8Array, i: number): number {
  while (i < b.length && isSpace(b[i])) i++;
  return i;
}

/** End (exclusive) of the string whose opening quote is at `i`, or -1 when it is not closed. */
function stringEnd(b: Uint8Array, i: number): number {
  let from = i + 1;
  for (;;) {
    const q = b.indexOf(QUOTE, from);
    if (q < 0) return -1;
    let backslashes = 0;
    for (let k = q - 1; k > i && b[k] === BACKSLASH; k--) backslashes++;
    if ((backslashes & 1) === 0) return q + 1;
    from = q + 1;
  }
}

/** End (exclusive) of the value starting at `i` (structure only), or -1 when it is cut off. */
function valueEnd(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c === QUOTE) return stringEnd(b, i);
  if (c === LBRACE || c === LBRACKET) {
    let depth = 0;
    for (let j = i; j < b.length; j++) {
      const x = b[j];
      if (x === QUOTE) {
        const end = stringEnd(b, j);
        if (end < 0) return -1;
        j = end - 1;
      } else if (x === LBRACE || x === LBRACKET) depth++;
      else if ((x === RBRACE || x === RBRACKET) && --depth === 0) return j + 1;
    }
    return -1;
  }
  let j = i;
  while (j < b.length) {
    const x = b[j];
    if (x === COMMA || x === RBRACE || x === RBRACKET || isSpace(x)) break;
    j++;
  }
  return j > i ? j : -1;
}

/**
 * Finds the elements of the top-level `results` array of a JSON object body.
 * Undefined when the body is not such an object (or `results` appears twice):
 * parse it whole instead.
 */
export function scanPage(bytes: Uint8Array): ScannedPage | undefined {
  const b = bytes;
  let i = skipSpace(b, 0);
  if (b[i] !== LBRACE) return undefined;
  i = skipSpace(b, i + 1);
  let open = -1;
  let close = -1;
  const starts: number[] = [];
  const ends: number[] = [];
  if (b[i] !== RBRACE) {
    for (;;) {
      if (b[i] !== QUOTE) return undefined;
      const keyEnd = stringEnd(b, i);
      if (keyEnd < 0) return undefined;
      const isResults =
        keyEnd - i === 9 && Buffer.from(b.buffer, b.byteOffset + i, 9).toString('latin1') === '"results"';
      i = skipSpace(b, keyEnd);
      if (b[i] !== COLON) return undefined;
      i = skipSpace(b, i + 1);
      if (isResults) {
        if (open >= 0 || b[i] !== LBRACKET) return undefined;
        open = i;
        let j = skipSpace(b, i + 1);
        if (b[j] !== RBRACKET) {
          for (;;) {
            const end = valueEnd(b, j);
            if (end < 0) return undefined;
            starts.push(j);
            ends.push(end);
            j = skipSpace(b, end);
            if (b[j] === COMMA) j = skipSpace(b, j + 1);
            else if (b[j] === RBRACKET) break;
            else return undefined;
          }
        }
        close = j;
        i = j + 1;
      } else {
        const end = valueEnd(b, i);
        if (end < 0) return undefined;
        i = end;
      }
      i = skipSpace(b, i);
      if (b[i] === COMMA) i = skipSpace(b, i + 1);
      else if (b[i] === RBRACE) break;
      else return undefined;
    }
  }
  if (open < 0 || skipSpace(b, i + 1) !== b.length) return undefined;
  const buffer = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const skeleton = buffer.toString('utf8', 0, open + 1) + buffer.toString('utf8', close, b.length);
  return { skeleton, starts, ends };
}

/**
 * Whether a body is the start of a JSON object or array that stops before its end (or is
 * empty): what a response that ended cleanly but early looks like. Such a page is asked for
 * again; a body that is complete but not a page (an HTML error page, a wrong shape) is not.
 */
export function isTruncatedJson(bytes: Uint8Array): boolean {
  const b = bytes;
  let i = skipSpace(b, b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf ? 3 : 0);
  if (i >= b.length) return true;
  if (b[i] !== LBRACE && b[i] !== LBRACKET) return false;
  let depth = 0;
  for (; i < b.length; i++) {
    const x = b[i];
    if (x === QUOTE) {
      const end = stringEnd(b, i);
      if (end < 0) return true;
      i = end - 1;
    } else if (x === LBRACE || x === LBRACKET) depth++;
    else if ((x === RBRACE || x === RBRACKET) && --depth === 0) return false;
  }
  return true;
}
