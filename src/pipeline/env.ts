// `${VAR}` and `${VAR:-default}` interpolation of environment variables in
// pipeline files. Values that come from the environment are remembered so that
// messages and logs can redact them: a secret put in through `${VAR}` is never
// echoed back.

const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;
/** `$${...}` escapes a literal `${...}`. */
const ESCAPED = /\$\$\{/g;

export interface InterpolationResult {
  value: string;
  /** Every variable the string referenced. */
  variables: string[];
  /** A variable that is unset and has no default (the first). */
  missing?: string;
  /** True when the whole string was one `${...}` reference. */
  whole: boolean;
}

export function interpolate(input: string, env: NodeJS.ProcessEnv = process.env): InterpolationResult {
  const variables: string[] = [];
  let missing: string | undefined;
  const placeholder = '\u0000ESCAPED\u0000';
  const escaped = input.replace(ESCAPED, placeholder);
  const whole = /^\$\{[^}]+\}$/.test(escaped);
  const value = escaped
    .replace(REFERENCE, (_m, name: string, fallback: string | undefined) => {
      variables.push(name);
      const v = env[name];
      if (v !== undefined && v !== '') return v;
      if (fallback !== undefined) return fallback;
      missing ??= name;
      return '';
    })
    .split(placeholder)
    .join('${');
  return { value, variables, missing, whole };
}

/**
 * Collects secret values (from variables whose names look secret, and the
 * connection credentials) and replaces them in any text shown to a user.
 */
export class Redactor {
  readonly #secrets = new Set<string>();

  add(value: string | undefined): void {
    // Very short values would redact ordinary words; credentials are longer.
    if (value && value.length >= 4) this.#secrets.add(value);
  }

  addFromEnv(names: readonly string[], env: NodeJS.ProcessEnv = process.env): void {
    for (const name of names) if (/KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL/i.test(name)) this.add(env[name]);
  }

  /** Takes every secret another redactor knows (the pipelines of one file share their output). */
  absorb(other: Redactor): void {
    for (const s of other.#secrets) this.#secrets.add(s);
  }

  redact(text: string): string {
    let out = text;
    for (const s of this.#secrets) out = out.split(s).join('***');
    return out;
  }
}
