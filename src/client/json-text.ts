// JSON text from the service, parsed without losing what JSON.parse would lose.
//
// Integers past 2^53 (`snomedMpp: 32000000000000001`, `artgId: 9007199254740993`)
// are rounded by JSON.parse before any stage sees them, so every output and
// dead letter would hold other digits than the service sent (ARCHITECTURE.md,
// API rules). JSON.parse's reviver gets the source text of a primitive
// (`context.source`) only from V8 11.4 (Node 21+): Node 20 gives no third
// argument. A reviver also costs a call per value. So the text is checked
// first with a regex of sixteen `[0-9]` (a fixed-length pattern, which
// irregexp skips through ~20 times faster than `\d{16}`: about 5 % of
// JSON.parse on a 5 KB product): only a text with a run of 16 digits can hold
// an unsafe integer, and that rare text is rewritten with such literals
// quoted, in number position only (never inside a string), before parsing.
// The value is then the literal's exact digits as a string, which the code
// schemas accept (`nationalCode`: an integer or a digit string).

const SIXTEEN_DIGITS = /[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]/;
const MAX_SAFE = String(Number.MAX_SAFE_INTEGER);

/** JSON.parse, with integer literals beyond ±(2^53 - 1) kept exact as strings of their digits. */
export function parseJson(text: string): unknown {
  if (!SIXTEEN_DIGITS.test(text)) return JSON.parse(text);
  const quoted = quoteUnsafeIntegers(text);
  if (quoted === text) return JSON.parse(text);
  try {
    return JSON.parse(quoted);
  } catch {
    // Invalid either way: the error should describe the text as it came.
    return JSON.parse(text);
  }
}

/** Whether `digits` (no sign, no leading zeros but for "0") is an integer JSON.parse cannot keep exact. */
function isUnsafe(digits: string): boolean {
  return digits.length > MAX_SAFE.length || (digits.length === MAX_SAFE.length && digits > MAX_SAFE);
}

/**
 * The text with every integer literal past 2^53 in number position turned into a string literal
 * (`32000000000000001` -> `"32000000000000001"`); strings, fractions and exponents are left alone.
 */
export function quoteUnsafeIntegers(text: string): string {
  let out = '';
  let copied = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = stringEnd(text, i) - 1;
      if (i < 0) return text; // an unclosed string: let JSON.parse report it
      continue;
    }
    if (c !== 0x2d && (c < 0x30 || c > 0x39)) continue;
    let j = i + (c === 0x2d ? 1 : 0);
    const digitsFrom = j;
    while (j < n && text.charCodeAt(j) >= 0x30 && text.charCodeAt(j) <= 0x39) j++;
    const next = j < n ? text.charCodeAt(j) : -1;
    const integer = next !== 0x2e && next !== 0x65 && next !== 0x45;
    if (integer && j - digitsFrom >= MAX_SAFE.length && isUnsafe(text.slice(digitsFrom, j))) {
      out += `${text.slice(copied, i)}"${text.slice(i, j)}"`;
      copied = j;
    }
    // skip the rest of the number (fraction, exponent) so its digits are not read as another literal
    while (j < n) {
      const x = text.charCodeAt(j);
      if ((x >= 0x30 && x <= 0x39) || x === 0x2e || x === 0x65 || x === 0x45 || x === 0x2b || x === 0x2d) j++;
      else break;
    }
    i = j - 1;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/** End (exclusive) of the string whose opening quote is at `i`, or 0 when it is not closed. */
function stringEnd(text: string, i: number): number {
  let from = i + 1;
  for (;;) {
    const q = text.indexOf('"', from);
    if (q < 0) return 0;
    let backslashes = 0;
    for (let k = q - 1; k > i && text.charCodeAt(k) === 0x5c; k--) backslashes++;
    if ((backslashes & 1) === 0) return q + 1;
    from = q + 1;
  }
}
