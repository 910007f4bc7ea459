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

export { MIN_SECRET_IN_TEXT, Redactor } from '../redactor.js';
