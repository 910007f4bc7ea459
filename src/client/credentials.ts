// Several API keys, one budget each (ARCHITECTURE.md, Several keys). A key and its secret are
// given as two comma-separated lists of the same length (CATALOG_API_KEY=k1,k2,k3 with
// CATALOG_API_SECRET=s1,s2,s3) or as a list of pairs (a pipeline file's `connection.credentials`).
// Nothing here ever puts a value into a message: keys are named by position (`key 2 of 3`).
import { ConfigError } from '../errors.js';

/** One API key and its secret: HTTP Basic credentials with their own request budget. */
export interface ApiCredential {
  apiKey: string;
  apiSecret: string;
}

/** Where a list came from, for messages: the variable or file path of the keys and of the secrets. */
export interface CredentialListSource {
  keys: string;
  secrets: string;
  /** File and path of a config error (the variable's name when from the environment). */
  location?: { file?: string; path?: string };
}

/**
 * The pairs of a key list and a secret list (`k1,k2` and `s1,s2`; one key without a comma is a
 * list of one). Blanks around commas are dropped. A ConfigError (code `config.credentials`) when
 * the counts differ, an entry is empty or a key is listed twice; it names counts and positions only.
 */
export function pairCredentialLists(apiKey: string, apiSecret: string, from: CredentialListSource): ApiCredential[] {
  const keys = splitList(apiKey);
  const secrets = splitList(apiSecret);
  if (keys.length !== secrets.length) {
    throw new ConfigError(
      `${from.keys} lists ${countOf(keys.length, 'key')} but ${from.secrets} lists ${countOf(secrets.length, 'secret')}: ` +
        'give one secret per key, comma-separated in the same order' +
        (secrets.length > keys.length ? commaInSecretHint(from.secrets) : ''),
      from.location ?? { path: from.keys },
      { code: 'config.credentials' },
    );
  }
  for (const [list, name] of [
    [keys, from.keys],
    [secrets, from.secrets],
  ] as const) {
    const empty = list.indexOf('');
    if (empty >= 0 && list.length > 1) {
      throw new ConfigError(
        `${name}: entry ${empty + 1} of ${list.length} is empty: remove the extra comma, or fill it in`,
        from.location ?? { path: name },
        { code: 'config.credentials' },
      );
    }
  }
  const pairs = keys.map((key, i) => ({ apiKey: key, apiSecret: secrets[i]! }));
  checkDistinct(pairs, from.keys, from.location);
  return pairs;
}

/**
 * Each key once: the same key twice would be paced as two budgets while the service counts one,
 * and every window would end in 429s.
 */
export function checkDistinct(
  credentials: readonly ApiCredential[],
  where: string,
  location: { file?: string; path?: string } = { path: where },
): void {
  const seen = new Map<string, number>();
  for (const [i, c] of credentials.entries()) {
    const first = seen.get(c.apiKey);
    if (first !== undefined) {
      throw new ConfigError(
        `${where}: key ${i + 1} of ${credentials.length} is the same API key as key ${first + 1}: ` +
          'each key has one budget at the service, so list it once',
        location,
        { code: 'config.credentials' },
      );
    }
    seen.set(c.apiKey, i);
  }
}

/**
 * More secrets than keys is what one secret holding a comma gives: the list syntax cannot carry
 * such a secret, and nothing else would tell the user why their single, correct secret is refused.
 */
function commaInSecretHint(secrets: string): string {
  return (
    `. ${secrets} is a comma-separated list (one secret per key), so a secret that contains a comma is split in two: ` +
    "give such a secret in the pipeline file's connection.credentials instead, which takes each pair whole " +
    '(credentials: [{apiKey: "${CATALOG_API_KEY}", apiSecret: "${MY_SECRET}"}], the secret in a variable of its own)'
  );
}

function splitList(list: string): string[] {
  return list.split(',').map((s) => s.trim());
}

function countOf(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}
