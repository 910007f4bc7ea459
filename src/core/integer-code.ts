// integer-code: the one rule for the leading zeros of a code that arrived as an integer (JSON
// dropped them). Every writer of codes applies it (normalize-codes, the JSONL encoding, the
// column converters), so a code reads the same in every output (docs/lake-contract.md, "Codes").
// A code that arrived as a string is never passed here: the service sent its zeros, so it is kept
// exactly as sent, whatever its length.
import type { CodeInfo } from './record-schema.js';

const ZEROS = '00000000000000000000000000000000';

/**
 * The code an integer's digits stand for: zero-padded to `padTo` (a code of fixed length: EAN/GTIN,
 * CNK, PZN...), or, for `evenDigits` (HS codes: 2, 4, 6, 8 or 10 digits, chapters 01-97), given
 * back the one zero it lost when its digit count is odd, never more (`402` is `"0402"`, not `"000402"`).
 */
export function integerCode(digits: string, code: Pick<CodeInfo, 'padTo' | 'evenDigits'>): string {
  if (digits.length < code.padTo) return ZEROS.slice(0, code.padTo - digits.length) + digits;
  if (code.evenDigits === true && digits.length % 2 === 1) return `0${digits}`;
  return digits;
}

/** Whether an integer of this code is rewritten at all (a code of varying length keeps its digits). */
export function restoresZeros(code: Pick<CodeInfo, 'padTo' | 'evenDigits'>): boolean {
  return code.padTo > 0 || code.evenDigits === true;
}
