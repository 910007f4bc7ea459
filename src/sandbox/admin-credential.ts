// The admin credential of a shared sandbox (issue 36, item 9): the admin routes under /_sandbox/
// change the catalog, its faults and its churn for every user, so they take their own secret,
// sent as `Authorization: Bearer <secret>`, and never an API key (any key could call them before).
// Secrets the sandbox makes up come from crypto randomness, so no secret tells another.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** The environment variable `catalog-streams sandbox` reads the admin secret from. */
export const ADMIN_SECRET_ENV = 'CATALOG_SANDBOX_ADMIN_SECRET';

/** A fresh secret: 144 random bits, base64url (24 characters). */
export function randomSecret(): string {
  return randomBytes(18).toString('base64url');
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** What an Authorization header is to the admin routes. */
export type AdminAccess = 'admin' | 'missing' | 'invalid';

export class AdminCredential {
  readonly #expected: Buffer;

  constructor(readonly secret: string) {
    if (secret === '') throw new RangeError('the sandbox admin secret cannot be empty');
    this.#expected = digest(`Bearer ${secret}`);
  }

  /** The header value that opens the admin routes. */
  get authorization(): string {
    return `Bearer ${this.secret}`;
  }

  /** Compares digests in constant time: the answer's timing tells nothing of the secret. */
  check(header: string | undefined): AdminAccess {
    if (!header) return 'missing';
    return timingSafeEqual(digest(header), this.#expected) ? 'admin' : 'invalid';
  }
}
