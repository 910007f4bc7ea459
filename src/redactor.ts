// Takes secret values (API keys and secrets, values of secret-looking
// environment variables) out of text and JSON shown to a user, by value.
/** Secrets at least this long are redacted wherever they occur in text; shorter ones only as a whole value. */
export const MIN_SECRET_IN_TEXT = 8;

/**
 * Collects secret values (from variables whose names look secret, and the
 * connection credentials) and takes them out of whatever is shown to a user,
 * by value. A secret of MIN_SECRET_IN_TEXT characters or more is replaced
 * wherever it occurs: a string that long does not occur by chance. A shorter
 * one (a key such as `status`) would damage ordinary words, so it is replaced
 * only where it is a whole value: a message that is just the secret, a JSON
 * string value equal to it, or a checked value a loader error shows
 * (`isSecret`). JSON is redacted value by value (`json`), never in its keys.
 */
export class Redactor {
  readonly #secrets = new Set<string>();
  readonly #mask: string;

  /** `mask` replaces each secret (a JSON string value that is a secret becomes the mask itself). */
  constructor(mask = '***') {
    this.#mask = mask;
  }

  add(value: unknown): void {
    if ((typeof value === 'string' && value !== '') || (typeof value === 'number' && Number.isFinite(value)))
      this.#secrets.add(String(value));
  }

  addFromEnv(names: readonly string[], env: NodeJS.ProcessEnv = process.env): void {
    for (const name of names) if (/KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL/i.test(name)) this.add(env[name]);
  }

  /** Takes every secret another redactor knows (the pipelines of one file share their output). */
  absorb(other: Redactor): void {
    for (const s of other.#secrets) this.#secrets.add(s);
  }

  /** True when `value` (a string or number) is a secret as a whole. */
  isSecret(value: unknown): boolean {
    return (typeof value === 'string' || typeof value === 'number') && this.#secrets.has(String(value));
  }

  /** Message text: long secrets wherever they occur; a short one only when it is the whole text. */
  redact(text: string): string {
    if (this.#secrets.has(text)) return this.#mask;
    let out = text;
    for (const s of this.#secrets) if (s.length >= MIN_SECRET_IN_TEXT) out = out.split(s).join(this.#mask);
    return out;
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
}
