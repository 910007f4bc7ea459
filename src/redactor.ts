// Takes secret values (API keys and secrets, values of secret-looking
// environment variables, credential options) out of text and JSON shown to a
// user, by value, in every form a server or a library may echo them in.
/** Secrets at least this long are redacted wherever they occur in text; shorter ones only as a whole token. */
export const MIN_SECRET_IN_TEXT = 8;

/** Environment variables whose values are secrets (docs/security.md, "Secrets"). */
export const SECRET_NAME = /KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL/i;

/** A letter, digit or `_`: a short secret next to one is part of a longer word, not the secret. */
const WORD_CHAR = '[\\p{L}\\p{N}_]';

/**
 * Collects secret values and takes them out of whatever is shown to a user, by
 * value. Each secret is known in the forms it travels in: raw, URL-encoded (as
 * a URL component and as an HTML form encodes it, hex in either case), base64
 * (standard and URL-safe, with and without padding) and JSON-escaped, so a
 * token endpoint that echoes the form it got, or an API that echoes a header,
 * does not print it. A form of MIN_SECRET_IN_TEXT characters or more is
 * replaced wherever it occurs: a string that long does not occur by chance. A
 * shorter one is replaced only as a whole token (not next to a letter, digit
 * or `_`), so a secret `ab` does not blank every "ab" in words and a key
 * `status` leaves "statuses" alone. JSON is redacted value by value (`json`),
 * never in its keys.
 */
export class Redactor {
  /** The secrets as added (`isSecret`). */
  readonly #secrets = new Set<string>();
  /** Every form of every secret. */
  readonly #forms = new Set<string>();
  readonly #mask: string;
  /** Built from #forms on first use after a change. */
  #matchers: { long: string[]; short: RegExp | undefined } | undefined;

  /** `mask` replaces each secret (a JSON string value that is a secret becomes the mask itself). */
  constructor(mask = '***') {
    this.#mask = mask;
  }

  add(value: unknown): void {
    if (!((typeof value === 'string' && value !== '') || (typeof value === 'number' && Number.isFinite(value)))) return;
    const raw = String(value);
    this.#secrets.add(raw);
    for (const form of formsOf(raw)) this.#forms.add(form);
    this.#matchers = undefined;
  }

  /**
   * Adds the values of the variables whose names look secret (SECRET_NAME), however short. A
   * `user:password` or `client_id:client_secret` value also adds its part after the colon, which
   * travels alone (in a form, or a URL's userinfo).
   */
  addFromEnv(names: readonly string[], env: NodeJS.ProcessEnv = process.env): void {
    for (const name of names) {
      const value = env[name];
      if (!SECRET_NAME.test(name) || !value) continue;
      this.add(value);
      if (value.includes(':')) this.add(value.slice(value.indexOf(':') + 1));
    }
  }

  /** Takes every secret another redactor knows (the pipelines of one file share their output). */
  absorb(other: Redactor): void {
    for (const s of other.#secrets) this.#secrets.add(s);
    for (const f of other.#forms) this.#forms.add(f);
    this.#matchers = undefined;
  }

  /** True when `value` (a string or number) is a secret as a whole. */
  isSecret(value: unknown): boolean {
    return (typeof value === 'string' || typeof value === 'number') && this.#secrets.has(String(value));
  }

  /** Message text: long forms wherever they occur, short ones as whole tokens. */
  redact(text: string): string {
    if (this.#forms.has(text)) return this.#mask;
    const { long, short } = this.#build();
    let out = text;
    for (const s of long) out = out.split(s).join(this.#mask);
    return short ? out.replace(short, this.#mask) : out;
  }

  /** A copy of `value` with every string value redacted; keys, numbers and the shape are left as they are. */
  redactValue<T>(value: T): T {
    if (typeof value === 'string') return this.redact(value) as T;
    if (Array.isArray(value)) return value.map((v) => this.redactValue(v)) as T;
    if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.redactValue(v)])) as T;
    }
    return value;
  }

  /** JSON.stringify of `value` with its string values redacted. */
  json(value: unknown, space?: number): string {
    return JSON.stringify(this.redactValue(value), null, space);
  }

  // Longest first: a secret that contains another is replaced whole, not around the shorter one.
  #build(): { long: string[]; short: RegExp | undefined } {
    if (this.#matchers) return this.#matchers;
    const forms = [...this.#forms].sort((a, b) => b.length - a.length);
    const long = forms.filter((f) => f.length >= MIN_SECRET_IN_TEXT);
    const short = forms.filter((f) => f.length < MIN_SECRET_IN_TEXT).map(escapeRegExp);
    this.#matchers = {
      long,
      short:
        short.length === 0 ? undefined : new RegExp(`(?<!${WORD_CHAR})(?:${short.join('|')})(?!${WORD_CHAR})`, 'gu'),
    };
    return this.#matchers;
  }
}

/** The forms a secret is sent or echoed in (see Redactor). */
function formsOf(raw: string): Set<string> {
  const forms = new Set([raw]);
  const form = new URLSearchParams({ v: raw }).toString().slice(2);
  for (const encoded of [uriComponent(raw), form]) {
    forms.add(encoded);
    forms.add(encoded.replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase()));
  }
  const bytes = Buffer.from(raw, 'utf8');
  const base64 = bytes.toString('base64');
  forms.add(base64);
  forms.add(base64.replace(/=+$/, ''));
  forms.add(bytes.toString('base64url'));
  forms.add(JSON.stringify(raw).slice(1, -1));
  forms.delete('');
  return forms;
}

/** encodeURIComponent, or the text itself for a string it refuses (a lone surrogate). */
function uriComponent(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return text;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
