// Invalid UTF-8 from the service. Decoding replaces each invalid sequence with
// U+FFFD and says nothing, so a name with a broken byte reached every output
// changed and unreported. The bytes are checked natively (`isUtf8`, a fraction
// of the cost of decoding them); only when a check fails are the records
// searched for the fields that hold a replacement character, to name them.
import { isUtf8 } from 'node:buffer';

const REPLACEMENT = '\uFFFD';

/**
 * Checks a body arriving in chunks that may split a character: whether any complete part so far
 * was not valid UTF-8. The last incomplete character of a chunk is checked with the next one.
 */
export class Utf8Watch {
  #carry: Buffer | undefined;
  #invalid = false;

  /** Whether the body was seen invalid so far. */
  get invalid(): boolean {
    return this.#invalid;
  }

  write(chunk: Buffer): void {
    if (this.#invalid || chunk.length === 0) return;
    const data = this.#carry ? Buffer.concat([this.#carry, chunk]) : chunk;
    const cut = completeEnd(data);
    this.#carry = cut < data.length ? Buffer.from(data.subarray(cut)) : undefined;
    if (!isUtf8(data.subarray(0, cut))) this.#invalid = true;
  }

  /** The body ended: a character left incomplete is invalid too. */
  end(): void {
    if (this.#carry) this.#invalid = true;
    this.#carry = undefined;
  }
}

/** Where the last complete character of `b` ends: before a lead byte whose sequence is cut off. */
function completeEnd(b: Buffer): number {
  const n = b.length;
  for (let back = 1; back <= Math.min(3, n); back++) {
    const x = b[n - back]!;
    if ((x & 0xc0) === 0x80) continue; // a continuation byte: look further back for its lead
    const need = x >= 0xf0 ? 4 : x >= 0xe0 ? 3 : x >= 0xc0 ? 2 : 1;
    return need > back ? n - back : n;
  }
  return n;
}

/** Paths of the string values (and keys) of a record that hold U+FFFD: the fields a decoder repaired. */
export function replacedFields(record: unknown, limit = 10): string[] {
  const out: string[] = [];
  // Iterative: a record may be nested deeper than the call stack.
  const stack: Array<[unknown, string]> = [[record, '']];
  while (stack.length > 0 && out.length < limit) {
    const [value, path] = stack.pop()!;
    if (typeof value === 'string') {
      if (value.includes(REPLACEMENT)) out.push(path || '(the record)');
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], `${path}[${i}]`]);
    } else if (value && typeof value === 'object') {
      const entries = Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, v] = entries[i]!;
        const p = path ? `${path}.${k}` : k;
        if (k.includes(REPLACEMENT)) out.push(`${p} (its name)`);
        stack.push([v, p]);
      }
    }
  }
  return out;
}
