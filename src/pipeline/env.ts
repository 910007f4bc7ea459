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
 * Credentials the toolkit (or a library it runs) reads from the environment itself, not through a
 * `${VAR}` of the file: every run's redactor knows their values, so an error that quotes one (a
 * token endpoint echoing the form it got) does not print it.
 */
export const CREDENTIAL_VARIABLES = [
  'CATALOG_API_KEY',
  'CATALOG_API_SECRET',
  'ICEBERG_REST_CREDENTIAL',
  'ICEBERG_REST_TOKEN',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
] as const;

export { Redactor } from '../redactor.js';
